"""Fixtures for the calculator's tests: where the configs are, and a CLI runner."""

from __future__ import annotations

import os
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
        check=False,
    )


@pytest.fixture(scope="session")
def vram_zygote(tmp_path_factory):
    """``{"SCRIPT_ZYGOTE": socket}`` of a script_zygote.py that imported this checkout's ``vram``
    (and its command line, vram/cli/) once, serving for the session
    (tests/snippets/script_zygote.py)."""
    from tests.snippets.script_zygote import serving

    modules = [
        "vram",
        "vram.cli",
        *(
            ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
            for path in sorted((REPO_ROOT / "vram").rglob("*.py"))
            if not path.stem.startswith("__")
        ),
    ]
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))  # this checkout's vram first
    with serving(modules, {**os.environ, "PYTHONPATH": path}, tmp_path_factory.mktemp("vram-zygote")) as env:
        yield env


@pytest.fixture
def cli(vram_zygote):
    """``run_cli``, each ``python -m vram ARGS`` forked from ``vram_zygote`` (``script_zygote.py
    worker -m vram ARGS``: the module run as ``-m`` runs it, its argv, environment, working
    folder, streams and exit status the process's own) instead of importing ``vram`` again."""
    from tests.snippets.launch import SCRIPT_ZYGOTE

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(SCRIPT_ZYGOTE), "worker", "-m", "vram", *args],
            cwd=REPO_ROOT,
            env={**os.environ, **vram_zygote},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    return run
