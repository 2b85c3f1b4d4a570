"""No notebook runs, or is shown from a cache, unless its code cells use only the names
``verify/block_names.py`` lists for notebooks (issue 33, hole 3: comments are not behaviour).

A notebook runs in IPython, where a cell can read the text of every cell (``In``, ``_ih``,
``get_ipython()``, ``%history``), and the French notebook runs French comments
(``hooks/notebooks/translated.py``): a cell that read its comments would compute and show
otherwise in French. ``check_notebook_names`` reads a notebook of ``docs/`` and passes its code
cells, in order, to ``verify.block_names.check_cells``; ``hooks/notebooks/pages.py`` calls it
on every notebook before any is executed or taken from a cache. Cells count among the code
cells from 1, as the page numbers them (``In [2]``: code cell 2). A development build keeps an
empty entry per accepted notebook in ``.cache/block-names`` (``hooks.checks.same_code``'s store,
under the SHA-256 of Python's version, the allow-lists and the cells' code); a publication build
checks every time. The caller reads each notebook once and runs the bytes it checked
(``hooks/notebooks/pages.py``). Pure: no MkDocs import.
"""

from __future__ import annotations

import json
from pathlib import Path

from hooks.cache import stored
from hooks.checks.same_code import KEEP, names_key
from hooks.errors import RenderError
from verify.block_names import BlockNameError, check_cells


def code_cells(cells: list, name: str) -> list[tuple[str, str]]:
    """(source, ``NAME: code cell N``) of each code cell of ``cells`` (a notebook's, in order)."""
    found = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            found.append(("".join(source) if isinstance(source, list) else str(source), ""))
    return [(source, f"{name}: code cell {number}") for number, (source, _) in enumerate(found, start=1)]


def check_notebook_names(notebook: Path, name: str, store: Path | None = None, source: bytes | None = None) -> None:
    """Raise RenderError, one line naming ``name`` (the notebook as the message shows it:
    ``docs/memory-notebook.fr.ipynb``), the code cell and its line, for a line of IPython
    (``%history``, ``!ls``), code that is not Python or a name the notebook lists lack. With a
    ``store`` (a development build), cells accepted before are not checked again. ``source``:
    the notebook's bytes, read once by the caller, which then runs these bytes (None reads
    ``notebook``)."""
    try:
        text = (notebook.read_bytes() if source is None else source).decode("utf-8")
        cells = json.loads(text).get("cells", [])
    except (OSError, ValueError, AttributeError) as exc:
        raise RenderError(f"{name}: not a readable notebook ({exc})") from None
    found = code_cells(cells if isinstance(cells, list) else [], name)
    if not found:
        return

    def check() -> bytes:
        try:
            check_cells(found)
        except BlockNameError as exc:
            raise RenderError(str(exc)) from None
        return b""

    if store is None:
        check()
        return
    stored(
        store,
        names_key("\0".join(["notebook cells", *(source for source, _ in found)])),
        check,
        suffix=".ok",
        keep=KEEP,
    )
