"""Comments are not behaviour in a notebook either (issue 33, hole 3): the French notebook runs
French comments, and in IPython a cell can read the text of every cell. Before any notebook is
executed or taken from a cache, the build (``use_executed_notebooks``, what ``on_files`` calls)
refuses one whose code cells use a name ``verify/block_names.py`` does not list for notebooks,
in one line naming the notebook, the code cell (as the page numbers it: ``In [2]``) and the line.

Each attack below is a documented way for a cell to read the cells' text (IPython's reference,
"Input caching system": ``_ih``, ``In``, ``_i3``; ``get_ipython().history_manager``; the
``%history`` magic; ``inspect.getsource``), written into a copy of the real French notebook at
a place typed here; the oracle for "today's notebooks need these names" is the notebooks
themselves, which pass.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from hooks.errors import RenderError
from hooks.notebooks import execute, pages
from hooks.notebooks.cell_names import check_notebook_names
from hooks.notebooks.pages import use_executed_notebooks
from tests.conftest import REPO_ROOT

NOTEBOOK = "memory-notebook"
# (line written into code cell 2, before its line 2; what the message names)
ATTACKS = {
    "_ih": ("text = _ih[-1]", "_ih is not on the allow-list"),
    "In[-1]": ("text = In[-1]", "In is not on the allow-list"),
    "_i2": ("text = _i2", "_i2 is not on the allow-list"),
    "get_ipython()": ("text = get_ipython().history_manager", "get_ipython is not on the allow-list"),
    "%history": ("%history -n 1-3", "'%history -n 1-3', a line of IPython"),
    "!cat": ("!cat docs/memory-notebook.fr.ipynb", "'!cat docs/memory-notebook.fr.ipynb', a line of IPython"),
    "inspect.getsource": (
        "import inspect; text = inspect.getsource(figure)",
        "import inspect is not on the allow-list",
    ),
    "str.format's attributes": ('text = "{0.__globals__[In]}".format(read)', ".format is not on the allow-list"),
    "IPython's In bound by the cell": ("In = {}", "In (a name of Python's or IPython's, bound by the code)"),
}


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout with the real notebooks of docs/, and a build's view of them (files, config);
    running or looking up a notebook fails the test (nothing refused may run or be shown)."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")
    for lang in ("it", "fr"):
        shutil.copy(REPO_ROOT / "docs" / f"{NOTEBOOK}.{lang}.ipynb", root / "docs")
    files = [
        SimpleNamespace(
            src_uri=f"{NOTEBOOK}.{lang}.ipynb", abs_src_path=str(root / "docs" / f"{NOTEBOOK}.{lang}.ipynb")
        )
        for lang in ("it", "fr")
    ]
    config = SimpleNamespace(
        config_file_path=str(root / "mkdocs.yml"),
        docs_dir=str(root / "docs"),
        plugins={"mkdocs-jupyter": SimpleNamespace(config={"kernel_name": "python3"})},
    )

    def ran(*args, **kwargs):
        raise AssertionError("a notebook was executed or looked up before its names were checked")

    monkeypatch.setattr(pages, "executed_notebooks", ran)
    monkeypatch.setattr(execute, "execute", ran)
    return root, files, config


def insert(notebook: Path, cell: int, before_line: int, text: str) -> None:
    """``text`` as a line of code cell ``cell`` (from 1) of ``notebook``, before its line ``before_line``."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"][cell - 1]
    lines = "".join(code["source"]).splitlines(keepends=True)
    lines.insert(before_line - 1, text + "\n")
    code["source"] = lines
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_cell_that_could_read_the_cells_text_is_refused_before_anything_runs(checkout, attack):
    root, files, config = checkout
    line, construct = ATTACKS[attack]
    insert(root / "docs" / f"{NOTEBOOK}.fr.ipynb", cell=2, before_line=2, text=line)
    with pytest.raises(RenderError) as caught:
        use_executed_notebooks(files, config, "it")
    message = str(caught.value)
    assert message.startswith(f"docs/{NOTEBOOK}.fr.ipynb: code cell 2, line 2: {construct}"), message
    assert "\n" not in message and "verify/block_names.py" in message


def test_a_use_before_a_later_cell_binds_the_name_is_refused(checkout):
    """A name bound in a later cell counts as the notebook's own everywhere; IPython's, read by
    an earlier cell, would still be IPython's: binding it is refused where it is bound."""
    root, files, config = checkout
    notebook = root / "docs" / f"{NOTEBOOK}.it.ipynb"
    insert(notebook, cell=1, before_line=1, text="text = _ih")
    insert(notebook, cell=4, before_line=1, text="_ih = []")
    with pytest.raises(RenderError, match=rf"^docs/{NOTEBOOK}\.it\.ipynb: code cell 4, line 1: _ih \(a name of"):
        use_executed_notebooks(files, config, "it")


def test_todays_notebooks_pass():
    """Every notebook of docs/ (their cells use what the set-up cell binds: one program)."""
    notebooks = sorted((REPO_ROOT / "docs").glob("*.ipynb"))
    assert {path.name for path in notebooks} >= {f"{NOTEBOOK}.it.ipynb", f"{NOTEBOOK}.fr.ipynb"}
    for path in notebooks:
        check_notebook_names(path, f"docs/{path.name}")


def test_a_cell_alone_lacks_what_the_set_up_cell_binds():
    """The oracle for "one program": code cell 2 checked without cell 1 is refused at the first
    name cell 1 binds (``read``, line 2), so the pass above needs the cells together."""
    from verify.block_names import BlockNameError, check_cells

    nb = json.loads((REPO_ROOT / "docs" / f"{NOTEBOOK}.it.ipynb").read_text(encoding="utf-8"))
    second = "".join([c for c in nb["cells"] if c["cell_type"] == "code"][1]["source"])
    assert second.splitlines()[1].startswith("entry = read(")
    with pytest.raises(BlockNameError, match=r"^cell 2, line 2: read is not on the allow-list"):
        check_cells([(second, "cell 2")])
