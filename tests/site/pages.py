"""Helpers to read the built site: pages per language, parsed with BeautifulSoup."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin, urlparse

from bs4 import BeautifulSoup

from tests.conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
INCLUDE_RE = re.compile(r'^\s*--8<--\s+"([^"]+)"', re.MULTILINE)


def italian_pages(site: Path) -> list[Path]:
    """HTML pages of the Italian site (the root), relative paths, without the French tree."""
    return sorted(
        p.relative_to(site)
        for p in site.rglob("*.html")
        if p.relative_to(site).parts[0] not in {"fr", "assets", "search"}
    )


def soup(path: Path) -> BeautifulSoup:
    """The page parsed once per content (tests/site/test_gates_common.py ``parsed``): read it, never modify it."""
    from tests.site.test_gates_common import parsed

    return parsed(path)


def source_page(rel_html: Path) -> str | None:
    """docs/ stem of a built page: ``memory-formulas/index.html`` -> ``memory-formulas``."""
    if rel_html.name == "404.html":
        return None
    return "index" if rel_html.parent == Path(".") else str(rel_html.parent)


def snippet_includes(stem: str, lang: str) -> list[str]:
    """Snippet paths included, in order, by ``docs/<stem>.<lang>.md`` (empty for notebooks)."""
    page = DOCS / f"{stem}.{lang}.md"
    return INCLUDE_RE.findall(page.read_text(encoding="utf-8")) if page.exists() else []


def code_blocks(page: BeautifulSoup) -> list[str]:
    """The code of each highlighted block of the article, as a reader copies it."""
    article = page.select_one("article") or page
    return [code.get_text() for code in article.select("div.highlight pre > code")]


def switcher_target(page_file: Path, site: Path, lang: str) -> Path | None:
    """The file the language switcher of ``page_file`` points to for ``lang``."""
    link = soup(page_file).select_one(f'a.md-select__link[hreflang="{lang}"]')
    if link is None:
        return None
    base = "http://site/" + str(page_file.relative_to(site))
    path = urlparse(urljoin(base, str(link["href"]))).path.lstrip("/")
    target = site / path
    return target / "index.html" if path == "" or path.endswith("/") else target
