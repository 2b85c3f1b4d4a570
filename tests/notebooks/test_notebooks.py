"""The memory notebook: same code in both languages, executed once per change (cache keyed
by content), a kernel named in the metadata that does not exist still runs with the
configured one, and a cell that raises is an error naming the notebook (site.md case 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from hooks.notebooks.execute import (
    NotebookError,
    cache_key,
    executed_notebook,
    executed_notebooks,
    machine_store,
    notebook_language,
)
from tests.conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
LANGS = ("it", "fr")


def notebooks() -> dict[str, nbformat.NotebookNode]:
    return {lang: nbformat.read(DOCS / f"memory-notebook.{lang}.ipynb", as_version=4) for lang in LANGS}


def test_code_cells_are_the_same_code_in_both_languages():
    """Same cells, each code cell the same to Python's AST; the French one carries French comments."""
    import ast

    nbs = notebooks()
    kinds = {lang: [c.cell_type for c in nb.cells] for lang, nb in nbs.items()}
    assert kinds["it"] == kinds["fr"]
    code = {lang: [c.source for c in nb.cells if c.cell_type == "code"] for lang, nb in nbs.items()}
    assert len(code["it"]) >= 3
    assert [ast.dump(ast.parse(c)) for c in code["it"]] == [ast.dump(ast.parse(c)) for c in code["fr"]]
    assert all(it != fr for it, fr in zip(code["it"], code["fr"], strict=True) if "#" in it), (
        "a code cell keeps Italian comments"
    )
    markdown = {lang: [c.source for c in nb.cells if c.cell_type == "markdown"] for lang, nb in nbs.items()}
    assert all(it != fr for it, fr in zip(markdown["it"], markdown["fr"], strict=True)), (
        "a Markdown cell is not translated"
    )


def test_committed_notebooks_hold_no_outputs():
    """Outputs come only from the build's execution, never from someone's machine."""
    for lang, nb in notebooks().items():
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, lang


def test_headings_keep_the_same_anchors():
    """Translated headings carry explicit ids so both pages have the same anchors: the
    title as HTML, the sections as Markdown headings with ``{ #id }`` (so the table of
    contents lists them; hooks/notebooks/html.py gives them their id)."""
    import re

    sources = {
        lang: "\n".join(c.source for c in nb.cells if c.cell_type == "markdown") for lang, nb in notebooks().items()
    }
    ids = {
        lang: re.findall(r'<h1 id="([^"]+)"', text) + re.findall(r"^##+ .*\{ #([\w-]+) \}$", text, re.MULTILINE)
        for lang, text in sources.items()
    }
    assert ids["it"] == ids["fr"] == ["memory-notebook", "per-card", "evidence"]
    assert not any(re.search(r"<h[2-6]", text) for text in sources.values()), (
        "a section heading in raw HTML: not in the TOC"
    )


def test_only_the_set_up_cell_is_hidden():
    """The page opens with the plot: the first code cell (imports, helpers) is tagged for
    mkdocs-jupyter's remove_cell_tags (mkdocs.yml), and only that one."""
    for lang, nb in notebooks().items():
        tagged = [i for i, c in enumerate(nb.cells) if "setup" in c.metadata.get("tags", [])]
        first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
        assert tagged == [first_code], lang


def write(path: Path, *cells, kernel: str = "python3") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = new_notebook(
        cells=list(cells), metadata={"kernelspec": {"name": kernel, "display_name": kernel, "language": "python"}}
    )
    nbformat.write(nb, path)
    return path


@pytest.fixture
def tiny_repo(tmp_path) -> Path:
    """A repository with the folders the cache key reads, and one page."""
    (tmp_path / "vram").mkdir()
    (tmp_path / "vram" / "core.py").write_text("BYTES = 16\n")
    (tmp_path / "snippets" / "data").mkdir(parents=True)
    (tmp_path / "snippets" / "data" / "gpus.yaml").write_text("gpus: {}\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.it.md").write_text("# Page\n")
    write(tmp_path / "docs" / "nb.it.ipynb", new_markdown_cell("# A"), new_code_cell("print(6 * 7)"))
    return tmp_path


