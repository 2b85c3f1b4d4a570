"""Verification records for tests: the fixture of verification/fixtures/ (marked as such),
with the snippet hash set to what a test needs."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

from tests.conftest import REPO_ROOT

FIXTURE = REPO_ROOT / "verification" / "fixtures" / "nccl_check.json"


def current_sha256(repo: Path = REPO_ROOT) -> str:
    return hashlib.sha256((repo / "snippets" / "nccl_check.py").read_bytes()).hexdigest()


def fixture_record(repo: Path = REPO_ROOT, **changes) -> dict:
    """The fixture, hashed for ``repo``'s snippet, with top-level ``changes`` applied."""
    record = copy.deepcopy(json.loads(FIXTURE.read_text()))
    assert record["fixture"] is True, "the test record must stay marked as a fixture"
    record["snippet_sha256"] = current_sha256(repo)
    record.update(changes)
    return record


def write_record(path: Path, record: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record), encoding="utf-8")
    return path
