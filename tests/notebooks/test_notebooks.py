"""The memory notebook: same code in both languages, executed once per change (cache keyed
by content), a kernel named in the metadata that does not exist still runs with the
configured one, and a cell that raises is an error naming the notebook (site.md case 3)."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from hooks.notebooks import (NotebookError, cache_key, executed_notebook, executed_notebooks, machine_store,
                             notebook_language)
from tests.conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
LANGS = ("it", "fr")


def notebooks() -> dict[str, nbformat.NotebookNode]:
    return {lang: nbformat.read(DOCS / f"memory-notebook.{lang}.ipynb", as_version=4) for lang in LANGS}


def test_code_cells_are_identical_in_both_languages():
    nbs = notebooks()
    kinds = {lang: [c.cell_type for c in nb.cells] for lang, nb in nbs.items()}
    assert kinds["it"] == kinds["fr"]
    code = {lang: [c.source for c in nb.cells if c.cell_type == "code"] for lang, nb in nbs.items()}
    assert code["it"] == code["fr"] and len(code["it"]) >= 3
    markdown = {lang: [c.source for c in nb.cells if c.cell_type == "markdown"] for lang, nb in nbs.items()}
    assert all(it != fr for it, fr in zip(markdown["it"], markdown["fr"])), "a Markdown cell is not translated"


def test_committed_notebooks_hold_no_outputs():
    """Outputs come only from the build's execution, never from someone's machine."""
    for lang, nb in notebooks().items():
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, lang


def test_headings_keep_the_same_anchors():
    """Translated headings carry explicit ids so both pages have the same anchors: the
    title as HTML, the sections as Markdown headings with ``{ #id }`` (so the table of
    contents lists them; hooks/notebook_html.py gives them their id)."""
    import re

    sources = {lang: "\n".join(c.source for c in nb.cells if c.cell_type == "markdown") for lang, nb in notebooks().items()}
    ids = {lang: re.findall(r'<h1 id="([^"]+)"', text) + re.findall(r"^##+ .*\{ #([\w-]+) \}$", text, re.M)
           for lang, text in sources.items()}
    assert ids["it"] == ids["fr"] == ["memory-notebook", "per-card", "evidence"]
    assert not any(re.search(r"<h[2-6]", text) for text in sources.values()), "a section heading in raw HTML: not in the TOC"


def test_only_the_set_up_cell_is_hidden():
    """The page opens with the plot: the first code cell (imports, helpers) is tagged for
    mkdocs-jupyter's remove_cell_tags (mkdocs.yml), and only that one."""
    for lang, nb in notebooks().items():
        tagged = [i for i, c in enumerate(nb.cells) if "setup" in c.metadata.get("tags", [])]
        first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
        assert tagged == [first_code], lang


def write(path: Path, *cells, kernel: str = "python3") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = new_notebook(cells=list(cells), metadata={"kernelspec": {"name": kernel, "display_name": kernel, "language": "python"}})
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


def outputs(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_unknown_kernel_in_metadata_runs_with_the_configured_one_and_is_cached(tiny_repo):
    src = write(tiny_repo / "docs" / "other.fr.ipynb",
                new_code_cell("import os, vram.core\nprint(os.environ['GUIDE_LANG'], vram.core.BYTES, 6 * 7)"),
                kernel="no-such-kernel-on-this-machine")
    cache = tiny_repo / ".cache" / "notebooks"
    executed, ran = executed_notebook(src, tiny_repo, "fr", "python3", cache_dir=cache)
    assert ran and executed.parent == cache
    assert outputs(executed) == "fr 16 42\n"  # this checkout's vram, the page's language
    again, ran_again = executed_notebook(src, tiny_repo, "fr", "python3", cache_dir=cache)
    assert again == executed and not ran_again  # nothing changed: not executed again


def test_another_checkout_with_the_same_inputs_reuses_the_store(tiny_repo, tmp_path):
    store = tmp_path / "store"
    src = tiny_repo / "docs" / "nb.it.ipynb"
    first, ran = executed_notebook(src, tiny_repo, "it", "python3", store=store)
    assert ran and len(list(store.glob("nb.it.*.ipynb"))) == 1
    other = tmp_path / "other-checkout"
    shutil.copytree(tiny_repo, other, ignore=shutil.ignore_patterns(".cache"))
    copy, ran_again = executed_notebook(other / "docs" / "nb.it.ipynb", other, "it", "python3", store=store)
    assert not ran_again and copy.parent == other / ".cache" / "notebooks" and outputs(copy) == "42\n"
    (other / "vram" / "core.py").write_text("BYTES = 18\n")  # different inputs: a different key, a run
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
    write(tiny_repo / "docs" / "broken.it.ipynb", new_code_cell("x = 1"),
          new_code_cell("raise ValueError('the calculator disagrees')"))
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
    snippets/comments.yaml, whose French the French page shows (hooks/comments.py). No
    docstrings: a docstring is code to Python, so no page could translate it."""
    import ast
    import io
    import tokenize

    import yaml

    italian = {entry["it"] for entry in yaml.safe_load((REPO_ROOT / "snippets" / "comments.yaml").read_text(encoding="utf-8"))}
    cells = [cell.source for cell in notebooks()["it"].cells if cell.cell_type == "code"]
    comments = [token.string.removeprefix("#").strip() for source in cells
                for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT]
    assert len(comments) >= 8 and [c for c in comments if c not in italian] == []
    for source in cells:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                assert ast.get_docstring(node) is None, f"{node.name}: a docstring stays untranslated; write a comment"


# A code cell as mkdocs-jupyter renders it: Pygments' spans in div.highlight-ipynb, then the
# hidden text its copy button copies.
CELL = ('<div class="highlight-ipynb hl-python"><pre><span></span><span class="n">x</span> <span class="o">=</span> '
        '<span class="mi">1</span>  <span class="c1"># un solo processo</span>\n</pre></div>\n'
        '<div class="clipboard-copy-txt" id="cell-1">x = 1  # un solo processo\n</div>')


def test_a_notebook_cell_gets_french_comments_and_keeps_its_copy_text():
    from hooks.comments import translate_comments

    out = translate_comments(CELL, "fr", {"un solo processo": "un seul processus"})
    assert '<span class="c1"># un seul processus</span>' in out
    assert out.endswith('<div class="clipboard-copy-txt" id="cell-1">x = 1  # un solo processo\n</div>')
    assert translate_comments(CELL, "it", {}) == CELL


def test_a_notebook_cell_comment_without_translation_or_that_changes_the_code_is_refused():
    from hooks.comments import translate_comments
    from hooks.errors import RenderError

    with pytest.raises(RenderError, match=r"code comment 'un solo processo' has no 'fr' translation"):
        translate_comments(CELL, "fr", {})
    # markup that calls part of a string a comment: the translation would change the string
    forged = ('<div class="highlight-ipynb hl-python"><pre><span class="n">x</span> <span class="o">=</span> '
              '<span class="s2">"a</span><span class="c1"># b"</span>\n</pre></div>')
    with pytest.raises(RenderError, match=r"the 'fr' comments change the code as python reads it"):
        translate_comments(forged, "fr", {'b"': 'c"'})