def test_cache_key_follows_the_notebook_and_what_it_reads(tiny_repo):
    nb = tiny_repo / "docs" / "nb.it.ipynb"
    key = cache_key(nb, tiny_repo, "it", "python3")
    assert key == cache_key(nb, tiny_repo, "it", "python3")
    (tiny_repo / "docs" / "page.it.md").write_text("# Page, edited\n")  # a Markdown page: no effect
    (tiny_repo / "hooks").mkdir()
    (tiny_repo / "hooks" / "other.py").write_text("x = 1\n")
    assert cache_key(nb, tiny_repo, "it", "python3") == key
    assert cache_key(nb, tiny_repo, "fr", "python3") != key
    (tiny_repo / "vram" / "core.py").write_text("BYTES = 18\n")  # the calculator
    calculator_key = cache_key(nb, tiny_repo, "it", "python3")
    assert calculator_key != key
    (tiny_repo / "snippets" / "data" / "gpus.yaml").write_text("gpus: {h100: 80}\n")  # a data file
    assert cache_key(nb, tiny_repo, "it", "python3") != calculator_key


def test_bytecode_is_no_input_of_the_key(tiny_repo):
    """A folder the notebook listed counts by its names, not by its ``__pycache__`` (Python
    writes it on import; a copy of the sources with its code compiled is the same input)."""
    import importlib.util
    import py_compile

    nb = tiny_repo / "docs" / "nb.it.ipynb"
    reads = ["vram/", "vram/core.py"]
    key = cache_key(nb, tiny_repo, "it", "python3", reads)
    source = tiny_repo / "vram" / "core.py"
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)), doraise=True)
    assert (tiny_repo / "vram" / "__pycache__").is_dir() and cache_key(nb, tiny_repo, "it", "python3", reads) == key
    (tiny_repo / "vram" / "extra.py").write_text("")  # a new module in the folder it listed: another key
    assert cache_key(nb, tiny_repo, "it", "python3", reads) != key


