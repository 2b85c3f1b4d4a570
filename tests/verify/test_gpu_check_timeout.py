"""A check that hangs past its timeout leaves no rank process alive (integrity.md, "Runtime"):
verify.gpu_check.run ends the command's whole scope (a PID namespace, verify/scope.py), not
only the launcher.

The launcher below stands for torchrun: it starts two "ranks" that ignore SIGTERM (as a rank
blocked in a collective may) and waits for them. Real processes, watched with psutil from
outside the namespace: each rank carries a marker (this test's folder) on its command line,
since the process ids it could report are its namespace's, not this machine's.
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
ranks = [subprocess.Popen([sys.executable, "-c", RANK, sys.argv[1] + ".rank"]) for _ in range(2)]
with open(sys.argv[1], "w") as pids:
    pids.write(" ".join(str(p.pid) for p in ranks))
print("ranks started", flush=True)
for rank in ranks:
    rank.wait()
"""


def marked(marker: str) -> list[psutil.Process]:
    """The live processes of this machine with ``marker`` on their command line."""
    return [
        proc
        for proc in psutil.process_iter(["cmdline", "status"])
        if marker in (proc.info["cmdline"] or []) and proc.info["status"] != psutil.STATUS_ZOMBIE
    ]


def gone(marker: str, limit_s: float = 60) -> bool:
    """Whether no process carries ``marker`` within ``limit_s`` (the ranks sleep 600 s: gone
    before this limit means killed; no load stretches a SIGKILL to 60 s)."""
    deadline = time.monotonic() + limit_s
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not marked(marker)


def test_a_hanging_check_leaves_no_rank_alive(tmp_path):
    pids_file = tmp_path / "pids"
    result = run([sys.executable, "-c", LAUNCHER, str(pids_file)], timeout=3, grace_s=1, binds=((tmp_path, True),))
    assert result.returncode == 124 and "timed out after 3 s" in result.stderr
    assert result.stdout == "ranks started\n"  # what it printed before the timeout is kept
    assert len(pids_file.read_text().split()) == 2
    assert gone(f"{pids_file}.rank"), "a rank process survived the timeout"


def test_a_command_that_finishes_and_a_missing_program():
    assert run([sys.executable, "-c", "print('ok')"], timeout=30).stdout == "ok\n"
    assert run(["/nonexistent/torchrun"], timeout=5).returncode == 127


SIGNALLED = r"""
import sys
from pathlib import Path
from verify.gpu_check import run, stop_on_signals
stop_on_signals()
run([sys.executable, "-c", sys.argv[1], sys.argv[2]], timeout=600, grace_s=1, binds=((Path(sys.argv[2]).parent, True),))
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
    try:
        deadline = time.monotonic() + 30
        while not (pids_file.exists() and len(pids_file.read_text().split()) == 2) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(marked(f"{pids_file}.rank")) == 2
        check.send_signal(signal.SIGTERM)
        check.wait(60)
        assert gone(f"{pids_file}.rank"), "a rank process survived the cancelled check"
    finally:
        check.kill()
        for proc in marked(f"{pids_file}.rank"):  # never leave one behind, even when the test fails
            os.kill(proc.pid, signal.SIGKILL)


def test_a_check_that_stops_on_an_error_writes_a_failed_record(tmp_path, monkeypatch):
    """An exception inside the check (a mangled rank line, a crash) used to leave no record, or
    the one from before: the outputs say it stopped, and so does the record written from them."""
    import json

    import verify.gpu_check
    from verify import write_record
    from verify.record import RecordError, check_record

    (tmp_path / "nccl_check.json").write_text('{"status": "pass"}')  # left from before
    monkeypatch.setattr(verify.gpu_check, "collect", lambda out, commands: 1 / 0)
    monkeypatch.setattr(verify.gpu_check, "stop_on_signals", lambda: None)
    monkeypatch.setattr(verify.gpu_check, "undumpable", lambda: None)
    assert verify.gpu_check.main(["--out", str(tmp_path)]) == 0
    assert not (tmp_path / "nccl_check.json").exists()
    assert write_record.main([str(tmp_path)]) == 1
    record = json.loads((tmp_path / "nccl_check.json").read_text())
    assert record["status"] == "fail" and record["failures"] == [
        "verify.gpu_check stopped: ZeroDivisionError: division by zero"
    ]
    with pytest.raises(RecordError, match="records a 'fail' run"):
        check_record(record, "0" * 64, str(tmp_path / "nccl_check.json"))
