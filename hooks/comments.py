"""Translated comments in code blocks, with the code itself left byte-identical.

Mechanism: every snippet in ``snippets/`` is written once, with its comments in
Italian (the default language). ``snippets/comments.yaml`` lists each comment with
its translations (``- it: ... fr: ...``). After MkDocs has rendered a page, Pygments
has already marked comments as ``<span class="c1">`` (and ``c``, ``cm``, ``cs``) inside
``div.highlight``; for a non-default language each such span's text is replaced by
its translation (only the code blocks are parsed, with selectolax: hooks/code_blocks.py).
Code tokens are never touched, so copy buttons and extraction give the same code in
every language. A comment without a translation fails the build.

A translation is only ever the text of one comment, and Python runs bytes: a translation
may not hold a newline, a carriage return, a backslash, a control or format character
(bidirectional overrides included), or anything Python's coding-cookie rule (PEP 263)
matches, which would make Python decode the whole file otherwise. The schema of the
catalogue checks every translation whenever it is loaded (``hooks.schemas.safe_comment``);
``hooks/same_code.py`` then checks the built code of every language against the default
one, as Python reads it.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

from .code_blocks import code_blocks
from .data import SNIPPETS_DIR, load_yaml
from .errors import RenderError
from .languages import DEFAULT_LANGUAGE

COMMENT_CLASSES = {"c", "c1", "cm", "cs"}  # Pygments comment tokens; shebangs ("ch") stay as they are
COMMENT_SELECTOR = ", ".join(f"span.{name}" for name in sorted(COMMENT_CLASSES))
ANY_COMMENT_RE = re.compile(r'<span class="(?:%s)">' % "|".join(sorted(COMMENT_CLASSES)))
MARKER_RE = re.compile(r"^(?P<marker>#+\s*|//\s*)(?P<body>.*?)(?P<trail>\s*)$", re.S)
CATALOGUE = "snippets/comments.yaml"


def load_catalogue(lang: str) -> dict[str, str]:
    """Italian comment text -> its ``lang`` translation. Raises RenderError (the schema of
    ``snippets/comments.yaml``, ``hooks.schemas.CommentsFile``, checks every translation)."""
    return {entry[DEFAULT_LANGUAGE]: entry[lang] for entry in load_yaml("comments", data_dir=SNIPPETS_DIR)}


def translate_comments(html: str, lang: str, catalogue: dict[str, str] | None = None) -> str:
    """Return ``html`` with code comments in ``lang``; unchanged for the default language.

    Raises RenderError naming the first comment that has no translation.
    """
    if lang == DEFAULT_LANGUAGE or not ANY_COMMENT_RE.search(html):
        return html
    catalogue = load_catalogue(lang) if catalogue is None else catalogue
    parts, done = [], 0
    for start, end in code_blocks(html):
        block = html[start:end]
        if ANY_COMMENT_RE.search(block):
            parts += [html[done:start], _translate_block(block, lang, catalogue)]
            done = end
    return "".join(parts) + html[done:] if parts else html


def _translate_block(block: str, lang: str, catalogue: dict[str, str]) -> str:
    """One code block's HTML with its comments in ``lang`` (unchanged if none has prose)."""
    tree = LexborHTMLParser(block)
    changed = False
    for span in tree.css(COMMENT_SELECTOR):
        match = MARKER_RE.match(span.text())
        if not match or not re.search(r"[^\W\d_]", match.group("body")) or span.first_child is None:
            continue
        body = match.group("body")
        if body not in catalogue:
            raise RenderError(f"code comment {body!r} has no '{lang}' translation in {CATALOGUE}")
        span.first_child.replace_with(match.group("marker") + catalogue[body] + match.group("trail"))
        changed = True
    return tree.css_first("div").html if changed else block
