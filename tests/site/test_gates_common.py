"""Helpers shared by the quality gates (tests/site/test_gates_*.py, tests/browser/); no tests here.

A built page is addressed by its file (``site/fr/memory-formulas/index.html``) or by
its URL relative to the site root (``fr/memory-formulas/``); ``resolve`` turns any
``href``/``src`` of a page into the file it reaches, or says it leaves the site.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from bs4 import BeautifulSoup

from tests.conftest import shared_build

LANGUAGES = ("it", "fr")  # default first; the others live under /<lang>/
DEFAULT_SITE_URL = "http://127.0.0.1:8000/"  # mkdocs.yml's default for SITE_URL
SUBPATH_SITE_URL = "https://example.github.io/REPO/"  # a GitHub project site


def html_files(site: Path) -> list[Path]:
    """Every HTML page of a built site, both languages, the 404 pages included."""
    return sorted(site.rglob("*.html"))


def page_url(site: Path, page: Path) -> str:
    """``fr/memory-formulas/index.html`` -> ``fr/memory-formulas/`` (relative to the site root)."""
    rel = page.relative_to(site).as_posix()
    return rel.removesuffix("index.html")


def page_language(site: Path, page: Path) -> str:
    first = page.relative_to(site).parts[0]
    return first if first in LANGUAGES[1:] else LANGUAGES[0]


@lru_cache(maxsize=256)
def _parse(text: str) -> BeautifulSoup:
    return BeautifulSoup(text, "html.parser")


def parsed(page: Path) -> BeautifulSoup:
    """The page parsed once per content (a copy of a site reuses the parse of every page it did
    not change; an edited page is parsed again); do not modify it."""
    return _parse(page.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Target:
    """Where a link of a page goes."""

    url: str  # absolute URL as the browser computes it
    same_origin: bool  # same scheme and host as the site
    internal: bool  # under the site's base URL (same origin, path under its base path)
    file: Path | None  # the file it reaches (None: external, or nothing there)
    fragment: str


def resolve(site: Path, page: Path, href: str, site_url: str = DEFAULT_SITE_URL) -> Target:
    """Resolve ``href`` of ``page`` as a browser would, the site living at ``site_url``."""
    absolute = urljoin(site_url + page_url(site, page), href)
    parts = urlsplit(absolute)
    base = urlsplit(site_url)
    same_origin = (parts.scheme, parts.netloc) == (base.scheme, base.netloc)
    if not same_origin or not parts.path.startswith(base.path):
        return Target(absolute, same_origin, False, None, parts.fragment)
    rel = unquote(parts.path[len(base.path) :])
    candidate = site / rel
    if rel == "" or rel.endswith("/") or candidate.is_dir():
        candidate = candidate / "index.html"
    return Target(absolute, True, True, candidate if candidate.is_file() else None, unquote(parts.fragment))


@lru_cache(maxsize=256)
def _ids(text: str) -> frozenset[str]:
    soup = _parse(text)
    return frozenset(
        {str(el["id"]) for el in soup.find_all(id=True)}
        | {str(a["name"]) for a in soup.find_all("a", attrs={"name": True})}
    )


def ids(page: Path) -> set[str]:
    """Fragment targets of a page: every ``id``, and ``name`` of ``<a>`` (found once per content:
    a link gate asks once per link)."""
    return set(_ids(page.read_text(encoding="utf-8")))


def subpath_site(tmp_path_factory) -> Path:
    """The site built with ``SITE_URL`` = a project site under ``/REPO/``, once per run
    (shared by tests/site and tests/browser, and by the xdist workers; read it, never modify it)."""
    return shared_build(tmp_path_factory, "site-subpath", env={"SITE_URL": SUBPATH_SITE_URL})
