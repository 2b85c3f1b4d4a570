"""Checks a development build does not repeat: one empty file per check that passed.

Some checks of a build are pure functions of their input and of the code and tools that run
them: the same-code check of a block whose comments were translated (``hooks/comments.py``:
Python's AST, ``bash --pretty-print``) and the external-load check of a stylesheet. When one
passes, ``remember`` leaves an empty file in ``PASSED_DIR`` named by the SHA-256 of the kind
of check, its input and ``fingerprint()`` (Python's and PyYAML's versions, every ``.py`` of
hooks/ and verify/, the bash binary); ``passed_before`` finds it in a later build. The same rule as the
schema markers (``hooks.data.validate``): a marker is a file anyone who can write the
checkout can make, so a publication build (``trust_markers(False)``) trusts none and runs
every check.

Pure: no MkDocs import.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import sys
from pathlib import Path

import yaml

from .data import REPO_ROOT, markers_trusted

PASSED_DIR = REPO_ROOT / ".cache" / "passed"
CODE_DIRS = (REPO_ROOT / "hooks", REPO_ROOT / "verify")


@functools.cache
def fingerprint() -> bytes:
    """What every remembered outcome depends on besides its input (computed once per process)."""
    digest = hashlib.sha256(f"{sys.version}\0pyyaml={yaml.__version__}\0".encode())  # the YAML reader's
    for folder in CODE_DIRS:
        for path in sorted(folder.rglob("*.py")):
            digest.update(f"{folder.name}/{path.relative_to(folder).as_posix()}".encode() + b"\0" + path.read_bytes() + b"\0")
    bash = shutil.which("bash")
    if bash:
        stat = Path(bash).resolve().stat()
        digest.update(f"{Path(bash).resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return digest.digest()


def _marker(kind: str, parts: tuple[str, ...]) -> Path:
    digest = hashlib.sha256(fingerprint() + kind.encode() + b"\0")
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big") + data)
    return PASSED_DIR / digest.hexdigest()


def passed_before(kind: str, *parts: str) -> bool:
    """Whether a development build saw check ``kind`` pass on exactly ``parts`` (False in a
    publication build)."""
    return markers_trusted() and _marker(kind, parts).is_file()


def remember(kind: str, *parts: str) -> None:
    """Record that check ``kind`` passed on ``parts`` (a read-only checkout records nothing)."""
    marker = _marker(kind, parts)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass
