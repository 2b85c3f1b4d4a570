"""Byte units. GB = 10**9 bytes (the guide's tables), GiB = 2**30 bytes.

Names carry the unit: ``*_bytes`` are ints of bytes, ``*_gb`` floats of 10**9
bytes, ``*_gib`` floats of 2**30 bytes. Never mix them silently.
"""

from __future__ import annotations

import re

GB = 10**9
GIB = 2**30

_PARAMS_RE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([KkMmBbTt]?)\s*$")
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def bytes_to_gb(n_bytes: int | float) -> float:
    """Bytes -> GB (10**9 bytes)."""
    return n_bytes / GB


def bytes_to_gib(n_bytes: int | float) -> float:
    """Bytes -> GiB (2**30 bytes)."""
    return n_bytes / GIB


def gb_to_bytes(gb: float) -> int:
    """GB (10**9 bytes) -> bytes, rounded to the nearest byte."""
    return round(gb * GB)


def gib_to_bytes(gib: float) -> int:
    """GiB (2**30 bytes) -> bytes, rounded to the nearest byte."""
    return round(gib * GIB)


def parse_params(text: str | int | float) -> int:
    """Parse a parameter count: ``8e9``, ``8B``, ``1.5b``, ``350M``, ``7000000``.

    Returns an int number of parameters (> 0).
    Raises ValueError with a one-line message for anything else (``8X``, ``-1``, ``0``).
    """
    if isinstance(text, bool):
        raise ValueError(f"invalid parameter count {text!r}")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        match = _PARAMS_RE.match(str(text))
        if not match:
            raise ValueError(
                f"invalid parameter count {text!r}: write a number such as 8e9, 8B or 350M"
            )
        value = float(match.group(1)) * _SUFFIX[match.group(2).lower()]
    if value <= 0 or value != value:
        raise ValueError(f"invalid parameter count {text!r}: it must be positive")
    return round(value)
