"""The built pages load nothing from another origin (integrity.md, "Runtime"), read with
html5lib (an independent HTML5 parser), without a browser."""

from __future__ import annotations

from urllib.parse import urlsplit

import html5lib
import pytest

pytestmark = pytest.mark.slow

XHTML = "{http://www.w3.org/1999/xhtml}"
LOADING = {"stylesheet", "preload", "modulepreload", "icon", "manifest", "prefetch", "preconnect"}


def loads(page: str) -> list[str | None]:
    """Every URL the browser fetches by itself for this page's script and link elements."""
    tree = html5lib.parse(page)
    urls = [script.get("src") for script in tree.iter(f"{XHTML}script") if script.get("src") is not None]
    urls += [link.get("href") for link in tree.iter(f"{XHTML}link") if LOADING & set((link.get("rel") or "").split())]
    return urls


def test_no_page_loads_from_another_origin_and_no_empty_script(built_site):
    pages = sorted(built_site.rglob("*.html"))
    assert any("memory-notebook" in str(path) for path in pages)
    for path in pages:
        for url in loads(path.read_text(encoding="utf-8")):
            assert url.strip(), f"{path}: <script src=\"\">"
            parts = urlsplit(url)
            assert not parts.scheme and not parts.netloc, f"{path}: loads {url}"
