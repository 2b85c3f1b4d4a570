"""JSON to embed in an HTML ``<script>`` element, written so that no data can end or bend it.

Inside ``<script>``, the HTML tokenizer looks for ``</script`` and also treats ``<!--``
followed by ``<script`` as an "escaped" state in which ``</script>`` no longer ends the
element: a data text such as ``<!--<script>`` swallows the rest of the page, and escaping
``</`` alone does not prevent it. ``script_json`` escapes every ``<``, ``>`` and ``&`` (and
the JavaScript line separators U+2028, U+2029) as ``\\uXXXX``, which JSON reads back as the
same characters (the WHATWG HTML standard, "Restrictions for contents of script elements").
"""

from __future__ import annotations

import json
from typing import Any

_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def script_json(value: Any, **dumps_options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **dumps_options)`` safe inside a ``<script>`` element."""
    return json.dumps(value, ensure_ascii=False, **dumps_options).translate(_ESCAPES)
