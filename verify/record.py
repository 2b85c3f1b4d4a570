"""The verification record: what ran on a GPU, where, and what it measured.

``python -m verify.gpu_check`` writes it (``verification/nccl_check.json``); the publish
build (``GUIDE_PUBLISH=1``, ``hooks/mkdocs_glue.py``) refuses to build unless it passes
``check_record``.

What is hashed: ``snippet_sha256`` is the SHA-256 of the bytes of
``snippets/nccl_check.py``, the file the pages include. The Italian (default language)
code block of the built page is byte-identical to that file (LF, one trailing newline),
so ``verify.extract`` gets the same digest from the extracted script, and so does the
publish build from the block it renders.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

SCHEMA = 1
SNIPPET = "nccl_check.py"
DEFAULT_RECORD = Path("verification") / "nccl_check.json"
# Case 11: an all-reduce busbw above this on current hardware (NVLink 5 is 900 GB/s per
# direction) means the timing missed a synchronize, not a fast machine.
BUSBW_PLAUSIBLE_MAX_GB_PER_S = 1000.0
LINK_CLASSES = ("nvlink", "pcie-switch", "host-bridge", "cross-cpu")  # fastest to slowest
REQUIRED = {
    "schema": int, "fixture": bool, "snippet": str, "snippet_sha256": str, "status": str, "utc": str,
    "gpu": dict, "links": dict, "measured": dict, "versions": dict, "gpu_tests": dict, "failures": list,
}


class RecordError(Exception):
    """The record is missing, unreadable, stale, a fixture, or records a failed run."""


def snippet_sha256(data: bytes) -> str:
    """Hex SHA-256 of the snippet's bytes."""
    return hashlib.sha256(data).hexdigest()


def load_record(path: Path) -> dict[str, Any]:
    """The record at ``path``. Raises RecordError naming the path."""
    if not path.is_file():
        raise RecordError(f"{path}: no verification record; run `make gpu-check` on a GPU machine (or download the `gpu` job's artifact)")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: not a readable JSON record ({exc})") from None
    if not isinstance(record, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return record


def check_record(record: dict[str, Any], expected_sha256: str, where: str, allow_fixture: bool = False) -> dict[str, Any]:
    """Return ``record`` if it is a passing record of the snippet with ``expected_sha256``.

    Raises RecordError (one line, naming ``where``) for a wrong schema, a failed run, GPU
    tests that failed or were skipped, an implausible busbw, a stale snippet hash, or a
    fixture record when ``allow_fixture`` is false.
    """
    if record.get("schema") != SCHEMA:
        raise RecordError(f"{where}: schema {record.get('schema')!r}, this build reads schema {SCHEMA}")
    if record.get("status") != "pass":
        reasons = "; ".join(map(str, record.get("failures") or [])) or "no reason recorded"
        raise RecordError(f"{where}: records a {record.get('status')!r} run, not 'pass' ({reasons}); fix it and rerun `make gpu-check`")
    for key, kind in REQUIRED.items():
        if not isinstance(record.get(key), kind):
            raise RecordError(f"{where}: field {key!r} missing or not a {kind.__name__} (schema {SCHEMA})")
    if record["fixture"] and not allow_fixture:
        raise RecordError(f"{where}: is a test fixture, not a GPU run; a publish build needs the record written by `make gpu-check`")
    tests = record["gpu_tests"]
    if tests.get("status") != "pass" or tests.get("failed", 1) or tests.get("skipped", 1) or not tests.get("passed"):
        raise RecordError(f"{where}: GPU tests did not all pass (passed {tests.get('passed')}, failed {tests.get('failed')}, skipped {tests.get('skipped')}); a skip counts as a failure")
    busbw = record["measured"].get("busbw_gb_per_s")
    if not isinstance(busbw, (int, float)) or not 0 <= busbw <= BUSBW_PLAUSIBLE_MAX_GB_PER_S:
        raise RecordError(f"{where}: busbw {busbw!r} GB/s is not plausible (0..{BUSBW_PLAUSIBLE_MAX_GB_PER_S:g}): was the timing synchronised?")
    if record["snippet_sha256"] != expected_sha256:
        raise RecordError(f"{where}: stale, it verified {record['snippet']} with sha256 {record['snippet_sha256'][:12]}…, "
                          f"the pages include sha256 {expected_sha256[:12]}…; rerun `make gpu-check`")
    return record
