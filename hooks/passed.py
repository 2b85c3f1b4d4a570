"""Checks a development build does not repeat: one empty file per check that passed.

Some checks of a build are pure functions of their input and of the code and tools that run
them: a data text against its schema (``hooks.data.validate``), the same-code check of a
block whose comments were translated (``hooks/comments.py``: Python's AST, ``bash
--pretty-print``), a titled block runnable and the same across languages
(``hooks/same_code.py``), the external-load check of a stylesheet. When one passes,
``remember`` leaves an empty file in ``PASSED_DIR`` named by the SHA-256 of the kind of
check, its input and ``fingerprint()``; ``passed_before`` finds it in a later build.

A marker is a file anyone who can write the checkout can make (even commit, ``git add -f``),
so a publication build (``trust_markers(False)``) trusts none and runs every check; the
other thing a development build reuses from ``.cache`` (``hooks/notebook_pages.py``'s executed
notebooks) asks ``markers_trusted``.

Pure: no MkDocs import.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import sys
import unicodedata
from importlib import metadata
from pathlib import Path

from .digest import hash_files
from .languages import LANGUAGES

REPO_ROOT = Path(__file__).resolve().parent.parent
PASSED_DIR = REPO_ROOT / ".cache" / "passed"
CODE_DIRS = (REPO_ROOT / "hooks", REPO_ROOT / "verify")
_state = {"trusted": True}


def trust_markers(trusted: bool) -> None:
    """Whether this build may reuse what an earlier build left in ``.cache`` (False for a
    publication build; ``hooks.data.trust_markers`` also forgets what it parsed meanwhile)."""
    _state["trusted"] = trusted


def markers_trusted() -> bool:
    """Whether this build may reuse what an earlier build left in ``.cache``."""
    return _state["trusted"]


@functools.cache
def fingerprint() -> bytes:
    """What every remembered outcome depends on besides its input, computed once per process:
    the site's languages, Python's version and Unicode database (which characters a comment
    translation may hold), pydantic's and PyYAML's versions, every ``.py`` of hooks/ (the
    schemas among them) and verify/ (the readers, the record schema), and the bash binary."""
    versions = [*LANGUAGES, sys.version, unicodedata.unidata_version]
    for package in ("pydantic", "pyyaml"):
        try:
            versions.append(f"{package}={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package}=absent")
    digest = hashlib.sha256("\0".join(versions).encode() + b"\0")
    for folder in CODE_DIRS:
        hash_files(digest, folder.rglob("*.py"), folder.parent)
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
