"""How deeply a JSON text nests, read before ``json.loads`` is asked to parse it.

``json.loads`` recurses once per level: on CPython a config.json nested some thousands deep
ends in ``RecursionError``, and in the browser's Pyodide (WebAssembly, a smaller C stack) it
crashed the worker, so the finder said "the calculator did not load". Every reader of a
``config.json`` (``vram.models.load_model_config`` for the command line, ``vram.job.read_config``
for jobs, the finder's included) refuses a text nested deeper than ``MAX_JSON_DEPTH`` first.

``MAX_JSON_DEPTH`` = 32 levels of objects and arrays: a Hugging Face config.json nests a few
(2 in every model of ``snippets/data/models/``; a multimodal one's
``text_config.rope_scaling`` 3), so 32 refuses no real one.
"""

from __future__ import annotations

import re
from itertools import accumulate

MAX_JSON_DEPTH = 32
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)  # a JSON string, escapes included
_BRACKET_RE = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting_depth(text: str) -> int:
    """The deepest nesting of objects and arrays in the JSON ``text`` (0 for a bare value),
    counting brackets outside strings; linear in the text, no recursion. A malformed text
    gets a count too; ``json.loads`` says what is wrong with it."""
    brackets = _BRACKET_RE.findall(_STRING_RE.sub("", text))
    return max(accumulate(_STEP[bracket] for bracket in brackets), default=0)


def too_deep(text: str) -> bool:
    """Whether ``text`` nests deeper than ``MAX_JSON_DEPTH``."""
    return nesting_depth(text) > MAX_JSON_DEPTH
