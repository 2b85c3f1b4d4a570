"""drop_list_repr_style finds mkdocs-jupyter's list-repr ``<style>`` from its literal start
(fast on a 1 MB page) and must remove exactly what ``LIST_REPR_STYLE_RE.sub("", html)``
removes: compared on pages built from the pieces that matter (every kind of whitespace
Python's ``\\s`` knows, quotes, escapes, unclosed and adjacent elements), with a fixed seed."""

from __future__ import annotations

import random

from hooks.notebooks.styles import LIST_REPR_STYLE_RE, drop_list_repr_style

PIECES = [
    "<style>",
    "</style>",
    "[",
    "]",
    "'",
    "\\",
    "\\'",
    ",",
    ", ",
    "'a'",
    "'.x{}'",
    "<style>['a']</style>",
    " ",
    "\n",
    "\t",
    "\u00a0",
    "\u2003",
    "\x1c",
    "\r\n",
    "x",
    "<p>",
    "<style type=\"text/css\">",
    "]</style>",
]


def test_the_same_as_the_regular_expression_on_every_kind_of_page():
    rng = random.Random(20261202)
    changed = 0
    for _ in range(4000):
        html = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        expected = LIST_REPR_STYLE_RE.sub("", html)
        assert drop_list_repr_style(html) == expected, repr(html)
        changed += expected != html
    assert changed > 200  # the pages did hold list-repr styles to remove


def test_mkdocs_jupyters_style_goes_with_the_whitespace_before_it():
    page = "<div>x</div>\n  " + r"<style>['.a { color: red }', 'b\\', 'c\'d']</style>" + "\n<p>y</p>"
    assert drop_list_repr_style(page) == "<div>x</div>\n<p>y</p>"
    assert drop_list_repr_style("<style>.a { color: red }</style>") == "<style>.a { color: red }</style>"
