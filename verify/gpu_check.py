"""The GPU run, first half: run the checkout's code on the GPUs, each command in a scope of its
own, and collect what came out. ``verify.write_record`` (the second half, which runs none of
the checkout's code) writes the verification record from it.

``python -m verify.gpu_check [--out verification]`` (``make gpu-check``, the ``gpu`` job).
Writes to ``--out``: ``outputs.json`` (the collected outputs: exit statuses, the check's
printed lines, the blocks' hashes, nvidia-smi's and PyTorch's view of the GPUs),
``gpu-tests.xml`` (the gpu tests' JUnit report), ``nvidia-smi.txt`` and ``topo.txt``. Exit 0
when the outputs were written, whatever they say: the record says pass or fail.

What runs where. Before any of the checkout's code runs, this process reads nvidia-smi and
PyTorch's view of the GPUs and makes itself undumpable (a process of the same user can then
neither ptrace it nor read its memory). Then each command that runs the checkout's code (the
build, which executes the notebooks; the extracted NCCL check under torchrun; ``pytest -m
gpu``) runs in a PID namespace (``verify.scope``) that is ended and waited for before the next
step: a process that calls ``setsid``, closes its streams and waits for the record does not
survive its step. In its scope a command writes only its own folders (the build: the site's
folder and ``.cache/``; the check: nothing; the gpu tests: their report's folder and
``.cache/``) and its own ``/tmp`` and home; every other mount is read-only to it
(``verify/scope_init.py``), so it cannot change what a later step of the job runs or reads
(the upload action, ``$GITHUB_ENV``) nor the checkout and virtual environment this process
imports from. The extraction of the blocks from the built pages runs here, on the pages
the build left, after the build's scope ended. Outputs are kept in this process and written
once every scope is gone; the previous run's files are removed first.

A signal (SIGTERM, SIGHUP, SIGINT: a cancelled job) ends the running scope and still writes
the outputs, marked as interrupted.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from verify.extract import ExtractError, extract
from verify.record import BLOCKS, SNIPPET
from verify.scope import ScopeError, check_scope, run_scoped

REPO_ROOT = Path(__file__).resolve().parent.parent
OUTPUTS = "outputs.json"
JUNIT = "gpu-tests.xml"
OUTPUT_FILES = (OUTPUTS, JUNIT, "nvidia-smi.txt", "topo.txt")
CHECK_MIB = 1024  # the published default: one 1 GiB bf16 tensor
CHECK_TIMEOUT_S = 120  # the snippet's process-group timeout (NCCL_CHECK_TIMEOUT)
KILL_GRACE_S = 10.0  # from SIGTERM to SIGKILL for the processes of a command that timed out
TAIL_CHARS = 4000  # what is kept of a command's error output
PR_SET_DUMPABLE = 4  # prctl(2)


def run(
    cmd: list[str],
    timeout: float,
    env: dict[str, str] | None = None,
    grace_s: float = KILL_GRACE_S,
    binds: tuple[tuple[Path, bool], ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in the repository, in a scope of its own (``verify.scope.run_scoped``): every
    process it starts is gone when this returns, and it could write only the writable folders
    of ``binds`` (``(folder, writable)`` pairs). A timeout becomes status 124, a missing
    program 127. Raises ScopeError where no scope can be made."""
    return run_scoped(cmd, timeout, env, cwd=REPO_ROOT, grace_s=grace_s, binds=binds)


class Interrupted(Exception):
    """A signal asked the check to stop."""


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(f"stopped by {signal.Signals(signum).name}")


def stop_on_signals() -> None:
    """Make SIGTERM and SIGHUP (and SIGINT) raise ``Interrupted``, so ``run`` ends its command's
    scope on the way out (Python's default for SIGTERM ends the process at once)."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _interrupted)


def undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): no process of the same user may ptrace this one or read its
    memory (``/proc/PID/mem``); its outputs stay its own."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def tool(cmd: list[str], timeout: float = 60) -> dict[str, Any]:
    """A system tool's exit status and output (nvidia-smi): run before any code of the checkout."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        return {"returncode": 127, "stdout": "", "stderr": str(exc)}
    except subprocess.TimeoutExpired:
        return {"returncode": 124, "stdout": "", "stderr": f"timed out after {timeout:.0f} s"}
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def torch_versions() -> tuple[dict[str, Any], int]:
    """PyTorch's view: versions and the number of CUDA devices it sees."""
    import torch

    available = torch.cuda.is_available()
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if available else None
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl,
    }, torch.cuda.device_count() if available else 0


