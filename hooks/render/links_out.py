"""Links to the rental service's own pages, from site settings (``mkdocs.yml`` ``extra.rental_links``).

The guide tells readers to use the service's server catalogue and its API; their
addresses are settings, not prose: ``extra.rental_links`` maps a name to an https URL
(``catalogue``, ``rental-api``), and a page links to one as a Markdown reference link,
``[catalogo dei server][catalogue]``. ``link_definitions`` checks the setting and writes
the reference definitions each page gets. Links only: nothing is loaded from there.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from hooks.errors import RenderError

SETTING = "extra.rental_links"
NAME = re.compile(r"[a-z][a-z0-9-]*\Z")


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
        if (parts is None or parts.scheme != "https" or not parts.hostname or parts.username or parts.password
                or parts.port or any(ch.isspace() or ch in "<>\"'" for ch in url)):
            raise RenderError(f"{where}: {url!r} is not a plain https URL")
    return dict(links)


def link_definitions(extra) -> str:
    """The Markdown reference definitions of the rental links, to append to a page."""
    return "".join(f"\n[{name}]: <{url}>" for name, url in rental_links(extra).items())
