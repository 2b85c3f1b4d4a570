"""What the publish gate accepts: only a passing, fresh, self-consistent GPU record of the
pages' snippet (../shared/cases/integrity.md, "The verification record"); fixtures only when allowed.

Each case starts from the passing fixture, changes one field, writes the record as JSON and
reads it back the way the publish build does: one line naming the record file, no traceback.
"""

from __future__ import annotations

import datetime
import re

import pytest

from tests.conftest import REPO_ROOT
from tests.verify.records import changed, current_sha256, fixture_record, one_gpu_record, write_record
from verify.record import RecordError, check_record, load_record, pinned_torch

SHA = current_sha256()
# torch's pin, read from constraints.txt by a route of its own (pinned_torch is what is tested)
PINNED_TORCH = re.findall(r"(?m)^torch==(\S+)$", (REPO_ROOT / "constraints.txt").read_text())[0]


def check(record, allow_fixture=True):
    return check_record(record, SHA, "rec.json", allow_fixture=allow_fixture)


def test_the_fixture_passes_only_when_fixtures_are_allowed():
    assert check(fixture_record())["status"] == "pass"
    with pytest.raises(RecordError, match=r"rec\.json: is a test fixture, not a GPU run"):
        check(fixture_record(), allow_fixture=False)


def test_a_one_gpu_run_is_recorded_without_busbw():
    assert check(one_gpu_record())["measured"]["busbw_gb_per_s"] is None
    with pytest.raises(RecordError, match=r"a busbw for one rank; nothing crosses a link"):
        check(changed(one_gpu_record(), "measured.busbw_gb_per_s", 0.5))


RECORD_CASES: list[tuple[str, object, str]] = [  # (dotted field, value, what the line must say)
    ("gpu.count", 0, r"gpu\.count: Input should be greater than or equal to 1 \(got 0\)"),
    ("gpu.model", None, r"gpu\.model: Input should be a valid string \(got None\)"),
    ("measured.world_size", 1, r"measured: (ranks must be one line for each rank 0\.\.0|a busbw for one rank)"),
    ("utc", "2099-01-01T00:00:00Z", r"utc: 2099-01-01T00:00:00Z is in the future"),
    ("utc", "1970-01-01T00:00:00Z", r"utc: 1970-01-01T00:00:00Z is older than 7 days"),
    (
        "measured.allreduce_per_s",
        -5,
        r"measured\.allreduce_per_s: Input should be greater than or equal to 0\.1 \(got -5\)",
    ),
    (
        "measured.allreduce_per_s",
        float("inf"),
        r"measured\.allreduce_per_s: Input should be a finite number \(got inf\)",
    ),
    ("gpu.count", "many", r"gpu\.count: Input should be a valid integer \(got 'many'\)"),
    ("gpu_tests.errors", 5, r"gpu_tests\.errors: Input should be less than or equal to 0 \(got 5\)"),
    ("gpu_tests.passed", "3", r"gpu_tests\.passed: Input should be a valid integer \(got '3'\)"),
    ("failures", ["x"], r"failures: List should have at most 0 items after validation, not 1 \(got \['x'\]\)"),
    ("snippet", "train.py", r"snippet: the record is of 'train\.py', the pages' verified block is 'nccl_check\.py'"),
    (
        "versions.torch",
        "1.0",
        r"versions\.torch: torch 1\.0 ran, constraints\.txt pins torch==" + re.escape(PINNED_TORCH),
    ),
    ("measured.world_size", 3, r"measured: ranks must be one line for each rank 0\.\.2 of a world of 3"),
    ("measured.allreduce_per_s", "fast", r"measured\.allreduce_per_s: Input should be a valid number \(got 'fast'\)"),
    ("measured.allreduce_per_s", None, r"measured\.allreduce_per_s: Input should be a valid number \(got None\)"),
    ("measured.allreduce_per_s", {}, r"measured\.allreduce_per_s: Input should be a valid number \(got \{\}\)"),
    ("measured.busbw_gb_per_s", True, r"measured\.busbw_gb_per_s: Input should be a valid number \(got True\)"),
    (
        "measured.algbw_gb_per_s",
        1e300,
        r"measured: the summary: algbw_gb_per_s is 1e\+300, but the other figures give 257\.2",
    ),
    ("measured.busbw_gb_per_s", 4800.0, r"measured\.busbw_gb_per_s: Input should be less than or equal to 1000"),
    ("gpu_tests.skipped", 1, r"gpu_tests\.skipped: Input should be less than or equal to 0"),
    ("gpu_tests.failed", False, r"gpu_tests\.failed: Input should be a valid integer \(got False\)"),
    ("runner", 7, r"runner: Input should be a valid string \(got 7\)"),
    ("extra", "x", r"extra: Extra inputs are not permitted"),
    # type and value tricks the schema let through
    ("schema", 2.0, r"schema 2\.0, this build reads schema 2"),
    ("measured.allreduce_per_s", 1e-300, r"measured\.allreduce_per_s: Input should be greater than or equal to 0\.1"),
    (
        "measured.algbw_gb_per_s",
        257.15,
        r"measured\.algbw_gb_per_s: 257\.15 is not a figure the snippet prints \(one decimal\)",
    ),
    ("versions.cuda", " ", r"versions\.cuda: String should match pattern"),
    ("gpu.model", "NVIDIA H100\n", r"gpu\.model: String should match pattern"),
    (
        "measured.ranks.3.device",
        "cpu",
        r"measured: rank 3 ran on cpu as local rank 3: one machine's ranks each on the GPU of its local rank \(cuda:3\)",
    ),
    ("measured.ranks.5.host", "other-host", r"measured: the ranks ran on several hosts"),
]


