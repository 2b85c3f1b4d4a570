"""The page transform: ``render_markdown(markdown, lang) -> markdown``.

Tables first (their cells may hold number placeholders), then numbers. What the
placeholders render is a function of the page's Markdown, the language and the files it
reads (``snippets/data/``: the data files and the models' configs; the render layer's rule
files, ``hooks/render/*.yaml``), so a page whose Markdown and those files are unchanged since the last
rebuild of a ``mkdocs serve`` process is not rendered again (``hooks.cache.Memo``, stamped by
their modification times and sizes); a code edit restarts the server (``hooks/serve.py``).
A development build also keeps each rendered page in ``.cache/pages`` (``STORE_DIR``, through
``hooks.cache.stored``) under the SHA-256 of the page's Markdown, the language and everything
the renderers read or run (``render_inputs_digest``), so the next build process renders only
what changed; a publication build renders every page (``store=None``).
"""

from __future__ import annotations

from pathlib import Path

from hooks.cache import Memo, file_stamp, inputs_digest, stored, tree_stamp
from hooks.errors import RenderError
from hooks.finder.page import FINDER
from hooks.render.calibration import CALIBRATION
from hooks.render.catalogue_prose import CATALOGUE_PROSE
from hooks.render.numbers import NUMBERS
from hooks.render.placeholders import expand
from hooks.render.tables import table
from hooks.render.timing import TIMING
from verify.languages import DEFAULT_LANGUAGE, LANGUAGES

RENDERERS = {"table": table, **NUMBERS, **FINDER, **TIMING, **CATALOGUE_PROSE, **CALIBRATION}
RENDER_DIR = Path(__file__).resolve().parent
_rendered = Memo()  # (markdown, lang) -> the rendered Markdown, while what it read is unchanged
KEEP = 64  # rendered pages kept (each language of each page, and the versions an edit replaced)


STORE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "pages"  # rendered pages, by render_inputs_digest
# the installed distributions the renderers import (besides Python's own library)
LIBRARIES = ("Babel", "pydantic", "pydantic-core", "PyYAML", "selectolax", "annotated-types", "typing_extensions")


def render_markdown(markdown: str, lang: str, store: Path | None = None) -> str:
    """Expand every ``{{ ... }}`` placeholder of ``markdown`` for ``lang``; with a ``store``
    folder (a development build: ``STORE_DIR``), the result is kept there and read by the next
    build process whose inputs are unchanged (module docstring).

    Raises RenderError (unknown placeholder, table, key, bad argument, missing
    translation, unreadable data file).
    """
    if lang not in LANGUAGES:
        raise RenderError(f"unknown language {lang!r} (known: {', '.join(LANGUAGES)})")
    if len(_rendered) >= KEEP:
        _rendered.clear()
    return _rendered.get((markdown, lang, store), inputs_stamp(), lambda: _stored_or_rendered(markdown, lang, store))


def _stored_or_rendered(markdown: str, lang: str, store: Path | None) -> str:
    if store is None:
        return _render(markdown, lang)
    key = inputs_digest("rendered page", (render_inputs_digest(), lang, markdown))
    return stored(store, key, lambda: _render(markdown, lang).encode(), suffix=".md", keep=KEEP).decode()


def render_inputs_digest() -> str:
    """SHA-256 (hex) of everything a renderer reads or runs besides the page: every file of
    ``snippets/`` and of the data folder the loaders read now, the rule files
    (``hooks/render/*.yaml``), every ``.py`` of ``hooks/``, ``vram/`` and ``verify/``, the
    site's languages, and the versions of Python and of ``LIBRARIES``. Each folder is read once
    per process while none of its files changes (``hooks.cache.tree_digest``, ``code_digest``)."""
    from hooks.cache import code_digest, package_versions, tree_digest
    from hooks.data import load

    root = Path(__file__).resolve().parents[2]
    return inputs_digest(
        "render inputs",
        (
            *package_versions(LIBRARIES),
            f"languages={LANGUAGES!r} default={DEFAULT_LANGUAGE!r}",
            tree_digest(load.SNIPPETS_DIR),
            tree_digest(load.DATA_DIR),
            code_digest(root),
        ),
        (RENDER_DIR.glob("*.yaml"), RENDER_DIR),
    )


def inputs_stamp() -> tuple:
    """The stamp of every file a renderer may read: the data folder the loaders read now
    (``hooks.data.load.DATA_DIR``; a test may point it elsewhere) and ``hooks/render/*.yaml``."""
    from hooks.data import load

    return tree_stamp(load.DATA_DIR), tuple(file_stamp(path) for path in sorted(RENDER_DIR.glob("*.yaml")))


def _render(markdown: str, lang: str) -> str:
    with_tables = expand(markdown, lang, RENDERERS, only={"table"})
    return expand(with_tables, lang, RENDERERS)
