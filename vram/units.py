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

# ASCII only (re.ASCII): \d and \s would also take "٨" or "８" and odd spaces. The exponent  # noqa: RUF003 (the example)
# is read apart so that a huge one ("1e-99999999999999999") is refused before any arithmetic.
_PARAMS_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)(?:[eE]([+-]?[0-9]+))?\s*([KkMmBbTt]?)\s*", re.ASCII)
_SUFFIX_EXPONENT = {"": 0, "k": 3, "m": 6, "b": 9, "t": 12}
# 10**15 parameters, ~500x the largest published model: anything above is a typo.
MAX_PARAMS = 10**15


def bytes_to_gb(n_bytes: float) -> float:
    """Bytes -> GB (10**9 bytes)."""
    return n_bytes / GB


def bytes_to_gib(n_bytes: float) -> float:
    """Bytes -> GiB (2**30 bytes)."""
    return n_bytes / GIB


def gb_to_bytes(gb: float) -> int:
    """GB (10**9 bytes) -> bytes, rounded to the nearest byte."""
    return round(gb * GB)


def gib_to_bytes(gib: float) -> int:
    """GiB (2**30 bytes) -> bytes, rounded to the nearest byte."""
    return round(gib * GIB)


def ceil_div(numerator: int, denominator: int) -> int:
    """ceil(numerator / denominator) for integers, exactly (no float): whole elements of a
    shard, whole blocks of a quantised tensor, whole bytes of packed bits."""
    return -(-numerator // denominator)


def parse_params(text: str | int) -> int:
    """Parse a parameter count exactly: ``8e9``, ``8B``, ``1.5b``, ``350M``, ``7000000``.

    text: ASCII digits, an optional fraction and exponent, an optional suffix k, M, B or T
    (10^3, 10^6, 10^9, 10^12; either case), spaces around; or an int. The text is read as
    an exact decimal (``decimal.Decimal`` and ``fractions.Fraction``, never a float), so
    ``1.5b`` is exactly 1,500,000,000. Returns an int in 1..``MAX_PARAMS`` (10^15).
    Raises ValueError with a one-line message quoting the input for anything else: not a
    number in that form (``8X``, ``nan``, ``-1``, ``+8e9``, ``8_000``, non-ASCII digits such
    as ``٨e9``), not a whole number of parameters (``0.4``, ``1.5``, ``1e-999999999``), zero,
    or more than ``MAX_PARAMS`` (``1e30``, ``1e400``), all decided before any arithmetic on
    the exponent, so no input is slow.
    """
    return parse_count(text, "parameter count", "parameters", "8e9, 8B or 350M", MAX_PARAMS)


def parse_count(text: str | int, what: str, unit: str, examples: str, maximum: int) -> int:
    """A positive whole count read exactly as ``parse_params`` reads parameters, up to
    ``maximum`` (a power of ten); messages name ``what`` ("token count"), ``unit``
    ("tokens") and ``examples`` ("1e9, 1B or 350M"). Raises ValueError in one line."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise ValueError(f"invalid {what} {quote_text(text)}: write a number such as {examples}")
    too_many = f"implausible {what} {quote_text(text)}: more than 10^{len(str(maximum)) - 1} {unit}"
    if isinstance(text, int):
        if text <= 0:
            raise ValueError(f"invalid {what} {quote_text(text)}: it must be positive")
        if text > maximum:
            raise ValueError(too_many)
        return text
    match = _PARAMS_RE.fullmatch(text)
    if not match:
        raise ValueError(f"invalid {what} {quote_text(text)}: write a number such as {examples}")
    mantissa = Decimal(match.group(1))
    written = match.group(2) or "0"
    if mantissa and len(written.lstrip("+-").lstrip("0")) > 5:  # |exponent| >= 10^5: far outside 1..maximum
        if written.startswith("-"):
            raise ValueError(f"invalid {what} {quote_text(text)}: not a whole number of {unit}")
        raise ValueError(too_many)
    if not mantissa:
        raise ValueError(f"invalid {what} {quote_text(text)}: it must be positive")
    digits = written.lstrip("+-").lstrip("0") or "0"
    exponent = (-1 if written.startswith("-") else 1) * int(digits) + _SUFFIX_EXPONENT[match.group(3).lower()]
    # adjusted(): the power of ten of the leading digit, read without rounding or overflow.
    magnitude = mantissa.adjusted() + exponent
    if magnitude > len(str(maximum)) - 1:
        raise ValueError(too_many)
    if magnitude < 0:
        raise ValueError(f"invalid {what} {quote_text(text)}: not a whole number of {unit}")
    value = Fraction(mantissa) * Fraction(10) ** exponent  # exact: Decimal arithmetic would round
    if value > maximum:
        raise ValueError(too_many)
    if value.denominator != 1:
        raise ValueError(f"invalid {what} {quote_text(text)}: not a whole number of {unit}")
    return int(value)  # > 0: the mantissa is not zero and no sign is accepted


def quote_text(text: object, limit: int = 40) -> str:
    """The user's text in quotes, shortened to ``limit`` characters for a one-line message."""
    try:
        shown = str(text)
    except ValueError:  # an int past Python's 4,300-digit limit for str()
        return f"<an integer of {len(format(text, 'x'))} hex digits>"
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")