@pytest.mark.parametrize("field, value, message", RECORD_CASES, ids=[f"{f}={v!r}" for f, v, _ in RECORD_CASES])
def test_a_bad_field_is_refused_with_one_line_naming_the_file(field, value, message, tmp_path):
    path = write_record(tmp_path / "verification" / "nccl_check.json", changed(fixture_record(), field, value))
    with pytest.raises(RecordError) as error:
        check_record(load_record(path), SHA, str(path), allow_fixture=True)
    line = str(error.value)
    assert "\n" not in line and line.startswith(f"{path}: "), line
    assert __import__("re").search(message, line), line


def test_world_size_gpu_count_and_device_count_must_agree():
    record = changed(changed(fixture_record(), "gpu.count", 4), "torch_device_count", 4)
    with pytest.raises(
        RecordError,
        match=r"measured\.world_size = gpu\.count = torch_device_count, got measured\.world_size 8, gpu\.count 4",
    ):
        check(record)


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"snippet_sha256": "f" * 64, "blocks": {**fixture_record()["blocks"], "nccl_check.py": "f" * 64}},
            r"stale, it verified nccl_check.py with sha256 ffffffffffff…",
        ),
        ({"snippet_sha256": "f" * 64}, r"blocks\['nccl_check.py'\] is not snippet_sha256"),
        (
            {"status": "fail", "failures": ["nccl_check.py exited 1"]},
            r"records a 'fail' run, not 'pass' \(nccl_check.py exited 1\)",
        ),
        ({"gpu_tests": {"status": "not run"}}, r"gpu_tests\.status: Input should be 'pass'"),
        ({"schema": 1}, "schema 1, this build reads schema 2"),
        ({"versions": None}, r"versions: Input should be a mapping of keys \(got None\)"),
    ],
)
def test_bad_records_are_refused_naming_the_problem(changes, message):
    with pytest.raises(RecordError, match=message):
        check(fixture_record(**changes))


def test_the_pinned_torch_is_read_from_constraints():
    assert pinned_torch() == PINNED_TORCH


def test_a_record_from_the_future_is_refused_even_by_a_minute_past_the_skew():
    now = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
    ok = fixture_record(utc="2026-12-01T12:04:00Z")
    assert check_record(ok, SHA, "r", allow_fixture=True, now=now)
    with pytest.raises(RecordError, match="is in the future"):
        check_record(fixture_record(utc="2026-12-01T12:06:00Z"), SHA, "r", allow_fixture=True, now=now)


def test_missing_unreadable_and_duplicate_key_records(tmp_path):
    with pytest.raises(RecordError, match="no verification record; run `make gpu-check`"):
        load_record(tmp_path / "nccl_check.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(RecordError, match="not a readable JSON record"):
        load_record(tmp_path / "bad.json")
    (tmp_path / "twice.json").write_text('{"status": "fail", "status": "pass"}')
    with pytest.raises(RecordError, match=r"twice\.json: not a readable JSON record \(duplicate key 'status'\)"):
        load_record(tmp_path / "twice.json")
    assert load_record(write_record(tmp_path / "ok.json", fixture_record()))["fixture"] is True


def test_figures_too_small_to_print_are_refused():
    """A one-GPU record of 1e-300 all-reduces per second, consistent with itself, was accepted
    and shown as "0,0 all-reduce al secondo": the snippet prints one decimal, so 0.1 is its least."""
    tiny = 1e-300
    record = changed(changed(one_gpu_record(), "measured.allreduce_per_s", tiny), "measured.algbw_gb_per_s", tiny)
    record = changed(changed(record, "measured.ranks.0.allreduce_per_s", tiny), "measured.ranks.0.algbw_gb_per_s", tiny)
    with pytest.raises(RecordError, match=r"measured\.allreduce_per_s: Input should be greater than or equal to 0\.1"):
        check(record)


def test_blocks_name_exactly_the_blocks_the_gpu_job_ran():
    """``blocks`` maps every block the GPU job hashes (verify.record.BLOCKS) to a digest: one
    missing, one more, or a digest that is not 64 hex digits is refused, naming it."""
    from verify.record import BLOCKS

    good = fixture_record()
    assert set(good["blocks"]) == set(BLOCKS) and check(good)
    without = {title: digest for title, digest in good["blocks"].items() if title != "train_hf.py"}
    with pytest.raises(RecordError, match=r"blocks: the blocks the GPU job hashes are .*; missing train_hf\.py"):
        check(fixture_record(blocks=without))
    with pytest.raises(RecordError, match=r"blocks: .*; not one of them: evil\.py"):
        check(fixture_record(blocks={**good["blocks"], "evil.py": "0" * 64}))
    with pytest.raises(RecordError, match=r"blocks\.train\.py: String should match pattern"):
        check(fixture_record(blocks={**good["blocks"], "train.py": "F" * 64}))
    with pytest.raises(RecordError, match=r"blocks: Field required"):
        record = fixture_record()
        del record["blocks"]
        check(record)
