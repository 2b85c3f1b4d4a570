"""The frozen test catalogue: cards, machines, prices and models of its own.

``tests/fixtures/catalogue/`` holds ``gpus.yaml`` and ``models.yaml`` with the ``config.json``
files it names, as the service's catalogue stood when they were copied (the links its cards
name are the real ``interconnects.yaml``'s: cited bandwidths, checked against their sources in
``tests/snippets/test_interconnects.py``).
Tests of pages, rankings, prose placeholders and the finder's behaviour read it instead of
``snippets/data``: a price, a card or a model added to the real catalogue breaks none of
them. The real catalogue's own facts are checked by the oracle tests beside their sources
(``tests/vram/test_cards.py``: nvidia-smi outputs and datasheets) and by the schema when
the site builds.

A data folder for a test (``frozen_data``) is ``snippets/data`` with these files in place of
the catalogue's: the tables and texts that are not the catalogue stay the real ones.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
FROZEN = HERE / "fixtures" / "catalogue"
REAL_DATA = HERE.parent / "snippets" / "data"


def frozen_data(dest: Path) -> Path:
    """Write at ``dest`` a data folder: ``snippets/data`` with the frozen catalogue's files in
    place of the catalogue's (the frozen models' ``config.json`` over the real ones; the configs
    other data name, the published measurements', stay). Returns ``dest``."""
    shutil.copytree(REAL_DATA, dest)
    shutil.copytree(FROZEN, dest, dirs_exist_ok=True)
    _keep_measured_models(dest)
    return dest


def _keep_measured_models(dest: Path) -> None:
    """The published measurements are not the catalogue: a model they name that the real
    ``models.yaml`` lists and the frozen one does not is listed, in ``dest`` only, among the
    measurements' own ``models`` (which the finder does not show), so that they read the same
    configs with either catalogue."""
    path = dest / "measurements.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    known = set(frozen("models")["models"]) | set(data.get("models", {}))
    real = yaml.safe_load((REAL_DATA / "models.yaml").read_text(encoding="utf-8"))["models"]
    missing = sorted({entry["model"] for entry in data["measurements"].values()} - known)
    if missing:
        data.setdefault("models", {}).update({key: real[key] for key in missing if key in real})
        path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def frozen(name: str) -> Any:
    """A file of the frozen catalogue (``gpus``, ``models``), parsed."""
    return yaml.safe_load((FROZEN / f"{name}.yaml").read_text(encoding="utf-8"))


def frozen_usable_bytes(key: str) -> int:
    """What a process can use of card ``key`` in the frozen catalogue: nvidia-smi's memory (its
    source's, ``tests/card_sources.py``) less the frozen catalogue's reserve, in bytes."""
    from tests.card_sources import memory_mib

    return (memory_mib(key) - frozen("gpus")["reserve_mib"]) * 2**20
