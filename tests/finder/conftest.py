"""The finder's tests read the frozen test catalogue (tests/catalogue.py), never today's
snippets/data: a price, card or model added there breaks none of them."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _frozen(frozen_catalogue):
    """Every test of this folder reads the frozen test catalogue."""
