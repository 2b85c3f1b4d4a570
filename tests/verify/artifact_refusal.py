"""The artifact tests' shared parts: a module's copy of the built site, put back after each test
(fixtures ``copied`` and ``site``: import them), and the check's one-line refusal (``refused``)."""

from __future__ import annotations

import shutil

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


RESTORED = (".js", ".css", ".json", ".html")  # what a test may change or add


@pytest.fixture(scope="module")
def copied(built_site, tmp_path_factory):
    copy = tmp_path_factory.mktemp("artifact") / "site"
    shutil.copytree(built_site, copy, symlinks=True)
    return copy


@pytest.fixture
def site(copied):
    """The module's copy of the built site; every file a test changes or adds is put back after it."""
    before = {path: path.read_bytes() for path in copied.rglob("*") if path.is_file() and path.suffix in RESTORED}
    yield copied
    for path in copied.rglob("*"):
        if path.is_file() and path.suffix in RESTORED and path not in before:
            path.unlink()
    for path, data in before.items():
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
