"""One hook file, one error boundary: every MkDocs event of the site goes through
hooks/mkdocs_glue.py, so bad input anywhere (the per-language 404 page and search indexes
included) is one line naming the file, never a traceback."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

import hooks.workarounds.i18n_outputs
from hooks.errors import RenderError
from tests.conftest import REPO_ROOT
from tests.hooks.test_glue_language import load_glue
from verify.languages import read_mkdocs_yml


def test_mkdocs_loads_one_hook_file():
    config = read_mkdocs_yml(REPO_ROOT / "mkdocs.yml")
    assert config["hooks"] == ["hooks/mkdocs_glue.py"]


def test_an_error_writing_a_language_404_page_is_one_line(tmp_path, monkeypatch):
    def refuse(html, lang):
        raise RenderError("hooks/render/typography.yaml: languages.fr: a rule is not a valid pattern")

    monkeypatch.setattr(hooks.workarounds.i18n_outputs, "typeset_html", refuse)
    glue = load_glue()
    config = SimpleNamespace(
        plugins={"i18n": SimpleNamespace(current_language="fr")}, theme={"language": "fr"}, site_dir=str(tmp_path)
    )
    assert glue.on_post_template("<html></html>", "main.html", config) == "<html></html>"
    with pytest.raises(PluginError) as raised:
        glue.on_post_template("<html></html>", "404.html", config)
    assert str(raised.value) == "fr/404.html: hooks/render/typography.yaml: languages.fr: a rule is not a valid pattern"
