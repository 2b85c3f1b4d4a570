"""Byte units. GB = 10**9 bytes (the guide's tables), GiB = 2**30 bytes.

Names carry the unit: ``*_bytes`` are ints of bytes, ``*_gb`` floats of 10**9
bytes, ``*_gib`` floats of 2**30 bytes. Never mix them silently.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

GB = 10**9
GIB = 2**30

_PARAMS_RE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([KkMmBbTt]?)\s*$")
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
# 10**15 parameters, ~500x the largest published model: anything above is a typo.
MAX_PARAMS = 10**15


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


def parse_params(text: str | int) -> int:
    """Parse a parameter count exactly: ``8e9``, ``8B``, ``1.5b``, ``350M``, ``7000000``.

    The text is read as a decimal number (``decimal.Decimal``, never a float), so ``1.5b``
    is exactly 1,500,000,000. Returns an int in 1..``MAX_PARAMS``.
    Raises ValueError with a one-line message quoting the input for anything else: not a
    number (``8X``, ``nan``, ``-1``), not a whole number of parameters (``0.4``, ``1.5``),
    zero, or more than ``MAX_PARAMS`` (``1e30``, ``1e400``).
    """
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise ValueError(f"invalid parameter count {quote_text(text)}: write a number such as 8e9, 8B or 350M")
    if isinstance(text, int):
        number, scale = Decimal(text), 1
    else:
        match = _PARAMS_RE.match(text)
        if not match:
            raise ValueError(
                f"invalid parameter count {quote_text(text)}: write a number such as 8e9, 8B or 350M"
            )
        number, scale = Decimal(match.group(1)), _SUFFIX[match.group(2).lower()]
    # adjusted(): the power of ten of the leading digit, read without rounding or overflow.
    if number and number.adjusted() + len(str(scale)) - 1 > len(str(MAX_PARAMS)) - 1:
        raise ValueError(f"implausible parameter count {quote_text(text)}: more than 10^15 parameters")
    value = Fraction(number) * scale  # exact: Decimal arithmetic would round to 28 digits
    if value > MAX_PARAMS:
        raise ValueError(f"implausible parameter count {quote_text(text)}: more than 10^15 parameters")
    if value.denominator != 1:
        raise ValueError(f"invalid parameter count {quote_text(text)}: not a whole number of parameters")
    if value <= 0:
        raise ValueError(f"invalid parameter count {quote_text(text)}: it must be positive")
    return int(value)


def quote_text(text: object, limit: int = 40) -> str:
    """The user's text in quotes, shortened to ``limit`` characters for a one-line message."""
    shown = str(text)
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")
