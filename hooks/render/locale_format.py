"""Numbers, byte sizes, ranges and prices in the reader's locale (Babel).

Numbers use Babel's CLDR data (``it``: ``1,7``, ``1.234``; ``fr``: ``1,7``, ``1 234``).
Unit labels and the range pattern come from ``snippets/data/units.yaml`` (it ``GB``,
fr ``Go``), joined to the number with a no-break space.
"""

from __future__ import annotations

from babel.numbers import format_currency, format_decimal

from hooks.data.load import load_model
from hooks.errors import RenderError

NBSP = "\u00a0"


def format_number(value: float, lang: str, decimals: int = 2) -> str:
    """``value`` with at most ``decimals`` decimals, in ``lang``'s format."""
    pattern = "#,##0" + ("." + "#" * decimals if decimals > 0 else "")
    return format_decimal(value, format=pattern, locale=lang)


def unit_label(unit: str, lang: str) -> str:
    """The label of ``unit`` (``gb``, ``gib``, ``gb_per_s`` ...) in ``lang``."""
    labels = load_model("units").labels  # each in every language: hooks.data.schemas.UnitsFile
    if unit not in labels:
        raise RenderError(f"snippets/data/units.yaml: unknown unit {unit!r}")
    return labels[unit][lang]


def format_quantity(value: float, unit: str, lang: str, decimals: int = 2) -> str:
    """``128 GB`` / ``128 Go``: number and unit label joined by a no-break space."""
    return f"{format_number(value, lang, decimals)}{NBSP}{unit_label(unit, lang)}"


def format_range(low: float, high: float, unit: str, lang: str, decimals: int = 2) -> str:
    """``35–50 GB`` (it) / ``35 à 50 Go`` (fr); a single value when low == high."""
    if low == high:
        return format_quantity(low, unit, lang, decimals)
    pattern = load_model("units").range[lang]
    span = pattern.format(low=format_number(low, lang, decimals), high=format_number(high, lang, decimals))
    return f"{span}{NBSP}{unit_label(unit, lang)}"


def format_eur(amount: float, lang: str) -> str:
    """A price in euros, ``2,36 €`` in both locales."""
    return format_currency(amount, "EUR", locale=lang)
