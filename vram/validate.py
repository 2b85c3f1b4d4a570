"""Argument checks shared by the calculator's modules: one-line ValueErrors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

V = TypeVar("V")


def check_int(value: int, name: str, minimum: int) -> int:
    """Return ``value`` if it is an int (not a bool) >= ``minimum``, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def check_params(params: int) -> int:
    """Return ``params`` if it is a positive int (a parameter count), else raise ValueError."""
    if isinstance(params, bool) or not isinstance(params, int) or params <= 0:
        raise ValueError(f"params must be a positive integer, got {params!r}")
    return params


def lookup(table: Mapping[str, V], key: str, what: str) -> V:
    """``table[key]``, or a ValueError "unknown WHAT 'key'; known: ..." listing the keys."""
    try:
        return table[key]
    except (KeyError, TypeError):
        raise ValueError(f"unknown {what} {key!r}; known: {', '.join(table)}") from None
