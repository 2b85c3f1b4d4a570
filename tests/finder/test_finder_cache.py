"""assets/finder.json kept under .cache by the SHA-256 of its inputs (hooks/finder.finder_json):
reused by a development build, recomputed after any input changes, never trusted by a
publication build. The reference is ``finder_data`` computed afresh, never the store."""

from __future__ import annotations

import json
import shutil

import pytest

import hooks.data
import hooks.finder as finder
from tests.conftest import REPO_ROOT

DATA_DIR = REPO_ROOT / "snippets" / "data"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A private results folder and a private copy of the data; the memo emptied."""
    monkeypatch.setattr(finder, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(finder, "_json_memo", {})
    data_dir = tmp_path / "data"
    shutil.copytree(DATA_DIR, data_dir)
    yield data_dir
    hooks.data.trust_markers(True)


def fresh(data_dir) -> dict:
    return finder.finder_data(data_dir)


def forge(results_dir) -> None:
    """Overwrite every stored result with a different, valid JSON."""
    for path in results_dir.glob("*.json"):
        path.write_text(json.dumps({"forged": True}), encoding="utf-8")


def test_a_development_build_stores_and_reuses_the_result(store, monkeypatch):
    first = finder.finder_json(store)
    assert json.loads(first) == fresh(store)
    assert len(list(finder.RESULTS_DIR.glob("*.json"))) == 1
    monkeypatch.setattr(finder, "_json_memo", {})
    monkeypatch.setattr(finder, "finder_data", lambda *a: pytest.fail("computed again although stored"))
    assert finder.finder_json(store) == first


def test_a_publication_build_never_reads_the_store(store, monkeypatch):
    finder.finder_json(store)
    forge(finder.RESULTS_DIR)
    monkeypatch.setattr(finder, "_json_memo", {})
    hooks.data.trust_markers(False)
    assert json.loads(finder.finder_json(store)) == fresh(store)


def test_a_data_edit_is_a_new_result(store, monkeypatch):
    finder.finder_json(store)
    forge(finder.RESULTS_DIR)
    gpus = store / "gpus.yaml"
    text = gpus.read_text(encoding="utf-8")
    assert "reserve_mib: 2048" in text
    gpus.write_text(text.replace("reserve_mib: 2048", "reserve_mib: 4096"), encoding="utf-8")
    monkeypatch.setattr(finder, "_json_memo", {})
    found = json.loads(finder.finder_json(store))
    assert found == fresh(store) and found["reserve_mib"] == 4096


def test_a_model_config_edit_is_a_new_digest(store):
    before = finder.inputs_digest(store)
    config = next((store / "models").rglob("*.json"))
    config.write_bytes(config.read_bytes() + b" ")
    assert finder.inputs_digest(store) != before


def test_a_code_edit_is_a_new_digest(store, tmp_path, monkeypatch):
    code = tmp_path / "code" / "vram"
    shutil.copytree(REPO_ROOT / "vram", code, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(finder, "CODE_DIRS", (code,))
    before = finder.inputs_digest(store)
    (code / "fit.py").write_text((code / "fit.py").read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert finder.inputs_digest(store) != before


def test_a_publication_build_after_a_development_build_in_one_process_recomputes(store, monkeypatch):
    finder.finder_json(store)  # a development build: stored, and kept in memory
    forge(finder.RESULTS_DIR)
    monkeypatch.setattr(finder, "_json_memo", {})
    assert json.loads(finder.finder_json(store)) == {"forged": True}  # a development build trusts the checkout
    hooks.data.trust_markers(False)
    assert json.loads(finder.finder_json(store)) == fresh(store)
