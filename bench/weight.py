"""Page weight as a first-time reader gets it: every request Chromium makes for a page
(HTML, CSS, JS, fonts, images, the search index and worker), and the bytes each would
take gzip-compressed as GitHub Pages serves text (images and fonts as they are)."""

from __future__ import annotations

import gzip
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tests.browser.conftest import LAUNCH_ARGS, recorded, serve_site
from tests.conftest import CHROMIUM

# GitHub Pages compresses text and WebAssembly on the fly (a .wasm is served gzip-encoded:
# maxence-charriere/go-app#866), by content type: a file of another type goes as it is (a .gz
# is sent as application/octet-stream with no Content-Encoding: isaacs/github#611). The
# finder's packed files (.zst: Zstandard, hooks/finder/pyodide_assets.py) are sent as they are.
COMPRESSED = {".html", ".css", ".js", ".mjs", ".json", ".xml", ".svg", ".txt", ".map", ".ttf", ".otf", ".wasm"}
KIND = {"document": "html", "stylesheet": "css", "script": "js", "font": "fonts", "image": "images"}


@dataclass
class Weight:
    page: str
    requests: int = 0
    bytes_by_kind: Counter = field(default_factory=Counter)
    outside: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.bytes_by_kind.values())


def served_size(path: Path) -> int:
    data = path.read_bytes()
    return len(gzip.compress(data, compresslevel=6)) if path.suffix in COMPRESSED else len(data)


def kind_of(resource_type: str, path: Path) -> str:
    if resource_type in KIND:
        return KIND[resource_type]
    if path.suffix in {".woff", ".woff2", ".ttf", ".otf"}:
        return "fonts"
    if path.suffix in {".png", ".svg", ".jpg", ".jpeg", ".webp", ".gif", ".ico"}:
        return "images"
    if path.suffix == ".js":
        return "js"
    return "data"  # search index, sitemap, ...


def requested_bytes(site: Path, origin: str, requests) -> dict[str, int]:
    """Site path -> bytes served (``served_size``) for every request of the site's own origin."""
    sizes: dict[str, int] = {}
    for request in requests:
        parts = urlsplit(request.url)
        if f"{parts.scheme}://{parts.netloc}" != origin:
            continue
        file = site / unquote(parts.path).lstrip("/")
        if file.is_dir():
            file = file / "index.html"
        if file.is_file():
            sizes[str(file.relative_to(site))] = served_size(file)
    return sizes


def page_weights(site: Path, pages: list[str]) -> list[Weight]:
    """Load each page (URL path relative to the site root) in a fresh Chromium context."""
    from playwright.sync_api import sync_playwright

    weights = []
    with serve_site(site, "/") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            for page_path in pages:
                context = browser.new_context()
                page = context.new_page()
                recorder = recorded(page)
                page.goto(server.url(page_path), wait_until="networkidle")
                weight = Weight(page_path, requests=len(recorder.requests))
                for request in recorder.requests:
                    parts = urlsplit(request.url)
                    if f"{parts.scheme}://{parts.netloc}" != server.origin:
                        weight.outside.append(request.url)
                        continue
                    file = site / unquote(parts.path).lstrip("/")
                    if file.is_dir():
                        file = file / "index.html"
                    if file.is_file():
                        weight.bytes_by_kind[kind_of(request.resource_type, file)] += served_size(file)
                weights.append(weight)
                context.close()
        finally:
            browser.close()
    return weights
