"""An out-of-sample check of the site's rule (vram.calibration.RULE, R2, frozen at 091d827):
every run of the sources collected after the rule was frozen (``NEW_SOURCES``) predicted from a
calibration of the other sources only, the ones the rule was written and validated on. Unlike
leave-one-source-out (bench/calibration.py), no new source helps predict another: the dispersion
and the class centres come from the old sources alone.

The same library as the site: ``calibration_points`` (the runs the rule reads), ``class_range``
(the class's range, relaxed where the old data has no run of that class), ``predicted_span``
(the time model's tokens/s at that range) and ``Check`` (covered, width). Figures, not a gate.

    python -m bench.holdout   # one line per new run, then coverage and median width per group
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from vram.calibration import (  # noqa: E402
    RULE,
    Check,
    MeasuredData,
    Rule,
    calibration_points,
    class_range,
    load_measured_data,
    predicted_span,
    validation_figures,
)

# The sources added after R2 was frozen (snippets/data/measurements.yaml, sources); every other
# source is the data R2 was written and validated on.
NEW_SOURCES = ("universal-llm-trainer-2025", "torchao-mx-b200-2025", "dgxc-hf-peft-fsdp-2024")


def held_out_checks(measured: MeasuredData, held: tuple[str, ...] = NEW_SOURCES, rule: Rule = RULE) -> list[Check]:
    """Every non-excluded run of the ``held`` sources predicted from the calibration points of
    the other sources alone (``calibration_points`` under ``rule``), scale checks included and
    flagged. Raises ValueError when a held source is not in the data."""
    present = {m.source for m in measured.measurements.values()}
    missing = [source for source in held if source not in present]
    if missing:
        raise ValueError(f"measurements.yaml has no source {', '.join(missing)}")
    calibrating = calibration_points(measured.points, measured.measurements, measured.link_shares, rule)
    old = tuple(p for p in calibrating if p.source not in held)
    checks = []
    for point in measured.points:
        m = measured.measurements[point.key]
        if m.source not in held or m.excluded:
            continue
        backing = class_range(old, rule.keyed(point).class_key, rule)
        if backing is None:
            continue
        predicted = predicted_span(m, measured.cards[m.gpu], measured.configs[m.model], backing)
        checks.append(Check(m.key, m.source, m.gpu, m.tokens_per_s_per_gpu, predicted, backing, m.scale_check))
    return checks


def main() -> int:
    measured = load_measured_data()
    checks = held_out_checks(measured)
    print(
        f"R{RULE.name[1:]} calibrated on {len({p.source for p in measured.points} - set(NEW_SOURCES))} old sources; "
        f"{len(checks)} runs of {len(NEW_SOURCES)} new sources, tokens/s per GPU:"
    )
    for c in checks:
        used = "/".join(c.backing.used) + ("" if c.backing.exact else f" (relaxed {c.backing.level})")
        print(
            f"  {c.key:38s} measured {c.measured:8.1f}  predicted {c.predicted.low:8.1f} to {c.predicted.high:8.1f}  "
            f"{'covered' if c.covered else 'MISSED '}  width {c.width:.2f}x  class {used}"
            f"{'  [scale check]' if c.scale_check else ''}"
        )
    for group, f in validation_figures(checks, measured.measurements).items():
        print(f"{group}: {f.runs} runs, coverage {f.coverage:.0%}, median width {f.median_width:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
