"""What a notebook's run may read, in the checkout and outside it, and which bytes run.

In the checkout a run reads only ``snippets/`` and ``vram/`` (``READABLE``, tested in
test_notebooks.py). Outside it, the executed copies of the machine's store (named by a hash,
each holding one language's comments) sat one ``..`` away: ``Path('snippets/data') / '../..'``
is a path the names allow. So outside the checkout a run may read only what an honest run
needs, and nothing through a path that starts in the checkout; a run that read anything else
fails the build and keeps nothing. The oracle for "what an honest run needs" is an honest run:
the real notebook, executed here as the GPU runner executes it (a fresh ``HOME``, no store),
passes. And the build runs the bytes it checked: an editor that saves the notebook after the
check (``mkdocs serve``) changes nothing that runs.

Each attack reads a file typed here (``# un commentaire``), from a place a cell can name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from hooks.notebooks import execute as notebooks, pages
from hooks.notebooks.execute import NotebookError, executed_notebook
from tests.conftest import REPO_ROOT

SECRET = "# un commentaire\n"


def write(path: Path, *sources: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = new_notebook(
        cells=[new_code_cell(source) for source in sources],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, path)
    return path


def outputs(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "".join(
        o.get("text", "") or o.get("data", {}).get("text/plain", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """(a checkout at tmp_path/repo, a folder beside it, a store of executed notebooks beside
    it holding a French copy); the machine's store off."""
    monkeypatch.setenv("GUIDE_NOTEBOOK_STORE", "off")
    root = tmp_path / "repo"
    (root / "snippets" / "data").mkdir(parents=True)
    (root / "snippets" / "data" / "gpus.yaml").write_text("gpus: {}\n")
    (root / "vram").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    store = tmp_path / "store"
    store.mkdir()
    (store / "nb.fr.0123456789abcdef0123.ipynb").write_text(SECRET)
    return root, outside, store


def test_each_read_outside_what_a_notebook_may_read_is_refused(checkout, monkeypatch):
    """One run reads, each in its own ``try``: a copy in the store, the machine's store listed
    (a publication build uses no store, but the machine's is there), the standard library's
    ``os.py`` through ``..`` out of ``snippets/data`` (a file a run may read, by a path that
    leaves the checkout), a link of ``snippets/data`` to a file outside, that file itself; and
    ``os.py`` by its own path (allowed). Each refused read is one reason, in the run's order."""
    root, outside, store = checkout
    monkeypatch.setenv("GUIDE_NOTEBOOK_STORE", str(store))
    copy = store / "nb.fr.0123456789abcdef0123.ipynb"
    target = Path(os.path.realpath(os.__file__))
    relative = os.path.relpath(target, root / "snippets" / "data")
    assert relative.startswith("../")
    (root / "snippets" / "data" / "link.txt").symlink_to(outside / "secret.txt")
    reads = [
        f"Path({str(copy)!r}).read_text()",
        f"sorted(p.name for p in Path({str(store)!r}).iterdir())",
        f"(Path('snippets/data') / {relative!r}).read_text()",
        "Path('snippets/data/link.txt').read_text()",
        f"Path({str(outside / 'secret.txt')!r}).read_text()",
        f"Path({str(target)!r}).read_text()",
    ]
    cell = "from pathlib import Path\n" + "".join(f"try:\n    {read}\nexcept OSError:\n    pass\n" for read in reads)
    src = write(root / "docs" / "nb.it.ipynb", cell)
    dest = root / ".cache" / "notebooks" / "nb.it.run.ipynb"
    log = dest.with_name(dest.name + ".reads.log")
    with tempfile.TemporaryDirectory(prefix="guide-kernel-") as kernel_tmp:
        notebooks.execute(src, dest, root, "it", "python3", kernel_tmp=Path(kernel_tmp))
        denied = [Path(os.path.realpath(notebooks.machine_store()))]
        why = notebooks.refused_reads(log, root, notebooks.outside_readable(Path(kernel_tmp)), denied)
    assert why[:2] == [
        f"read {copy}, in a folder of executed notebooks (every language's copies)",
        f"read {store}/, in a folder of executed notebooks (every language's copies)",
    ]
    assert why[2] == f"read snippets/data/{relative}, which leaves the checkout (through .. or a link) for {target}"
    assert why[3] == (
        f"read snippets/data/link.txt, which leaves the checkout (through .. or a link) for {outside}/secret.txt"
    )
    assert why[4].startswith(f"read {outside}/secret.txt, outside the checkout and what a notebook may read there (")
    assert len(why) == 5  # os.py by its own path: Python's installation


