"""Generated tables follow the language being built, not the page's source language,
so a French fallback page gets French labels and numbers (site.md, case 7)."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

from tests.conftest import REPO_ROOT


def load_glue():
    spec = importlib.util.spec_from_file_location("glue_under_test", REPO_ROOT / "hooks" / "mkdocs_glue.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fallback_page_is_rendered_in_the_build_language():
    glue = load_glue()
    config = SimpleNamespace(
        plugins={"i18n": SimpleNamespace(current_language="fr")},
        theme={"language": "fr"},
        mdx_configs={},
        extra={"rental_links": {"catalogue": "https://vramfarm.example/servers"}},
    )
    italian_source_page = SimpleNamespace(
        file=SimpleNamespace(src_uri="index.it.md", locale="it", content_string="# Guida\n")
    )
    out = glue.on_page_markdown("{{ table name=sharding params=8e9 world_sizes=4 }}", italian_source_page, config, None)
    assert "Par carte, 4 cartes" in out
    assert "32\u00a0Go" in out
