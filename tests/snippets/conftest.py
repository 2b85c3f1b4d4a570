"""The scripts as readers copy them: extracted from the built site (both languages checked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verify.extract import extract


@pytest.fixture(scope="session")
def extracted(built_site, tmp_path_factory) -> Path:
    """A folder with nccl_check.py and train.py taken from the built pages."""
    out = tmp_path_factory.mktemp("extracted")
    extract(built_site, out)
    return out
