"""The finder's tests read the frozen test catalogue (tests/catalogue.py), never today's
snippets/data: a price, card or model added there breaks none of them."""

from __future__ import annotations

import pytest

from tests.hooks.conftest import data_dir  # noqa: F401 (a fixture: a copy of snippets/data, models included)


@pytest.fixture(autouse=True)
def _frozen(request):
    """Every test of this folder reads the frozen test catalogue, but those of a module that
    checks the guide's own claims about today's cards (``TODAYS_CATALOGUE = True``)."""
    if not getattr(request.module, "TODAYS_CATALOGUE", False):
        request.getfixturevalue("frozen_catalogue")