def outputs(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_unknown_kernel_in_metadata_runs_with_the_configured_one_and_is_cached(tiny_repo):
    src = write(
        tiny_repo / "docs" / "other.fr.ipynb",
        new_code_cell("import os, vram.core\nprint(os.environ['GUIDE_LANG'], vram.core.BYTES, 6 * 7)"),
        kernel="no-such-kernel-on-this-machine",
    )
    cache = tiny_repo / ".cache" / "notebooks"
    executed, ran = executed_notebook(src, tiny_repo, "fr", "python3", cache_dir=cache)
    assert ran and executed.parent == cache
    assert outputs(executed) == "fr 16 42\n"  # this checkout's vram, the page's language
    again, ran_again = executed_notebook(src, tiny_repo, "fr", "python3", cache_dir=cache)
    assert again == executed and not ran_again  # nothing changed: not executed again


def test_another_checkout_with_the_same_inputs_reuses_the_store(tiny_repo, tmp_path):
    store = tmp_path / "store"
    src = tiny_repo / "docs" / "nb.it.ipynb"
    _first, ran = executed_notebook(src, tiny_repo, "it", "python3", store=store)
    assert ran and len(list(store.glob("nb.it.*.ipynb"))) == 1
    other = tmp_path / "other-checkout"
    shutil.copytree(tiny_repo, other, ignore=shutil.ignore_patterns(".cache"))
    copy, ran_again = executed_notebook(other / "docs" / "nb.it.ipynb", other, "it", "python3", store=store)
    assert not ran_again and copy.parent == other / ".cache" / "notebooks" and outputs(copy) == "42\n"
    (other / "vram" / "core.py").write_text("BYTES = 18\n")  # a file this notebook never read: still reused
    assert not executed_notebook(other / "docs" / "nb.it.ipynb", other, "it", "python3", store=store)[1]
    write(
        other / "docs" / "nb.it.ipynb", new_markdown_cell("# A"), new_code_cell("print(6 * 8)")
    )  # a different key, a run
    _, ran_changed = executed_notebook(other / "docs" / "nb.it.ipynb", other, "it", "python3", store=store)
    assert ran_changed and len(list(store.glob("nb.it.*.ipynb"))) == 2


def test_machine_store_location(monkeypatch, tmp_path):
    monkeypatch.setenv("GUIDE_NOTEBOOK_STORE", "off")
    assert machine_store() is None
    monkeypatch.setenv("GUIDE_NOTEBOOK_STORE", str(tmp_path / "s"))
    assert machine_store() == tmp_path / "s"
    monkeypatch.delenv("GUIDE_NOTEBOOK_STORE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert machine_store() == tmp_path / "xdg" / "vramfarm-guide" / "notebooks"


def test_a_cell_that_raises_names_the_notebook_and_the_cell(tiny_repo):
    write(
        tiny_repo / "docs" / "broken.it.ipynb",
        new_code_cell("x = 1"),
        new_code_cell("raise ValueError('the calculator disagrees')"),
    )
    with pytest.raises(NotebookError) as error:
        executed_notebooks(tiny_repo / "docs", tiny_repo, LANGS, "python3", cache_dir=tiny_repo / "cache")
    message = str(error.value)
    assert message.startswith("docs/broken.it.ipynb: code cell 2 ")
    assert "ValueError: the calculator disagrees" in message and "\n" not in message
    assert not list((tiny_repo / "cache").glob("broken*.ipynb")), "a failed notebook must not be cached"


def test_a_notebook_needs_a_language_suffix(tmp_path):
    with pytest.raises(NotebookError, match=r"nb\.ipynb: a notebook's name ends in \.<language>\.ipynb"):
        notebook_language(tmp_path / "nb.ipynb", LANGS)
    assert notebook_language(tmp_path / "memory-notebook.fr.ipynb", LANGS) == "fr"


def test_code_comments_are_italian_with_a_french_translation():
    """The code cells, the same in both languages, carry Italian comments, as the snippets
    do: every comment (the hidden set-up cell's too) is an Italian entry of
    snippets/comments.yaml, whose French the French page shows (hooks/render/comments.py). No
    docstrings: a docstring is code to Python, so no page could translate it."""
    import ast
    import io
    import tokenize

    import yaml

    italian = {
        entry["it"] for entry in yaml.safe_load((REPO_ROOT / "snippets" / "comments.yaml").read_text(encoding="utf-8"))
    }
    cells = [cell.source for cell in notebooks()["it"].cells if cell.cell_type == "code"]
    comments = [
        token.string.removeprefix("#").strip()
        for source in cells
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    assert len(comments) >= 8 and [c for c in comments if c not in italian] == []
    for source in cells:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                assert ast.get_docstring(node) is None, f"{node.name}: a docstring stays untranslated; write a comment"


def test_french_notebook_comments_are_the_catalogue_translations():
    """Each comment of the French notebook is, at the same place, snippets/comments.yaml's
    French for the Italian notebook's comment (read here with tokenize, not the hook)."""
    import io
    import tokenize

    import yaml

    catalogue = {
        entry["it"]: entry["fr"]
        for entry in yaml.safe_load((REPO_ROOT / "snippets" / "comments.yaml").read_text(encoding="utf-8"))
    }

    def comments(nb):
        return [
            (i, token.start, token.string.removeprefix("#").strip())
            for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code")
            for token in tokenize.generate_tokens(io.StringIO(cell.source).readline)
            if token.type == tokenize.COMMENT
        ]

    nbs = notebooks()
    italian, french = comments(nbs["it"]), comments(nbs["fr"])
    assert len(french) == len(italian) >= 8
    assert [(i, at, catalogue[text]) for i, at, text in italian] == french


def test_a_french_notebook_that_differs_is_refused(tmp_path):
    from hooks.errors import RenderError
    from hooks.notebooks.translated import check_translated_notebook, translated_source

    catalogue = {"un solo processo": "un seul processus"}
    original = write(tmp_path / "nb.it.ipynb", new_code_cell("x = 1  # un solo processo\n"))
    assert translated_source("x = 1  # un solo processo\n", catalogue) == "x = 1  # un seul processus\n"
    good = write(tmp_path / "nb.fr.ipynb", new_code_cell("x = 1  # un seul processus\n"))
    check_translated_notebook(good, original, catalogue)
    for source, message in [
        ("x = 2  # un seul processus\n", "not the same code"),
        ("x = 1  # un solo processo\n", "is not the translation"),
        ("x = 1\n# un seul processus\n", "not where"),
        ('x = 1  # un seul processus\n"""a"""\n', "not the same code"),
    ]:
        bad = write(tmp_path / "bad.fr.ipynb", new_code_cell(source))
        with pytest.raises(RenderError, match=message):
            check_translated_notebook(bad, original, catalogue)
    with pytest.raises(RenderError, match="has no translation"):
        check_translated_notebook(good, original, {})


def test_a_data_edit_runs_again_only_the_notebooks_that_read_it(tiny_repo):
    """Each notebook is keyed on what it read when it ran (recorded by the kernel itself):
    editing a data file runs again the notebook that read it, not the other; editing the
    calculator module a notebook imports runs it again; a new file in a folder it listed too."""
    data = tiny_repo / "snippets" / "data"
    (data / "other.yaml").write_text("x: 1\n")
    (data / "models").mkdir()
    (data / "models" / "a.json").write_text("{}\n")
    gpus = write(
        tiny_repo / "docs" / "gpus.it.ipynb",
        new_code_cell(
            "from pathlib import Path\nimport vram.core\nprint(Path('snippets/data/gpus.yaml').read_text(), vram.core.BYTES)"
        ),
    )
    other = write(
        tiny_repo / "docs" / "other.it.ipynb",
        new_code_cell(
            "from pathlib import Path\nprint(Path('snippets/data/other.yaml').read_text(),"
            " sorted(p.name for p in Path('snippets/data/models').iterdir()))"
        ),
    )
    cache = tiny_repo / ".cache" / "notebooks"

    def run(src):
        return executed_notebook(src, tiny_repo, "it", "python3", cache_dir=cache)[1]

    assert run(gpus) and run(other)
    records = {p.name.split(".")[0]: json.loads(p.read_text()) for p in cache.glob("*.reads.json")}
    assert "snippets/data/gpus.yaml" in records["gpus"] and "vram/core.py" in records["gpus"]
    assert "snippets/data/other.yaml" in records["other"] and "snippets/data/gpus.yaml" not in records["other"]
    assert not run(gpus) and not run(other)  # nothing edited
    (data / "gpus.yaml").write_text("gpus: {h100: 80}\n")
    assert run(gpus) and not run(other)
    (tiny_repo / "vram" / "core.py").write_text("BYTES = 18\n")
    assert run(gpus) and not run(other)
    (data / "models" / "b.json").write_text("{}\n")  # a new file in a folder only 'other' listed
    assert not run(gpus) and run(other)
    assert outputs(cache / next(p.name for p in cache.glob("other.it.*.ipynb"))).endswith("['a.json', 'b.json']\n")
    assert len(list(cache.glob("gpus.it.*.ipynb"))) == 1 and len(list(cache.glob("gpus.it.*.reads.json"))) == 1


@pytest.mark.parametrize("lang", LANGS)
def test_shown_code_lines_fit_88_columns(lang):
    """The cells a page shows (not the hidden set-up cell), comments in their language included."""
    cells = [c for c in notebooks()[lang].cells if c.cell_type == "code" and "setup" not in c.metadata.get("tags", [])]
    assert [line for c in cells for line in c.source.splitlines() if len(line) > 88] == []


def test_installed_packages_in_the_checkout_are_no_read(tiny_repo, monkeypatch):
    """A virtual environment inside the checkout is no content of it: the files the kernel
    reads from this environment's folders are not recorded (thousands of them, hashed on every
    build), the packages count by their versions (``TOOLS``) as they do for an environment
    elsewhere. A folder that only bears the name (``snippets/site-packages/``) is content."""
    import site

    installed = tiny_repo / ".venv" / "lib" / "python3.11" / "site-packages"
    installed.mkdir(parents=True)
    (installed / "somepkg.py").write_text("VALUE = 1\n")
    lookalike = tiny_repo / "snippets" / "site-packages"
    lookalike.mkdir()
    (lookalike / "data.txt").write_text("3\n")
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(installed)])  # this build's environment
    src = write(
        tiny_repo / "docs" / "env.it.ipynb",
        new_code_cell(
            f"import sys\nsys.path.insert(0, {str(installed)!r})\nimport somepkg, vram.core\n"
            "print(somepkg.VALUE, vram.core.BYTES, open('snippets/site-packages/data.txt').read().strip())"
        ),
    )
    cache = tiny_repo / ".cache" / "notebooks"
    executed, ran = executed_notebook(src, tiny_repo, "it", "python3", cache_dir=cache)
    assert ran and outputs(executed) == "1 16 3\n"
    reads = json.loads(next(cache.glob("env.it.*.reads.json")).read_text())
    assert "vram/core.py" in reads and "snippets/site-packages/data.txt" in reads
    assert not [r for r in reads if r.startswith(".venv/")]
    (installed / "somepkg.py").write_text("VALUE = 2\n")
    assert not executed_notebook(src, tiny_repo, "it", "python3", cache_dir=cache)[1]
    key = cache_key(src, tiny_repo, "it", "python3", reads)
    (lookalike / "data.txt").write_text("4\n")  # a read of the checkout: another key, so the notebook runs again
    assert cache_key(src, tiny_repo, "it", "python3", reads) != key


def test_a_run_that_reads_outside_the_shared_sources_is_refused_and_not_cached(tiny_repo):
    """A cell that reads its own notebook (here through a path that leaves snippets/data) would
    see each language's comments: the build stops, naming the notebook and the file read."""
    src = write(
        tiny_repo / "docs" / "nb.it.ipynb",
        new_code_cell(
            "from pathlib import Path\nprint(len((Path('snippets/data') / '../../docs/nb.it.ipynb').read_text()))"
        ),
    )
    cache = tiny_repo / ".cache" / "notebooks"
    with pytest.raises(
        NotebookError, match=r"^docs/nb\.it\.ipynb: the notebook read docs/nb\.it\.ipynb, outside snippets/ and vram/"
    ):
        executed_notebook(src, tiny_repo, "it", "python3", cache_dir=cache)
    assert not list(cache.glob("nb.*.ipynb"))  # nothing kept that a later build could show


def test_what_a_notebook_may_read_is_the_shared_sources_and_the_install_record():
    from hooks.notebooks.execute import readable

    assert readable("snippets/data/gpus.yaml") and readable("vram/job.py") and readable("vram/")
    assert readable("multi_gpu_guide.egg-info/entry_points.txt")  # importlib.metadata, under pip install -e .
    assert not readable("docs/memory-notebook.fr.ipynb")
    assert not readable("snippets.fr/x.py") and not readable("vram.egg-info")  # a look-alike, a file at the root


def test_a_run_that_reads_the_cache_is_refused(tiny_repo):
    """An executed copy in .cache/notebooks holds the other language's comments: reading there
    is refused like any read outside the shared sources (the cache key leaves .cache out)."""
    (tiny_repo / ".cache").mkdir()
    (tiny_repo / ".cache" / "copy.txt").write_text("# un commentaire\n")
    src = write(
        tiny_repo / "docs" / "nb.it.ipynb",
        new_code_cell("from pathlib import Path\nprint((Path('snippets/data') / '../../.cache/copy.txt').read_text())"),
    )
    with pytest.raises(NotebookError, match=r"the notebook read \.cache/copy\.txt, outside snippets/ and vram/"):
        executed_notebook(src, tiny_repo, "it", "python3", cache_dir=tiny_repo / ".cache" / "notebooks")