@dataclass(frozen=True)
class Commands:
    """The commands of the run; tests replace them with stand-ins."""

    python: str = sys.executable
    nvidia_smi: str = "nvidia-smi"
    versions: Callable[[], tuple[dict[str, Any], int]] = torch_versions

    def build(self, site: Path) -> list[str]:
        return [self.python, "-m", "mkdocs", "build", "--strict", "-d", str(site)]

    def build_writable(self, site: Path) -> list[Path]:
        """What the build may write: the folder of the site it builds and the checkout's build
        caches (``.cache/``); nothing else of the checkout, the runner or the machine."""
        return [site.parent, REPO_ROOT / ".cache"]

    def check(self, script: Path, nproc: int) -> list[str]:
        return [self.python, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", str(script)]

    def gpu_tests(self, junit: Path) -> list[str]:
        return [
            self.python,
            "-m",
            "pytest",
            "-m",
            "gpu",
            "tests/gpu",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
        ]


def _step(proc: subprocess.CompletedProcess[str], keep_stdout: bool = False) -> dict[str, Any]:
    step = {"returncode": proc.returncode, "stderr_tail": proc.stderr[-TAIL_CHARS:]}
    if keep_stdout:
        step["stdout"] = proc.stdout
    return step


def collect(out_dir: Path, commands: Commands = Commands()) -> dict[str, Any]:
    """Run everything and return the collected outputs (``gpu-tests.xml``, ``nvidia-smi.txt``
    and ``topo.txt`` are written to ``out_dir`` once their scope is gone). Raises ScopeError,
    Interrupted."""
    outputs: dict[str, Any] = {
        "outputs": 1,
        "utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runner": os.environ.get("RUNNER_NAME"),
        "snippet": SNIPPET,
    }
    full = tool([commands.nvidia_smi])
    (out_dir / "nvidia-smi.txt").write_text(full["stdout"] + full["stderr"], encoding="utf-8")
    outputs["nvidia_smi"] = tool(
        [commands.nvidia_smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"]
    )
    topo = tool([commands.nvidia_smi, "topo", "-m"])
    (out_dir / "topo.txt").write_text(topo["stdout"] + topo["stderr"], encoding="utf-8")
    outputs["topo"] = topo
    outputs["versions"], outputs["torch_device_count"] = commands.versions()
    nproc = outputs["torch_device_count"]
    if nproc == 0:
        return outputs
    check_scope()
    with tempfile.TemporaryDirectory() as tmp:
        site, extracted = Path(tmp) / "build" / "site", Path(tmp) / "extracted"
        writable = commands.build_writable(site)
        for folder in writable:
            folder.mkdir(parents=True, exist_ok=True)
        build = run(
            commands.build(site), 600, env={"NO_MKDOCS_2_WARNING": "1"}, binds=tuple((f, True) for f in writable)
        )
        outputs["build"] = _step(build)
        if build.returncode != 0:
            return outputs
        try:
            outputs["blocks"] = dict(sorted(extract(site, extracted, BLOCKS).items()))
        except ExtractError as exc:
            outputs["extract_error"] = str(exc)
            return outputs
        check = run(
            commands.check(extracted / SNIPPET, nproc),
            CHECK_TIMEOUT_S + 180,
            env={"NCCL_CHECK_MIB": str(CHECK_MIB), "NCCL_CHECK_TIMEOUT": str(CHECK_TIMEOUT_S)},
            binds=((extracted, False),),
        )
        outputs["check"] = _step(check, keep_stdout=True)
        print(check.stdout, end="")
        # made after the earlier scopes ended: none of them could plant a link there
        junit = Path(tempfile.mkdtemp(dir=tmp)) / JUNIT
        # the gpu tests build the site again (tests/conftest.py), with the checkout's build caches
        tests = run(
            commands.gpu_tests(junit),
            1800,
            env={"REQUIRE_GPU": "1"},
            binds=((junit.parent, True), (REPO_ROOT / ".cache", True)),
        )
        outputs["gpu_tests"] = _step(tests)
        print(tests.stdout[-TAIL_CHARS:], end="")
        if junit.is_file() and not junit.is_symlink():  # read once the scope that wrote it is gone
            shutil.copyfile(junit, out_dir / JUNIT)
    return outputs


def main(argv: list[str] | None = None, commands: Commands = Commands()) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "verification", help="where the outputs go (a folder)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in (*OUTPUT_FILES, "nccl_check.json"):  # nothing from before is taken for this run's
        (args.out / name).unlink(missing_ok=True)
    undumpable()
    stop_on_signals()
    try:
        outputs = collect(args.out, commands)
    except (Exception, Interrupted) as exc:  # noqa: BLE001 (whatever stopped it, the record says it failed)
        traceback.print_exc()
        outputs = {
            "outputs": 1,
            "snippet": SNIPPET,
            "stopped": f"verify.gpu_check stopped: {type(exc).__name__}: {exc}",
        }
        if isinstance(exc, ScopeError):
            outputs["stopped"] = f"verify.gpu_check: {exc}"
    (args.out / OUTPUTS).write_text(json.dumps(outputs, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.out / OUTPUTS}: collected; `python -m verify.write_record {args.out}` writes the record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
