"""bench/holdout.py, the out-of-sample check of the frozen rule on the sources collected after it.

Oracle: vram.calibration.leave_one_source_out, the site's own validation. Holding out one source
at a time, held_out_checks must give exactly its checks (same ranges, same predictions); holding
out the new sources together, no new source backs another's prediction."""

from __future__ import annotations

import pytest

from bench.holdout import NEW_SOURCES, held_out_checks
from vram.calibration import load_measured_data


@pytest.fixture(scope="module")
def measured():
    return load_measured_data()


@pytest.mark.parametrize("source", ["answerai-fsdp-qlora-2024", "vectorlm-2024", "universal-llm-trainer-2025"])
def test_holding_out_one_source_is_leave_one_source_out(measured, source):
    held = {(c.key, c.predicted, c.measured, c.backing) for c in held_out_checks(measured, (source,))}
    loso = {(c.key, c.predicted, c.measured, c.backing) for c in measured.checks() if c.source == source}
    assert held and held == loso


def test_the_new_sources_are_predicted_from_the_old_ones_alone(measured):
    checks = held_out_checks(measured)
    assert {c.source for c in checks} == set(NEW_SOURCES)
    assert all(not set(c.backing.sources) & set(NEW_SOURCES) for c in checks)
    with pytest.raises(ValueError, match="no source nowhere-2030"):
        held_out_checks(measured, ("nowhere-2030",))
