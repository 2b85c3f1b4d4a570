"""What the publish gate accepts: only a passing, fresh GPU record (fixtures only when allowed)."""

from __future__ import annotations

import pytest

from tests.verify.records import current_sha256, fixture_record, write_record
from verify.record import RecordError, check_record, load_record

SHA = current_sha256()


def check(record, allow_fixture=True):
    return check_record(record, SHA, "rec.json", allow_fixture=allow_fixture)


def test_the_fixture_passes_only_when_fixtures_are_allowed():
    assert check(fixture_record())["status"] == "pass"
    with pytest.raises(RecordError, match="rec.json: is a test fixture, not a GPU run"):
        check(fixture_record(), allow_fixture=False)


@pytest.mark.parametrize("changes, message", [
    ({"snippet_sha256": "f" * 64}, r"stale, it verified nccl_check.py with sha256 ffffffffffff…"),
    ({"status": "fail", "failures": ["nccl_check.py exited 1"]}, r"records a 'fail' run, not 'pass' \(nccl_check.py exited 1\)"),
    ({"gpu_tests": {"status": "pass", "passed": 2, "failed": 0, "skipped": 1}}, "a skip counts as a failure"),
    ({"gpu_tests": {"status": "not run"}}, "GPU tests did not all pass"),
    ({"measured": {"busbw_gb_per_s": 4800.0}}, "busbw 4800.0 GB/s is not plausible"),
    ({"schema": 2}, "schema 2, this build reads schema 1"),
    ({"versions": None}, "field 'versions' missing"),
])
def test_bad_records_are_refused_naming_the_problem(changes, message):
    with pytest.raises(RecordError, match=message):
        check(fixture_record(**changes))


def test_missing_and_unreadable_records(tmp_path):
    with pytest.raises(RecordError, match="no verification record; run `make gpu-check`"):
        load_record(tmp_path / "nccl_check.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(RecordError, match="not a readable JSON record"):
        load_record(tmp_path / "bad.json")
    assert load_record(write_record(tmp_path / "ok.json", fixture_record()))["fixture"] is True
