"""The page transform: ``render_markdown(markdown, lang) -> markdown``.

Tables first (their cells may hold number placeholders), then numbers.
"""

from __future__ import annotations

from hooks.errors import RenderError
from hooks.render.catalogue_prose import CATALOGUE_PROSE
from hooks.finder.page import FINDER
from verify.languages import LANGUAGES
from hooks.render.numbers import NUMBERS
from hooks.render.placeholders import expand
from hooks.render.tables import table
from hooks.render.timing import TIMING

RENDERERS = {"table": table, **NUMBERS, **FINDER, **TIMING, **CATALOGUE_PROSE}


def render_markdown(markdown: str, lang: str) -> str:
    """Expand every ``{{ ... }}`` placeholder of ``markdown`` for ``lang``.

    Raises RenderError (unknown placeholder, table, key, bad argument, missing
    translation, unreadable data file).
    """
    if lang not in LANGUAGES:
        raise RenderError(f"unknown language {lang!r} (known: {', '.join(LANGUAGES)})")
    with_tables = expand(markdown, lang, RENDERERS, only={"table"})
    return expand(with_tables, lang, RENDERERS)
