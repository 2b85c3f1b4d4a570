"""The page transform: ``render_markdown(markdown, lang) -> markdown``.

Tables first (their cells may hold number placeholders), then numbers. What the
placeholders render is a function of the page's Markdown, the language and the files it
reads (``snippets/data/``: the data files and the models' configs; the render layer's rule
files, ``hooks/render/*.yaml``), so a page whose Markdown and those files are unchanged since the last
rebuild of a ``mkdocs serve`` process is not rendered again (``hooks.cache.Memo``, stamped by
their modification times and sizes); a code edit restarts the server (``hooks/serve.py``).
"""

from __future__ import annotations

from pathlib import Path

from hooks.cache import Memo, file_stamp, tree_stamp
from hooks.errors import RenderError
from hooks.finder.page import FINDER
from hooks.render.calibration import CALIBRATION
from hooks.render.catalogue_prose import CATALOGUE_PROSE
from hooks.render.numbers import NUMBERS
from hooks.render.placeholders import expand
from hooks.render.tables import table
from hooks.render.timing import TIMING
from verify.languages import LANGUAGES

RENDERERS = {"table": table, **NUMBERS, **FINDER, **TIMING, **CATALOGUE_PROSE, **CALIBRATION}
RENDER_DIR = Path(__file__).resolve().parent
_rendered = Memo()  # (markdown, lang) -> the rendered Markdown, while what it read is unchanged
KEEP = 64  # rendered pages kept (each language of each page, and the versions an edit replaced)


def render_markdown(markdown: str, lang: str) -> str:
    """Expand every ``{{ ... }}`` placeholder of ``markdown`` for ``lang``.

    Raises RenderError (unknown placeholder, table, key, bad argument, missing
    translation, unreadable data file).
    """
    if lang not in LANGUAGES:
        raise RenderError(f"unknown language {lang!r} (known: {', '.join(LANGUAGES)})")
    if len(_rendered) >= KEEP:
        _rendered.clear()
    return _rendered.get((markdown, lang), inputs_stamp(), lambda: _render(markdown, lang))


def inputs_stamp() -> tuple:
    """The stamp of every file a renderer may read: the data folder the loaders read now
    (``hooks.data.load.DATA_DIR``; a test may point it elsewhere) and ``hooks/render/*.yaml``."""
    from hooks.data import load

    return tree_stamp(load.DATA_DIR), tuple(file_stamp(path) for path in sorted(RENDER_DIR.glob("*.yaml")))


def _render(markdown: str, lang: str) -> str:
    with_tables = expand(markdown, lang, RENDERERS, only={"table"})
    return expand(with_tables, lang, RENDERERS)
