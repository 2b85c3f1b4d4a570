"""Run extracted scripts under ``python -m torch.distributed.run`` on CPU (gloo).

Every command runs with a temporary folder of its own (``TMPDIR``), removed after it: torchrun's
agent makes a ``torchelastic_*`` folder there per run (its workers' logs), which under ``/tmp``
outlived every rehearsal. ``Run.left`` says what the command left in it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
INJECT_FAULT = HERE / "inject_fault.py"
RECORD_TRAINING = HERE / "record_training.py"
FORK_RANKS = HERE / "fork_ranks.py"
# The rehearsal environment: the explicit CPU opt-in, a small tensor, and unbuffered
# output (PYTHONUNBUFFERED=1 is common in containers, and it is where a print() that
# writes the text and the newline separately interleaves the ranks' lines).
CPU_REHEARSAL = {"NCCL_CHECK_ALLOW_CPU": "1", "NCCL_CHECK_MIB": "16", "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
# Bounds a hang, never a speed: a healthy rehearsal ends far sooner under any load.
HANG_LIMIT_S = 600


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float  # for a failure message only: wall time under load proves nothing
    tmp: str = ""  # the command's TMPDIR, removed when it ended
    left: list[str] = field(default_factory=list)  # what the command left there (torchelastic_*)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_cmd(
    *args: str | Path,
    nproc: int = 2,
    nnodes: int = 1,
    node_rank: int = 0,
    port: int | None = None,
    zygote: dict[str, str] | None = None,
) -> list[str]:
    """``python -m torch.distributed.run`` with these options and ``args``; with ``zygote`` (the
    session's) the agent is forked from it (``script_zygote.py worker -m torch.distributed.run``:
    torchrun's own code, run as ``-m`` runs it, after the zygote's import of torch) and each
    worker it starts runs ``args`` forked from it too (``script_zygote.py worker ARGS``)."""
    options = [
        f"--nproc_per_node={nproc}",
        f"--nnodes={nnodes}",
        f"--node_rank={node_rank}",
        "--master_addr=127.0.0.1",
        f"--master_port={port or free_port()}",
    ]
    worker = [*zygote_worker(zygote, args[0]), *map(str, args[1:])]
    if zygote:
        return [sys.executable, str(SCRIPT_ZYGOTE), "worker", "-m", "torch.distributed.run", *options, *worker]
    return [sys.executable, "-m", "torch.distributed.run", *options, *worker]


def run(
    cmd: list[str], env: dict[str, str] | None = None, timeout: float = HANG_LIMIT_S, cwd: Path | None = None
) -> Run:
    """Run ``cmd`` with the rehearsal environment and ``TMPDIR`` a folder of its own, removed
    when it ends; returns its output, duration, that folder and what it left there."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rehearsal-tmp-") as tmp:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env={**os.environ, **CPU_REHEARSAL, **(env or {}), "TMPDIR": tmp},
        )
        left = sorted(os.listdir(tmp))
    return Run(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start, tmp, left)


# What train_fsdp2.py builds (transformers' Qwen3 under --tiny): imported once before the ranks fork
PRELOAD_HF = "--preload=transformers,transformers.models.auto.modeling_auto,transformers.models.qwen3.modeling_qwen3"
SCRIPT_ZYGOTE = HERE / "script_zygote.py"
SEALED = HERE / "sealed.py"
# What the published scripts and the recording wrappers import (nccl_check.py, train.py,
# train_fsdp2.py --tiny: transformers' Qwen3; train_hf.py and record_hf.py: the Trainer,
# accelerate's launch and state, DeepSpeed, PEFT; the vram workers: PEFT): once, in the
# session's zygote (``zygote`` in tests/conftest.py)
WORKER_IMPORTS = [
    "torch",
    "torch.distributed",
    "torch.distributed.checkpoint",
    "torch.distributed.checkpoint.state_dict",
    "torch.distributed.device_mesh",
    "torch.distributed.fsdp",
    "torch.distributed.tensor",
    "torch.optim.optimizer",
    "torch.utils.data",
    "torch.nn.parallel",
    "torch.distributed.algorithms.ddp_comm_hooks.default_hooks",
    *PRELOAD_HF.removeprefix("--preload=").split(","),
    "transformers.trainer",
    "accelerate",
    "accelerate.commands.launch",
    "deepspeed",
    "deepspeed.comm.torch",
    "peft",
]


def zygote_worker(zygote: dict[str, str] | None, script: str | Path) -> list[str]:
    """What a launcher runs as a worker of ``script``: ``script_zygote.py worker SCRIPT`` (the
    script forked from the session's zygote, ``zygote`` in tests/conftest.py) when ``zygote`` (its
    environment: ``{"SCRIPT_ZYGOTE": socket}``) is given, else ``sealed.py SCRIPT``, which runs it
    as ``python SCRIPT`` would; either way through ``sealed.execute`` (the sealed copy in a
    rehearsal that made one, the arms it takes measured)."""
    return [str(SCRIPT_ZYGOTE), "worker", str(script)] if zygote else [str(SEALED), str(script)]


