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

from tests.conftest import build_site
from tests.snippets.launch import free_port

pytestmark = pytest.mark.slow


@pytest.fixture
def linked_clone(repo_copy):
    """The sources with ``.venv`` linking to the environment these tests run in; its interpreter."""
    assert sys.prefix != sys.base_prefix, "the tests run in a virtual environment (make test: .venv)"
    os.symlink(sys.prefix, repo_copy / ".venv")
    python = repo_copy / ".venv" / "bin" / "python"
    theme = subprocess.run([python, "-c", "import material; print(material.__file__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert theme.startswith(f"{repo_copy}{os.sep}.venv{os.sep}"), theme  # read through the link
    return repo_copy, python


def test_a_clone_with_a_linked_environment_builds_and_serves(linked_clone, tmp_path):
    root, python = linked_clone
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([python, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                            cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "assets" / "images" / "favicon.png").is_file()  # the theme's, through the link

    port = free_port()
    server = subprocess.Popen([python, "-m", "hooks.serve", f"--dev-addr=127.0.0.1:{port}"], cwd=root, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        page = None
        deadline = time.monotonic() + 600  # bounds a hang: a healthy start takes seconds
        while page is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
                    page = response.read().decode("utf-8")
            except OSError:
                time.sleep(0.5)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        log = server.communicate(timeout=60)[0]
    assert page is not None and "<html" in page, log[-3000:]
    assert "symbolic link" not in log, log[-3000:]
