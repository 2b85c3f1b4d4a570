"""The GPU run, second half: write the verification record from the outputs the first half
(``verify.gpu_check``) collected, running none of the code under verification.

``python -m verify.write_record [FOLDER] [--record FOLDER/nccl_check.json]``: reads
``FOLDER/outputs.json`` and ``FOLDER/gpu-tests.xml`` and writes the record (``status`` ``pass``
or ``fail`` with the reasons). Exit 0 only for a passing record; 2 with one line when the
outputs cannot be read. Standard library and ``verify``'s parsers only: in the workflow this
runs in the ``record`` job, on a fresh GitHub-hosted machine, from a fresh checkout of the
same commit, where no code of the build, of the extracted blocks or of the gpu tests ever
ran; a process the GPU job left behind cannot reach it.

What is judged here: nvidia-smi's inventory and topology, the device count PyTorch saw, the
build's and the extraction's outcome, every rank's line of the NCCL check (``verify.
nccl_output``), and the gpu tests: the counts of their JUnit report (``verify.junit``) and
pytest's exit status must agree (exit 0 exactly when nothing failed or erred), with at least
one test passed and none skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from verify.junit import JUnitError, junit_counts
from verify.nccl_output import OutputError, parse_rank_lines, slowest
from verify.record import BUSBW_PLAUSIBLE_MAX_GB_PER_S, SCHEMA, SNIPPET
from verify.topology import TopologyError, classify_pairs, summarize

CHECK_MIB = 1024  # what verify.gpu_check runs the check with (NCCL_CHECK_MIB)


class OutputsError(ValueError):
    """The collected outputs are missing or unreadable."""


def load_outputs(folder: Path) -> dict[str, Any]:
    path = folder / "outputs.json"
    try:
        outputs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OutputsError(f"{path}: not the outputs of `python -m verify.gpu_check` ({exc})") from None
    if not isinstance(outputs, dict) or outputs.get("outputs") != 1:
        raise OutputsError(f"{path}: not the outputs of `python -m verify.gpu_check` (no \"outputs\": 1)")
    return outputs


def _last_line(text: str | None) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no message"


def inventory(smi: dict[str, Any], failures: list[str]) -> dict[str, Any]:
    """nvidia-smi's view (``--query-gpu=name,memory.total,driver_version``)."""
    if smi.get("returncode") != 0:
        failures.append(
            f"nvidia-smi failed ({smi.get('returncode')}): {_last_line(smi.get('stderr') or smi.get('stdout'))}"
        )
        return {"model": None, "count": 0, "memory_mib": None, "driver": None}
    rows = [[cell.strip() for cell in line.split(",")] for line in smi["stdout"].strip().splitlines()]
    models = sorted({row[0] for row in rows})
    return {
        "model": " + ".join(models),
        "count": len(rows),
        "memory_mib": int(rows[0][1]) if rows and len(rows[0]) > 1 and rows[0][1].isdigit() else None,
        "driver": rows[0][2] if rows and len(rows[0]) > 2 else None,
    }


def link_classes(topo: dict[str, Any], failures: list[str]) -> dict[str, Any]:
    if topo.get("returncode") != 0:
        failures.append(f"nvidia-smi topo -m failed ({topo.get('returncode')})")
        return summarize({})
    try:
        return summarize(classify_pairs(topo["stdout"]))
    except TopologyError as exc:
        failures.append(f"nvidia-smi topo -m: {exc}")
        return summarize({})


def measured(check: dict[str, Any], nproc: int, failures: list[str]) -> dict[str, Any]:
    """The slowest rank's numbers from the check's printed lines."""
    if check["returncode"] != 0:
        failures.append(f"{SNIPPET} exited {check['returncode']}: {_last_line(check['stderr_tail'])}")
        return {}
    try:
        lines = parse_rank_lines(check["stdout"])
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
    return {
        "world_size": worst.world,
        "size_bytes": CHECK_MIB * 2**20,
        "allreduce_per_s": worst.allreduce_per_s,
        "algbw_gb_per_s": worst.algbw_gb_per_s,
        "busbw_gb_per_s": worst.busbw_gb_per_s,
        "ranks": [line.__dict__ for line in lines],
    }


def gpu_tests(step: dict[str, Any], junit: Path, failures: list[str]) -> dict[str, Any]:
    """The report's counts, held against pytest's exit status."""
    try:
        counts = junit_counts(junit)
    except JUnitError as exc:
        failures.append(f"pytest -m gpu: exit {step['returncode']}, {exc}")
        return {"status": "fail"}
    clean = not (counts["failed"] or counts["errors"])
    if clean != (step["returncode"] == 0):
        failures.append(f"pytest -m gpu: exit {step['returncode']} disagrees with its report {junit.name} ({counts})")
    ok = step["returncode"] == 0 and clean and counts["passed"] > 0 and not counts["skipped"]
    if not ok:
        failures.append(f"pytest -m gpu: exit {step['returncode']}, {counts}")
    return {"status": "pass" if ok else "fail", **counts}


def record_from(outputs: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The record the collected ``outputs`` (and ``folder``'s JUnit report) make."""
    failures: list[str] = []
    record = {
        "schema": SCHEMA,
        "fixture": False,
        "snippet": SNIPPET,
        "snippet_sha256": None,
        "blocks": {},
        "status": "fail",
        "utc": outputs.get("utc"),
        "runner": outputs.get("runner"),
        "gpu": {},
        "links": {},
        "measured": {},
        "versions": outputs.get("versions", {}),
        "torch_device_count": outputs.get("torch_device_count", 0),
        "gpu_tests": {"status": "not run"},
        "failures": failures,
    }
    if "stopped" in outputs:
        failures.append(outputs["stopped"])
        return record
    record["gpu"] = inventory(outputs["nvidia_smi"], failures)
    record["links"] = link_classes(outputs["topo"], failures)
    nproc = record["torch_device_count"]
    if nproc == 0:
        failures.append("PyTorch sees no CUDA GPU (torch.cuda.device_count() == 0)")
        return record
    if outputs["build"]["returncode"] != 0:
        failures.append(
            f"mkdocs build --strict failed ({outputs['build']['returncode']}): {_last_line(outputs['build']['stderr_tail'])}"
        )
        return record
    if "extract_error" in outputs:
        failures.append(outputs["extract_error"])
        return record
    record["snippet_sha256"], record["blocks"] = outputs["blocks"][SNIPPET], outputs["blocks"]
    record["measured"] = measured(outputs["check"], nproc, failures)
    record["gpu_tests"] = gpu_tests(outputs["gpu_tests"], folder / "gpu-tests.xml", failures)
    record["status"] = "pass" if not failures else "fail"
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.write_record", description=__doc__.splitlines()[0])
    parser.add_argument(
        "folder", type=Path, nargs="?", default=Path("verification"), help="the outputs of verify.gpu_check"
    )
    parser.add_argument("--record", type=Path, help="where to write the record (default: FOLDER/nccl_check.json)")
    args = parser.parse_args(argv)
    path = args.record or args.folder / "nccl_check.json"
    path.unlink(missing_ok=True)
    try:
        outputs = load_outputs(args.folder)
        record = record_from(outputs, args.folder)
    except OutputsError as exc:
        print(f"verify.write_record: error: {exc}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, AttributeError) as exc:
        print(
            f"verify.write_record: error: {args.folder / 'outputs.json'}: malformed outputs ({type(exc).__name__}: {exc})",
            file=sys.stderr,
        )
        return 2
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{path}: {record['status']}" + (f" ({'; '.join(record['failures'])})" if record["failures"] else ""))
    return 0 if record["status"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
