"""Rebuild time under ``mkdocs serve``: edit one page of a copy of the sources and time
until the served page shows the edit."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

COPY_IGNORE = shutil.ignore_patterns(
    ".venv",
    ".git",
    "site",
    "node_modules",
    "tests",
    "bench",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    "test-artifacts",
    "verification",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf-8", "replace")
    except OSError:
        return None


def _wait_for(url: str, text: str, timeout: float) -> float | None:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        body = _get(url)
        if body is not None and text in body:
            return time.perf_counter() - start
        time.sleep(0.05)
    return None


def rebuild_seconds(
    repo: Path, workdir: Path, page: str = "memory-formulas", edits: int = 3, timeout: float = 300
) -> list[float]:
    """Seconds from saving ``docs/<page>.it.md`` to the served page showing the change, per edit."""
    copy = workdir / "serve-copy"
    shutil.copytree(repo, copy, ignore=COPY_IGNORE)
    if (repo / "node_modules").is_dir():  # Pyodide's files, which the build copies into the site
        (copy / "node_modules").symlink_to(repo / "node_modules", target_is_directory=True)
    port = _free_port()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "SITE_URL": f"http://127.0.0.1:{port}/"}
    log = (workdir / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "hooks.serve", "-a", f"127.0.0.1:{port}"],
        cwd=copy,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/{page}/"
    source = copy / "docs" / f"{page}.it.md"
    original = source.read_text(encoding="utf-8")
    times = []
    try:
        if _wait_for(url, "</html>", timeout) is None:
            raise RuntimeError(f"mkdocs serve did not serve {url} within {timeout} s (log: {workdir / 'serve.log'})")
        time.sleep(1.0)  # let the watcher settle after the first build
        for n in range(edits):
            marker = f"benchmark-edit-{n}-{time.time_ns()}"
            source.write_text(original + f"\n\n{marker}\n", encoding="utf-8")
            seconds = _wait_for(url, marker, timeout)
            if seconds is None:
                raise RuntimeError(f"edit {n} never showed at {url} (log: {workdir / 'serve.log'})")
            times.append(seconds)
            time.sleep(1.0)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    return times
