"""What every benchmark of ``bench/`` shares: the checkout, the environment its builds run in,
and the table its figures are printed in."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Python's bytecode cache on, as on a maintainer's machine: the plain build's modules (all
# installed packages) have theirs from pip, and with PYTHONDONTWRITEBYTECODE set (some
# sandboxes do) only this checkout's modules would be compiled again on every build.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"} | {
    "NO_MKDOCS_2_WARNING": "1"
}


def render(rows: list[tuple[str, str, str, str]], markdown: bool) -> str:
    """``rows`` (measure, figure, budget, verdict) as a Markdown table, or aligned text."""
    header = ("Measure", "Figure", "Budget", "")
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|---|---:|---:|---|"]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    fmt = "  ".join(f"{{:{'<' if i in (0, 3) else '>'}{w}}}" for i, w in enumerate(widths))
    return "\n".join(fmt.format(*r) for r in [header, *rows])
