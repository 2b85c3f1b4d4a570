"""The project's pinned versions, defined once: ``constraints.txt`` (``name==version``, one line
per package, what ``pip freeze`` writes). The requirement files name packages only and apply
it (``-c constraints.txt``); everything that states a version (the record's torch, the pages'
"PyTorch 2.13", the finder's hint) reads it here.
"""

from __future__ import annotations

import re
from pathlib import Path

CONSTRAINTS = Path(__file__).resolve().parent.parent / "constraints.txt"
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s#;]+)")


def _normal(name: str) -> str:
    """A distribution name as pip compares them (PEP 503: case and runs of ``-_.`` folded)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(package: str, parts: int | None = None, constraints: Path | None = None) -> str:
    """The version ``constraints`` pins for ``package`` (``torch`` -> ``2.13.0``), or its first
    ``parts`` release numbers (``parts=2``: ``2.13``). ``constraints``: default ``CONSTRAINTS``.
    Raises ValueError naming the file when the package has no exact pin, and OSError when the
    file cannot be read."""
    constraints = constraints or CONSTRAINTS
    wanted = _normal(package)
    for line in constraints.read_text(encoding="utf-8").splitlines():
        match = _PIN.match(line)
        if match and _normal(match.group(1)) == wanted:
            version = match.group(2)
            return version if parts is None else ".".join(version.split("+")[0].split(".")[:parts])
    raise ValueError(f"{constraints.name}: no exact pin {package}==X")
