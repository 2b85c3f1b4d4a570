"""A check that hangs past its timeout leaves no rank process alive (integrity.md, "Runtime"):
verify.gpu_check.run ends the whole process group, not only the launcher.

The launcher below stands for torchrun: it starts two "ranks" that ignore SIGTERM (as a rank
blocked in a collective may) and waits for them. Real processes, watched with psutil.
"""

from __future__ import annotations

import sys
import time

import psutil
import pytest

from verify.gpu_check import run

LAUNCHER = r"""
import signal, subprocess, sys, time
RANK = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
ranks = [subprocess.Popen([sys.executable, "-c", RANK]) for _ in range(2)]
with open(sys.argv[1], "w") as pids:
    pids.write(" ".join(str(p.pid) for p in ranks))
print("ranks started", flush=True)
for rank in ranks:
    rank.wait()
"""


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_hanging_check_leaves_no_rank_alive(tmp_path):
    pids_file = tmp_path / "pids"
    result = run([sys.executable, "-c", LAUNCHER, str(pids_file)], timeout=3, grace_s=1)
    assert result.returncode == 124 and "timed out after 3 s" in result.stderr
    assert result.stdout == "ranks started\n"  # what it printed before the timeout is kept
    ranks = [int(pid) for pid in pids_file.read_text().split()]
    assert len(ranks) == 2
    # the ranks sleep 600 s: gone before this limit means killed (no load stretches a SIGKILL to 60 s)
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in ranks), "a rank process survived the timeout"


def test_a_command_that_finishes_and_a_missing_program():
    assert run([sys.executable, "-c", "print('ok')"], timeout=30).stdout == "ok\n"
    assert run(["/nonexistent/torchrun"], timeout=5).returncode == 127


SIGNALLED = r"""
import sys
from verify.gpu_check import run, stop_on_signals
stop_on_signals()
run([sys.executable, "-c", sys.argv[1], sys.argv[2]], timeout=600, grace_s=1)
"""


def test_a_cancelled_check_leaves_no_rank_alive(tmp_path):
    """A cancelled job sends SIGTERM to the check; Python's default ended the check at once and
    torchrun's session (its own, out of reach of the job's signal) ran on."""
    import os
    import signal
    import subprocess

    from tests.conftest import REPO_ROOT

    pids_file = tmp_path / "pids"
    check = subprocess.Popen([sys.executable, "-c", SIGNALLED, LAUNCHER, str(pids_file)], cwd=REPO_ROOT)
    ranks: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while not (pids_file.exists() and len(pids_file.read_text().split()) == 2) and time.monotonic() < deadline:
            time.sleep(0.05)
        ranks = [int(pid) for pid in pids_file.read_text().split()]
        check.send_signal(signal.SIGTERM)
        check.wait(60)
        deadline = time.monotonic() + 60
        while any(alive(pid) for pid in ranks) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(pid) for pid in ranks), "a rank process survived the cancelled check"
    finally:
        check.kill()
        for pid in ranks:  # never leave one behind, even when the test fails
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_check_that_stops_on_an_error_writes_a_failed_record(tmp_path, monkeypatch):
    """An exception inside the check (a mangled rank line, a crash) used to leave no record, or
    the one from before: the gpu job uploads the file whatever happened."""
    import json

    import verify.gpu_check
    from verify.record import RecordError, check_record

    record_path = tmp_path / "nccl_check.json"
    record_path.write_text('{"status": "pass"}')  # left from before
    monkeypatch.setattr(verify.gpu_check, "gpu_check", lambda path: 1 / 0)
    monkeypatch.setattr(verify.gpu_check, "stop_on_signals", lambda: None)
    assert verify.gpu_check.main(["--record", str(record_path)]) == 1
    record = json.loads(record_path.read_text())
    assert record["status"] == "fail" and record["failures"] == ["verify.gpu_check stopped: ZeroDivisionError: division by zero"]
    with pytest.raises(RecordError, match="records a 'fail' run"):
        check_record(record, "0" * 64, str(record_path))
