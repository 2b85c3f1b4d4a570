"""Fixtures for render-function tests: a throwaway data folder."""

from __future__ import annotations

import pytest

import hooks.data.load
from tests.catalogue import frozen_data


@pytest.fixture(autouse=True)
def _frozen(request):
    """The render layer's tests read the frozen test catalogue (tests/catalogue.py), but those
    of a module that checks the guide's own claims about today's cards (``TODAYS_CATALOGUE = True``)."""
    if not getattr(request.module, "TODAYS_CATALOGUE", False):
        request.getfixturevalue("frozen_catalogue")


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A copy of snippets/data, with the frozen test catalogue, that a test may break; the
    render layer reads it."""
    dest = frozen_data(tmp_path / "data")
    monkeypatch.setattr(hooks.data.load, "DATA_DIR", dest)
    return dest
