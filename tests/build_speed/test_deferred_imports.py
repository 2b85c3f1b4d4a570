"""mkdocs-jupyter's converter is imported only when a notebook is converted (hooks/workarounds/deferred_imports.py)."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys

import pytest

from hooks.notebooks.execute import executed_notebooks, machine_store
from hooks.workarounds.deferred_imports import DeferredModule, defer_import
from tests.conftest import BUILD_CACHES, REPO_ROOT, copy_build_caches
from verify.languages import LANGUAGES

pytestmark = pytest.mark.slow

MODULE = '''
import pathlib
pathlib.Path(__file__).with_name("ran").write_text("yes")
ANSWER = 42
'''


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``deferpkg`` with a submodule ``heavy`` that records when its code runs."""
    root = tmp_path / "deferpkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "heavy.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [n for n in sys.modules if n.split(".")[0] == "deferpkg"]:
        del sys.modules[name]


def test_deferred_module_runs_on_first_attribute(package):
    assert defer_import("deferpkg.heavy") is True
    import deferpkg.heavy  # the statement mkdocs-jupyter runs: must not load it
    from deferpkg import heavy

    assert isinstance(heavy, DeferredModule) and not (package / "ran").exists()
    assert heavy.ANSWER == 42
    assert (package / "ran").read_text() == "yes"
    assert not isinstance(sys.modules["deferpkg.heavy"], DeferredModule)
    assert deferpkg.heavy.ANSWER == 42


def test_nothing_to_defer(package):
    importlib.import_module("deferpkg.heavy")
    assert defer_import("deferpkg.heavy") is False  # already imported
    assert defer_import("deferpkg.missing") is False  # not installed


def _imported(stderr: str, module: str) -> bool:
    """Whether ``python -X importtime`` reported importing ``module``."""
    return any(
        line.rsplit("|", 1)[-1].strip() == module for line in stderr.splitlines() if line.startswith("import time:")
    )


def test_converter_loads_on_a_miss_only(repo_copy, built_site, compiled_code):
    """First build of a copy: mkdocs-jupyter's HTML cache is empty, the converter runs and
    the notebook page has its outputs. Second build: the cache answers, nbconvert is never imported.
    The copy holds the checkout's other build caches (``BUILD_CACHES`` but mkdocs-jupyter's and
    the executed notebooks, placed below: the pruned stylesheets, the finder's JSON and packed
    files, the rendered pages...: ``built_site`` left them), which the converter does not read,
    and its code compiled."""
    copy_build_caches(repo_copy, tuple(name for name in BUILD_CACHES if name not in ("mkdocs-jupyter", "notebooks")))
    shutil.copytree(compiled_code, repo_copy, dirs_exist_ok=True)
    executed = executed_notebooks(REPO_ROOT / "docs", REPO_ROOT, LANGUAGES, "python3", store=machine_store())
    cache = repo_copy / ".cache" / "notebooks"
    cache.mkdir(parents=True)
    for path in executed.values():
        shutil.copy2(path, cache / path.name)  # executed notebooks: no kernel runs in this test
        reads = path.with_name(f"{path.stem}.reads.json")  # what each read when it ran: its cache key
        if reads.is_file():
            shutil.copy2(reads, cache / reads.name)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "GUIDE_NOTEBOOK_STORE": "off"}
    runs = []
    for n in range(2):
        cmd = [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-d",
            str(repo_copy / f"site{n}"),
        ]
        result = subprocess.run(cmd, cwd=repo_copy, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stderr[-3000:]
        runs.append(result.stderr)
        page = (repo_copy / f"site{n}" / "memory-notebook" / "index.html").read_text(encoding="utf-8")
        assert "jp-OutputArea" in page and "assets/notebook/plots/" in page
    assert _imported(runs[0], "nbconvert"), "the first build should have converted the notebooks"
    assert not _imported(runs[1], "nbconvert"), "a cached build imported nbconvert"
    assert not _imported(runs[1], "jupytext")
