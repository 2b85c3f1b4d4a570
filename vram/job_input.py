"""A "find the GPU" job, checked: every key read, range-checked and normalised before any
arithmetic. ``vram.job.answer_job`` answers what ``check_job`` returns.

``JOB_FIELDS`` lists every key of a job and its default (``vram.job``'s module docstring says
what each means). ``check_job(job)`` returns a ``Job``, frozen and typed: the model's
``ModelConfig`` read from its ``config.json`` (``read_config``), the cards with their speeds
as ``vram.catalogue.Card``, prices as ``Decimal``; a key the job's ``kind`` does not read is
left as given. Bad input raises ``JobError`` (a ValueError) naming the job key, the kind of
fault and what was allowed: one line, for the CLI and the page.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .activations import ATTENTION, MAX_MICRO_BATCH, MAX_SEQ_LEN, RECOMPUTE
from .billing import AmbiguousPrice, parse_price
from .calibration import Calibration, calibration_from_job
from .catalogue import Bandwidth, Card
from .families import MULTIMODAL_WRAPPERS, get_family, is_registered, model_types
from .fit import TIGHT_FREE_FRACTION
from .frameworks import FRAMEWORKS, OFFLOAD
from .json_nesting import MAX_JSON_DEPTH, too_deep
from .lora import ALL_LINEAR, BASE_DTYPES
from .models import (
    _REQUIRED,
    ConfigError,
    ModelConfig,
    _DuplicateKey,
    _refuse_duplicate_keys,
    _short,
    json_type_name,
    model_config_from_dict,
    odd_characters,
    shown_model_type,
)
from .mxfp4 import MXFP4
from .optimizer_step import DEFAULT_IMPL, OPTIMIZER_IMPLS
from .serving import MAX_BATCHED_TOKENS, VLLM_MAX_NUM_BATCHED_TOKENS

KINDS = ("training", "lora", "serving")
TRAINING_OPTIMIZERS = ("adamw", "adamw-bf16", "adam8bit")
SERVING_WEIGHTS = ("bf16", "fp8", "int4", MXFP4)
KV_DTYPES = ("bf16", "fp8")
MAX_CARDS = 1024
MAX_RANK = 2**16
MAX_MIB = 2**24  # 16 TiB: beyond any card
MAX_HOST_RAM_GB = 10**6  # 1 PB: beyond any machine
MAX_TOKENS = 10**15
MAX_GRAD_ACCUM = 2**16  # micro-batches per optimizer step: beyond it, a typo

JOB_FIELDS: dict[str, Any] = {
    "kind": "training",
    "config": None,
    "cards": 1,
    "framework": "fsdp2",
    "zero_stage": 0,
    "optimizer": "adamw",
    "optimizer_impl": DEFAULT_IMPL,
    "offload": "none",
    "seq_len": 2048,
    "micro_batch": 1,
    "grad_accum": 1,
    "recompute": "none",
    "attention": None,
    "rank": 16,
    "targets": ALL_LINEAR,
    "base_dtype": "bf16",
    "weights": "bf16",
    "kv_dtype": "bf16",
    "context": 8192,
    "concurrent": 1,
    "gpu_memory_utilization": 0.9,
    "max_num_batched_tokens": VLLM_MAX_NUM_BATCHED_TOKENS,
    "gpus": [],
    "reserve_mib": None,
    "tight_free_fraction": TIGHT_FREE_FRACTION,
    "tokens": 10**9,
    "prices": {},
    "host_ram_gb": {},
    "calibration": None,
}


class JobError(ValueError):
    """Bad job input: ``field`` (the job key), ``code`` ("integer", "choice", "fraction", "price",
    "price_ambiguous" (``key``, ``got``, its two readings ``decimal`` and ``thousands``: 1.200),
    "too_long", "not_offered", "config_json" (with ``line`` and ``column``), "config_duplicate"
    (``key``), "config_object" (``got``: the JSON type as RFC 8259 names it, ``array`` for a list), "config_unreadable", "config_depth" (``maximum``:
    ``vram.json_nesting.MAX_JSON_DEPTH``), "config_family" (``key``, the supported ``choices`` and,
    for a model_type with characters other than printable ASCII, ``characters``: up to four
    [character, code point, Unicode name], ``vram.models.odd_characters``), "config_multimodal" (``key``: a multimodal wrapper such as gemma3,
    ``got``: the model_type of its ``text_config``, which saved alone is read where the registry has it;
    ``add``: what that file must add, ``text_config_additions``), "config_key", "config_value")
    and ``limits`` (what was allowed: minimum/maximum or the choices)."""

    def __init__(self, field: str, code: str, message: str, **limits: Any) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.code, self.limits = field, code, limits

    def as_dict(self) -> dict[str, Any]:
        """``{"field", "code", "message", "limits"}``, as the page shows it."""
        return {"field": self.field, "code": self.code, "message": str(self), "limits": self.limits}


@dataclass(frozen=True)
class GpuEntry:
    """One card of a job: its key, nvidia-smi's ``memory_mib`` and, when given, its ``speed``."""

    key: str
    memory_mib: int
    speed: Card | None


