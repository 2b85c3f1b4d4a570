"""The search index entries of each page, kept by a development build.

Material's search plugin divides every page's HTML into sections on every build
(``SearchIndex.add_entry_from_context`` in ``material/plugins/search/plugin.py``: an
``html.parser.HTMLParser`` subclass that tests each tag against every open element): about a
sixth of a warm build's instructions (2.2 G of 12.6 G counted by ``python -m bench.instructions``,
2026-12-05, mkdocs-material 9.8.1). What it appends to the index is a function of the page's
HTML, URL, title and table of contents, of the front matter keys it reads (``search``,
``tags``, ``title``) and of the plugin's code (the installed mkdocs-material, and whether jieba
is installed: it segments Chinese text). A development build keeps each page's entries in
``.cache/search`` (``STORE_DIR``, through ``hooks.cache.stored``) under the SHA-256 of those
(``entries_key``), so the next build process parses only the pages that changed; a publication
build (no store) lets the plugin parse every page. The entries are kept as the JSON the plugin
writes them in (``json.dumps(..., default=str)``), so a page's entries read back give the same
index bytes. Pure: no MkDocs import (the plugin's index is passed in).
"""

from __future__ import annotations

import json
from pathlib import Path

from hooks.cache import inputs_digest, package_versions, stored

STORE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "search"  # entries, by entries_key
KEEP = 64  # pages' entries kept (each language of each page, and the versions an edit replaced)
READ_META = ("search", "tags", "title")  # the front matter keys SearchIndex reads


def use_stored_entries(search_index, store: Path | None) -> None:
    """Make ``search_index`` (the search plugin's ``SearchIndex`` of this build) read each page's
    entries from ``store`` when they were kept under the same ``entries_key``, and keep them there
    otherwise. With no store (a publication build), or an index without the method and list this
    wraps (another version of the plugin), nothing changes."""
    parse = getattr(search_index, "add_entry_from_context", None)
    if store is None or parse is None or not isinstance(getattr(search_index, "entries", None), list):
        return

    def add_entry_from_context(page) -> None:
        parsed = []

        def compute() -> bytes:
            start = len(search_index.entries)
            parse(page)
            parsed.append(True)
            return json.dumps(search_index.entries[start:], default=str).encode()

        content = stored(store, entries_key(page), compute, suffix=".json", keep=KEEP)
        if not parsed:
            search_index.entries.extend(json.loads(content))

    search_index.add_entry_from_context = add_entry_from_context


def entries_key(page) -> str:
    """SHA-256 (hex) of what the search plugin's entries of ``page`` depend on: the versions of
    Python, mkdocs-material and jieba, the page's URL, title, table of contents (each item's id
    and URL, nested), the front matter keys it reads and its HTML."""
    meta = {name: page.meta.get(name) for name in READ_META}
    return inputs_digest(
        "search entries",
        (
            *package_versions(("mkdocs-material", "jieba")),
            str(page.url),
            str(page.title),
            json.dumps(meta, sort_keys=True, default=repr),
            json.dumps(_toc(page.toc)),
            page.content or "",
        ),
    )


def _toc(items) -> list:
    return [[item.id, item.url, _toc(item.children)] for item in items]
