"""The verification record: what ran on a GPU, where, and what it measured.

``python -m verify.write_record`` writes it (``verification/nccl_check.json``) from what
``python -m verify.gpu_check`` collected on the GPU machine; the publish
build (``GUIDE_PUBLISH=1``, ``hooks/checks/publish_gate.py``) refuses to build unless it passes
``check_record``: its schema (``verify.record_schema``), then the hash below.

What is hashed: ``snippet_sha256`` is the SHA-256 of the bytes of
``snippets/nccl_check.py``, the file the pages include; ``blocks`` maps the title of every
block the GPU job extracted from the built pages (``BLOCKS``: the NCCL check, the training
scripts, the configs) to the SHA-256 of its code, and the publish build checks each block of
every page against it. The Italian (default language)
code block of the built page is byte-identical to that file (LF, one trailing newline),
so ``verify.extract`` gets the same digest from the extracted script, and so does the
publish build from the block it renders.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path
from typing import Any

from verify.pins import pinned
from verify.record_format import BUSBW_PLAUSIBLE_MAX_GB_PER_S, LINK_CLASSES, SCHEMA

__all__ = [
    "BLOCKS",
    "BUSBW_PLAUSIBLE_MAX_GB_PER_S",
    "DEFAULT_RECORD",
    "LINK_CLASSES",
    "MAX_AGE",
    "SCHEMA",
    "SNIPPET",
    "RecordError",
    "check_record",
    "load_record",
    "pinned_torch",
    "snippet_sha256",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
SNIPPET = "nccl_check.py"
# Every block the GPU job extracts from the built pages and hashes into the record's ``blocks``.
BLOCKS = (
    SNIPPET,
    "train.py",
    "train_fsdp2.py",
    "train_hf.py",
    "zero_to_hf.py",
    "dcp_to_hf.py",
    "accelerate_fsdp2.yaml",
    "ds_zero2.json",
    "ds_zero2_offload.json",
    "ds_zero3.json",
    "ds_zero3_offload.json",
)
DEFAULT_RECORD = Path("verification") / "nccl_check.json"
# The gpu job writes the record minutes before the deploy job reads it (same workflow run);
# a week leaves room to rerun a failed deploy, not to publish a stack measured long ago.
MAX_AGE = datetime.timedelta(days=7)


class RecordError(Exception):
    """The record is missing, unreadable, malformed, stale, a fixture, or records a failed run."""


def snippet_sha256(data: bytes) -> str:
    """Hex SHA-256 of the snippet's bytes."""
    return hashlib.sha256(data).hexdigest()


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise ValueError(f"duplicate key {duplicates[0]!r}")
    return dict(pairs)


def load_record(path: Path) -> dict[str, Any]:
    """The record at ``path`` (JSON, an object without duplicate keys). Raises RecordError naming the path."""
    if not path.is_file():
        raise RecordError(
            f"{path}: no verification record; run `make gpu-check` on a GPU machine (or download the `record` job's artifact)"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"{path}: not a readable JSON record ({exc})") from None
    if not isinstance(record, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return record


def pinned_torch(constraints: Path | None = None) -> str:
    """The version of torch that ``constraints`` (default: ``constraints.txt``) pins
    (``torch==X``: every version of the project is pinned there, once: ``verify.pins``).
    Raises RecordError."""
    try:
        return pinned("torch", constraints=constraints)
    except (OSError, ValueError) as exc:
        raise RecordError(f"{constraints or 'constraints.txt'}: {exc}") from None


def check_record(
    record: dict[str, Any],
    expected_sha256: str,
    where: str,
    allow_fixture: bool = False,
    now: datetime.datetime | None = None,
) -> dict[str, Any]:
    """Return ``record`` if it is a passing, fresh record of the snippet with ``expected_sha256``.

    Raises RecordError (one line, naming ``where``) for another schema, a failed run, a record
    the schema refuses (``verify.record_schema``: types, one consistent world, plausible
    figures, passing GPU tests, the block's name, the pinned torch, a ``utc`` neither in the
    future nor older than ``MAX_AGE`` before ``now``), a fixture when ``allow_fixture`` is
    false, or a stale snippet hash.
    """
    if type(record.get("schema")) is not int or record["schema"] != SCHEMA:  # 2.0 and True are not 2
        raise RecordError(
            f"{where}: schema {record.get('schema')!r}, this build reads schema {SCHEMA}; rerun `make gpu-check`"
        )
    if record.get("status") != "pass":
        failures = record.get("failures")
        reasons = "; ".join(map(str, failures)) if isinstance(failures, list) and failures else "no reason recorded"
        raise RecordError(
            f"{where}: records a {record.get('status')!r} run, not 'pass' ({reasons}); fix it and rerun `make gpu-check`"
        )
    from pydantic import ValidationError  # only a publish build pays for the schema

    from verify.record_schema import Expected, Record
    from verify.schema_errors import one_line

    expected = Expected(SNIPPET, pinned_torch(), now or datetime.datetime.now(datetime.UTC), MAX_AGE, BLOCKS)
    try:
        Record.model_validate(record, context=expected)
    except ValidationError as exc:
        raise RecordError(f"{where}: {one_line(exc)}") from None
    if record["fixture"] and not allow_fixture:
        raise RecordError(
            f"{where}: is a test fixture, not a GPU run; a publish build needs the record written by `make gpu-check`"
        )
    if record["snippet_sha256"] != expected_sha256:
        raise RecordError(
            f"{where}: stale, it verified {record['snippet']} with sha256 {record['snippet_sha256'][:12]}…, "
            f"the pages include sha256 {expected_sha256[:12]}…; rerun `make gpu-check`"
        )
    return record