@dataclass(frozen=True)
class Job:
    """A checked job (``check_job``): the fields of ``JOB_FIELDS`` its ``kind`` reads, typed.
    ``targets`` is ``ALL_LINEAR`` or a tuple of nn.Linear names; ``attention`` None means the
    one transformers runs the family with (``vram.activations.default_attention``)."""

    kind: str
    config: ModelConfig
    cards: int
    gpus: tuple[GpuEntry, ...]  # smallest memory first
    reserve_mib: int | None  # None only without gpus
    tight_free_fraction: float
    host_ram_gb: dict[str, int]
    framework: str = JOB_FIELDS["framework"]
    zero_stage: int = JOB_FIELDS["zero_stage"]
    optimizer: str = JOB_FIELDS["optimizer"]
    optimizer_impl: str = JOB_FIELDS["optimizer_impl"]
    offload: str = JOB_FIELDS["offload"]
    seq_len: int = JOB_FIELDS["seq_len"]
    micro_batch: int = JOB_FIELDS["micro_batch"]
    grad_accum: int = JOB_FIELDS["grad_accum"]
    recompute: str = JOB_FIELDS["recompute"]
    attention: str | None = JOB_FIELDS["attention"]
    rank: int = JOB_FIELDS["rank"]
    targets: str | tuple[str, ...] = JOB_FIELDS["targets"]
    base_dtype: str = JOB_FIELDS["base_dtype"]
    weights: str = JOB_FIELDS["weights"]
    kv_dtype: str = JOB_FIELDS["kv_dtype"]
    context: int = JOB_FIELDS["context"]
    concurrent: int = JOB_FIELDS["concurrent"]
    gpu_memory_utilization: float = JOB_FIELDS["gpu_memory_utilization"]
    max_num_batched_tokens: int = JOB_FIELDS["max_num_batched_tokens"]
    tokens: int = JOB_FIELDS["tokens"]
    prices: dict[str, Decimal] = field(default_factory=dict)
    calibration: Calibration | None = None  # the published runs behind each time (vram.calibration)

    def lora_adapters(self) -> dict[str, Any] | None:
        """LoRA's adapters as ``vram.timing.lora_step`` takes them (``rank``, ``target_modules``,
        ``base_dtype``); None for any other kind."""
        if self.kind != "lora":
            return None
        return {"rank": self.rank, "target_modules": self.targets, "base_dtype": self.base_dtype}


# --- one field -------------------------------------------------------------------------------


def integer(job: Mapping[str, Any], key: str, minimum: int, maximum: int) -> int:
    """``job[key]``, an int (not a bool) from ``minimum`` to ``maximum``; else JobError "integer"."""
    value = job[key]
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise JobError(
            key,
            "integer",
            f"must be an integer from {minimum:,} to {maximum:,}, got {value!r}",
            minimum=minimum,
            maximum=maximum,
        )
    return value


def choice(job: Mapping[str, Any], key: str, choices: tuple[Any, ...]) -> Any:
    """``job[key]``, one of ``choices``; else JobError "choice"."""
    value = job[key]
    if value not in choices:
        raise JobError(
            key, "choice", f"must be one of {', '.join(map(str, choices))}, got {value!r}", choices=list(choices)
        )
    return value


def fraction(job: Mapping[str, Any], key: str, low: float, high: float) -> float:
    """``job[key]``, a finite number above ``low`` and at most ``high``; else JobError "fraction"."""
    value = job[key]
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not low < value <= high
    ):
        raise JobError(
            key,
            "fraction",
            f"must be a number above {low} and at most {high}, got {value!r}",
            minimum=low,
            maximum=high,
        )
    return float(value)


