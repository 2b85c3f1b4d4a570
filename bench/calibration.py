"""How good the time estimates are: every published run of snippets/data/measurements.yaml
predicted by a calibration that never saw its source (vram.calibration.leave_one_source_out),
coverage and median width per group, against the targets (coverage >= 80 % with a median
width <= 1.5x). Figures, not a gate: the dataset decides them, and ``make bench`` reports them
without failing on them.

    python -m bench.calibration   # these rows alone, also written into bench/results.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.common import render  # noqa: E402
from vram.calibration import COVERAGE_TARGET, WIDTH_TARGET, load_measured_data, validation_figures  # noqa: E402

LABELS = {
    "training": "Time estimates against published training runs on one machine, leave-one-source-out",
    "serving": "Decoding range against published decoding runs, leave-one-source-out",
    "scale": "Scale checks: runs over several machines, predicted with the one-machine model",
}
SECTION = "## Time estimates against published runs"


def figures() -> dict:
    """The validation figures per group (``vram.calibration.Figures``)."""
    measured = load_measured_data()
    return validation_figures(measured.checks(), measured.measurements)


def rows(found: dict | None = None) -> list[tuple[str, str, str, str]]:
    """Table rows like bench/run.py's: (measure, figure, target, verdict: "met" or "missed")."""
    found = figures() if found is None else found
    target = f">= {COVERAGE_TARGET:.0%} with <= {WIDTH_TARGET}x"
    return [(f"{LABELS[group]} ({f.runs} runs): coverage, median width (high / low)",
             f"{f.coverage:.0%}, {f.median_width:.2f}x", target, "met" if f.meets_targets else "missed")
            for group, f in found.items()]


def write_section(path: Path, table: str) -> None:
    """Put ``table`` under ``SECTION`` in ``path`` (replacing what was there)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else "# Performance budget\n"
    block = (f"{SECTION}\n\n`python -m bench.calibration` (also printed by `make bench`). Not a gate: the targets "
             "are the issue's, the figures what the published measurements give.\n\n" + table + "\n")
    if SECTION in text:
        text = re.sub(rf"{re.escape(SECTION)}\n.*?(?=\n## |\Z)", block.rstrip("\n") + "\n", text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text, encoding="utf-8")


def main() -> int:
    found = rows()
    print(render(found, markdown=False))
    write_section(REPO / "bench" / "results.md", render(found, markdown=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
