"""A check that hangs past its timeout leaves no rank process alive (integrity.md, "Runtime"):
verify.gpu_check.run ends the whole process group, not only the launcher.

The launcher below stands for torchrun: it starts two "ranks" that ignore SIGTERM (as a rank
blocked in a collective may) and waits for them. Real processes, watched with psutil.
"""

from __future__ import annotations

import sys
import time

import psutil

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
    start = time.monotonic()
    result = run([sys.executable, "-c", LAUNCHER, str(pids_file)], timeout=3, grace_s=1)
    assert result.returncode == 124 and "timed out after 3 s" in result.stderr
    assert result.stdout == "ranks started\n"  # what it printed before the timeout is kept
    ranks = [int(pid) for pid in pids_file.read_text().split()]
    assert len(ranks) == 2
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in ranks), "a rank process survived the timeout"
    assert time.monotonic() - start < 15


def test_a_command_that_finishes_and_a_missing_program():
    assert run([sys.executable, "-c", "print('ok')"], timeout=30).stdout == "ok\n"
    assert run(["/nonexistent/torchrun"], timeout=5).returncode == 127