def tokens(job: Mapping[str, Any], key: str, config: ModelConfig) -> int:
    """Tokens per sequence: a whole number from 1 to the model's ``max_position_embeddings``
    ("too_long" beyond it) and to ``MAX_SEQ_LEN``."""
    maximum = config.max_position_embeddings
    value = job[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        integer(job, key, 1, min(maximum or MAX_SEQ_LEN, MAX_SEQ_LEN))  # raises, with the limits that apply
    if maximum is not None and value > maximum:
        raise JobError(
            key, "too_long", f"{value:,} tokens is beyond the model's maximum, {maximum:,}", minimum=1, maximum=maximum
        )
    return integer(job, key, 1, MAX_SEQ_LEN)


def text_config_additions(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the ``text_config`` of a multimodal wrapper (a gemma3, ``MULTIMODAL_WRAPPERS``),
    saved as a config.json of its own, must add to be read: its ``model_type`` when it leaves it
    to the wrapper's config class, and each size key it leaves to the text model's config
    class, with that class's default (the registry's ``defaults``: Gemma3TextConfig's
    ``vocab_size`` 262208). None without a ``text_config`` object or for a text model the
    registry does not have."""
    text = raw.get("text_config")
    if not isinstance(text, Mapping):
        return None
    text_type = text.get("model_type") or MULTIMODAL_WRAPPERS[raw["model_type"]][1]
    if not is_registered(text_type):
        return None
    defaults = get_family(text_type).defaults
    return ({} if "model_type" in text else {"model_type": text_type}) | {
        key: defaults[key] for key in sorted(_REQUIRED) if key not in text
    }


def read_config(raw: Any) -> ModelConfig:
    """A ``config.json`` (text or parsed) -> ``ModelConfig``, with errors on the ``config``
    field: not JSON, unknown ``model_type``, missing size key, or a value the reader refuses."""
    if isinstance(raw, ModelConfig):
        return raw
    if isinstance(raw, str):
        if too_deep(raw):  # before json.loads, whose recursion crashed the browser's Pyodide
            raise JobError(
                "config",
                "config_depth",
                f"nested deeper than {MAX_JSON_DEPTH} levels, which no config.json is",
                maximum=MAX_JSON_DEPTH,
            )
        try:
            raw = json.loads(raw, object_pairs_hook=_refuse_duplicate_keys)
        except _DuplicateKey as exc:
            raise JobError(
                "config",
                "config_duplicate",
                f"key {_short(exc.args[0])} appears twice (JSON readers keep one of them silently); keep one",
                key=str(exc.args[0])[:40],
            ) from None
        except json.JSONDecodeError as exc:
            raise JobError(
                "config",
                "config_json",
                f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); pass the model's config.json",
                line=exc.lineno,
                column=exc.colno,
            ) from None
        except (ValueError, RecursionError):  # a 5,000-digit integer, nesting too deep
            raise JobError(
                "config", "config_unreadable", "too many digits or nested too deeply to be a config.json"
            ) from None
    if not isinstance(raw, dict):
        raise JobError(
            "config", "config_object", f"expected a JSON object, got {json_type_name(raw)}", got=json_type_name(raw)
        )
    model_type = raw.get("model_type")
    if isinstance(model_type, str) and model_type in MULTIMODAL_WRAPPERS:  # vram.models refuses it, saying how
        text = raw.get("text_config")
        text_type = text.get("model_type") if isinstance(text, dict) else None
        try:
            model_config_from_dict(raw, "config.json")
        except ConfigError as exc:
            add = text_config_additions(raw)
            raise JobError(
                "config",
                "config_multimodal",
                str(exc).removeprefix("config.json: "),
                key=model_type,
                got=str(text_type or MULTIMODAL_WRAPPERS[model_type][1])[:40],
                **({"add": add} if add else {}),
            ) from None
    if not is_registered(model_type):
        odd = odd_characters(model_type)[:4] if isinstance(model_type, str) else []
        raise JobError(
            "config",
            "config_family",
            f"unsupported model_type {shown_model_type(model_type)}; supported: {', '.join(model_types())}",
            key=str(model_type)[:40],
            choices=list(model_types()),
            **({"characters": [list(c) for c in odd]} if odd else {}),
        )
    missing = sorted(_REQUIRED - set(raw))
    if missing:
        raise JobError("config", "config_key", f"key {missing[0]!r} is missing", key=missing[0])
    try:
        return model_config_from_dict(raw, "config.json")
    except ConfigError as exc:
        key = next((k for k in sorted(raw, key=len, reverse=True) if isinstance(k, str) and k in str(exc)), "")
        raise JobError("config", "config_value", str(exc), key=key) from None


def normalised(job: Mapping[str, Any]) -> dict[str, Any]:
    """The job with every default filled in; unknown keys refused (JobError)."""
    unknown = sorted(set(job) - set(JOB_FIELDS))
    if unknown:
        raise JobError(unknown[0], "choice", "is not a job field", choices=list(JOB_FIELDS))
    return {**JOB_FIELDS, **job}


def targets(job: Mapping[str, Any]) -> str | tuple[str, ...]:
    """LoRA's ``targets``: ``ALL_LINEAR``, or comma-separated nn.Linear names as a tuple."""
    value = job["targets"]
    if value == ALL_LINEAR:
        return ALL_LINEAR
    if not isinstance(value, str) or not value.strip():
        raise JobError("targets", "choice", "must be all-linear or comma-separated nn.Linear names")
    return tuple(t.strip() for t in value.split(",") if t.strip())


def _pair(value: Any) -> tuple[float, float]:
    """[low, high] as two floats; ValueError or TypeError for anything else."""
    low, high = value
    return float(low), float(high)


def speed_card(entry: Mapping[str, Any]) -> Card | None:
    """The ``speed`` of a ``gpus`` entry (``bf16_dense_tflops``, ``memory_bandwidth_gb_per_s``,
    ``peer_gb_per_s`` [low, high], ``peer_to_peer``, ``host_gb_per_s`` [low, high]: the cited
    figures of gpus.yaml and interconnects.yaml) as a ``vram.catalogue.Card``; None without one."""
    speed = entry.get("speed")
    if speed is None:
        return None
    try:
        return Card(
            entry["key"],
            entry["key"],
            float(speed["bf16_dense_tflops"]),
            float(speed["memory_bandwidth_gb_per_s"]),
            Bandwidth("peer", *_pair(speed["peer_gb_per_s"]), peer_to_peer=bool(speed["peer_to_peer"])),
            Bandwidth("host", *_pair(speed["host_gb_per_s"])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise JobError(
            "gpus",
            "choice",
            f"{entry['key']}: speed needs bf16_dense_tflops, memory_bandwidth_gb_per_s, "
            f"peer_gb_per_s, peer_to_peer and host_gb_per_s ({exc})",
        ) from None


def gpu_entries(job: Mapping[str, Any], reserve_mib: int) -> tuple[GpuEntry, ...]:
    """``gpus``: a list of ``{key, memory_mib[, speed]}``, each card above the reserve; smallest first."""
    cards = job["gpus"]
    if not isinstance(cards, list):
        raise JobError("gpus", "choice", "must be a list of {key, memory_mib}")
    entries = []
    for card in sorted(cards, key=lambda c: c.get("memory_mib", 0) if isinstance(c, dict) else 0):
        if not isinstance(card, dict) or not isinstance(card.get("key"), str):
            raise JobError("gpus", "choice", "every card needs a key and memory_mib")
        entries.append(GpuEntry(card["key"], integer(card, "memory_mib", reserve_mib + 1, MAX_MIB), speed_card(card)))
    return tuple(entries)


def reserve(job: Mapping[str, Any]) -> int | None:
    """``reserve_mib``: MiB the CUDA context and NCCL's buffers take from every card, required
    with ``gpus`` (no default here: the catalogue states it once, ``reserve_mib`` of
    snippets/data/gpus.yaml, and its readers pass it on); None for a job without cards."""
    if job["reserve_mib"] is None:
        if job["gpus"]:
            raise JobError(
                "reserve_mib",
                "integer",
                "must be given with gpus: the MiB the CUDA context and NCCL "
                "take from every card (the catalogue's reserve_mib)",
                minimum=0,
                maximum=MAX_MIB,
            )
        return None
    return integer(job, "reserve_mib", 0, MAX_MIB)


def prices(job: Mapping[str, Any]) -> dict[str, Decimal]:
    """``prices``: card key -> EUR per hour of the machine of ``cards`` such cards (``vram.billing.parse_price``)."""
    given = job["prices"]
    if not isinstance(given, dict):
        raise JobError("prices", "choice", "must map a card's key to a price in euros per hour")
    parsed = {}
    for key, price in given.items():
        try:
            parsed[key] = parse_price(price, f"prices.{key}")
        except AmbiguousPrice as exc:  # "1.200": the page says it in the reader's language
            raise JobError(
                "prices",
                "price_ambiguous",
                str(exc),
                key=str(key)[:40],
                got=exc.got,
                decimal=exc.decimal,
                thousands=exc.thousands,
            ) from None
        except ValueError as exc:
            raise JobError("prices", "price", str(exc), key=str(key)[:40]) from None
    return parsed


def host_ram(job: Mapping[str, Any]) -> dict[str, int]:
    """``host_ram_gb`` checked: card key -> whole GB from 1 to ``MAX_HOST_RAM_GB``."""
    machines = job["host_ram_gb"]
    if not isinstance(machines, dict):
        raise JobError("host_ram_gb", "choice", "must map a card's key to its machine's RAM in GB")
    for key, ram in machines.items():
        if isinstance(ram, bool) or not isinstance(ram, int) or not 1 <= ram <= MAX_HOST_RAM_GB:
            raise JobError(
                "host_ram_gb",
                "integer",
                f"{str(key)[:40]}: must be whole GB from 1 to {MAX_HOST_RAM_GB:,}, got {ram!r}",
                minimum=1,
                maximum=MAX_HOST_RAM_GB,
            )
    return dict(machines)


# --- the whole job ---------------------------------------------------------------------------


def check_job(job: Mapping[str, Any]) -> Job:
    """``job`` (a mapping of ``JOB_FIELDS`` keys, defaults filled in) checked and typed, field
    by field in the order a reader fills the form: the kind, the model, the cards, then the
    kind's own fields, then the catalogue and the run. Raises JobError for the first fault."""
    given = normalised(job)
    kind = choice(given, "kind", KINDS)
    config = read_config(given["config"])
    cards = integer(given, "cards", 1, MAX_CARDS)
    machines_ram = host_ram(given)
    fields: dict[str, Any] = {}
    if kind == "serving":
        fields.update(
            weights=choice(given, "weights", SERVING_WEIGHTS),
            kv_dtype=choice(given, "kv_dtype", KV_DTYPES),
            context=tokens(given, "context", config),
            concurrent=integer(given, "concurrent", 1, MAX_MICRO_BATCH),
            max_num_batched_tokens=integer(given, "max_num_batched_tokens", 1, MAX_BATCHED_TOKENS),
        )
    else:
        fields.update(framework=choice(given, "framework", FRAMEWORKS), zero_stage=integer(given, "zero_stage", 0, 3))
        if kind == "training":
            fields.update(
                optimizer=choice(given, "optimizer", TRAINING_OPTIMIZERS),
                optimizer_impl=choice(given, "optimizer_impl", OPTIMIZER_IMPLS),
                offload=choice(given, "offload", OFFLOAD),
            )
        else:
            fields.update(
                rank=integer(given, "rank", 1, MAX_RANK),
                base_dtype=choice(given, "base_dtype", BASE_DTYPES),
                targets=targets(given),
                optimizer_impl=choice(given, "optimizer_impl", OPTIMIZER_IMPLS),
                offload=choice(given, "offload", OFFLOAD),
            )
        fields.update(
            seq_len=tokens(given, "seq_len", config),
            micro_batch=integer(given, "micro_batch", 1, MAX_MICRO_BATCH),
            grad_accum=integer(given, "grad_accum", 1, MAX_GRAD_ACCUM),
            recompute=choice(given, "recompute", RECOMPUTE),
            attention=None if given["attention"] is None else choice(given, "attention", ATTENTION),
        )
    reserve_mib = reserve(given)
    tight = fraction(given, "tight_free_fraction", 0.0, 0.99)
    if kind == "serving":
        fields["gpu_memory_utilization"] = fraction(given, "gpu_memory_utilization", 0.0, 1.0)
    gpus = gpu_entries(given, reserve_mib or 0)
    if kind != "serving":
        fields.update(tokens=integer(given, "tokens", 1, MAX_TOKENS), prices=prices(given))
    return Job(
        kind=kind,
        config=config,
        cards=cards,
        gpus=gpus,
        reserve_mib=reserve_mib,
        tight_free_fraction=tight,
        host_ram_gb=machines_ram,
        calibration=calibration(given),
        **fields,
    )


def calibration(job: Mapping[str, Any]) -> Calibration | None:
    """``job["calibration"]`` (``vram.calibration.Calibration.as_job()``) read back; None when
    none is handed in. Raises JobError for a malformed one."""
    raw = job["calibration"]
    if raw is None:
        return None
    if _last_read and _last_read[0][0] is raw:
        return _last_read[0][1]
    try:
        read = calibration_from_job(raw)
    except ValueError as exc:
        raise JobError("calibration", "choice", str(exc)) from None
    _last_read[:] = [(raw, read)]
    return read


# The calibration object the last job handed in, and what it read as: the jobs of one finder
# page share one object (never changed once built), read once. Held, so its id is not reused.
_last_read: list[tuple[object, Calibration]] = []
