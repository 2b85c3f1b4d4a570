"""The code under verification cannot write its own verdict (issue 33, hole 1), rehearsed on CPU
with stand-ins for the GPU, nvidia-smi, torchrun and the gpu tests.

The attack: a process started by the verified code (here by the build, which executes the
notebooks: the same works from the extracted check or a gpu test) double-forks, calls
``setsid``, closes its streams, waits until its parent has exited, then waits for the record
and its inputs and rewrites them as a passing run. Before issue 33 it outlived the check (a
process group is all the check ended) and the job, and the publish gate took its record.

Here the whole GPU run goes through ``verify.gpu_check.main`` (a process of its own, as in the
job) with stand-in commands, then ``verify.write_record``. The attacker holds a lock on a file
while it lives (the kernel drops it when the process dies, in whatever namespace) and notes
when it has detached. Asserted: it really detached (its own session, its parent gone), it is
dead when the collector returns, before any record exists; the record says what the stand-ins
did (the gpu tests failed) and stays so. Nor can it change a file that a later step runs or
reads, though every one is writable by the job's user: the upload action's code, the step's
``$GITHUB_ENV`` (a ``LD_PRELOAD=`` line there runs code in every later step), the round's home,
the checkout (the verifier's modules and its virtual environment): in the scope every mount is
read-only but the build's own folders (``verify/scope_init.py``). A control run with the scope replaced by a plain
process group (what the check did before) shows the attacker alive after the collector and
its forged "pass" in the record: the test's attacker is real.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from verify.record import RecordError, check_record, pinned_torch

TOPOLOGY = REPO_ROOT / "verification" / "fixtures" / "topo" / "rtx5090-host-bridge-2gpu.txt"

NVIDIA_SMI = f"""#!/bin/bash
case "$1" in
  --query-gpu=*) printf 'NVIDIA GeForce RTX 5090, 32607, 570.124.04\\nNVIDIA GeForce RTX 5090, 32607, 570.124.04\\n' ;;
  topo) grep -v '^#' {TOPOLOGY} ;;
  *) echo "stand-in nvidia-smi" ;;
esac
"""

# What every attacker stand-in does once started: detach (an orphan in a session of its own, a
# lock held while alive, no standard streams), try to append to each of ``targets`` and note,
# whole, what it could write.
DETACH_AND_NOTE = r"""
parent = os.getpid()
if os.fork():
    os._exit(0)  # the middle process: its child is orphaned
os.setsid()
lock = open(lock_path, "w")
fcntl.flock(lock, fcntl.LOCK_EX)
for fd in (0, 1, 2):
    os.close(fd)
while os.getppid() == parent:  # until the middle process has exited and this one is an orphan
    time.sleep(0.01)
wrote = {}
for name, (path, text) in targets.items():
    try:
        with open(path, "a") as f:
            f.write(text)
        wrote[name] = True
    except OSError as exc:
        wrote[name] = exc.strerror
with open(note + ".part", "w") as f:
    json.dump({"sid": os.getsid(0), "pid": os.getpid(), "wrote": wrote}, f)
os.rename(note + ".part", note)  # whole when it appears: the build ends its scope as soon as it does
"""

# The attacker, forked from the build stand-in: detach, keep a lock while alive, try to change what
# a later step runs or reads (the action that uploads the outputs, $GITHUB_ENV, the job's home,
# the checkout the verifier imports), note what it could write, then forge everything it sees.
ATTACKER = (
    r"""
import fcntl, json, os, sys, time
out, lock_path, note, limit_s, targets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
middle = os.fork()
if middle:
    os.waitpid(middle, 0)
    deadline = time.monotonic() + float(limit_s)
    while not os.path.exists(note) and time.monotonic() < deadline:  # until the attacker is detached and noted
        time.sleep(0.01)
    sys.exit(0)  # the build's own work is done; its scope ends
"""
    + DETACH_AND_NOTE
    + r"""
forged = {"nccl_check.json": lambda r: {**r, "status": "pass", "failures": [],
                                        "gpu_tests": {**r["gpu_tests"], "status": "pass", "failed": 0, "passed": 3}},
          "outputs.json": lambda o: {**o, "gpu_tests": {"returncode": 0, "stderr_tail": ""}}}
while True:
    for name, forge in forged.items():
        path = os.path.join(out, name)
        try:
            data = json.load(open(path))
        except (OSError, ValueError):
            continue
        if data != forge(data):
            with open(path, "w") as f:
                json.dump(forge(data), f)
    junit = os.path.join(out, "gpu-tests.xml")
    if os.path.exists(junit) and "failures=\"1\"" in open(junit).read():
        open(junit, "w").write(open(junit).read().replace("failures=\"1\"", "failures=\"0\""))
    time.sleep(0.02)
"""
)

RANK_LINES = "".join(
    f"rank {rank}/2 local_rank {rank} cuda:{rank} stand-in: 41.3 all-reduce/s of 1.07 GB, algbw 44.4 GB/s, "
    "busbw 44.4 GB/s, sum 3 correct\n"
    for rank in (0, 1)
)
FAILING_TESTS = r"""
import sys
open(sys.argv[1], "w").write('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" '
    'failures="1" skipped="0" tests="3" time="1.0"><testcase classname="t" name="a"/><testcase classname="t" name="b"/>'
    '<testcase classname="t" name="c"><failure message="stand-in"/></testcase></testsuite></testsuites>')
sys.exit(1)
"""

DRIVER = r"""
import json, sys
from pathlib import Path
import verify.gpu_check as gpu_check
import verify.scope as scope

