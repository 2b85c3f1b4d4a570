"""The sources held out of the calibration (measurements.yaml: a source's ``holdout``, collected
after rule R2 was frozen): predicted, reported in a group of their own, never calibrated on.

Oracles: the YAML file itself, read here with PyYAML (which sources say ``holdout``); the data
with those sources deleted, whose leave-one-source-out must give every other run exactly the
prediction it has now (the held-out runs move nothing); and an independent recomputation of each
held-out run's prediction from the other sources' points through ``class_range`` and
``predicted_span``, with coverage and median width counted by hand."""

from __future__ import annotations

import shutil
import statistics

import pytest
import yaml

from tests.conftest import REPO_ROOT
from vram.calibration import (
    RULES,
    calibration_points,
    class_range,
    group_of,
    load_measured_data,
    predicted_span,
    validation_figures,
)

DATA = REPO_ROOT / "snippets" / "data"


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load((DATA / "measurements.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def held(raw):
    return {key for key, entry in raw["sources"].items() if "holdout" in entry}


@pytest.fixture(scope="module")
def measured():
    return load_measured_data()


# The sources collected after R2 was frozen (091d827) and how many runs each published: three
# Hugging Face Transformers-based or power-limited runs first, then two tuned stacks (NeMo,
# Megatron-LM) whose one-machine and two-machine runs are held out the same way.
HELD_RUNS = {
    "universal-llm-trainer-2025": 10,
    "torchao-mx-b200-2025": 1,
    "dgxc-hf-peft-fsdp-2024": 4,
    "dgxc-nemo-llama31-2024": 2,
    "flagperf-llama3-8b-megatron-2024": 2,
}


def test_the_held_out_sources_are_the_ones_collected_after_r2_was_frozen(raw, held, measured):
    assert held == set(HELD_RUNS)
    assert all(raw["sources"][s]["holdout"].startswith("collected after rule R2 was frozen") for s in held)
    runs = [key for key, entry in raw["measurements"].items() if entry["source"] in held]
    for source, count in HELD_RUNS.items():
        assert sum(raw["measurements"][key]["source"] == source for key in runs) == count, source
    assert {key for key, m in measured.measurements.items() if m.held_out} == set(runs)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_a_held_out_run_is_never_a_calibration_point(measured, held, rule):
    points = calibration_points(measured.points, measured.measurements, measured.link_shares, rule)
    assert points and not {p.source for p in points} & held
    assert not {p.source for p in measured.calibration.points} & held  # what the site and the finder read


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_the_other_groups_are_what_the_data_without_the_held_out_sources_gives(measured, raw, held, rule, tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(DATA, folder)
    without = dict(raw)
    without["sources"] = {k: v for k, v in raw["sources"].items() if k not in held}
    without["measurements"] = {k: v for k, v in raw["measurements"].items() if v["source"] not in held}
    (folder / "measurements.yaml").write_text(yaml.safe_dump(without, allow_unicode=True), encoding="utf-8")
    alone = load_measured_data(folder)
    expected = {(c.key, c.predicted, c.backing) for c in alone.checks(rule)}
    now = {(c.key, c.predicted, c.backing) for c in measured.checks(rule) if c.source not in held}
    assert now == expected
    figures = validation_figures(measured.checks(rule), measured.measurements)
    assert "holdout" not in validation_figures(alone.checks(rule), alone.measurements)
    assert {g: f for g, f in figures.items() if g != "holdout"} == validation_figures(
        alone.checks(rule), alone.measurements
    )


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_the_holdout_group_is_each_run_predicted_from_the_other_sources(measured, held, rule):
    checks = [c for c in measured.checks(rule) if group_of(c, measured.measurements) == "holdout"]
    others = [p for p in measured.points if p.source not in held]
    read = calibration_points(others, measured.measurements, measured.link_shares, rule)
    assert {c.source for c in checks} == held and len(checks) == sum(HELD_RUNS.values())
    for c in checks:
        m = measured.measurements[c.key]
        point = next(p for p in measured.points if p.key == c.key)
        backing = class_range(read, rule.keyed(point).class_key, rule)
        assert c.backing == backing and c.predicted == predicted_span(
            m, measured.cards[m.gpu], measured.configs[m.model], backing
        )
        assert c.measured == m.tokens_per_s_per_gpu
    inside = [c.predicted.low <= c.measured <= c.predicted.high for c in checks]
    found = validation_figures(measured.checks(rule), measured.measurements)["holdout"]
    assert found.runs == len(checks) and found.coverage == sum(inside) / len(checks)
    assert found.median_width == statistics.median(c.predicted.high / c.predicted.low for c in checks)
