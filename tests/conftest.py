"""Shared fixtures: the repository paths, one strict build of the site per session,
and the gpu / browser markers (skip without the hardware, fail when it is required)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
CASES = SHARED / "cases"
SEEDS = SHARED / "seeds"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def build_site(dest: Path, *extra: str, env: dict[str, str] | None = None, config: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``mkdocs build --strict`` into ``dest``; returns the completed process."""
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(dest), *extra]
    if config is not None:
        cmd += ["-f", str(config)]
    full_env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **(env or {})}
    return subprocess.run(cmd, cwd=config.parent if config else REPO_ROOT, env=full_env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="session")
def shared_cases() -> Path:
    assert CASES.is_dir(), f"the handed cases are missing: {CASES}"
    return CASES


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The whole site, both languages, built once with ``mkdocs build --strict``."""
    dest = tmp_path_factory.mktemp("built") / "site"
    result = build_site(dest)
    assert result.returncode == 0, f"strict build failed:\n{result.stderr[-4000:]}"
    return dest


@pytest.fixture
def repo_copy(tmp_path) -> Path:
    """A throwaway copy of the sources, for tests that break an input on purpose."""
    dest = tmp_path / "repo"
    ignore = shutil.ignore_patterns(".venv", "site", ".git", ".cache", "__pycache__", "node_modules", "test-artifacts", "screenshots", ".pytest_cache", ".hypothesis")
    shutil.copytree(REPO_ROOT, dest, ignore=ignore)
    if (REPO_ROOT / "node_modules").is_dir():  # Pyodide, which the build copies into the site: read, not copied
        (dest / "node_modules").symlink_to(REPO_ROOT / "node_modules", target_is_directory=True)
    return dest


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def _browser_available() -> bool:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return Path(CHROMIUM).exists()


def _hunspell_available() -> bool:
    dictionaries = Path("/usr/share/hunspell")
    return shutil.which("hunspell") is not None and all(
        (dictionaries / f"{name}.dic").exists() for name in ("it_IT", "fr_FR"))


def pytest_runtest_setup(item):
    for marker, available, flag in (
        ("gpu", _cuda_available, "REQUIRE_GPU"),
        ("browser", _browser_available, "REQUIRE_BROWSER"),
        ("spelling", _hunspell_available, "REQUIRE_SPELLING"),
    ):
        if item.get_closest_marker(marker) is None or available():
            continue
        if os.environ.get(flag) == "1":
            pytest.fail(f"{flag}=1 but this test needs a {marker} that is not available here", pytrace=False)
        pytest.skip(f"no {marker} here (set {flag}=1 to make this a failure)")
