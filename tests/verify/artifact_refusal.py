"""The artifact tests' shared parts: a module's copy of the built site, put back after each test
(fixtures ``copied`` and ``site``, offered to tests/verify by its conftest.py), and the check's one-line refusal (``refused``)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from verify.artifact import ArtifactError, check_site


def refused(site, *match: str) -> str:
    """The one-line message ``check_site`` refuses ``site`` with; fails unless each of ``match`` is in it."""
    with pytest.raises(ArtifactError) as caught:
        check_site(site, REPO_ROOT / "snippets")
    message = str(caught.value)
    assert "\n" not in message
    for part in match:
        assert part in message, message
    return message


@pytest.fixture(scope="module")
def copied(built_site, tmp_path_factory):
    copy = tmp_path_factory.mktemp("artifact") / "site"
    shutil.copytree(built_site, copy, symlinks=True)
    return copy


def _entries(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every file, folder and link under ``root`` (relative POSIX path) -> (mode, size,
    mtime_ns) of the entry itself (``lstat``); a folder's size and time are 0 (they change
    as its entries do, which are listed themselves)."""
    found = {}
    for folder, names, files in os.walk(root):
        for name in names + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            plain = stat.S_ISREG(info.st_mode)
            found[os.path.relpath(path, root)] = (
                info.st_mode,
                info.st_size if plain else 0,
                info.st_mtime_ns if plain else 0,
            )
    return found


@pytest.fixture
def site(copied, built_site):
    """The module's copy of the built site, as ``built_site`` is, before each test: whatever a test
    adds (a file, a folder, a link) is removed after it, whatever it changes or removes is copied
    again from ``built_site``. (``copytree`` keeps each file's modification time, which any write
    changes: an entry whose ``lstat`` differs from the copy's is one a test touched.)"""
    before = _entries(copied)
    yield copied
    after = _entries(copied)
    for rel in sorted(set(after) - set(before), reverse=True):  # a folder's entries before the folder
        path = copied / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    for rel, entry in sorted(before.items()):
        if after.get(rel) == entry:
            continue
        path, source = copied / rel, built_site / rel
        if path.is_dir() and not path.is_symlink():
            if not stat.S_ISDIR(entry[0]):
                shutil.rmtree(path)
        elif path.is_symlink() or path.exists():
            path.unlink()
        if stat.S_ISDIR(entry[0]):
            path.mkdir(exist_ok=True)
        else:
            shutil.copy2(source, path, follow_symlinks=False)
    assert _entries(copied) == before, "the site's copy was not put back"
