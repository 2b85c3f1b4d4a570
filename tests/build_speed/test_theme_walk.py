"""The theme's file list is collected without walking Material's ``.icons`` (about 14,000 files
MkDocs drops anyway), and it is the same list (hooks/workarounds/theme_walk.py)."""

from __future__ import annotations

import importlib.util

import pytest
from mkdocs.config import load_config
from mkdocs.structure.files import get_files

from tests.conftest import REPO_ROOT


@pytest.fixture(scope="module")
def config():
    return load_config(str(REPO_ROOT / "mkdocs.yml"))


def theme_files(config, env) -> list[tuple[str, str | None]]:
    files = get_files(config)
    files.add_files_from_theme(env, config)
    return sorted((file.src_uri, file.abs_src_path) for file in files)


def test_build_config_walks_the_theme_without_its_dot_folders(config, monkeypatch):
    monkeypatch.delenv("GUIDE_THEME_WALK", raising=False)
    full_env = type(config.theme).get_env(config.theme)  # as MkDocs makes it
    full = full_env.loader.list_templates()
    assert sum(name.startswith(".icons/") for name in full) > 1000  # what is skipped: Material's icons

    spec = importlib.util.spec_from_file_location("glue_under_test", REPO_ROOT / "hooks" / "mkdocs_glue.py")
    glue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(glue)
    glue.on_config(config)  # the hooks' on_config, run before each language pass's theme.get_env()
    env = config.theme.get_env()
    listed = env.loader.list_templates()
    assert not any(part.startswith(".") for name in listed for part in name.split("/"))
    assert listed == [name for name in full if not any(part.startswith(".") for part in name.split("/"))]
    # MkDocs collects the same theme files (the checks of on_files see them), and the templates still load
    assert theme_files(config, env) == theme_files(config, full_env)
    assert env.get_template("main.html").filename == full_env.get_template("main.html").filename
    icon = next(name for name in full if name.startswith(".icons/material/"))  # pages include icons by name
    assert env.get_template(icon).filename == full_env.get_template(icon).filename
