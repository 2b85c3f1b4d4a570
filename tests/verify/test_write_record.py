"""The record is written from the collected outputs (verify.write_record), and the publish gate
holds the record's gpu_tests to the gpu tests' own JUnit report (issue 33, hole 1)."""

from __future__ import annotations

import copy
import json

import pytest

from hooks.checks.publish_gate import check_gpu_tests
from hooks.errors import RenderError
from tests.verify.records import fixture_record, junit_report
from verify import write_record
from verify.junit import JUnitError, junit_counts

RANKS = "".join(
    f"rank {r}/2 local_rank {r} cuda:{r} h: 41.3 all-reduce/s of 1.07 GB, algbw 44.4 GB/s, busbw 44.4 GB/s, "
    "sum 3 correct\n"
    for r in (0, 1)
)
OUTPUTS = {
    "outputs": 1,
    "utc": "2026-01-01T00:00:00Z",
    "runner": "r",
    "snippet": "nccl_check.py",
    "nvidia_smi": {"returncode": 0, "stdout": "NVIDIA H100 80GB HBM3, 81559, 550.54.15\n" * 2, "stderr": ""},
    "topo": {"returncode": 0, "stdout": "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n", "stderr": ""},
    "versions": {"torch": "2.13.0", "cuda": "12.8", "nccl": "2.27.3"},
    "torch_device_count": 2,
    "build": {"returncode": 0, "stderr_tail": ""},
    "blocks": {"nccl_check.py": "a" * 64},
    "check": {"returncode": 0, "stdout": RANKS, "stderr_tail": ""},
    "gpu_tests": {"returncode": 0, "stderr_tail": ""},
}


def written(tmp_path, outputs: dict, counts: dict | None) -> dict:
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    if counts is not None:
        (tmp_path / "gpu-tests.xml").write_text(junit_report(counts))
    write_record.main([str(tmp_path)])
    return json.loads((tmp_path / "nccl_check.json").read_text())


def test_outputs_of_a_good_run_make_a_passing_record(tmp_path):
    record = written(tmp_path, OUTPUTS, {"passed": 3})
    assert record["status"] == "pass", record["failures"]
    assert record["gpu_tests"] == {"status": "pass", "passed": 3, "failed": 0, "skipped": 0, "errors": 0}
    assert record["measured"]["world_size"] == 2 and record["measured"]["busbw_gb_per_s"] == 44.4
    assert record["gpu"] == {"model": "NVIDIA H100 80GB HBM3", "count": 2, "memory_mib": 81559, "driver": "550.54.15"}


@pytest.mark.parametrize(
    ("returncode", "counts", "reason"),
    [
        (0, {"passed": 2, "failed": 1}, "disagrees with its report"),  # an exit status forced to 0
        (1, {"passed": 3}, "disagrees with its report"),
        (0, {"passed": 2, "skipped": 1}, "'skipped': 1"),
        (0, {}, "'passed': 0"),
        (0, None, "no JUnit report"),
    ],
)
def test_the_gpu_tests_pass_only_when_exit_status_and_report_agree(tmp_path, returncode, counts, reason):
    outputs = copy.deepcopy(OUTPUTS)
    outputs["gpu_tests"]["returncode"] = returncode
    record = written(tmp_path, outputs, counts)
    assert record["status"] == "fail" and any(reason in failure for failure in record["failures"]), record["failures"]


def test_unreadable_outputs_are_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "outputs.json").write_text('{"status": "pass"}')
    assert write_record.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "outputs.json: not the outputs of `python -m verify.gpu_check`" in err
    assert not (tmp_path / "nccl_check.json").exists()


def test_the_publish_gate_holds_the_record_to_the_junit_report(tmp_path):
    record = fixture_record()
    junit = tmp_path / "gpu-tests.xml"
    junit.write_text(junit_report({"passed": 3}))
    check_gpu_tests(record, junit)  # the fixture records 3 passed
    junit.write_text(junit_report({"passed": 2, "failed": 1}))
    with pytest.raises(
        RenderError, match=r"gpu-tests.xml: the record's gpu_tests .* are not the counts of this report"
    ):
        check_gpu_tests(record, junit)
    junit.unlink()
    with pytest.raises(RenderError, match=r"gpu-tests\.xml: no JUnit report of the gpu tests"):
        check_gpu_tests(record, junit)


@pytest.mark.parametrize(
    "text",
    [
        "<testsuites/>",
        "<testsuite tests='x'/>",
        "not xml",
        "<testsuite tests='1' failures='2' skipped='0' errors='0'/>",
    ],
)
def test_a_malformed_report_is_refused(tmp_path, text):
    junit = tmp_path / "gpu-tests.xml"
    junit.write_text(text)
    with pytest.raises(JUnitError, match=r"gpu-tests\.xml"):
        junit_counts(junit)
