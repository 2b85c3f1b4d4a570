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
matches, which would make Python decode the whole file otherwise. ``safe_comment`` checks
every translation when the catalogue is loaded; ``hooks/same_code.py`` then checks the
built code of every language against the default one, as Python reads it.
"""

from __future__ import annotations

import re
import unicodedata

from selectolax.lexbor import LexborHTMLParser

from .code_blocks import code_blocks
from .data import SNIPPETS_DIR, load_yaml, text
from .errors import RenderError
from .languages import DEFAULT_LANGUAGE, LANGUAGES

COMMENT_CLASSES = {"c", "c1", "cm", "cs"}  # Pygments comment tokens; shebangs ("ch") stay as they are
COMMENT_SELECTOR = ", ".join(f"span.{name}" for name in sorted(COMMENT_CLASSES))
ANY_COMMENT_RE = re.compile(r'<span class="(?:%s)">' % "|".join(sorted(COMMENT_CLASSES)))
MARKER_RE = re.compile(r"^(?P<marker>#+\s*|//\s*)(?P<body>.*?)(?P<trail>\s*)$", re.S)
CATALOGUE = "snippets/comments.yaml"
CODING_COOKIE_RE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")  # PEP 263, as tokenize applies it
FORBIDDEN_CATEGORIES = {"Cc": "a control character", "Cf": "a format character", "Zl": "a line separator",
                        "Zp": "a paragraph separator", "Cs": "a surrogate"}
CHARACTER_NAMES = {"\n": "a newline", "\r": "a carriage return", "\f": "a form feed", "\t": "a tab"}


def safe_comment(text: str) -> str:
    """``text`` if it can only ever be the text of one comment line; raises ValueError naming
    the character (newline, carriage return, backslash, control or format character) or the
    coding cookie that could change what Python runs."""
    for char in text:
        if char == "\\":
            raise ValueError("contains a backslash, which could start an escape if Python decoded the file otherwise")
        kind = CHARACTER_NAMES.get(char) or FORBIDDEN_CATEGORIES.get(unicodedata.category(char))
        if kind:
            raise ValueError(f"contains {kind} (U+{ord(char):04X}); a comment is one line of plain text")
    cookie = CODING_COOKIE_RE.match(f"# {text}")
    if cookie:
        shown = cookie.group(0)[cookie.group(0).rfind("coding", 0, cookie.start(1)):]
        raise ValueError(f"matches Python's coding-cookie rule ({shown!r}): "
                         "on line 1 or 2 it would make Python decode the file otherwise")
    return text


def load_catalogue(lang: str) -> dict[str, str]:
    """Italian comment text -> its ``lang`` translation. Raises RenderError."""
    entries = load_yaml("comments", data_dir=SNIPPETS_DIR)
    if not isinstance(entries, list):
        raise RenderError(f"{CATALOGUE}: expected a list of {{it: ..., fr: ...}} entries")
    catalogue = {}
    for i, entry in enumerate(entries, start=1):
        source = text(entry, DEFAULT_LANGUAGE, f"{CATALOGUE}: entry {i}")
        for other in LANGUAGES:
            if other != DEFAULT_LANGUAGE:
                try:
                    safe_comment(text(entry, other, f"{CATALOGUE}: entry {i}"))
                except ValueError as exc:
                    raise RenderError(f"{CATALOGUE}: entry {i} ({source!r}): {other}: {exc}") from None
        catalogue[source] = text(entry, lang, f"{CATALOGUE}: entry {i}")
    return catalogue


def check_catalogue() -> None:
    """Load the catalogue once to check every translation (every build). Raises RenderError."""
    load_catalogue(DEFAULT_LANGUAGE)


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
