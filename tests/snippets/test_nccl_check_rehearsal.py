"""The NCCL check, extracted from the built site, rehearsed on CPU with gloo (cases 8-11).

Every test runs the published script unmodified under ``torch.distributed.run`` with two
ranks (the checks that fail before the process group exists run as one worker with
LOCAL_RANK=0, without the launcher; the wrong sum and the 32 ranks, on ranks forked after one
import of torch with torchrun's environment, tests/snippets/fork_ranks.py). The launcher,
each worker and fork_ranks.py are forked from the session's zygote, which imported torch
once (``zygote`` in tests/conftest.py, script_zygote.py: torchrun's code, the environment,
signals and exit statuses stay torchrun's), except under ``unshare`` (the mount namespace
must be the script's) and the plain ``python`` start, which are real processes. What is simulated, and how:
- case 8 (a small /dev/shm): ``NCCL_CHECK_MIN_SHM_MB`` raised above the free space of the
  real /dev/shm (always), and, where this user may create a mount namespace, a real 64 MB
  tmpfs mounted on /dev/shm for the run only;
- case 9 (a rank never joins the collective): rank 1's ``all_reduce`` replaced by a sleep
  (``inject_fault.py absent``) with a 3 s process-group timeout;
- case 10 (per-rank output, LOCAL_RANK): unbuffered output, and a two-"node" run on this
  machine where both ranks have LOCAL_RANK 0;
- case 11 (timing, checked result): rank 1 contributes a wrong value
  (``inject_fault.py corrupt``); the timing is read from the code.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.snippets.launch import (
    CPU_REHEARSAL,
    INJECT_FAULT,
    fork_ranks_cmd,
    free_port,
    single_process,
    torchrun,
    zygote_worker,
)
from tests.snippets.launch import run as harness_run
from verify.nccl_output import parse_rank_lines

pytestmark = pytest.mark.slow

MIB = int(CPU_REHEARSAL["NCCL_CHECK_MIB"])


def no_rank_line(stdout: str) -> bool:
    return "correct" not in stdout


def test_rehearsal_passes_with_one_intact_line_per_rank(extracted, zygote):
    run = torchrun(extracted / "nccl_check.py", zygote=zygote)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = parse_rank_lines(run.stdout)  # raises on an interleaved or missing line
    assert [(line.rank, line.local_rank, line.device) for line in lines] == [(0, 0, "cpu"), (1, 1, "cpu")]
    for line in lines:
        assert line.checked_sum == 3  # rank+1 summed over 2 ranks
        # nccl-tests: algbw = bytes / time; for n = 2, busbw = algbw * 2(n-1)/n = algbw
        assert line.busbw_gb_per_s == line.algbw_gb_per_s
        size_gb = MIB * 2**20 / 1e9
        assert line.algbw_gb_per_s == pytest.approx(line.allreduce_per_s * size_gb, abs=0.051 + 0.05 * size_gb)
        assert 0 < line.busbw_gb_per_s < 1000


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU: the check would run on it")
def test_without_a_gpu_it_refuses_unless_the_cpu_rehearsal_is_asked_for(extracted, zygote):
    run = single_process(extracted / "nccl_check.py", env={"NCCL_CHECK_ALLOW_CPU": ""}, zygote=zygote)
    assert run.returncode != 0
    assert "PyTorch sees no GPU" in run.stderr and "NCCL_CHECK_ALLOW_CPU=1" in run.stderr
    assert no_rank_line(run.stdout)


def test_small_dev_shm_fails_fast_naming_it_and_the_fix(extracted, zygote):
    free_mb = shutil.disk_usage("/dev/shm").free // 10**6
    run = single_process(
        extracted / "nccl_check.py", env={"NCCL_CHECK_MIN_SHM_MB": str(free_mb + 10**6)}, zygote=zygote
    )
    assert run.returncode != 0
    assert "/dev/shm" in run.stderr and "--shm-size" in run.stderr and "NCCL_SHM_DISABLE=1" in run.stderr
    assert no_rank_line(run.stdout)


def _can_mount_tmpfs() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(
    not _can_mount_tmpfs(), reason="needs root and mount namespaces (unshare -m) to mount a 64 MB /dev/shm"
)
def test_real_64mb_dev_shm_fails_fast(extracted):
    """Case 8 for real: a container-sized /dev/shm (Docker's default, 64 MB), in a private mount namespace."""
    wrap = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"', "sh"]
    run = single_process(extracted / "nccl_check.py", wrap=wrap)
    assert run.returncode != 0
    assert re.search(r"/dev/shm has \d+ MB free, less than 256 MB", run.stderr), run.stderr[-2000:]
    assert no_rank_line(run.stdout)


def test_a_rank_that_never_joins_becomes_an_error_naming_the_collective(extracted, zygote):
    """Rank 1 sleeps an hour instead of joining, and gloo's default timeout is 30 minutes: the
    run ends within the harness's limit only if the script's timeout fired. The proof is
    counted, not timed: gloo's own message names the 3,000 ms it waited, and rank 1 was still
    asleep (ended by the launcher's SIGTERM) when rank 0 gave up."""
    timeout_s = 3
    run = torchrun(
        INJECT_FAULT, "absent", extracted / "nccl_check.py", env={"NCCL_CHECK_TIMEOUT": str(timeout_s)}, zygote=zygote
    )
    assert run.returncode == 1  # torchrun's own exit status when a worker failed (ChildFailedError)
    assert "ChildFailedError" in run.stderr
    assert f"rank 0: all_reduce failed or did not finish within {timeout_s} s" in run.stderr, run.stderr[-3000:]
    assert f"Timed out waiting {timeout_s * 1000}ms" in run.stderr  # gloo's clock, not the test's
    assert re.search(r"rank\s*: 1 \(local_rank: 1\)\s+exitcode\s*: -15", run.stderr), run.stderr[-3000:]
    assert "NCCL_DEBUG=INFO" in run.stderr
    assert no_rank_line(run.stdout)


def test_a_wrong_sum_fails_loudly_on_every_rank(extracted, zygote):
    # 2 gloo ranks forked after one import of torch (fork_ranks.py, torchrun's environment):
    # the check is the script's, not the launcher's
    run = harness_run(fork_ranks_cmd("2", INJECT_FAULT, "corrupt", extracted / "nccl_check.py", zygote=zygote), zygote)
    assert run.returncode != 0
    assert "rank 0: all_reduce returned a WRONG sum (expected 3 everywhere)" in run.stderr
    assert "rank 1: all_reduce returned a WRONG sum" in run.stderr
    assert no_rank_line(run.stdout)


def test_two_nodes_with_one_device_each_use_local_rank(extracted, zygote):
    """Case 10: ranks 0 and 1 on two 'nodes' (two launchers here) both have LOCAL_RANK 0."""
    port = free_port()
    with ThreadPoolExecutor(2) as pool:
        runs = list(
            pool.map(
                lambda node: torchrun(
                    extracted / "nccl_check.py", nproc=1, nnodes=2, node_rank=node, port=port, zygote=zygote
                ),
                (0, 1),
            )
        )
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:] + runs[1].stderr[-2000:]
    lines = parse_rank_lines(runs[0].stdout + runs[1].stdout)
    assert [(line.rank, line.world, line.local_rank) for line in lines] == [(0, 2, 0), (1, 2, 0)]


