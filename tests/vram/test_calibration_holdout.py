"""The sources held out of a rule's calibration (measurements.yaml: a source's ``holdout`` and
``collected_after``: collected after that rule was frozen): predicted, reported in a group of
their own, never calibrated on by that rule or an earlier one; a later rule reads them.

Oracles: the YAML file itself, read here with PyYAML (which sources say ``holdout``), the order
in which the rules were frozen (the project's history, typed below); the data
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
    LOOP_RULE,
    RULE,
    RULES,
    calibration_points,
    class_range,
    group_of,
    load_measured_data,
    predicted_span,
    validation_figures,
)

DATA = REPO_ROOT / "snippets" / "data"
FROZEN = ("R0", "R1", "R2", "R3")  # the rules in the order they were committed (bench/results.md's history)


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load((DATA / "measurements.yaml").read_text(encoding="utf-8"))


def held_from(rule_name: str) -> set[str]:
    """The sources ``rule_name`` never reads: collected after it, or after a later rule, was frozen."""
    return {s for s, (after, _) in HELD_RUNS.items() if FROZEN.index(rule_name) <= FROZEN.index(after)}


@pytest.fixture(scope="module")
def measured():
    return load_measured_data()


# The sources collected after a rule was frozen, that rule, and how many runs each published:
# after R2 (091d827), three Hugging Face Transformers-based or power-limited sources first, then
# two tuned stacks (NeMo, Megatron-LM) whose one-machine and two-machine runs are held out the
# same way; after R3 (05f7f82), three transformers-code sources and three own-code ones.
HELD_RUNS = {
    "universal-llm-trainer-2025": ("R2", 10),
    "torchao-mx-b200-2025": ("R2", 1),
    "dgxc-hf-peft-fsdp-2024": ("R2", 4),
    "dgxc-nemo-llama31-2024": ("R2", 2),
    "flagperf-llama3-8b-megatron-2024": ("R2", 2),
    "fms-acceleration-a100-2025": ("R3", 13),
    "optimum-benchmark-llamas-2023": ("R3", 15),
    "optimum-benchmark-llamas-2023-08": ("R3", 4),
    "torchao-float8-h100-2025": ("R3", 1),
    "olmo-core-h100-2025": ("R3", 2),
    "torchtune-flags-a100-2024": ("R3", 5),
}
HOLDING = [rule for rule in RULES if held_from(rule.name)]  # the rules that have a held-out set


def test_the_rules_are_named_in_the_order_they_were_frozen():
    assert tuple(rule.name for rule in RULES) == FROZEN


def test_the_held_out_sources_are_the_ones_collected_after_a_rule_was_frozen(raw, measured):
    held = {key: entry for key, entry in raw["sources"].items() if "holdout" in entry}
    assert {key: entry["collected_after"] for key, entry in held.items()} == {
        s: after for s, (after, _) in HELD_RUNS.items()
    }
    for key, entry in held.items():
        assert entry["holdout"].startswith(f"collected after rule {entry['collected_after']} was frozen"), key
    for source, (_, count) in HELD_RUNS.items():
        assert sum(entry["source"] == source for entry in raw["measurements"].values()) == count, source
    site = {key for key, m in measured.measurements.items() if m.source in held_from(RULE.name)}
    assert {c.key for c in measured.checks() if c.held_out} == site


@pytest.mark.parametrize("rule", HOLDING, ids=lambda r: r.name)
def test_a_held_out_run_is_never_a_calibration_point(measured, rule):
    held = held_from(rule.name)
    points = calibration_points(measured.points, measured.measurements, measured.link_shares, rule)
    assert points and not {p.source for p in points} & held
    assert not {p.source for p in measured.calibration.points} & held_from(RULE.name)  # what the site reads


def test_r3_reads_the_sources_collected_after_r2(measured):
    read = {
        p.source for p in calibration_points(measured.points, measured.measurements, measured.link_shares, LOOP_RULE)
    }
    assert held_from("R2") - held_from("R3") <= read and held_from("R2") - held_from("R3")


@pytest.mark.parametrize("rule", HOLDING, ids=lambda r: r.name)
def test_the_other_groups_are_what_the_data_without_the_held_out_sources_gives(measured, raw, rule, tmp_path):
    held = held_from(rule.name)
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


@pytest.mark.parametrize("rule", HOLDING, ids=lambda r: r.name)
def test_the_holdout_group_is_each_run_predicted_from_the_other_sources(measured, rule):
    held = held_from(rule.name)
    checks = [c for c in measured.checks(rule) if group_of(c, measured.measurements) == "holdout"]
    others = [p for p in measured.points if p.source not in held]
    read = calibration_points(others, measured.measurements, measured.link_shares, rule)
    assert {c.source for c in checks} == held and len(checks) == sum(HELD_RUNS[s][1] for s in held)
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
