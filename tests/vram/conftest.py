"""Fixtures for the calculator's tests: where the configs are, and a CLI runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# CI runs a fresh clone with a copy of shared/ beside it: <clone>/../shared.
SHARED_CASES = (REPO_ROOT / ".." / "shared" / "cases").resolve()
SHARED_CONFIGS = SHARED_CASES / "configs"
LOCAL_CONFIGS = Path(__file__).resolve().parent / "configs"


@pytest.fixture(scope="session")
def shared_configs() -> Path:
    """The guide's own config cases; a missing folder FAILS (never skips)."""
    assert SHARED_CONFIGS.is_dir(), f"shared cases not found at {SHARED_CONFIGS}"
    return SHARED_CONFIGS


@pytest.fixture(scope="session")
def local_configs() -> Path:
    return LOCAL_CONFIGS


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m vram ARGS`` in a subprocess, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "vram", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def cli():
    return run_cli