out, site, evidence, attacker, targets, failing, rank_lines, nvidia_smi, torch, mode = sys.argv[1:]
lock, note = str(Path(evidence) / "attacker.lock"), str(Path(evidence) / "attacker.note")
if mode == "process-group":  # what the check did before issue 33: a process group, no namespace
    scope.scoped = lambda cmd, binds: cmd

class StandIns(gpu_check.Commands):
    def build(self, dest):
        return [sys.executable, "-c", f"import os; os.symlink({site!r}, {str(dest)!r})\n{attacker}",
                out, lock, note, "60", targets]
    def build_writable(self, dest):  # where the test's attacker leaves its lock and note
        return [*super().build_writable(dest), Path(evidence)]
    def check(self, script, nproc):
        return [sys.executable, "-c", f"print({rank_lines!r}, end='')"]
    def gpu_tests(self, junit):
        return [sys.executable, "-c", failing, str(junit)]

commands = StandIns(nvidia_smi=nvidia_smi, versions=lambda: ({"torch": torch, "cuda": "12.8", "nccl": "2.27.3"}, 2))
sys.exit(gpu_check.main(["--out", out], commands))
"""


def held(lock: Path) -> bool:
    """Whether a live process holds ``lock`` (flock: dropped by the kernel when its holder dies)."""
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def runner_files(tmp_path: Path) -> dict[str, Path]:
    """Stand-ins for what the GPU job's later steps run or read, all writable by the job's user:
    the upload action's code (the runner downloads it into ``_work/_actions`` at the job's start),
    the step's ``$GITHUB_ENV`` (whose lines become the next steps' environment: ``LD_PRELOAD``),
    the round's home, and a file of the checkout (beside the verifier and its virtual environment)."""
    runner = tmp_path / "runner"
    files = {
        "upload action": runner / "_work" / "_actions" / "actions" / "upload-artifact" / "dist" / "index.js",
        "GITHUB_ENV": runner / "_work" / "_temp" / "_runner_file_commands" / "set_env_0",
        "home": tmp_path / "home" / ".bashrc",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("as the runner left it\n")
    files["checkout"] = REPO_ROOT / f".attack-probe-{tmp_path.name}"
    return files


def gpu_run(tmp_path: Path, built_site: Path, mode: str) -> dict:
    out, evidence = tmp_path / "verification", tmp_path / "evidence"
    evidence.mkdir()
    nvidia_smi = tmp_path / "nvidia-smi"
    nvidia_smi.write_text(NVIDIA_SMI)
    nvidia_smi.chmod(0o755)
    files = runner_files(tmp_path)
    targets = {name: (str(path), "written by the verified code\n") for name, path in files.items()}
    try:
        collector = subprocess.run(
            [
                sys.executable,
                "-c",
                DRIVER,
                str(out),
                str(built_site),
                str(evidence),
                ATTACKER,
                json.dumps(targets),
                FAILING_TESTS,
                RANK_LINES,
                str(nvidia_smi),
                pinned_torch(),
                mode,
            ],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=300,
            check=False,
            env={**os.environ, "GITHUB_ENV": str(files["GITHUB_ENV"]), "HOME": str(files["home"].parent)},
        )
        written = {name: path.is_file() and "verified code" in path.read_text() for name, path in files.items()}
    finally:
        files["checkout"].unlink(missing_ok=True)
    assert collector.returncode == 0, collector.stderr[-3000:]
    alive_after_collector = held(evidence / "attacker.lock")  # before any record is written
    writer = subprocess.run(
        [sys.executable, "-m", "verify.write_record", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    note = json.loads((evidence / "attacker.note").read_text())
    return {"out": out, "note": note, "written": written, "alive": alive_after_collector, "writer": writer}


def test_a_detached_process_of_the_verified_code_is_dead_before_the_record_and_cannot_change_it(tmp_path, built_site):
    run = gpu_run(tmp_path, built_site, "scope")
    assert run["note"]["sid"] == run["note"]["pid"], "the attacker ran, in a session of its own, its parent gone"
    assert not run["alive"], "the attacker outlived the collector"
    refused = run["note"]["wrote"]
    assert not any(run["written"].values()) and True not in refused.values(), f"a later step's file changed: {refused}"
    assert run["writer"].returncode == 1, run["writer"].stdout + run["writer"].stderr
    record_path = run["out"] / "nccl_check.json"
    written = record_path.read_bytes()
    record = json.loads(written)
    assert record["status"] == "fail" and record["gpu_tests"] == {
        "status": "fail",
        "passed": 2,
        "failed": 1,
        "skipped": 0,
        "errors": 0,
    }
    assert any("pytest -m gpu: exit 1" in failure for failure in record["failures"])
    assert record["measured"]["world_size"] == 2 and record["gpu"]["count"] == 2  # the stand-ins' run, read in full
    time.sleep(1.0)  # the attacker rewrote within 20 ms in the control run below
    assert record_path.read_bytes() == written
    with pytest.raises(RecordError, match="records a 'fail' run"):
        check_record(json.loads(record_path.read_text()), record["snippet_sha256"], str(record_path))


def test_control_without_the_scope_the_attacker_survives_and_forges_a_pass(tmp_path, built_site):
    run = gpu_run(tmp_path, built_site, "process-group")
    try:
        assert run["alive"], "with a process group only, the detached attacker outlives the check"
        assert all(run["written"].values()), f"unconfined, the attacker's writes land: {run['written']}"
        record_path = run["out"] / "nccl_check.json"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if json.loads(record_path.read_text())["status"] == "pass":
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        assert json.loads(record_path.read_text())["status"] == "pass", "the attacker forged the record"
    finally:
        pid = run["note"]["pid"]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # it lives in this machine's namespace here
