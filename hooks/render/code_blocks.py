"""Where the code blocks are in a rendered page, so that only they are parsed.

pymdownx.highlight renders every fenced block as ``<div class="… highlight">`` (an optional
``<span class="filename">`` title first), then ``<pre>…<code>…</code></pre></div>``; the
code inside is Pygments' spans of escaped text, so the first ``</code></pre></div>`` after
the opening closes the block. A notebook page's code cells have their own markup
(``notebook_cells``). Parsing a 60 KB page with BeautifulSoup takes about 0.1 s;
parsing its blocks alone, a few milliseconds.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterator

from hooks.errors import RenderError

BLOCK_START_RE = re.compile(r'<div class="(?:[^"]*\s)?highlight(?:\s[^"]*)?">')
BLOCK_END = "</code></pre></div>"
# A notebook's code cell as mkdocs-jupyter (nbconvert's template) renders it: Pygments' spans
# in ``<div class="highlight-ipynb hl-python"><pre>`` (no <code>), the language in ``hl-``.
CELL_START_RE = re.compile(r'<div class="highlight-ipynb hl-[\w+-]+"><pre(?: tabindex="0")?>')
CELL_END = "</pre></div>"
TITLE_RE = re.compile(r'<span class="filename">([^<]*)</span>')  # right after the block's opening tag


def _end(html: str, start: int, what: str) -> int:
    end = html.find(BLOCK_END, start)
    if end < 0:
        raise RenderError(f"{what}: no end of code block ({BLOCK_END}) after it")
    return end + len(BLOCK_END)


def code_blocks(html: str) -> Iterator[tuple[int, int]]:
    """(start, end) offsets in ``html`` of each code block, in order. Raises RenderError for an unclosed one."""
    position = 0
    while match := BLOCK_START_RE.search(html, position):
        position = _end(html, match.end(), f"code block at offset {match.start()}")
        yield match.start(), position


def notebook_cells(html: str) -> Iterator[tuple[int, int]]:
    """(start, end) offsets in ``html`` of each notebook code cell, in order (the highlighted
    code only: the cell's hidden copy text, ``div.clipboard-copy-txt``, lies outside). Raises
    RenderError for an unclosed one."""
    position = 0
    while match := CELL_START_RE.search(html, position):
        end = html.find(CELL_END, match.end())
        if end < 0:
            raise RenderError(f"notebook code cell at offset {match.start()}: no end ({CELL_END}) after it")
        position = end + len(CELL_END)
        yield match.start(), position


def titled_block(html: str, name: str) -> tuple[int, int] | None:
    """(start, end) offsets of the first code block titled ``name`` (``title="name"`` in the
    Markdown), from its title to the end of the block; None without one. The title is the
    block's own ``span.filename`` (its text, entities decoded and stripped, as
    ``verify.extract`` reads it): a ``<span class="filename">`` written elsewhere on the page
    does not count. Raises RenderError for an unclosed block."""
    for start, end in code_blocks(html):
        opening = BLOCK_START_RE.match(html, start)
        assert opening is not None  # code_blocks found a block there
        title = TITLE_RE.match(html, opening.end())
        if title and html_lib.unescape(title.group(1)).strip() == name:
            return title.start(), end
    return None
