"""Links to the rental service's own pages and to the guide's own sources, from site settings.

The guide tells readers to use the service's server catalogue and its API; their
addresses are settings, not prose: ``extra.rental_links`` maps a name to an https URL
(``catalogue``, ``rental-api``), and a page links to one as a Markdown reference link,
``[catalogo dei server][catalogue]``. The guide's sources (the calculator's command line,
the data files a page cites) live in its repository, whose address is the setting
``extra.repository``: a page links a file as ``[gpus.yaml][source:snippets/data/gpus.yaml]``
(a folder, or a file with ``#section``, the same way), and the build refuses a path that is
not a file or folder of the checkout. ``link_definitions`` checks the settings and writes
the reference definitions each page gets. Links only: nothing is loaded from there.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from hooks.errors import RenderError

SETTING = "extra.rental_links"
REPOSITORY = "extra.repository"
NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
SOURCE = re.compile(r"\]\[source:([^\]\s#]+)(#[a-z0-9-]+)?\]")  # [text][source:path#anchor]
REPO_ROOT = Path(__file__).resolve().parents[2]


def rental_links(extra) -> dict[str, str]:
    """``{name: url}`` of ``extra.rental_links``. Raises RenderError naming ``mkdocs.yml`` and
    the key for a missing setting, a bad name, or a URL that is not plain https."""
    links = (extra or {}).get("rental_links")
    if not isinstance(links, dict) or not links:
        raise RenderError(f"mkdocs.yml: {SETTING}: expected a mapping of names to https URLs (catalogue, rental-api)")
    for name, url in links.items():
        where = f"mkdocs.yml: {SETTING}.{name}"
        if not isinstance(name, str) or not NAME.match(name):
            raise RenderError(f"{where}: a name is lower-case letters, digits and '-'")
        parts = urlsplit(url) if isinstance(url, str) else None
        if (
            parts is None
            or parts.scheme != "https"
            or not parts.hostname
            or parts.username
            or parts.password
            or parts.port
            or any(ch.isspace() or ch in "<>\"'" for ch in url)
        ):
            raise RenderError(f"{where}: {url!r} is not a plain https URL")
    return dict(links)


def _plain_https(url, where: str) -> str:
    parts = urlsplit(url) if isinstance(url, str) else None
    if (
        parts is None
        or parts.scheme != "https"
        or not parts.hostname
        or parts.username
        or parts.password
        or parts.port
        or any(ch.isspace() or ch in "<>\"'" for ch in url)
    ):
        raise RenderError(f"{where}: {url!r} is not a plain https URL")
    return url


def repository(extra) -> str:
    """``extra.repository``: the guide's repository, its web address (files under
    ``/blob/main/``, folders under ``/tree/main/``, as GitHub shows them). Raises RenderError
    naming ``mkdocs.yml`` and the key."""
    return _plain_https((extra or {}).get("repository"), f"mkdocs.yml: {REPOSITORY}").rstrip("/")


def source_definitions(extra, markdown: str, root: Path = REPO_ROOT) -> str:
    """The reference definitions of the ``[text][source:path]`` links of ``markdown``, each to
    that file or folder of the repository. Raises RenderError for a path the checkout lacks."""
    base, seen, lines = None, set(), []
    for path, anchor in SOURCE.findall(markdown):
        label = f"source:{path}{anchor}"
        if label in seen:
            continue
        seen.add(label)
        target = root / path
        if ".." in Path(path).parts or not (target.is_file() or target.is_dir()):
            raise RenderError(f"[{label}]: {path} is not a file or folder of the repository")
        base = base or repository(extra)
        lines.append(f"\n[{label}]: <{base}/{'tree' if target.is_dir() else 'blob'}/main/{path}{anchor}>")
    return "".join(lines)


def link_definitions(extra, markdown: str = "") -> str:
    """The Markdown reference definitions of the rental links and of the source links of
    ``markdown``, to append to a page."""
    return "".join(f"\n[{name}]: <{url}>" for name, url in rental_links(extra).items()) + source_definitions(
        extra, markdown
    )
