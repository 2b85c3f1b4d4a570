"""The build does not depend on the working directory (issue 33): ``mkdocs build -f
../mkdocs.yml`` from ``docs/`` stopped with "a content folder outside the repository", since
``!relative $config_dir/snippets`` gives ``../snippets`` (relative to the working directory)
and the glue joined it to the configuration's folder once more. MkDocs' own loader reads the
configuration from ``docs/`` here, and the glue must find the same folders as from the root."""

from __future__ import annotations

import os
from pathlib import Path

from mkdocs.config import load_config

from hooks.checks.snippet_includes import check_plain_files, own_content
from hooks.mkdocs_glue import config_root, snippets_dir
from tests.conftest import REPO_ROOT


def test_the_folders_are_the_same_from_docs_as_from_the_root(monkeypatch):
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    found = {}
    for cwd, config_file in ((REPO_ROOT, "mkdocs.yml"), (REPO_ROOT / "docs", "../mkdocs.yml")):
        monkeypatch.chdir(cwd)
        config = load_config(config_file=config_file)
        found[cwd] = (config_root(config), snippets_dir(config), Path(config.docs_dir), Path(config.theme.custom_dir))
        assert Path(os.getcwd()) == cwd
    assert (
        found[REPO_ROOT]
        == found[REPO_ROOT / "docs"]
        == (REPO_ROOT, REPO_ROOT / "snippets", REPO_ROOT / "docs", REPO_ROOT / "overrides")
    )
    root, snippets, docs, overrides = found[REPO_ROOT / "docs"]
    own = own_content(
        [snippets / "nccl_check.py", docs / "index.it.md"], root, [docs, snippets, overrides]
    )  # raised before
    assert own == [snippets / "nccl_check.py", docs / "index.it.md"]
    check_plain_files(own, root)
