"""The finder's answers for the tests, computed once per test process for each data folder while
none of its files changes (about 3 CPU-seconds a computation: the browser's finder tests, the
page's claims, the needs table's claims, the method labels, the trainer's step and the notebook
page's check read the same answers):

- ``finder_answers``: ``hooks.finder.compute.finder_data()``, the answers as a dict;
- ``finder_text``: ``hooks.finder.compute.finder_json()``, the text of ``assets/finder.json``.

Both come from one computation: ``finder_json`` run as the build runs it, its one call of
``finder_data`` recorded on the way (as ``tests/finder/test_finder_data.py`` records it), so the
text is the dict's serialisation. The answers are shared: read them, never modify them. A test
that checks the computation itself computes it afresh, and may hand its result on (``remember``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hooks.cache import Memo, tree_stamp
from hooks.data import load as data_module
from hooks.finder import compute

_answers = Memo()  # data folder -> finder_data() of it, while tree_stamp says nothing there changed


def _folder(data_dir: Path | None) -> Path:
    """``data_dir``, or the folder the render layer reads now (``hooks.data.load.DATA_DIR``, which
    ``frozen_catalogue`` points at the frozen catalogue), as ``compute`` resolves it."""
    return data_dir or data_module.DATA_DIR


def _computed(folder: Path) -> dict[str, Any]:
    """``compute.finder_json(folder)``'s own ``finder_data`` call, recorded (its text is kept by
    ``compute``'s memo), or ``finder_data`` itself when that text was computed before."""
    calls, real = [], compute.finder_data

    def recording(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(real(*args, **kwargs))
        return calls[-1]

    compute.finder_data = recording
    try:
        compute.finder_json(folder)
    finally:
        compute.finder_data = real
    return calls[0] if calls else real(compute.load_catalogue(folder))


def finder_answers(data_dir: Path | None = None) -> dict[str, Any]:
    """``compute.finder_data()`` of ``data_dir`` (default: ``hooks.data.load.DATA_DIR``), as
    ``compute.finder_json`` computes it (``finder_data(load_catalogue(folder))``)."""
    folder = _folder(data_dir)
    return _answers.get(folder, tree_stamp(folder), lambda: _computed(folder))


def finder_text(data_dir: Path | None = None) -> str:
    """``compute.finder_json()`` of ``data_dir`` (default: ``hooks.data.load.DATA_DIR``): the
    text of ``assets/finder.json`` (computed with ``finder_answers``'s dict when neither was yet)."""
    finder_answers(data_dir)
    return compute.finder_json(_folder(data_dir))


def remember(data_dir: Path, answers: dict[str, Any]) -> None:
    """Keep ``answers``, just computed as ``finder_data(load_catalogue(data_dir))``, for ``finder_answers``."""
    _answers.get(data_dir, tree_stamp(data_dir), lambda: answers)
