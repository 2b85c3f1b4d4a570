"""What a development build keeps in ``.cache/`` besides finder.json (tests/finder/test_finder_store.py):
the rendered pages (``hooks/render/markdown.py``), the pages' search entries
(``hooks/render/search_entries.py``), the data files found valid (``hooks/data/load.py``), the
packed Pyodide runtime (``hooks/finder/pyodide_assets.py``) and the accepted block names.

Each is read back only under the SHA-256 of its inputs (a forged entry shows that the store is
read; an edited input shows that it is then not), and never by a publication build (no store).
Expected values: the computation itself, with no store.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hooks.cache import code_files
from hooks.data import load
from hooks.errors import RenderError
from hooks.finder import pyodide_assets
from hooks.render import markdown
from tests.conftest import REPO_ROOT

PAGE = "Memoria: {{ memory params=8e9 zero_stage=3 world_size=4 }}."


def test_a_rendered_page_is_reused_under_its_inputs_and_never_without_a_store(data_dir, tmp_path, monkeypatch):
    store = tmp_path / "pages"
    monkeypatch.setattr(markdown, "_rendered", markdown.Memo())
    rendered = markdown.render_markdown(PAGE, "it", store=store)
    assert rendered == markdown.render_markdown(PAGE, "it")  # the store keeps what rendering gives
    (entry,) = store.glob("*.md")
    assert entry.read_text(encoding="utf-8") == rendered

    entry.write_text("forged", encoding="utf-8")  # what anyone who writes the checkout can do
    monkeypatch.setattr(markdown, "_rendered", markdown.Memo())  # a new build process
    assert markdown.render_markdown(PAGE, "it", store=store) == "forged"  # proves the store is read
    assert markdown.render_markdown(PAGE, "it", store=None) == rendered  # a publication build renders
    assert markdown.render_markdown(PAGE, "fr", store=store) != "forged"  # another language, another key

    units = data_dir / "units.yaml"
    units.write_text(units.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    monkeypatch.setattr(markdown, "_rendered", markdown.Memo())
    assert markdown.render_markdown(PAGE, "it", store=store) == rendered  # an edited data file: rendered again


def test_the_render_key_covers_the_snippets_and_the_code_the_renderers_run(data_dir, tmp_path, monkeypatch):
    snippets = tmp_path / "snippets"
    shutil.copytree(REPO_ROOT / "snippets", snippets, ignore=shutil.ignore_patterns("data"))
    monkeypatch.setattr(load, "SNIPPETS_DIR", snippets)
    before = markdown.render_inputs_digest()
    comments = snippets / "comments.yaml"
    comments.write_text(comments.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert markdown.render_inputs_digest() != before
    code = {path.relative_to(REPO_ROOT).as_posix() for path in code_files(REPO_ROOT)}
    for module in ("vram/job.py", "hooks/render/tables.py", "hooks/data/schemas.py", "verify/languages.py"):
        assert module in code  # every .py a renderer can import is in the key


def test_valid_data_files_are_checked_again_once_one_changes(data_dir, tmp_path):
    store = tmp_path / "checked"
    load.check_data_files(data_dir, store=store)
    assert len(list(store.glob("*.ok"))) == 1
    load.check_data_files(data_dir, store=store)  # the same files: the entry is reused, none added
    assert len(list(store.glob("*.ok"))) == 1

    gpus = data_dir / "gpus.yaml"
    gpus.write_text(gpus.read_text(encoding="utf-8") + "\nnot_a_key: 1\n", encoding="utf-8")
    with pytest.raises(RenderError, match=r"gpus\.yaml"):
        load.check_data_files(data_dir, store=store)
    with pytest.raises(RenderError, match=r"gpus\.yaml"):
        load.check_data_files(data_dir)  # a publication build checks every time


@pytest.mark.skipif(not (pyodide_assets.PYODIDE_DIR / "pyodide.mjs").exists(), reason="run `npm ci`")
def test_the_stored_packed_runtime_is_the_computed_one_and_read_back(tmp_path, monkeypatch):
    store = tmp_path / "packed"
    stdlib = pyodide_assets.STDLIB_URI
    monkeypatch.setattr(pyodide_assets, "_built", {})
    monkeypatch.setattr(pyodide_assets, "pack", lambda data: data[:4096])  # the store, not Zstandard, is tested here
    monkeypatch.setattr(pyodide_assets, "compiled", lambda archive, prefix, folder=None: archive)  # nor compiling
    computed = pyodide_assets.packed_runtime()
    assert pyodide_assets.packed_runtime(store=store) == computed
    (entry,) = store.glob("*.zip.zst")
    entry.write_bytes(b"forged")
    monkeypatch.setattr(pyodide_assets, "_built", {})  # a new build process
    assert pyodide_assets.packed_runtime(store=store)[stdlib] == b"forged"  # proves the store is read
    assert pyodide_assets.packed_runtime()[stdlib] == computed[stdlib]  # a publication build packs

    listing = tmp_path / "members.txt"
    listing.write_text(pyodide_assets.STDLIB_MEMBERS.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    monkeypatch.setattr(pyodide_assets, "_built", {})
    assert pyodide_assets.packed_runtime(listing=listing, store=store)[stdlib] == computed[stdlib]  # an edited listing

    (forged,) = [entry for entry in store.glob("*.zip.zst") if entry.read_bytes() != b"forged"]
    forged.write_bytes(b"forged")
    compiler = tmp_path / "precompile.py"  # verify/precompile.py edited: how the sources are compiled
    compiler.write_text(Path(pyodide_assets.precompile.__file__).read_text(encoding="utf-8") + "\n", encoding="utf-8")
    monkeypatch.setattr(pyodide_assets.precompile, "__file__", str(compiler))
    monkeypatch.setattr(pyodide_assets, "_built", {})
    assert pyodide_assets.packed_runtime(listing=listing, store=store)[stdlib] == computed[stdlib]  # not the entry


def _search_page(content: str):
    from types import SimpleNamespace

    toc = [SimpleNamespace(id="memoria", url="#memoria", children=[])]
    return SimpleNamespace(meta={}, content=content, toc=toc, url="formule/", title="Formule")


def test_search_entries_are_read_back_under_their_inputs_and_never_without_a_store(tmp_path):
    from material.plugins.search.plugin import SearchIndex

    from hooks.render import search_entries

    html = '<h1 id="formule">Formule</h1><p>Testo</p><h2 id="memoria">Memoria</h2><p>Parametri <code>8e9</code></p>'
    plain = SearchIndex()
    plain.add_entry_from_context(_search_page(html))  # what the plugin itself writes, no store
    assert [entry["location"] for entry in plain.entries] == ["formule/", "formule/#memoria"]

    store = tmp_path / "search"
    first = SearchIndex()
    search_entries.use_stored_entries(first, store)
    first.add_entry_from_context(_search_page(html))
    assert first.entries == plain.entries  # computed, then kept
    (entry,) = store.glob("*.json")
    assert json.loads(entry.read_text(encoding="utf-8")) == plain.entries

    entry.write_text('[{"location": "forged", "title": "", "text": ""}]', encoding="utf-8")
    again = SearchIndex()  # the next build process
    search_entries.use_stored_entries(again, store)
    again.add_entry_from_context(_search_page(html))
    assert again.entries == [{"location": "forged", "title": "", "text": ""}]  # proves the store is read

    publication = SearchIndex()
    search_entries.use_stored_entries(publication, None)  # a publication build parses every page
    publication.add_entry_from_context(_search_page(html))
    assert publication.entries == plain.entries

    edited = SearchIndex()
    search_entries.use_stored_entries(edited, store)
    edited.add_entry_from_context(_search_page(html.replace("Testo", "Testo nuovo")))
    assert edited.entries[0]["text"] == "<p>Testo nuovo</p>"  # an edited page: parsed again
    assert len(list(store.glob("*.json"))) == 2


def test_the_search_entries_key_covers_what_the_plugin_reads():
    from hooks.render.search_entries import entries_key

    page = _search_page("<h1 id='formule'>Formule</h1>")
    key = entries_key(page)
    assert entries_key(_search_page("<h1 id='formule'>Formule</h1>")) == key
    for name, value in (
        ("url", "fr/formules/"),
        ("title", "Formules"),
        ("meta", {"search": {"boost": 2}}),
        ("toc", []),
        ("content", "<h1 id='formule'>Formule!</h1>"),
    ):
        changed = _search_page(page.content)
        setattr(changed, name, value)
        assert entries_key(changed) != key, name


def test_the_shared_digests_are_the_files_bytes_and_follow_an_edit(tmp_path):
    """code_digest and tree_digest (one reading per process, shared by the stores' keys) are
    the SHA-256 that inputs_digest gives for the same files, and change after an edit."""
    from hooks.cache import code_digest, inputs_digest, tree_digest

    for folder in ("hooks", "vram", "verify"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    sources = [path for folder in ("hooks", "vram", "verify") for path in (tmp_path / folder).rglob("*.py")]
    expected = inputs_digest("code", (), (sources, tmp_path))
    assert code_digest(tmp_path) == expected
    job = tmp_path / "vram" / "job.py"
    job.write_text(job.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    edited = code_digest(tmp_path)
    assert edited != expected
    (tmp_path / "hooks" / "notes.txt").write_text("not code", encoding="utf-8")
    assert code_digest(tmp_path) == edited  # only .py files count

    data = tmp_path / "vram"
    before = tree_digest(data)
    assert before == inputs_digest("tree", (), (data.rglob("*"), data))
    (data / "new.txt").write_text("added", encoding="utf-8")
    assert tree_digest(data) != before


def test_a_block_accepted_by_check_names_is_kept_under_its_code_and_never_without_a_store(tmp_path, monkeypatch):
    from hooks.checks import same_code
    from verify.block_names import BlockNameError

    store = tmp_path / "block-names"
    accepted = "gpus = 2\nprint(gpus * 4)\n"
    same_code.checked_names(accepted, "block 'a.py' (it, docs/a.it.md)", store)
    (entry,) = store.glob("*.ok")
    assert entry.name == f"{same_code.names_key(accepted)}.ok"

    refused = "import inspect\n"  # not on verify/block_names.py's allow-list
    with pytest.raises(BlockNameError, match="import inspect"):
        same_code.checked_names(refused, "block 'b.py' (it, docs/b.it.md)", store)
    assert len(list(store.glob("*.ok"))) == 1  # a refused block leaves nothing: checked on every build

    (store / f"{same_code.names_key(refused)}.ok").write_bytes(b"")  # a forged entry
    same_code.checked_names(refused, "block 'b.py' (it, docs/b.it.md)", store)  # proves the store is read
    with pytest.raises(BlockNameError, match="import inspect"):
        same_code.checked_names(refused, "block 'b.py' (it, docs/b.it.md)", None)  # a publication build checks

    rules = tmp_path / "block_names.py"  # an edited allow-list names another entry
    rules.write_bytes(Path(same_code.block_names.__file__).read_bytes() + b"\n# edited\n")
    before = same_code.names_key(refused)
    monkeypatch.setattr(same_code.block_names, "__file__", str(rules))
    assert same_code.names_key(refused) != before


def test_notebook_cells_accepted_are_not_checked_again_and_always_in_a_publication_build(tmp_path):
    from hooks.checks.same_code import names_key
    from hooks.notebooks.cell_names import check_notebook_names

    store = tmp_path / "block-names"
    notebook = tmp_path / "n.ipynb"
    cells = [{"cell_type": "code", "source": "x = 6 * 7\n"}]
    notebook.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    check_notebook_names(notebook, "docs/n.ipynb", store=store)
    assert len(list(store.glob("*.ok"))) == 1

    cells.append({"cell_type": "code", "source": "_ih\n"})  # IPython's list of the cells' text
    notebook.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    with pytest.raises(RenderError, match=r"docs/n\.ipynb: code cell 2, line 1: _ih"):
        check_notebook_names(notebook, "docs/n.ipynb", store=store)  # edited cells: another key
    forged = names_key("notebook cells\x00x = 6 * 7\n\x00_ih\n")  # the cells as check_notebook_names keys them
    (store / f"{forged}.ok").write_bytes(b"")  # what anyone who writes the checkout can do
    check_notebook_names(notebook, "docs/n.ipynb", store=store)  # proves the store is read
    with pytest.raises(RenderError, match=r"_ih"):
        check_notebook_names(notebook, "docs/n.ipynb")  # a publication build checks


TYPESET_PAGE = '<html lang="fr"><body><p>Il faut 38,2 Go : voir « ici » ; 100 %.</p></body></html>'


def test_a_typeset_page_is_reused_under_its_inputs_and_never_without_a_store(tmp_path, monkeypatch):
    from hooks.render import typography

    store = tmp_path / "typeset"
    monkeypatch.setattr(typography, "_typeset", {})
    typeset = typography.typeset_html(TYPESET_PAGE, "fr", store=store)
    assert "Go&nbsp;: voir «\u202fici" in typeset  # the French rules applied
    monkeypatch.setattr(typography, "_typeset", {})
    assert typeset == typography.typeset_html(TYPESET_PAGE, "fr")  # the store keeps what typesetting gives
    (entry,) = store.glob("*.html")
    assert entry.read_text(encoding="utf-8") == typeset

    entry.write_text("forged", encoding="utf-8")
    monkeypatch.setattr(typography, "_typeset", {})  # a new build process
    assert typography.typeset_html(TYPESET_PAGE, "fr", store=store) == "forged"  # proves the store is read
    monkeypatch.setattr(typography, "_typeset", {})
    assert typography.typeset_html(TYPESET_PAGE, "fr", store=None) == typeset  # a publication build typesets
    monkeypatch.setattr(typography, "_typeset", {})
    assert typography.typeset_html(TYPESET_PAGE, "it", store=store) != "forged"  # another language, another key

    hashed = []
    real = typography.inputs_digest
    monkeypatch.setattr(typography, "inputs_digest", lambda *args: hashed.append(args) or real(*args))
    monkeypatch.setattr(typography, "_typeset", {})
    typography.typeset_html(TYPESET_PAGE + " ", "fr", store=store)
    ((files, root),) = hashed[0][2:]
    code = {Path(typography.__file__), typography.RULES_FILE, REPO_ROOT / "hooks" / "render" / "script_json.py"}
    assert root == REPO_ROOT and code <= set(files)  # the rules and the code that typesets
