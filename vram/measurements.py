"""Published throughput measurements as plain values, and what each implies in the time model's terms.

The data is ``snippets/data/measurements.yaml`` (its schema, ``MeasurementsFile`` in
``hooks/data/schemas.py``, checks it when the site builds). Like the catalogue
(``vram.catalogue``), it is handed in as a mapping: ``measurements_from_data`` and everything
here is pure standard library, so the build, the command line and the browser compute the same.

What a measurement implies (``implied_share``), in the calculator's own conventions:

- **training** (``full``, ``lora``, ``qlora``): the utilisation of the card's dense BF16 peak,
  measured tokens/s per GPU x FLOPs per token / peak. FLOPs per token as ``vram.timing`` counts
  them: full training ``flops_per_token`` x the recomputation factor (full recomputation runs the
  forward twice, x 4/3); LoRA and QLoRA the low end of ``lora_flops_per_token`` (4 FLOPs per
  frozen parameter, 6 per adapter parameter). This is the model FLOPs utilisation (MFU) sources
  quote, in one FLOPs count for every source (theirs differ: torchtitan's, Megatron's, PaLM's).
- **serving**: the share of the memory-bandwidth roofline (``vram.timing.decode_bound``) the run
  reached, per sequence (``per: sequence``) or for all sequences (``per: machine``; ``per: gpu``
  is a machine's figure divided by its GPUs, as TensorRT-LLM's tables print it, and is multiplied
  back: ``Measurement.decoding_tokens_per_s``).

Decoding runs name their ``engine`` (``ENGINES``): a server, built to decode many requests at once
with a paged KV cache (vLLM, SGLang, TensorRT-LLM, LMDeploy, TGI: what the finder's serving job
runs), or a local engine for one user (llama.cpp, MLC LLM, ExLlamaV2).

Units in names: ``_s`` seconds, ``tokens_per_s`` tokens per second.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .catalogue import Card, links_from_data
from .lora import lora_adapter_params
from .models import ModelConfig, count_params
from .timing import RECOMPUTE_FACTOR, TERA, decode_bound, flops_per_token, lora_flops_per_token

SERVER, LOCAL = "server", "local"
ENGINES = {
    "vllm": SERVER,
    "sglang": SERVER,
    "tensorrt-llm": SERVER,
    "lmdeploy": SERVER,
    "tgi": SERVER,
    "llama.cpp": LOCAL,
    "mlc-llm": LOCAL,
    "exllamav2": LOCAL,
}
TRAINING_TASKS = ("full", "lora", "qlora")
TASKS = (*TRAINING_TASKS, "serving")
PER = ("gpu", "machine", "sequence")
IMPLAUSIBLE_SHARE = 0.9  # at or above 90 % of the dense peak (or of the roofline): an entry must say why it stays


@dataclass(frozen=True)
class Measurement:
    """One published run (``measurements.yaml``: every field is described there)."""

    key: str
    source: str
    gpu: str
    count: int
    model: str
    task: str
    tokens_per_s: float
    per: str
    nodes: int = 1
    interconnect: str = "none"
    seq_len: int = 0
    micro_batch: int = 0
    recompute: str = "none"
    optimizer: str = ""
    offload: str = "none"
    zero_stage: int = 0
    tensor_parallel: int = 1
    expert_parallel: int = 1
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ()
    weights: str = "bf16"
    kv_dtype: str = "bf16"
    engine: str = ""
    prompt: int = 0
    output: int = 0
    context: int = 0
    batch: int = 1
    mfu_quoted: float | None = None
    excluded: str | None = None
    table: str = ""
    model_code: str = ""  # training: transformers or own (vram.calibration.MODEL_CODES)
    holdout: str | None = None  # its source's ``holdout`` (measurements.yaml ``sources``): why a rule never reads it
    collected_after: str | None = None  # its source's: the last rule frozen before it was collected

    @property
    def tokens_per_s_per_gpu(self) -> float:
        """Training: tokens/s of one GPU (a machine's figure divided by its GPUs). Serving:
        the figure as given (per sequence, or all sequences of the machine)."""
        if self.task != "serving" and self.per == "machine":
            return self.tokens_per_s / self.count
        return self.tokens_per_s

    @property
    def decoding_tokens_per_s(self) -> float:
        """Serving: tokens/s in the unit ``serving_bound`` compares with: per sequence for one
        sequence, else all sequences of the machine (a ``per: gpu`` figure times the GPUs)."""
        return self.tokens_per_s * self.count if self.per == "gpu" else self.tokens_per_s

    @property
    def scale_check(self) -> bool:
        """A run over several machines: predicted and shown, never calibrated on (the
        guide's model is one machine)."""
        return self.nodes > 1


def measurements_from_data(data: Mapping[str, Any]) -> list[Measurement]:
    """The ``measurements`` of ``measurements.yaml`` as ``Measurement`` values (the file's
    numbers as written; the schema has checked them), each with its source's ``holdout`` and
    ``collected_after`` (None for a source every rule reads). Raises KeyError or TypeError on a malformed mapping."""
    sources = data.get("sources", {})
    found = []
    for key, entry in data["measurements"].items():
        fields = {"key": key, **{k: v for k, v in entry.items() if k not in ("derived_from", "note")}}
        source = sources.get(entry.get("source"), {})
        fields["holdout"], fields["collected_after"] = source.get("holdout"), source.get("collected_after")
        if "lora_targets" in fields:
            fields["lora_targets"] = tuple(fields["lora_targets"])
        found.append(Measurement(**fields))
    return found


def measured_cards(data: Mapping[str, Any], interconnects: Mapping[str, Any]) -> dict[str, Card]:
    """The measured cards the catalogue does not carry (``measurements.yaml`` cards), as
    ``vram.catalogue.Card`` values with their links resolved from ``interconnects.yaml``."""
    links = links_from_data(interconnects)
    return {
        key: Card(
            key,
            card["name"],
            card["bf16_dense_tflops"],
            card["memory_bandwidth_gb_per_s"],
            links[card["peer_link"]],
            links[card["host_link"]],
            card["datasheet"],
        )
        for key, card in data.get("cards", {}).items()
    }


def card_families(data: Mapping[str, Any]) -> dict[str, str]:
    """Card key -> the key of its family (``measurements.yaml`` families)."""
    return {card: family for family, entry in data["families"].items() for card in entry["cards"]}


def is_moe(config: ModelConfig) -> bool:
    """A mixture of experts: fewer parameters active per token than in all."""
    counts = count_params(config)
    return counts.active < counts.total


@functools.lru_cache(maxsize=512)
def _lora_flops(config: ModelConfig, seq_len: int, rank: int, targets: tuple[str, ...], recompute: str) -> int:
    adapters = lora_adapter_params(config, rank, targets)
    return lora_flops_per_token(config, seq_len, adapters, recompute)[0]


def training_flops_per_token(m: Measurement, config: ModelConfig) -> float:
    """FLOPs the calculator counts for one token of ``m``'s run, recomputation included
    (module docstring): what a GPU's tokens/s are multiplied by to compare with its peak."""
    if m.task == "full":
        return flops_per_token(config, m.seq_len) * float(RECOMPUTE_FACTOR[m.recompute])
    return float(_lora_flops(config, m.seq_len, m.lora_rank, m.lora_targets, m.recompute))


def serving_bound(m: Measurement, card: Card, config: ModelConfig) -> float:
    """The roofline tokens/s of ``m``'s decoding on ``card``: per sequence (``per:
    sequence``) or for all ``batch`` sequences (``per: machine`` or ``gpu``)."""
    bound = decode_bound(
        config, card.memory_bandwidth_gb_per_s, m.context, m.batch, m.tensor_parallel, m.weights, m.kv_dtype
    )
    return bound.tokens_per_second_per_sequence if m.per == "sequence" else bound.tokens_per_second


def implied_share(m: Measurement, card: Card, config: ModelConfig) -> float:
    """What ``m`` implies (module docstring): the share of ``card``'s dense BF16 peak a
    training run used, or the share of the decoding roofline a serving run reached."""
    if m.task == "serving":
        return m.decoding_tokens_per_s / serving_bound(m, card, config)
    return m.tokens_per_s_per_gpu * training_flops_per_token(m, config) / (card.bf16_dense_tflops * TERA)


def prefill_share(m: Measurement, card: Card, config: ModelConfig) -> float:
    """For a decoding run whose source fixes ``prompt`` and ``output``: the shortest time its
    prefills can take (``batch`` x ``prompt`` tokens of a forward pass, a third of
    ``vram.timing.flops_per_token``, at ``card``'s dense BF16 peak on each of its GPUs) over the
    time the run took (the tokens it generated over the measured tokens/s). What tells a run that
    measures decoding from one that measures prefills. Raises ValueError without prompt and
    output."""
    if not (m.prompt and m.output):
        raise ValueError(f"{m.key}: the prefill's share needs the run's prompt and output")
    prefill_flops = m.batch * m.prompt * flops_per_token(config, m.prompt) / 3
    prefill_s = prefill_flops / (card.bf16_dense_tflops * TERA * m.count)
    run_s = (m.batch if m.per != "sequence" else 1) * m.output / m.decoding_tokens_per_s
    return prefill_s / run_s
