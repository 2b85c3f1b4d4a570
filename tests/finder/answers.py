"""``finder_answers``: ``hooks.finder.compute.finder_data()`` computed once per test process for
each data folder while none of its files changes (about 3 CPU-seconds a computation: the
browser's finder tests, the page's claims and the needs table's claims read the same answers).

The answers are shared: read them, never modify them. A test that checks the computation itself
(``tests/finder/test_finder_data.py``) computes it afresh, and may hand its result on (``remember``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hooks.cache import Memo, tree_stamp
from hooks.data import load as data_module
from hooks.finder import compute

_answers = Memo()  # data folder -> finder_data() of it, while tree_stamp says nothing there changed


def finder_answers(data_dir: Path | None = None) -> dict[str, Any]:
    """``compute.finder_data()`` of ``data_dir`` (default: the folder the render layer reads now,
    ``hooks.data.load.DATA_DIR``, which ``frozen_catalogue`` points at the frozen catalogue), as
    ``compute.finder_json`` computes it (``finder_data(load_catalogue(folder))``)."""
    folder = data_dir or data_module.DATA_DIR
    return _answers.get(folder, tree_stamp(folder), lambda: compute.finder_data(compute.load_catalogue(folder)))


def remember(data_dir: Path, answers: dict[str, Any]) -> None:
    """Keep ``answers``, just computed as ``finder_data(load_catalogue(data_dir))``, for ``finder_answers``."""
    _answers.get(data_dir, tree_stamp(data_dir), lambda: answers)
