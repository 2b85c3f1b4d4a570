"""`make serve` says why it cannot start (a new contributor's trial, issue 18): an address in
use names the port and how to choose another, and stops instead of waiting for an edit; a hook
that does not import shows its file, line and traceback; a notebook run names the notebook
and the changed file it reads; the render layer's rule files are watched. The decisions are
plain functions, tested here without a server; the one real server run is
test_serve_reload.py."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time

import pytest
from mkdocs.exceptions import Abort

from hooks.notebooks import execute as notebooks
from hooks.serve import REPO_ROOT, WATCHED, address_in_use, dev_address, start_failure
from verify.languages import MKDOCS_YML, read_mkdocs_yml


@pytest.fixture
def busy_port():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_an_address_in_use_stops_make_serve_with_the_port_and_how_to_choose_another(busy_port):
    """Before: the first build ran (seconds to minutes), then "the server could not start;
    waiting for an edit…", which no edit can fix."""
    assert address_in_use("127.0.0.1", busy_port)
    result = subprocess.run(
        [sys.executable, "-m", "hooks.serve", "--livereload", f"--dev-addr=127.0.0.1:{busy_port}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert (
        f"cannot serve on 127.0.0.1:{busy_port}: the address is already in use" in result.stderr
        and f"`make serve PORT={busy_port + 1}`" in result.stderr
    ), result.stderr
    assert "waiting for an edit" not in result.stderr and "Building documentation" not in result.stderr  # no build ran
    assert start_failure(OSError(98, "Address already in use")) == ("", False)


def test_the_makefile_and_the_docs_say_how_to_choose_the_port():
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    assert "PORT ?= 8000" in makefile and "--dev-addr=127.0.0.1:$(PORT)" in makefile
    for doc in ("README.md", "CONTRIBUTING.md"):
        assert "make serve PORT=8001" in (REPO_ROOT / doc).read_text(encoding="utf-8"), doc
    assert dev_address(["--livereload", "--dev-addr=127.0.0.1:8001"]) == ("127.0.0.1", 8001)
    assert dev_address(["-a", "0.0.0.0:8002"]) == ("0.0.0.0", 8002)
    assert dev_address([]) == ("127.0.0.1", 8000)  # mkdocs.yml sets no dev_addr: MkDocs' default


def test_a_hook_that_does_not_import_shows_its_file_line_and_traceback(tmp_path):
    """Before: "INFO - Shutting down..." and "the server could not start", no file, no line."""
    broken = tmp_path / "typography.py"
    broken.write_text("x = 1\ndef broken(:\n", encoding="utf-8")
    try:
        compile(broken.read_text(encoding="utf-8"), str(broken), "exec")
    except SyntaxError as exc:
        shown, an_edit_can_fix_it = start_failure(exc)
    assert an_edit_can_fix_it
    assert f'File "{broken}", line 2' in shown and "def broken(:" in shown and "SyntaxError" in shown, shown
    assert shown.splitlines()[-1].startswith(f"hooks.serve: {broken}:2: SyntaxError"), shown


def test_a_bug_at_start_up_shows_the_deepest_frame_of_the_repository():
    try:
        notebooks.notebook_language(REPO_ROOT / "docs" / "index.ipynb", None)  # a TypeError inside the repository
    except TypeError as exc:
        shown, an_edit_can_fix_it = start_failure(exc)
    assert an_edit_can_fix_it and "Traceback (most recent call last)" in shown
    assert shown.splitlines()[-1].startswith("hooks.serve: hooks/notebooks/execute.py:"), shown


def test_a_failed_build_adds_nothing_to_its_one_line():
    assert start_failure(Abort("Aborted with a BuildError!")) == ("", True)


def test_the_render_layer_rule_files_are_watched():
    """Before: an edit of hooks/render/typography.yaml or interface.yaml did not rebuild."""
    rule_files = sorted((REPO_ROOT / "hooks").rglob("*.yaml"))
    assert {path.name for path in rule_files} >= {"typography.yaml", "interface.yaml"}
    watch = read_mkdocs_yml(MKDOCS_YML)["watch"]
    for path in rule_files:
        assert any(path == REPO_ROOT / item or (REPO_ROOT / item) in path.parents for item in watch), path
        assert path in WATCHED, path  # and a server whose start failed comes back on their edit


def test_a_notebook_run_is_logged_with_the_changed_file_it_reads(tmp_path, monkeypatch, caplog):
    """Before: ~48 s of silence between "Building documentation..." and "built in"."""
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "snippets" / "data").mkdir(parents=True)
    src = repo / "docs" / "memory-notebook.it.ipynb"
    src.write_text('{"cells": []}', encoding="utf-8")
    data = repo / "snippets" / "data" / "gpus.yaml"
    data.write_text("a: 1\n", encoding="utf-8")
    cache = repo / ".cache" / "notebooks"

    def run(src, dest, repo_root, lang, kernel_name, timeout_s, source, kernel_tmp):  # the kernel: reads gpus.yaml
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(source)
        read = json.dumps([False, str(data), str(data.resolve())])  # as READS_HOOK writes it
        dest.with_name(dest.name + ".reads.log").write_text(f"{read}\n", encoding="utf-8")

    monkeypatch.setattr(notebooks, "execute", run)
    with caplog.at_level(logging.INFO, logger="mkdocs.hooks.guide.notebooks"):
        notebooks.executed_notebook(src, repo, "it", "python3", cache)
        assert json.loads(next(cache.glob("*.reads.json")).read_text()) == ["snippets/data/gpus.yaml"]
        notebooks.executed_notebook(src, repo, "it", "python3", cache)  # cached: no line
        data.write_text("a: 2\n", encoding="utf-8")
        later = time.time() + 5
        os.utime(data, (later, later))
        notebooks.executed_notebook(src, repo, "it", "python3", cache)
    assert [record.getMessage() for record in caplog.records] == [
        "executing docs/memory-notebook.it.ipynb (it): no executed copy yet",
        "executing docs/memory-notebook.it.ipynb (it): it reads snippets/data/gpus.yaml, which changed",
    ]
