"""The GPU run: build the site, extract the NCCL check from it, run it on every visible GPU,
run the ``gpu`` tests, and write the verification record.

``python -m verify.gpu_check [--record verification/nccl_check.json]`` (``make gpu-check``).
Exit 0 only if everything passed; a record is written either way (``status`` ``pass`` or
``fail`` with the reasons), next to ``nvidia-smi.txt`` and ``topo.txt``. Nothing here is
skipped silently: no GPU, a skipped GPU test, a missing ``nvidia-smi`` are failures.

A record at the path from before the run is removed first, and an error or a signal
(SIGTERM, SIGHUP, SIGINT: a cancelled job) still writes a failed record, so the file the
``gpu`` job uploads is always this run's. A signal also ends the process group of the command
running (torchrun and its ranks live in a session of their own, out of reach of a signal sent
to the job's processes).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path

from verify.extract import ExtractError, extract
from verify.nccl_output import OutputError, parse_rank_lines, slowest
from verify.record import BLOCKS, BUSBW_PLAUSIBLE_MAX_GB_PER_S, DEFAULT_RECORD, SCHEMA, SNIPPET
from verify.topology import TopologyError, classify_pairs, summarize

REPO_ROOT = Path(__file__).resolve().parent.parent
CHECK_MIB = 1024  # the published default: one 1 GiB bf16 tensor
CHECK_TIMEOUT_S = 120  # the snippet's process-group timeout (NCCL_CHECK_TIMEOUT)
KILL_GRACE_S = 10.0  # from SIGTERM to SIGKILL for the processes of a command that timed out


def _end_group(group: int, proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM to every process of ``group``, SIGKILL to what is left after ``grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            pass


def run(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
        grace_s: float = KILL_GRACE_S) -> subprocess.CompletedProcess:
    """Run ``cmd`` in the repository, in a process group of its own; a timeout or a missing
    program becomes a failed process (124, 127).

    On timeout the whole group is ended: torchrun's rank processes too, which a kill of
    torchrun alone would leave running on the GPUs (SIGTERM, then SIGKILL after ``grace_s``
    for a rank stuck in a collective). The group is ended on any way out of this function.
    """
    try:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **(env or {})}, start_new_session=True)
    except FileNotFoundError as exc:
        return subprocess.CompletedProcess(cmd, 127, "", str(exc))
    try:
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        _end_group(proc.pid, proc, grace_s)
        try:
            out, err = proc.communicate(timeout=grace_s + 5)
        except subprocess.TimeoutExpired:  # a process left the group and holds the pipes
            out, err = "", ""
        return subprocess.CompletedProcess(cmd, 124, out or "", f"timed out after {timeout:.0f} s; its process group was ended")
    finally:
        _end_group(proc.pid, proc, 0)


class Interrupted(Exception):
    """A signal asked the check to stop."""


def _interrupted(signum: int, frame) -> None:
    raise Interrupted(f"stopped by {signal.Signals(signum).name}")


def stop_on_signals() -> None:
    """Make SIGTERM and SIGHUP (and SIGINT) raise ``Interrupted``, so ``run`` ends its command's
    process group on the way out (Python's default for SIGTERM ends the process at once)."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _interrupted)


def gpu_inventory(failures: list[str], out_dir: Path) -> dict:
    """nvidia-smi's view: model, count, memory, driver; the full text goes to nvidia-smi.txt."""
    full = run(["nvidia-smi"], 60)
    (out_dir / "nvidia-smi.txt").write_text(full.stdout + full.stderr, encoding="utf-8")
    query = run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"], 60)
    if query.returncode != 0:
        failures.append(f"nvidia-smi failed ({query.returncode}): {(query.stderr or query.stdout).strip()[:200]}")
        return {"model": None, "count": 0, "memory_mib": None, "driver": None}
    rows = [[cell.strip() for cell in line.split(",")] for line in query.stdout.strip().splitlines()]
    models = sorted({row[0] for row in rows})
    return {"model": " + ".join(models), "count": len(rows),
            "memory_mib": int(rows[0][1]) if rows and rows[0][1].isdigit() else None,
            "driver": rows[0][2] if rows else None}


def link_classes(failures: list[str], out_dir: Path) -> dict:
    topo = run(["nvidia-smi", "topo", "-m"], 60)
    (out_dir / "topo.txt").write_text(topo.stdout + topo.stderr, encoding="utf-8")
    if topo.returncode != 0:
        failures.append(f"nvidia-smi topo -m failed ({topo.returncode})")
        return summarize({})
    try:
        return summarize(classify_pairs(topo.stdout))
    except TopologyError as exc:
        failures.append(f"nvidia-smi topo -m: {exc}")
        return summarize({})


def torch_versions() -> tuple[dict, int]:
    import torch

    available = torch.cuda.is_available()
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if available else None
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": nccl}, torch.cuda.device_count() if available else 0


def run_check(script: Path, nproc: int, failures: list[str]) -> dict:
    """Run the extracted check under torchrun on ``nproc`` GPUs; the slowest rank's numbers."""
    proc = run([sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", str(script)],
               timeout=CHECK_TIMEOUT_S + 180,
               env={"NCCL_CHECK_MIB": str(CHECK_MIB), "NCCL_CHECK_TIMEOUT": str(CHECK_TIMEOUT_S)})
    print(proc.stdout, end="")
    if proc.returncode != 0:
        failures.append(f"{SNIPPET} exited {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] or ''}")
        print(proc.stderr[-4000:], file=sys.stderr)
        return {}
    try:
        lines = parse_rank_lines(proc.stdout)
    except OutputError as exc:
        failures.append(f"{SNIPPET} output: {exc}")
        return {}
    worst = slowest(lines)
    if worst.world != nproc:
        failures.append(f"{SNIPPET} ran {worst.world} ranks on {nproc} GPUs")
    if any((line.busbw_gb_per_s or 0) > BUSBW_PLAUSIBLE_MAX_GB_PER_S for line in lines):
        failures.append(f"busbw above {BUSBW_PLAUSIBLE_MAX_GB_PER_S:g} GB/s: the timing is not synchronised")
    if any(line.device != f"cuda:{line.local_rank}" for line in lines):
        failures.append("a rank did not use the GPU of its LOCAL_RANK")
    return {"world_size": worst.world, "size_bytes": CHECK_MIB * 2**20, "allreduce_per_s": worst.allreduce_per_s,
            "algbw_gb_per_s": worst.algbw_gb_per_s, "busbw_gb_per_s": worst.busbw_gb_per_s,
            "ranks": [line.__dict__ for line in lines]}


def run_gpu_tests(out_dir: Path, failures: list[str]) -> dict:
    junit = out_dir / "gpu-tests.xml"
    proc = run([sys.executable, "-m", "pytest", "-m", "gpu", "tests/gpu", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
               timeout=1800, env={"REQUIRE_GPU": "1"})
    print(proc.stdout[-4000:], end="")
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    if junit.is_file():
        suite = ET.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        total = int(suite.get("tests", 0))
        counts.update(failed=int(suite.get("failures", 0)), skipped=int(suite.get("skipped", 0)), errors=int(suite.get("errors", 0)))
        counts["passed"] = total - counts["failed"] - counts["skipped"] - counts["errors"]
    ok = proc.returncode == 0 and counts["passed"] > 0 and not (counts["failed"] or counts["skipped"] or counts["errors"])
    if not ok:
        failures.append(f"pytest -m gpu: exit {proc.returncode}, {counts}")
    return {"status": "pass" if ok else "fail", **counts}


def gpu_check(record_path: Path) -> dict:
    out_dir = record_path.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    record = {"schema": SCHEMA, "fixture": False, "snippet": SNIPPET, "snippet_sha256": None, "blocks": {}, "status": "fail",
              "utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "runner": os.environ.get("RUNNER_NAME"), "gpu": gpu_inventory(failures, out_dir), "links": {},
              "measured": {}, "versions": {}, "gpu_tests": {"status": "not run"}, "failures": failures}
    record["links"] = link_classes(failures, out_dir)
    record["versions"], record["torch_device_count"] = torch_versions()
    nproc = record["torch_device_count"]
    if nproc == 0:
        failures.append("PyTorch sees no CUDA GPU (torch.cuda.device_count() == 0)")
        return record
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        build = run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], 600, env={"NO_MKDOCS_2_WARNING": "1"})
        if build.returncode != 0:
            failures.append(f"mkdocs build --strict failed: {build.stderr.strip().splitlines()[-1:]}")
            return record
        try:
            hashes = extract(site, Path(tmp) / "extracted", BLOCKS)
        except ExtractError as exc:
            failures.append(str(exc))
            return record
        record["snippet_sha256"], record["blocks"] = hashes[SNIPPET], dict(sorted(hashes.items()))
        record["measured"] = run_check(Path(tmp) / "extracted" / SNIPPET, nproc, failures)
    record["gpu_tests"] = run_gpu_tests(out_dir, failures)
    record["status"] = "pass" if not failures else "fail"
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, default=REPO_ROOT / DEFAULT_RECORD, help="where to write the record (JSON)")
    args = parser.parse_args(argv)
    args.record.unlink(missing_ok=True)  # a record from before is never taken for this run's
    stop_on_signals()
    try:
        record = gpu_check(args.record)
    except (Exception, Interrupted) as exc:  # noqa: BLE001 (whatever stopped it, the record says it failed)
        traceback.print_exc()
        record = {"schema": SCHEMA, "fixture": False, "snippet": SNIPPET, "status": "fail",
                  "failures": [f"verify.gpu_check stopped: {type(exc).__name__}: {exc}"]}
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.record}: {record['status']}" + (f" ({'; '.join(record['failures'])})" if record["failures"] else ""))
    return 0 if record["status"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
