"""What the GPU-only parts do on a machine without a GPU: fail, never pass by skipping."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from tests.conftest import REPO_ROOT
from tests.snippets.launch import SCRIPT_ZYGOTE
from verify.record import RecordError, check_record

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")


def test_gpu_check_writes_a_failed_record_and_exits_non_zero(tmp_path, zygote):
    record_path = tmp_path / "nccl_check.json"
    # ``python -m verify.gpu_check``, forked from the session's zygote (tests/conftest.py: torch imported once)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT_ZYGOTE), "worker", "-m", "verify.gpu_check", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
        env={**os.environ, **zygote},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr  # outputs collected
    proc = subprocess.run(
        [sys.executable, "-m", "verify.write_record", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    record = json.loads(record_path.read_text())
    assert record["status"] == "fail" and record["fixture"] is False
    assert any("PyTorch sees no CUDA GPU" in failure for failure in record["failures"])
    with pytest.raises(RecordError, match="records a 'fail' run"):
        check_record(record, "0" * 64, str(record_path))


def _pytest_gpu(capsys) -> tuple[int, str]:
    """``pytest tests/gpu`` in this process (its modules and torch already imported: a second
    interpreter would import them again), with the environment the caller set; (exit status, output)."""
    capsys.readouterr()
    code = pytest.main(["tests/gpu", "-q", "-s", "-p", "no:cacheprovider", "-o", "addopts=", f"--rootdir={REPO_ROOT}"])
    return int(code), capsys.readouterr().out


def test_gpu_tests_fail_when_a_gpu_is_required(monkeypatch, capsys):
    """REQUIRE_GPU=1 turns every skipped gpu test into a failure (make gpu-check relies on it)."""
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.setenv("REQUIRE_GPU", "1")
    code, out = _pytest_gpu(capsys)
    assert code != 0
    assert "REQUIRE_GPU=1 but this test needs a gpu" in out
    assert " passed" not in out.splitlines()[-1]
    monkeypatch.delenv("REQUIRE_GPU")
    code, out = _pytest_gpu(capsys)
    assert code == 0 and "skipped" in out.splitlines()[-1]
