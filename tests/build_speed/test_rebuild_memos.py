"""A `mkdocs serve` rebuild renders and typesets again only what changed: the placeholders of
a page whose Markdown and inputs are unchanged, and the typography of an unchanged page,
are reused; an edited data file or rule file is read on the next rebuild."""

from __future__ import annotations

import shutil

import pytest

import hooks.data.load
from hooks.render import markdown as render, typography
from tests.conftest import REPO_ROOT

PAGE = "{{ table name=sharding params=8e9 world_sizes=4 }} {{ gpu_memory gpu=h100 }}"


@pytest.fixture
def snippets_copy(tmp_path, monkeypatch):
    """A copy of snippets/ that the render layer reads (its data folder too)."""
    dest = tmp_path / "snippets"
    shutil.copytree(REPO_ROOT / "snippets", dest)
    monkeypatch.setattr(hooks.data.load, "SNIPPETS_DIR", dest)
    monkeypatch.setattr(hooks.data.load, "DATA_DIR", dest / "data")
    return dest


def counting(monkeypatch, module, name: str) -> list:
    calls, original = [], getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args[:2])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_an_unchanged_page_is_not_rendered_again_and_an_edited_data_file_is(snippets_copy, monkeypatch):
    rendered = counting(monkeypatch, render, "_render")
    first = render.render_markdown(PAGE, "fr")
    assert render.render_markdown(PAGE, "fr") == first and len(rendered) == 1
    assert render.render_markdown(PAGE, "it") != first and len(rendered) == 2, "each language is its own page"

    path = snippets_copy / "data" / "sharding.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("fr: Tout}", "fr: Absolument tout}"), encoding="utf-8")
    edited = render.render_markdown(PAGE, "fr")
    assert "Absolument tout" in edited and "Absolument tout" not in first and len(rendered) == 3

    (snippets_copy / "data" / "models" / "new-file.json").write_text(
        "{}", encoding="utf-8"
    )  # any file a renderer may read
    assert render.render_markdown(PAGE, "fr") == edited and len(rendered) == 4


def test_a_render_error_is_raised_on_every_rebuild(snippets_copy):
    for _ in range(2):
        with pytest.raises(hooks.data.load.RenderError, match="unknown gpu 'h900'"):
            render.render_markdown("{{ gpu_memory gpu=h900 }}", "it")


def test_an_unchanged_page_is_not_typeset_again_and_an_edited_rule_file_is(tmp_path, monkeypatch):
    rules_file = tmp_path / "typography.yaml"
    shutil.copy(typography.RULES_FILE, rules_file)
    monkeypatch.setattr(typography, "RULES_FILE", rules_file)
    monkeypatch.setattr(typography.rules, "__defaults__", (rules_file,))
    typeset = counting(monkeypatch, typography, "_typeset_page")
    page = '<html lang="fr"><body><p>Prix : 100 %</p></body></html>'
    plain = '<html lang="fr"><body><p>Rien</p></body></html>'

    first = typography.typeset_html(page, "fr")
    assert "Prix&nbsp;:" in first and typography.typeset_html(page, "fr") == first and len(typeset) == 1
    copy = "".join(plain)  # an equal text, another object: an unchanged page comes back as itself
    assert typography.typeset_html(plain, "fr") is plain and typography.typeset_html(copy, "fr") is copy
    assert len(typeset) == 2

    rules_file.write_text(rules_file.read_text(encoding="utf-8").replace('":": nbsp', '":": nnbsp'), encoding="utf-8")
    assert "Prix\u202f:" in typography.typeset_html(page, "fr") and len(typeset) == 3


def test_tree_stamp_matches_names_not_paths(tmp_path):
    """``tree_stamp``'s pattern is a file name (``*.py``) at any depth; a path pattern would
    silently match nothing, so it is refused."""
    from hooks.cache import tree_stamp

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text("x = 1\n")
    (tmp_path / "b.txt").write_text("b\n")
    assert [entry[0] for entry in tree_stamp(tmp_path, pattern="*.py")] == [str(tmp_path / "sub" / "a.py")]
    with pytest.raises(ValueError, match="file names"):
        tree_stamp(tmp_path, pattern="sub/*.py")
