"""A build cache that a commit wrote is not read as the build's own work.

The attack: a pull request commits ``.cache/templates/<key>.jinja`` (``git add -f`` beats
``.gitignore``), a binary nobody reviews, holding compiled template code. A development build
(``make serve``, the pull request's test job) loads the compiled code of ``.cache/templates``
and runs it, and shows the executed notebooks of ``.cache/notebooks`` as if it had run them.
Now a development build refuses to start while git tracks anything under ``.cache/``, with one
line naming the file (the oracle: ``git ls-files`` of a repository made here). A publication
build reads no cache at all (tests/verify/test_publish_build.py).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from hooks.cache import committed_caches
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed to commit a file")


def git(root, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
    )


def test_the_checkout_commits_no_cache():
    assert committed_caches(REPO_ROOT) == []


def test_a_committed_cache_file_is_named_and_an_ignored_one_is_not(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text(".cache/\n")
    (tmp_path / ".cache" / "templates").mkdir(parents=True)
    (tmp_path / ".cache" / "templates" / "own.jinja").write_bytes(b"\0")  # the build's own entry: ignored
    assert committed_caches(tmp_path) == []
    (tmp_path / ".cache" / "templates" / "planted.jinja").write_bytes(b"\0")
    git(tmp_path, "add", "-f", ".cache/templates/planted.jinja")
    assert committed_caches(tmp_path) == [".cache/templates/planted.jinja"]
    assert committed_caches(tmp_path / "no-such-checkout") == []


@pytest.mark.slow
def test_the_development_build_refuses_a_committed_cache(warm_repo_copy, tmp_path, forked_build_site):
    repo_copy = warm_repo_copy
    git(repo_copy, "init", "-q")
    planted = repo_copy / ".cache" / "templates" / "planted.jinja"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes(b"\0")
    git(repo_copy, "add", "-f", ".cache/templates/planted.jinja")
    result = forked_build_site(tmp_path / "site", config=repo_copy / "mkdocs.yml")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and ".cache/templates/planted.jinja: a build cache is committed" in errors[0], (
        result.stderr[-2000:]
    )
    assert "Traceback" not in result.stderr
