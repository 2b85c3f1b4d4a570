"""The published measurements (``snippets/data/measurements.yaml``) resolved against the catalogue.

``measured_data()`` reads the file (its schema first, ``MeasurementsFile``), the catalogue's
cards (``gpus.yaml``, ``interconnects.yaml``) and the configs of every measured model
(``models.yaml`` and the file's own ``models``, in ``snippets/data/models/``), and hands them
to ``vram.calibration.measured_data``: the same code the command line runs. What only the
files together can say (a card no catalogue has, a run implying 90 % of the peak without
being marked excluded) is one RenderError naming the file, the entry and the key. Kept while
nothing under the data folder changes.
"""

from __future__ import annotations

from pathlib import Path

import vram
from hooks.cache import Memo, tree_stamp
from hooks.data import load as data_module
from hooks.data.load import load_model, load_yaml
from hooks.errors import RenderError
from vram.calibration import MeasuredData, measured_data as resolve
from vram.catalogue import cards_from_data

MEASUREMENTS_YAML = "snippets/data/measurements.yaml"
_memo = Memo()


def measured_data(data_dir: Path | None = None) -> MeasuredData:
    """The measurements, their cards, models and calibration points. Raises RenderError."""
    folder = data_dir or data_module.DATA_DIR
    return _memo.get(folder, tree_stamp(folder), lambda: _read(folder))


def _read(folder: Path) -> MeasuredData:
    data = load_yaml("measurements", folder)
    entries = {**load_model("models", folder).models, **load_model("measurements", folder).models}
    configs = {}
    for key in sorted({entry["model"] for entry in data["measurements"].values()} & set(entries)):
        path = folder / "models" / entries[key].config
        try:
            configs[key] = vram.load_model_config(path)
        except (OSError, ValueError) as exc:
            raise RenderError(f"{MEASUREMENTS_YAML}: models.{key}.config: {exc}") from None
    interconnects = load_yaml("interconnects", folder)
    try:
        catalogue = cards_from_data(load_yaml("gpus", folder), interconnects)
        return resolve(data, catalogue, interconnects, configs)
    except ValueError as exc:
        raise RenderError(f"{MEASUREMENTS_YAML}: {exc}") from None


_figures_memo = Memo()


def validation(data_dir: Path | None = None, rule_name: str | None = None) -> tuple[list, dict]:
    """``(checks, figures)``: every run predicted without its source
    (``vram.calibration.leave_one_source_out``) under the rule named ``rule_name`` (default: the
    site's, ``vram.calibration.RULE``) and the coverage and median width per group
    (``validation_figures``). Kept while nothing under the data folder changes. Raises
    RenderError for an unknown rule."""
    from vram.calibration import RULE, RULES, validation_figures

    folder = data_dir or data_module.DATA_DIR
    rules = {rule.name: rule for rule in RULES}
    name = rule_name or RULE.name
    if name not in rules:
        raise RenderError(f"rule={name} is not one of {', '.join(rules)}")

    def compute() -> tuple[list, dict]:
        measured = measured_data(folder)
        checks = measured.checks(rules[name])
        return checks, validation_figures(checks, measured.measurements)

    return _figures_memo.get((folder, name), tree_stamp(folder), compute)
