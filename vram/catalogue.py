"""The cards, links and priced machines the time model needs, as plain values.

Read from the data the guide publishes (``snippets/data/gpus.yaml`` and
``interconnects.yaml``, validated by ``hooks/data/schemas.py`` when the site builds), passed in as
mappings: ``cards_from_data`` and ``machines_from_data`` are pure standard library, so the
finder in the browser gives them the same data the build and the CLI give. ``load_catalogue``
reads the YAML files (PyYAML, imported only there) for the command line.

Units in names: ``*_tflops`` = 10^12 FLOP/s, ``*_gb_per_s`` = 10^9 bytes/s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "snippets" / "data"


@dataclass(frozen=True)
class Bandwidth:
    """A link's bandwidth per direction in GB/s (10^9 bytes/s), as a range [low, high]:
    the figure nccl-tests' busbw is compared with (``interconnects.yaml``)."""

    key: str
    low_gb_per_s: float
    high_gb_per_s: float
    peer_to_peer: bool = True  # False: the path through host memory (GeForce cards)

    def __post_init__(self) -> None:
        for name in ("low_gb_per_s", "high_gb_per_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ValueError(f"{self.key}: {name} must be a positive number of GB/s, got {value!r}")
        if self.low_gb_per_s > self.high_gb_per_s:
            raise ValueError(f"{self.key}: bandwidth [low, high] got [{self.low_gb_per_s:g}, {self.high_gb_per_s:g}]")


@dataclass(frozen=True)
class Card:
    """One card's speeds: dense BF16 peak and memory bandwidth (vendor datasheet), the link
    between cards of one machine (``peer``) and the card's PCIe link to host memory (``host``)."""

    key: str
    name: str
    bf16_dense_tflops: float
    memory_bandwidth_gb_per_s: float
    peer: Bandwidth
    host: Bandwidth
    datasheet: str = ""


@dataclass(frozen=True)
class Machine:
    """A machine whose hourly price the guide gives (``gpus.yaml`` machines, "from" prices)."""

    key: str
    gpu: str
    count: int
    price_eur_per_hour: Decimal


def links_from_data(interconnects: Mapping[str, Any]) -> dict[str, Bandwidth]:
    """Every link of ``interconnects.yaml`` by key: its rows and its ``without_p2p`` paths."""
    links = {row["key"]: Bandwidth(row["key"], *row["bandwidth_gb_per_s"]) for row in interconnects["rows"]}
    for path in interconnects.get("without_p2p", []):
        low, high = path["bandwidth_gb_per_s"]
        links[path["key"]] = Bandwidth(path["key"], low, high, peer_to_peer=False)
    return links


def cards_from_data(gpus: Mapping[str, Any], interconnects: Mapping[str, Any]) -> dict[str, Card]:
    """The cards of ``gpus.yaml`` with their links resolved. Raises ValueError naming the
    card and key when ``peer_link`` or ``host_link`` is not a key of ``interconnects.yaml``."""
    links = links_from_data(interconnects)
    cards = {}
    for key, card in gpus["gpus"].items():
        resolved = {}
        for field in ("peer_link", "host_link"):
            link = card[field]
            if link not in links:
                raise ValueError(
                    f"gpus.yaml: gpus.{key}.{field}: {link!r} is not a key of interconnects.yaml "
                    f"(known: {', '.join(links)})"
                )
            resolved[field] = links[link]
        if not resolved["host_link"].peer_to_peer:
            raise ValueError(
                f"gpus.yaml: gpus.{key}.host_link: {card['host_link']!r} is a path between cards, "
                "not a PCIe link to host memory"
            )
        cards[key] = Card(
            key,
            card["name"],
            card["bf16_dense_tflops"],
            card["memory_bandwidth_gb_per_s"],
            resolved["peer_link"],
            resolved["host_link"],
            card.get("datasheet", ""),
        )
    return cards


def card_speed(card: Card) -> dict[str, Any]:
    """A card's speeds as the ``speed`` of a ``vram.job`` card entry (plain JSON types)."""
    return {
        "bf16_dense_tflops": card.bf16_dense_tflops,
        "memory_bandwidth_gb_per_s": card.memory_bandwidth_gb_per_s,
        "peer_gb_per_s": [card.peer.low_gb_per_s, card.peer.high_gb_per_s],
        "peer_to_peer": card.peer.peer_to_peer,
        "host_gb_per_s": [card.host.low_gb_per_s, card.host.high_gb_per_s],
    }


def machines_from_data(gpus: Mapping[str, Any]) -> dict[str, Machine]:
    """The machines with a price in ``gpus.yaml`` (the price as the file writes it, exactly)."""
    return {
        key: Machine(key, m["gpu"], m["count"], Decimal(str(m["price_eur_per_hour_from"])))
        for key, m in gpus["machines"].items()
    }


@dataclass(frozen=True)
class GuideCatalogue:
    """The catalogue as the command line reads it: the cards' speeds, the priced machines, each
    card's memory as nvidia-smi reports it (``memory_mib``, MiB = 2^20 bytes) and the reserve
    taken from every card (``reserve_mib``: the CUDA context and NCCL buffers, ``vram.fit``)."""

    cards: dict[str, Card]
    machines: dict[str, Machine]
    memory_mib: dict[str, int]
    reserve_mib: int


def load_catalogue(data_dir: str | Path | None = None) -> tuple[dict[str, Card], dict[str, Machine]]:
    """Cards and priced machines from ``data_dir`` (default: this repository's snippets/data):
    ``read_catalogue``'s ``cards`` and ``machines``. Raises ValueError as it does."""
    catalogue = read_catalogue(data_dir)
    return catalogue.cards, catalogue.machines


def read_catalogue(data_dir: str | Path | None = None) -> GuideCatalogue:
    """The ``GuideCatalogue`` of ``data_dir`` (default: this repository's snippets/data).

    Raises ValueError in one line for a missing or unreadable file (PyYAML reads it; the
    full schema is checked by the site's build, ``hooks/data/schemas.py``).
    """
    import yaml  # the command line only: the calculator itself is standard library

    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    data = {}
    for name in ("gpus", "interconnects"):
        path = folder / f"{name}.yaml"
        try:
            data[name] = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"cannot read the catalogue {path}: {' '.join(str(exc).split())}") from None
    try:
        gpus = data["gpus"]
        return GuideCatalogue(
            cards_from_data(gpus, data["interconnects"]),
            machines_from_data(gpus),
            {key: card["memory_mib"] for key, card in gpus["gpus"].items()},
            gpus["reserve_mib"],
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"the catalogue in {folder} lacks {exc}") from None
