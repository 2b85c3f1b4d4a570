"""What a run costs on a machine billed per minute with a 15-minute minimum.

The guide's billing (docs/index.*.md, "Noleggiare una macchina" / "Louer une machine"):
a machine's price is per hour for the whole machine; it is billed per started minute, and
a server stopped early still pays 15 minutes. So a run of t seconds costs
max(15, ceil(t / 60)) minutes x price / 60, computed exactly (``fractions.Fraction``) and
rounded to the cent at the end (half up). 10 minutes on 8 x H100 at 31.20 EUR/h: 15 x 0.52
= 7.80 EUR; every minute after the 15th adds 0.52 EUR.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from .units import quote_text

MINIMUM_MINUTES = 15
MAX_PRICE_EUR_PER_HOUR = 10_000  # far above any machine of 8 GPUs; above it, a typo
_PRICE_RE = re.compile(r"\s*([0-9]{1,20}(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,3})?)\s*", re.ASCII)
CENT = Decimal("0.01")
# "1.200": one to three digits (not a leading 0), a point, exactly three digits. Italian (and many French readers)
# write thousands so; the calculator's point is a decimal point: 1.2 or 1200 EUR/h?
_AMBIGUOUS_RE = re.compile(r"\s*([1-9][0-9]{0,2})\.([0-9]{3})\s*", re.ASCII)


class AmbiguousPrice(ValueError):
    """A price written ``1.200``: a decimal point or a thousands separator. ``decimal`` and
    ``thousands`` are its two readings (``"1.2"``, ``"1200"``), ``got`` the text as given."""

    def __init__(self, field: str, got: str) -> None:
        whole, three = _AMBIGUOUS_RE.fullmatch(got).groups()  # type: ignore[union-attr]
        self.got = got.strip()
        self.decimal = f"{whole}.{three.rstrip('0')}".rstrip(".")
        self.thousands = str(int(whole + three))
        super().__init__(
            f"{field} {quote_text(self.got)} is ambiguous: a point followed by three digits also separates "
            f"thousands; write {self.decimal} or {self.thousands}"
        )


def parse_price(text: str | float | Decimal, field: str = "price_eur_per_hour") -> Decimal:
    """A price in euros per hour written as digits with an optional decimal point (``31.20``).

    Returns it exactly as a Decimal in (0, ``MAX_PRICE_EUR_PER_HOUR``]. Raises ValueError in one
    line naming ``field`` for anything else: not a number (``abc``, ``31,20``, ``-1``, ``nan``),
    zero, less than a cent or more than 10,000 EUR/h (``1e-9``, ``1e9``, ``1000000000``); and
    ``AmbiguousPrice`` (a ValueError) for a text of one to three digits (no leading 0), a point and
    exactly three digits (``1.200``: 1.2 or, as Italian writes thousands, 1200). An exponent has at most three
    digits, so no input is slow.
    """
    if isinstance(text, bool):
        raise ValueError(f"{field} must be a number of euros per hour such as 31.20, got {quote_text(text)}")
    if isinstance(text, (int, float, Decimal)):
        shown = str(text)
        if not (isinstance(text, int) or math.isfinite(text)):
            raise ValueError(f"{field} must be a number of euros per hour such as 31.20, got {quote_text(text)}")
        value = Decimal(shown) if not isinstance(text, Decimal) else text
    else:
        if isinstance(text, str) and _AMBIGUOUS_RE.fullmatch(text):
            raise AmbiguousPrice(field, text)
        match = _PRICE_RE.fullmatch(text) if isinstance(text, str) else None
        if not match:
            raise ValueError(f"{field} must be a number of euros per hour such as 31.20, got {quote_text(text)}")
        value = Decimal(match.group(1))
    if value <= 0:
        raise ValueError(f"{field} must be more than 0 euros per hour, got {quote_text(text)}")
    if value < CENT:
        raise ValueError(f"{field} {quote_text(text)} is implausible: less than one cent per hour")
    if value > MAX_PRICE_EUR_PER_HOUR:
        raise ValueError(
            f"{field} {quote_text(text)} is implausible: more than {MAX_PRICE_EUR_PER_HOUR:,} euros per hour"
        )
    return value


def billed_minutes(seconds: float) -> int:
    """Minutes billed for a run of ``seconds``: every started minute, at least 15.
    Raises ValueError for a negative or non-finite time."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
        raise ValueError(f"seconds must be a finite time >= 0, got {seconds!r}")
    return max(MINIMUM_MINUTES, math.ceil(seconds / 60))


def price_per_minute(price_eur_per_hour: Decimal | str) -> Fraction:
    """Euros per minute, exactly (31.20 EUR/h -> 0.52)."""
    return Fraction(parse_price(price_eur_per_hour)) / 60


def run_cost_eur(seconds: float, price_eur_per_hour: Decimal | str) -> Decimal:
    """Euros a run of ``seconds`` costs: ``billed_minutes`` x price per minute, rounded to the
    cent (half up). Raises ValueError as ``billed_minutes`` and ``parse_price`` do."""
    exact = billed_minutes(seconds) * price_per_minute(price_eur_per_hour)
    return (Decimal(exact.numerator) / Decimal(exact.denominator)).quantize(CENT, rounding=ROUND_HALF_UP)
