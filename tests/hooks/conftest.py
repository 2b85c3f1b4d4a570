"""Fixtures for render-function tests: a throwaway data folder."""

from __future__ import annotations

import shutil

import pytest

import hooks.data.load
from tests.conftest import REPO_ROOT


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A copy of snippets/data that a test may break; the render layer reads it."""
    dest = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "snippets" / "data", dest)
    monkeypatch.setattr(hooks.data.load, "DATA_DIR", dest)
    return dest