def test_a_refused_run_fails_the_build_and_keeps_nothing(checkout):
    """Before: the copy in the store was read, and the run kept in .cache/notebooks and the store."""
    root, _, store = checkout
    copy = store / "nb.fr.0123456789abcdef0123.ipynb"
    src = write(root / "docs" / "nb.it.ipynb", f"from pathlib import Path\nprint(Path({str(copy)!r}).read_text())")
    cache = root / ".cache" / "notebooks"
    with pytest.raises(NotebookError) as caught:
        executed_notebook(src, root, "it", "python3", cache_dir=cache, store=store)
    assert str(caught.value) == (
        f"docs/nb.it.ipynb: the notebook read {copy}, in a folder of executed notebooks (every language's copies)"
    )
    assert not list(cache.glob("nb.*")), "a refused run kept something a later build could show"
    assert sorted(p.name for p in store.iterdir()) == [copy.name]


def test_the_kernels_temporary_folder_is_its_own_and_removed(checkout):
    """A run may write and read its temporary files (ipykernel keeps each cell's code there);
    they are in a folder of the run's, removed after it (before: /tmp, kept)."""
    root, _, _ = checkout
    src = write(
        root / "docs" / "tmp.it.ipynb",
        "import os, tempfile\nfolder = tempfile.mkdtemp()\n"
        "open(os.path.join(folder, 'x'), 'w').write('1')\n"
        "print(open(os.path.join(folder, 'x')).read(), folder)",
    )
    executed, ran = executed_notebook(src, root, "it", "python3", cache_dir=root / ".cache" / "notebooks")
    assert ran
    text, folder = outputs(executed).split()
    assert text == "1" and Path(folder).parent.name.startswith("guide-kernel-")
    assert not Path(folder).parent.exists()


def test_a_reads_log_the_hook_did_not_write_is_refused(checkout, monkeypatch):
    """A line of the log that is no JSON read of the hook (here, a bare path, as the log was
    written before) cannot be judged: the run is refused and nothing kept."""
    root, _, _ = checkout
    src = write(root / "docs" / "nb.it.ipynb", "6 * 7")

    def kernel(src, dest, repo_root, lang, kernel_name, timeout_s, source=None, kernel_tmp=None):
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(source or src.read_bytes())
        dest.with_name(dest.name + ".reads.log").write_text(f"{root / 'snippets' / 'data' / 'gpus.yaml'}\n")

    monkeypatch.setattr(notebooks, "execute", kernel)
    cache = root / ".cache" / "notebooks"
    with pytest.raises(
        NotebookError,
        match=r"^docs/nb\.it\.ipynb: what the run read cannot be judged \(line 1 of .*is no read the kernel's hook wrote\)$",
    ):
        executed_notebook(src, root, "it", "python3", cache_dir=cache)
    assert not list(cache.glob("nb.*"))