def test_timing_is_taken_after_a_synchronize(extracted):
    """Case 11: both clock reads directly follow a ``sync()`` statement, and ``sync`` calls
    the accelerator's ``synchronize`` (read from the script's syntax tree)."""
    tree = ast.parse((extracted / "nccl_check.py").read_bytes())
    (sync,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "sync"]
    assert "torch.accelerator.synchronize()" in {
        ast.unparse(call) for call in ast.walk(sync) if isinstance(call, ast.Call)
    }
    clock_reads = 0
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for before, statement in zip(body, body[1:]):
            simple = isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr))
            if simple and "time.perf_counter()" in ast.unparse(statement):
                clock_reads += 1
                assert ast.unparse(before) == "sync()", f"line {statement.lineno}: no sync() just before the clock"
    assert clock_reads == 2


def test_started_with_plain_python_it_says_how_to_launch(extracted, zygote):
    """The mistake the guide warns about: one line naming torchrun, exit non-zero, no traceback."""
    # forked from the session's zygote, which imported torch once, as ``python SCRIPT`` runs it
    env = {key: value for key, value in os.environ.items() if key not in ("LOCAL_RANK", "RANK", "WORLD_SIZE")} | zygote
    proc = subprocess.run(
        [sys.executable, *zygote_worker(zygote, extracted / "nccl_check.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode != 0
    assert proc.stderr.splitlines() == ["Start it with torchrun: torchrun --nproc_per_node=4 nccl_check.py"]
    assert proc.stdout == ""


def test_one_rank_claims_no_bus_bandwidth(extracted, zygote):
    """A one-GPU machine: the check runs, and its line gives no busbw (nothing crossed a link)."""
    env = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    run = single_process(extracted / "nccl_check.py", env=env, zygote=zygote)
    assert run.returncode == 0, run.stderr[-2000:]
    (line,) = parse_rank_lines(run.stdout)
    assert (line.world, line.checked_sum, line.busbw_gb_per_s) == (1, 1, None)


def test_32_ranks_sum_exactly(extracted, zygote):
    """../shared/cases/integrity.md, Runtime: 32 gloo ranks, NCCL_CHECK_MIB=1, pass. The sum
    1 + ... + 32 = 528 is beyond bf16's exact integers (256); 32 processes forked after one
    import of torch (fork_ranks.py) instead of 32 torchrun workers."""
    run = harness_run(
        fork_ranks_cmd("32", extracted / "nccl_check.py", zygote=zygote), env={"NCCL_CHECK_MIB": "1", **zygote}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = parse_rank_lines(run.stdout)
    assert len(lines) == 32 and {line.checked_sum for line in lines} == {32 * 33 // 2}


def test_past_the_exact_limit_it_refuses_with_one_line(extracted, zygote):
    """float32 holds every integer up to 2**24 exactly: 5792 ranks sum to 16,776,528, 5793
    to 16,782,321. The world size is faked (rank 0's ``get_world_size``) on one real rank."""
    env = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    run = single_process(INJECT_FAULT, env=env, args=["world=5793", extracted / "nccl_check.py"], zygote=zygote)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1] == "rank 0: 5793 ranks are more than this check can sum exactly"
    assert no_rank_line(run.stdout)


def test_extracted_script_compiles_and_is_the_snippet(extracted):
    from tests.conftest import REPO_ROOT

    code = (extracted / "nccl_check.py").read_bytes()
    assert code == (REPO_ROOT / "snippets" / "nccl_check.py").read_bytes()
    compile(code, "nccl_check.py", "exec")
    assert sys.version_info >= (3, 11)


def test_nccl_error_handling_default_is_the_one_the_guide_names():
    """The guide: without torchrun, TORCH_NCCL_ASYNC_ERROR_HANDLING defaults to 3, and both
    3 (SkipCleanUp) and torchrun's 1 (TearDown) take the process down. Read from the
    declarations of the installed torch (ProcessGroupNCCL.hpp); the CPU build carries the
    header, not the NCCL code (tests/gpu checks the behaviour)."""
    import torch

    header = Path(torch.__file__).parent / "include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp"
    text = header.read_text(encoding="utf-8")
    assert "the default value (3 - SkipCleanUp)" in text
    assert re.search(r"TearDown = 1,\s*CleanUpOnly = 2,\s*SkipCleanUp = 3", text)
    assert "#define SHOULD_TEAR_DOWN(a) (a != NoHandling && a != CleanUpOnly)" in text
