"""The data loaders return the validated models, and the schema is the only check of a file's
shape: code after ``load_model`` checks nothing twice (issue 18, "the hand re-validation").

Each mutation below widens one rule of a schema (hooks/data/schemas.py) and writes data only
the widened schema accepts: a hand re-check behind the schema would still refuse it. The data
reaches the catalogue as written, so the schema, and nothing else, decides.
"""

from __future__ import annotations

import pytest

from hooks.data import schemas
from hooks.data.load import load_model
from hooks.finder.compute import load_catalogue
from tests.hooks.test_schemas import edit


@pytest.mark.parametrize("name", ["gpus", "interconnects", "models", "finder", "verification", "units"])
def test_load_model_returns_the_schema_s_model(name, data_dir):
    assert isinstance(load_model(name, data_dir), schemas.SCHEMAS[name])


class LooseTask(schemas.Task):
    kind: str  # type: ignore[assignment]  # any kind, not only training, lora, serving

    @schemas.model_validator(mode="after")
    def _what_the_kind_needs(self):  # a kind of its own needs nothing
        return self


class LooseLabels(schemas.FinderFile):
    tasks: dict[str, LooseTask]  # type: ignore[assignment]  # looser than the schema on purpose
    labels: dict[str, dict[str, str]]  # any language, any key

    @schemas.model_validator(mode="after")
    def _answers_of_a_task_with_the_same_job(self):  # a task may show any other's answers
        return self


def test_the_catalogue_checks_nothing_the_schema_left_out(data_dir, monkeypatch):
    monkeypatch.setitem(schemas.SCHEMAS, "finder", LooseLabels)
    edit(data_dir / "finder.yaml", "    kind: training\n", "    kind: pretraining\n")
    edit(data_dir / "finder.yaml", "  legend: {it: La tua scelta, fr: Votre choix}", "  legend: {it: La tua scelta}")
    catalogue = load_catalogue(data_dir)
    assert catalogue.tasks["full-adamw"]["kind"] == "pretraining"
    assert catalogue.labels["legend"] == {"it": "La tua scelta"}


class LooseRow(schemas.ShardingRow):
    method: dict[str, str]  # any languages


class LooseSharding(schemas.ShardingFile):
    rows: list[LooseRow]  # type: ignore[assignment]  # looser than the schema on purpose


def test_the_tables_check_nothing_the_schema_left_out(data_dir, monkeypatch):
    """Before: tables.py asked every text for every language again (``text``), after the schema."""
    from hooks.render.tables import sharding_table

    monkeypatch.setitem(schemas.SCHEMAS, "sharding", LooseSharding)
    text = (data_dir / "sharding.yaml").read_text(encoding="utf-8")
    first = next(line for line in text.splitlines() if line.startswith("    method: {it: DDP"))
    edit(data_dir / "sharding.yaml", first, first[: first.index(", fr:")] + "}")
    assert '"Metodo" markdown="span">DDP</td>' in sharding_table(
        {"name": "sharding", "params": "8e9", "world_sizes": "2"}, "it"
    )