@pytest.mark.slow
def test_an_honest_run_of_the_real_notebook_reads_nothing_refused(tmp_path):
    """The real notebook, as the GPU runner runs it: a fresh HOME (matplotlib's caches cold, its
    fonts scanned), no store; in a process of its own (matplotlib keeps its folders per process).
    Its reads outside the checkout are only those of the allowed folders (the standard library,
    site-packages, matplotlib's, the kernel's own temporary folder)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MPL"))}
    env.update(HOME=str(home), GUIDE_NOTEBOOK_STORE="off", PYTHONPATH=str(REPO_ROOT))
    script = (
        "import sys; from pathlib import Path\n"
        "from hooks.notebooks.execute import executed_notebook\n"
        "root = Path(sys.argv[1])\n"
        "copy, ran = executed_notebook(root / 'docs/memory-notebook.it.ipynb', root, 'it', 'python3',"
        " cache_dir=Path(sys.argv[2]))\n"
        "print(ran, copy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(REPO_ROOT), str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran, copy = done.stdout.split()
    assert ran == "True" and Path(copy).is_file()
    reads = json.loads(next((tmp_path / "cache").glob("memory-notebook.it.*.reads.json")).read_text())
    assert "snippets/data/gpus.yaml" in reads  # the run was recorded: its reads are the calculator's
    assert (home / ".cache" / "matplotlib").is_dir()  # matplotlib's cache, in the fresh HOME


def test_the_bytes_checked_are_the_bytes_run(tmp_path, monkeypatch):
    """Under ``mkdocs serve`` a notebook is checked, then run: an editor that saves between the
    two (here, a cell that reads its own text through IPython's ``_ih``, which the check refuses)
    changes nothing that runs; the file holds the edit, the next build checks it."""
    monkeypatch.setenv("GUIDE_NOTEBOOK_STORE", "off")
    monkeypatch.setattr(notebooks, "_executed", {})
    root = tmp_path / "repo"
    (root / "mkdocs.yml").parent.mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")
    src = write(root / "docs" / "calcolo.it.ipynb", "6 * 7")
    files = [SimpleNamespace(src_uri=src.name, abs_src_path=str(src))]
    config = SimpleNamespace(
        config_file_path=str(root / "mkdocs.yml"),
        docs_dir=str(root / "docs"),
        plugins={"mkdocs-jupyter": SimpleNamespace(config={"kernel_name": "python3"})},
    )
    check = pages.check_notebook_names
    saved = []

    def check_then_save(notebook, *args, **kwargs):
        check(notebook, *args, **kwargs)
        write(notebook, "_ih[-1]")  # the editor saves, after the check
        saved.append(notebook.name)

    monkeypatch.setattr(pages, "check_notebook_names", check_then_save)
    built = pages.use_executed_notebooks(files, config, "it")
    assert saved == ["calcolo.it.ipynb"]
    assert [outputs(Path(f.abs_src_path)) for f in built] == ["42"]
    assert all("_ih" in (root / "docs" / name).read_text() for name in saved)


def test_a_figure_written_outside_what_a_notebook_may_read_is_refused(checkout):
    """A write opens its file too (the audit event ``open``, whatever the mode): a figure saved
    through a name the check cannot follow (``Path("snippets/data") / name``, ``name`` absolute
    or with ``..``; the names check refuses one written in the cell, and ``savefig`` to anything
    but ``io.BytesIO``) is judged after the run as the reads are, and refused."""
    root, outside, _ = checkout
    (root / "docs").mkdir()
    cell = (
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nfrom pathlib import Path\n"
        "fig, ax = plt.subplots()\n"
        f"for name in [{str(outside / 'abs.png')!r}, '../../docs/x.png']:\n"
        "    fig.savefig(Path('snippets/data') / name)\n"
    )
    src = write(root / "docs" / "nb.it.ipynb", cell)
    dest = root / ".cache" / "notebooks" / "nb.it.run.ipynb"
    log = dest.with_name(dest.name + ".reads.log")
    with tempfile.TemporaryDirectory(prefix="guide-kernel-") as kernel_tmp:
        notebooks.execute(src, dest, root, "it", "python3", kernel_tmp=Path(kernel_tmp))
        why = notebooks.refused_reads(log, root, notebooks.outside_readable(Path(kernel_tmp)), [])
    assert (outside / "abs.png").is_file() and (root / "docs" / "x.png").is_file()  # both written
    assert why == [
        (
            f"read {outside}/abs.png, outside the checkout and what a notebook may read there "
            f"({notebooks.OUTSIDE_READABLE}: hooks/notebooks/execute.py OUTSIDE_READABLE)"
        ),
        (
            "read docs/x.png, outside snippets/ and vram/ (hooks/notebooks/execute.py READABLE: what every "
            "language reads alike)"
        ),
    ]
