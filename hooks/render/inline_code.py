"""Inline code keeps its hyphenated words whole: ``--mixed_precision`` never breaks after a hyphen.

Browsers break a line after a hyphen, also inside ``<code>`` (no CSS property stops it),
so a phone showed "passa -" / "-mixed_precision", which invites copying ``-mixed_precision``.
Each word of an inline code element (``<code>`` outside ``<pre>``, plain text) that holds a
hyphen is wrapped in ``<span class="code-word">`` (``white-space: nowrap`` in guide.css); the
line may still break at the code's spaces, and after a path's slashes (a long source path
ran 90 px off a phone's screen). The text, what a reader copies, is unchanged.
"""

from __future__ import annotations

import re

INLINE_CODE = re.compile(r"<code>([^<]*-[^<]*)</code>")
WORD = re.compile(r"[^\s/]*-[^\s/]*")  # a path breaks at its slashes: only its hyphenated part is held whole
OPEN_TAG = re.compile(r"<(\w+)[^<>]*>\s*\Z")


def keep_code_words(html: str) -> str:
    """``html`` with every hyphenated word of its inline code elements in a no-wrap span."""

    def wrap(match: re.Match[str]) -> str:
        opened = OPEN_TAG.search(html, max(0, match.start() - 200), match.start())
        if opened and opened.group(1).lower() == "pre":  # a code block: lines never wrap
            return match.group(0)
        words = WORD.sub(lambda w: f'<span class="code-word">{w.group(0)}</span>', match.group(1))
        return f"<code>{words}</code>"

    return INLINE_CODE.sub(wrap, html)
