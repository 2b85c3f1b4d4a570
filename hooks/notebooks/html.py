"""The notebook pages as pages of the site: explicit heading anchors, their table of
contents, and copy buttons in the page's language.

- **Anchors.** A Markdown cell writes its heading as the Markdown pages do,
  ``## Da 1 a 8 schede { #per-card }``, so both languages share the anchor and the
  language switcher keeps the section. mkdocs-jupyter (0.26) knows no attribute syntax:
  its HTML has ``<h2 id="Da-1-a-8-schede-{-#per-card-}">…{ #per-card }<a
  class="anchor-link">``, and its table of contents the same title with a slug of it.
  ``explicit_anchors`` gives such a heading its id, removes the marker from its text,
  and ``retitle_toc`` does the same to the page's table of contents. It can go when
  mkdocs-jupyter reads the attribute itself.
- **Search.** ``exclude_from_search`` keeps the cells' copy buttons, hidden copy texts and
  prompts out of the search index (results showed "In [2]: Copied!" and the code twice).
- **Copy buttons.** mkdocs-jupyter's template labels the copy button of every code cell
  "Copy to Clipboard" / "Copied!" in English. ``translate_copy_buttons`` uses the strings
  Material already gives the page in its language (``clipboard.copy`` /
  ``clipboard.copied`` of ``__config``), so no string is typed here.

Pure functions of text and of the table of contents' items (objects with ``id``,
``title`` and ``children``); no MkDocs import.
"""

from __future__ import annotations

import html as html_lib
import json
import re

from hooks.errors import RenderError

ANCHOR_RE = re.compile(r"\s*\{\s*#([A-Za-z][\w-]*)\s*\}\s*$")
HEADING_RE = re.compile(
    r'<h([1-6]) id="([^"]*)">((?:(?!</h[1-6]>).)*?)(<a class="anchor-link" href="#)([^"]*)(">)', re.DOTALL
)
CONFIG_RE = re.compile(r'<script id="__config" type="application/json">(.*?)</script>', re.DOTALL)
COPY_LABEL = 'aria-label="Copy to Clipboard"'
SEARCH_NOISE_RE = re.compile(
    r'(<clipboard-copy|<div(?= class="(?:clipboard-copy-txt|jp-InputPrompt |jp-OutputPrompt )))([\s>])'
)
COPIED_RE = re.compile(r'<span class="notice" hidden(?:="")?>Copied!</span>')


def split_anchor(title: str) -> tuple[str, str | None]:
    """``"Title { #id }"`` -> ``("Title", "id")``; a title without a marker -> ``(title, None)``."""
    match = ANCHOR_RE.search(title)
    return (title[: match.start()], match.group(1)) if match else (title, None)


def explicit_anchors(html: str) -> str:
    """Headings of a mkdocs-jupyter page with their ``{ #id }`` marker as their id.

    Raises RenderError if two headings ask for the same id.
    """
    seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        level, _, inner, link_open, _, link_close = match.groups()
        text, anchor = split_anchor(inner)
        if anchor is None:
            return match.group(0)
        if anchor in seen:
            raise RenderError(f"two headings have the anchor {{ #{anchor} }}")
        seen.add(anchor)
        return f'<h{level} id="{anchor}">{text}{link_open}{anchor}{link_close}'

    return HEADING_RE.sub(replace, html)


def retitle_toc(items) -> None:
    """Give every item of a table of contents (and its children) the id and title its
    ``{ #id }`` marker asks for, in place."""
    for item in items:
        title, anchor = split_anchor(item.title)
        if anchor is not None:
            item.title, item.id = title, anchor
        retitle_toc(item.children)


def notebook_content(html: str, toc) -> str:
    """A mkdocs-jupyter page's content with its explicit anchors and its cells' interface
    left out of search; its ``toc`` retitled in place."""
    retitle_toc(toc)
    return focusable_cells(exclude_from_search(explicit_anchors(html)))


CELL_PRE = '<div class="highlight-ipynb hl-python"><pre>'


def focusable_cells(html: str) -> str:
    """A code cell's lines never wrap (guide.css): a long one scrolls sideways, and a
    keyboard reaches the scrolling cell (``tabindex="0"``, as Material gives its code blocks)."""
    return html.replace(CELL_PRE, '<div class="highlight-ipynb hl-python"><pre tabindex="0">')


def exclude_from_search(html: str) -> str:
    """``html`` with ``data-search-exclude`` (Material's search skips such an element) on what
    mkdocs-jupyter adds around each cell: the copy button with its "Copied!" notice (in
    English until ``translate_copy_buttons``, which runs after search has read the page),
    the hidden copy text (the code again, with the comments the notebook ran) and the
    "In [n]:" prompts."""
    return SEARCH_NOISE_RE.sub(lambda match: f"{match.group(1)} data-search-exclude{match.group(2)}", html)


def translate_copy_buttons(html: str) -> str:
    """The copy buttons of mkdocs-jupyter's code cells, in the page's language (Material's
    ``clipboard.copy`` / ``clipboard.copied`` strings of the page's ``__config``).

    Returns ``html`` unchanged without such buttons; raises RenderError if the page has
    buttons but no strings to give them.
    """
    if COPY_LABEL not in html and not COPIED_RE.search(html):
        return html
    match = CONFIG_RE.search(html)
    try:
        strings = json.loads(match.group(1))["translations"] if match else {}
        copy, copied = strings["clipboard.copy"], strings["clipboard.copied"]
    except (ValueError, KeyError, TypeError):
        raise RenderError(
            "the page has notebook copy buttons but no clipboard.copy/clipboard.copied "
            "strings in its __config (Material's translations)"
        ) from None
    html = html.replace(COPY_LABEL, f'aria-label="{html_lib.escape(copy)}" title="{html_lib.escape(copy)}"')
    return COPIED_RE.sub(f'<span class="notice" hidden>{html_lib.escape(copied, quote=False)}</span>', html)
