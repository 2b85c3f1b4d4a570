"""A clone whose ``.venv`` is a symbolic link to another folder (a shared environment) builds and
serves: the theme's files are read through the link, and the symlink check refuses links among
the repository's own content only (tests/hooks/test_snippet_includes.py has the refusals).
``make test`` in such a clone runs its builds with the same interpreter as these do."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.snippets.launch import free_port

pytestmark = pytest.mark.slow


@pytest.fixture
def linked_clone(warm_repo_copy):
    """The sources with ``.venv`` linking to the environment these tests run in; its interpreter.
    The copy holds the checkout's build caches, as a clone built before does (the link is read
    all the same: the theme's files are copied from it on every build)."""
    repo_copy = warm_repo_copy
    assert sys.prefix != sys.base_prefix, "the tests run in a virtual environment (make test: .venv)"
    os.symlink(sys.prefix, repo_copy / ".venv")
    python = repo_copy / ".venv" / "bin" / "python"
    theme = subprocess.run(
        [python, "-c", "import material; print(material.__file__)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert theme.startswith(f"{repo_copy}{os.sep}.venv{os.sep}"), theme  # read through the link
    return repo_copy, python


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.read()
    except OSError:
        return None


def test_a_clone_with_a_linked_environment_builds_and_serves(linked_clone, tmp_path):
    """``make serve``'s command: its first build is the strict one (mkdocs.yml: ``strict: true``;
    a failed build logs "waiting for an edit" instead of serving), so one build proves both."""
    root, python = linked_clone
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    port, log_path = free_port(), tmp_path / "serve.log"
    with log_path.open("w") as out:
        server = subprocess.Popen(
            [python, "-m", "hooks.serve", f"--dev-addr=127.0.0.1:{port}"],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    log = lambda: log_path.read_text(encoding="utf-8", errors="replace")  # noqa: E731
    try:
        page = None
        deadline = time.monotonic() + 600  # bounds a hang: a healthy start takes seconds
        while page is None and time.monotonic() < deadline and "waiting for an edit" not in log():
            page = _get(f"http://127.0.0.1:{port}/")
            if page is None:
                time.sleep(0.5)
        favicon = _get(f"http://127.0.0.1:{port}/assets/images/favicon.png")  # the theme's, through the link
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
    assert page is not None and b"<html" in page, log()[-3000:]
    assert favicon is not None and favicon.startswith(b"\x89PNG"), log()[-3000:]
    assert "symbolic link" not in log(), log()[-3000:]
