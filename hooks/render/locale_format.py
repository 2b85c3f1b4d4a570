"""Numbers, byte sizes, ranges and prices in the reader's locale (Babel).

Numbers use Babel's CLDR data (``it``: ``1,7``, ``1.234``; ``fr``: ``1,7``, ``1 234``).
Unit labels and the range pattern come from ``snippets/data/units.yaml`` (it ``GB``,
fr ``Go``), joined to the number with a no-break space.
"""

from __future__ import annotations

import functools
from decimal import Decimal

from babel import Locale
from babel.numbers import format_currency, format_decimal

from hooks.data.load import load_model
from hooks.errors import RenderError

NBSP = "\u00a0"


@functools.cache  # Babel parses a locale's name and loads its data again for every call given a name
def _locale(lang: str) -> Locale:
    return Locale.parse(lang)


def format_number(value: float, lang: str, decimals: int = 2) -> str:
    """``value`` with at most ``decimals`` decimals, in ``lang``'s format."""
    pattern = "#,##0" + ("." + "#" * decimals if decimals > 0 else "")
    return format_decimal(value, format=pattern, locale=_locale(lang))


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


def format_duration_parts(parts: list[list], lang: str, space: str = NBSP) -> str:
    """One duration as ``vram.timing.shown_duration`` rounds it (``[[unit, number], ...]``):
    ``4,3 h``, ``45 min``, ``3 giorni e 5 h`` / ``3 jours et 5 h`` (units.yaml's ``days_hours``),
    each number and unit joined by ``space``."""
    shown = [f"{format_number(value, lang, 1)}{space}{unit_label(unit, lang)}" for unit, value in parts]
    if len(shown) == 1:
        return shown[0]
    return load_model("units").days_hours[lang].format(days=shown[0], hours=shown[1])


def format_duration_range(low: list[list], high: list[list], lang: str, space: str = NBSP) -> str:
    """A duration's [low, high] as ``shown_duration`` rounds each end: one unit after the range
    when both ends are one number of the same unit (``4,3–6,2 h``), else each end whole
    (units.yaml's ``range_words``: ``da 6 giorni a 8 giorni e 10 h``); one end when both read alike."""
    units = load_model("units")  # every text in every language: hooks.data.schemas.UnitsFile
    if len(low) == len(high) == 1 and low[0][0] == high[0][0]:
        numbers = format_number(low[0][1], lang, 1), format_number(high[0][1], lang, 1)
        span = numbers[0] if numbers[0] == numbers[1] else units.range[lang].format(low=numbers[0], high=numbers[1])
        return f"{span}{space}{unit_label(low[0][0], lang)}"
    low_text, high_text = format_duration_parts(low, lang, space), format_duration_parts(high, lang, space)
    if low_text == high_text:
        return low_text
    return units.range_words[lang].format(low=low_text, high=high_text)


def format_eur(amount: float | Decimal, lang: str) -> str:
    """A price in euros, ``2,36 €`` in both locales."""
    return format_currency(amount, "EUR", locale=_locale(lang))
