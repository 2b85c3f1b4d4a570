"""What every command of ``python -m vram`` shares: one-line errors (exit 2), argument types
that quote what the user typed, and sizes printed in both units."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ..units import bytes_to_gb, bytes_to_gib, parse_params, quote_text

EXIT_BAD_INPUT = 2


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (no usage block) and exits 2."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]  # "vram estimate" -> "estimate"
        fail(f"{command}: {message}" if command else message)


def fail(message: str) -> NoReturn:
    """Print ``vram: error: MESSAGE`` on one line of stderr and exit ``EXIT_BAD_INPUT``."""
    print(f"vram: error: {' '.join(str(message).split())}", file=sys.stderr)
    raise SystemExit(EXIT_BAD_INPUT)


def size_text(n_bytes: int) -> str:
    """'32.00 GB (29.80 GiB)': both units, always labelled."""
    return f"{bytes_to_gb(n_bytes):.2f} GB ({bytes_to_gib(n_bytes):.2f} GiB)"


def size_rows(rows: Sequence[tuple[str, int]]) -> list[str]:
    """One aligned line per (label, bytes): GB (10^9 bytes) and GiB (2^30 bytes)."""
    width = max(len(label) for label, _ in rows)
    return [f"  {label:<{width}}  {bytes_to_gb(b):10.2f} GB  {bytes_to_gib(b):10.2f} GiB" for label, b in rows]


def emit(args: argparse.Namespace, data: dict[str, Any], lines: list[str]) -> None:
    """``data`` as indented JSON under ``--json``, else ``lines``."""
    print(json.dumps(data, indent=2) if args.json else "\n".join(lines))


def whole(name: str, minimum: int, maximum: int) -> Callable[[str], int]:
    """argparse type: an integer written in ASCII digits, ``minimum..maximum``, else one line
    quoting the user's text (no float, no fraction, no '1e3', no '1_000')."""

    def parse(text: str) -> int:
        stripped = text.strip()
        if (
            not (stripped.isascii() and stripped.isdigit())
            or len(stripped) > 20
            or not minimum <= int(stripped) <= maximum
        ):
            raise argparse.ArgumentTypeError(
                f"{name} must be an integer from {minimum:,} to {maximum:,}, got {quote_text(text)}"
            )
        return int(stripped)

    return parse


def integer_text(name: str) -> Callable[[str], int]:
    """argparse type: ASCII digits (any size; ``vram.job`` checks the range and says it)."""

    def parse(text: str) -> int:
        stripped = text.strip()
        if not (stripped.isascii() and stripped.isdigit()) or len(stripped) > 20:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {quote_text(text)}")
        return int(stripped)

    return parse


def decimal_text(name: str) -> Callable[[str], float]:
    """argparse type: a plain decimal such as 0.9 (no exponent, no nan/inf)."""

    def parse(text: str) -> float:
        stripped = text.strip()
        whole_part, _, fraction = stripped.partition(".")
        if (
            not stripped.isascii()
            or not (whole_part or fraction)
            or not (whole_part + fraction).isdigit()
            or len(stripped) > 20
        ):
            raise argparse.ArgumentTypeError(f"{name} must be a decimal number such as 0.9, got {quote_text(text)}")
        return float(stripped)

    return parse


def param_count(text: str) -> int:
    """argparse type: a parameter count (8e9, 8B, 350M: ``vram.units.parse_params``)."""
    try:
        return parse_params(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