def worker_report(zygote: dict[str, str], worker: Path, out: Path) -> dict:
    """Run ``worker OUT`` forked from the session's zygote (tests/conftest.py, which imported
    torch once), one thread, in the worker's folder; return the JSON report it wrote to ``out``."""
    proc = subprocess.run(
        [sys.executable, *zygote_worker(zygote, worker), str(out)],
        capture_output=True,
        text=True,
        timeout=HANG_LIMIT_S,
        env={**os.environ, "OMP_NUM_THREADS": "1", **zygote},
        cwd=worker.parent,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


def fork_ranks_cmd(*args: str | int | Path, zygote: dict[str, str] | None = None) -> list[str]:
    """``python fork_ranks.py ARGS``; with ``zygote`` (the session's, whose environment the
    command must run with), fork_ranks.py itself forked from it: its one import of torch is
    the zygote's, and the ranks are forked from that child as fork_ranks.py forks them."""
    return [sys.executable, *zygote_worker(zygote, FORK_RANKS), *map(str, args)]


def fork_jobs(
    jobs: list[tuple[Path, int, Path, list[str]]],
    folder: Path,
    timeout: float = HANG_LIMIT_S,
    preload: str | None = None,
    zygote: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> list[Run]:
    """Run each ``(cwd, world_size, script, args)`` as ``fork_ranks.py`` does (its ranks forked,
    torchrun's environment, the rehearsal environment), all after ONE import of torch, two at a
    time; their output is kept in ``folder``; ``preload``: fork_ranks.py's ``--preload=...`` (e.g.
    ``PRELOAD_HF``); ``zygote``: fork_ranks.py forked from the session's zygote (``fork_ranks_cmd``);
    ``env``: added to the rehearsal environment of every job.
    Returns one Run per job, in order (``seconds``: the whole batch's)."""
    import json

    specs = [
        {
            "world": world,
            "script": str(script),
            "args": [str(a) for a in args],
            "cwd": str(cwd),
            "stdout": str(folder / f"job{i}.stdout"),
            "stderr": str(folder / f"job{i}.stderr"),
        }
        for i, (cwd, world, script, args) in enumerate(jobs)
    ]
    jobs_path = folder / "jobs.json"
    jobs_path.write_text(json.dumps(specs), encoding="utf-8")
    driver = run(
        fork_ranks_cmd(*([preload] if preload else []), "--jobs", jobs_path, zygote=zygote),
        {**(env or {}), **(zygote or {})},
        timeout=timeout,
        cwd=folder,
    )
    assert driver.returncode == 0, driver.stderr[-3000:]
    statuses = json.loads(Path(f"{jobs_path}.status.json").read_text(encoding="utf-8"))
    read = lambda path: Path(path).read_text(encoding="utf-8", errors="replace")  # noqa: E731
    return [
        Run(status, read(spec["stdout"]), read(spec["stderr"]), driver.seconds) for spec, status in zip(specs, statuses)
    ]


def torchrun(
    *args: str | Path,
    env: dict[str, str] | None = None,
    timeout: float = HANG_LIMIT_S,
    cwd: Path | None = None,
    wrap: list[str] | None = None,
    zygote: dict[str, str] | None = None,
    **launch,
) -> Run:
    """Run ``torchrun ARGS`` (optionally prefixed by ``wrap``). With ``zygote`` (the session's,
    tests/conftest.py) the agent and each worker it starts are forked from a process that
    imported torch once (``torchrun_cmd``): the launcher's code, its rendezvous, the workers'
    environment, their signals and exit statuses stay torchrun's."""
    return run(
        (wrap or []) + torchrun_cmd(*args, zygote=zygote, **launch), {**(env or {}), **(zygote or {})}, timeout, cwd
    )


def single_process(
    script: Path,
    env: dict[str, str] | None = None,
    wrap: list[str] | None = None,
    args: list[str | Path] | None = None,
    zygote: dict[str, str] | None = None,
) -> Run:
    """Run ``script ARGS`` as torchrun's first worker would (LOCAL_RANK=0), without the
    launcher: for the checks that fail before the process group exists, or a one-rank run
    (give RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in ``env``), where the launcher's
    start-up would only add seconds. With ``zygote``, forked from the session's zygote (a
    ``wrap`` that changes the process's namespaces would not reach the forked script)."""
    assert not (wrap and zygote), "the forked script would run outside the wrapper"
    cmd = [sys.executable, *zygote_worker(zygote, script), *map(str, args or [])]
    return run((wrap or []) + cmd, {"LOCAL_RANK": "0", **(env or {}), **(zygote or {})})
