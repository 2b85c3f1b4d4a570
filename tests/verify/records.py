"""Verification records for tests: the fixture of verification/fixtures/ (marked as such),
with the snippet hash set to what a test needs and a recent ``utc``."""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
from pathlib import Path

from tests.conftest import REPO_ROOT
from verify.record import BLOCKS

FIXTURE = REPO_ROOT / "verification" / "fixtures" / "nccl_check.json"
# The run time tests give the fixture: recent (records older than a week are refused), whole minutes.
RUN_TIME = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=2)).replace(second=0, microsecond=0)


MONTHS = {
    "it": [
        "gennaio",
        "febbraio",
        "marzo",
        "aprile",
        "maggio",
        "giugno",
        "luglio",
        "agosto",
        "settembre",
        "ottobre",
        "novembre",
        "dicembre",
    ],
    "fr": [
        "janvier",
        "février",
        "mars",
        "avril",
        "mai",
        "juin",
        "juillet",
        "août",
        "septembre",
        "octobre",
        "novembre",
        "décembre",
    ],
}


def run_date(lang: str) -> str:
    """RUN_TIME as the page must write it (CLDR long dates, written out by hand here)."""
    day, month, year, time = RUN_TIME.day, MONTHS[lang][RUN_TIME.month - 1], RUN_TIME.year, RUN_TIME.strftime("%H:%M")
    return f"{day} {month} {year} {'alle' if lang == 'it' else 'à'} {time} UTC"


def current_sha256(repo: Path = REPO_ROOT) -> str:
    return hashlib.sha256((repo / "snippets" / "nccl_check.py").read_bytes()).hexdigest()


def block_sha256(title: str, repo: Path = REPO_ROOT) -> str:
    """The SHA-256 of the snippet file the pages show under ``title`` (the one file of that name)."""
    (path,) = (repo / "snippets").rglob(title)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fixture_record(repo: Path = REPO_ROOT, **changes) -> dict:
    """The fixture, hashed for ``repo``'s snippets and run at ``RUN_TIME``, with top-level ``changes`` applied."""
    record = copy.deepcopy(json.loads(FIXTURE.read_text()))
    assert record["fixture"] is True, "the test record must stay marked as a fixture"
    record["snippet_sha256"] = current_sha256(repo)
    record["blocks"] = {title: block_sha256(title, repo) for title in BLOCKS}
    record["utc"] = RUN_TIME.strftime("%Y-%m-%dT%H:%M:%SZ")
    record.update(changes)
    return record


def one_gpu_record(repo: Path = REPO_ROOT) -> dict:
    """A passing run on one H200 (nvidia-smi: 143771 MiB), as nccl_check.py prints it for one rank:
    1234.5 all-reduces/s of 1 GiB is algbw 1325.5 GB/s, and no busbw."""
    rank = {
        "rank": 0,
        "world": 1,
        "local_rank": 0,
        "device": "cuda:0",
        "host": "fixture-host",
        "allreduce_per_s": 1234.5,
        "algbw_gb_per_s": 1325.5,
        "busbw_gb_per_s": None,
        "checked_sum": 1,
    }
    return fixture_record(
        repo,
        gpu={"model": "NVIDIA H200", "count": 1, "memory_mib": 143771, "driver": "fixture"},
        links={"pairs": {}, "classes": [], "slowest": None},
        torch_device_count=1,
        measured={
            "world_size": 1,
            "size_bytes": 2**30,
            "allreduce_per_s": 1234.5,
            "algbw_gb_per_s": 1325.5,
            "busbw_gb_per_s": None,
            "ranks": [rank],
        },
    )


def changed(record: dict, path: str, value) -> dict:
    """``record`` with the field at dotted ``path`` (``measured.allreduce_per_s``) set to ``value``."""
    record = copy.deepcopy(record)
    *parents, key = path.split(".")
    target = record
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[key] = value
    return record


def junit_report(counts: dict) -> str:
    """A JUnit report as pytest writes it (``--junitxml``) with ``counts`` (passed, failed, skipped, errors)."""
    cases = "".join(
        f'<testcase classname="tests.gpu.test_on_gpu" name="test_{n}" time="0.1"{" /" if kind == "passed" else ""}>'
        + (
            ""
            if kind == "passed"
            else f'<{ {"failed": "failure", "errors": "error", "skipped": "skipped"}[kind] } message="m" /></testcase>'
        )
        for kind in ("passed", "failed", "skipped", "errors")
        for n in range(counts.get(kind, 0))
    )
    total = sum(counts.get(kind, 0) for kind in ("passed", "failed", "skipped", "errors"))
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" '
        f'errors="{counts.get("errors", 0)}" failures="{counts.get("failed", 0)}" skipped="{counts.get("skipped", 0)}" '
        f'tests="{total}" time="1.0">{cases}</testsuite></testsuites>'
    )


def write_record(path: Path, record: dict) -> Path:
    """``record`` at ``path``, with the gpu tests' JUnit report it counts beside it (``gpu-tests.xml``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record), encoding="utf-8")
    given = record.get("gpu_tests")
    tests = given if isinstance(given, dict) else {}
    counts = {key: value for key, value in tests.items() if key != "status" and type(value) is int}
    path.with_name("gpu-tests.xml").write_text(junit_report(counts), encoding="utf-8")
    return path
