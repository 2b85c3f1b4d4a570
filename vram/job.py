"""One reader's job, answered: bytes per card, what takes them, and which cards hold it.

``answer_job(job)`` is the one place where "find the GPU" does arithmetic. The site's
precomputed answers (``hooks/finder/compute.py``), the command line (``python -m vram job``) and
the browser (this package run by Pyodide in a Web Worker, ``docs/assets/finder-worker.js``)
all call it, so the three give the same bytes for the same job.

A job is a JSON-able mapping (``JOB_FIELDS`` lists every key and its default):

- ``kind``: "training" (``vram.framework_memory`` under ``framework``/``zero_stage``, with
  ``optimizer``, its ``optimizer_impl`` (foreach, fused, forloop) and ``offload``), "lora" (``vram.lora_memory_per_gpu``: DDP or DeepSpeed
  ZeRO-1/2/3, ``rank``, ``targets``, ``base_dtype`` "nf4" = QLoRA; FSDP2 at zero_stage 2 or 3 with a
  bf16 or nf4 base: ``vram.lora_fsdp2_memory``, with ``optimizer_impl``) or "serving"
  (``vram.serving_memory_per_gpu``, tensor parallel over ``cards``; ``weights``,
  ``kv_dtype``, ``context``, ``concurrent`` sequences, ``gpu_memory_utilization``);
- ``config``: the model's parsed ``config.json`` (read by ``vram.model_config_from_dict``);
- ``cards``: data-parallel GPUs (training, LoRA) or the tensor-parallel size (serving);
- training and LoRA: ``seq_len`` tokens, ``micro_batch`` sequences, ``recompute`` and
  ``attention`` (None: the one transformers runs the family with) of the activations
  (``vram.activation_memory``; for LoRA the full fine-tuning figure, a lower bound);
- the catalogue: ``gpus`` (``[{"key", "memory_mib"}]``, nvidia-smi's totals, and optionally
  ``speed``: ``vram.catalogue.card_speed``, the cited peaks and links), ``reserve_mib`` (CUDA
  context and NCCL buffers) and ``tight_free_fraction`` (``vram.fit.TIGHT_FREE_FRACTION``);
- the run (training on cards with a ``speed``): ``tokens`` to train (dataset x epochs) and
  ``prices`` (card key -> EUR per hour of the machine of ``cards`` such cards, the guide's
  or the reader's). Each fitting card gets its time per step and run (``vram.timing``), its
  cost (``vram.billing``: per minute, 15 minutes at least) and what bounds the step; the
  machines are ranked by ``vram.ranking.rank_runs`` (by cost when every one has a price, else
  by time). LoRA and QLoRA the same, from ``vram.timing.lora_step``'s FLOPs (frozen weights
  without weight gradients). Serving: each fitting card's decoding bound
  (``vram.timing.decode_bound``, memory bandwidth: an upper bound), not for MXFP4 weights.
- offload (training): ``host_ram_gb`` (card key -> the system RAM of the machine of ``cards``
  such cards, whole GB as the rental catalogue writes it, taken as 10**9 bytes: if the
  catalogue means GiB the machine has more, never less). Each card then says whether that
  RAM holds the host bytes the offload pins (``host_bytes``: DeepSpeed's estimators at
  ``additional_buffer_factor=1``, tests/vram/test_deepspeed_estimators.py; FSDP2's
  ``CPUOffloadPolicy`` shards): ``host_ram`` ``{"machine_gb", "holds"}``, both None when the
  machine's RAM is not given (the page greys the verdict out and says why).

Verdict per card (``fits``/``short``, smallest card first). Training and LoRA: a card's
usable bytes are ``vram.fit.usable_bytes`` (memory less the reserve); its margin is what
the model states and the framework's buffers leave; it fits when backward (the framework's
``backward_bytes``) holds the activations of this job at their peak (``peak_bytes``, the
loss's backward included) with the recomputation asked, and the optimizer step
(``per_gpu_bytes``, no activations by then) holds too (``vram.fit.training_verdict``); if
that holds only with full recomputation it still fits, with ``recompute: "full"``;
a card that holds the states but not even the fully recomputed activations is ``short``. Serving: vLLM takes
``gpu_memory_utilization`` of the card's memory (``vllm/worker/gpu_worker.py``:
``requested_memory = total_memory * gpu_memory_utilization``) and the CUDA context and
NCCL buffers come out of that share, so the capacity is floor(util x memory) less the
reserve; a card fits when it holds the weights and the KV cache of ``concurrent``
sequences of ``context`` tokens; each card also says how many such sequences its capacity
holds (``max_concurrent``). Every kind: ``peak_bytes`` is the most the job holds on the card
(training and LoRA: ``vram.fit.peak_bytes`` with the activations of the recomputation the
card runs with; serving: weights and KV cache), ``free_fraction`` what that leaves of the
capacity, and ``tight`` the one rule of ``vram.fit.is_tight`` (under
``tight_free_fraction``, ``vram.fit.TIGHT_FREE_FRACTION`` by default, left free at the peak).

Bad input raises ``JobError`` (a ValueError) whose ``field`` names the job key, ``code``
the kind of fault and ``limits`` what was allowed: one line, for the CLI and the page.
Sizes are bytes (ints) with their GB (10**9 bytes) beside them, computed here.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any, Mapping

from .accounting import job_accounting
from .activations import ATTENTION, MAX_MICRO_BATCH, MAX_SEQ_LEN, RECOMPUTE, activation_memory, default_attention
from .breakdown import model_shape
from .fit import TIGHT_FREE_FRACTION, fits, free_fraction, is_tight, mib_to_bytes, peak_bytes, training_verdict, usable_bytes
from .frameworks import FRAMEWORKS, framework_memory
from .lora import ALL_LINEAR, BASE_DTYPES, lora_adapter_params, lora_fsdp2_memory, lora_memory_per_gpu
from .models import _REQUIRED, SUPPORTED_MODEL_TYPES, _DuplicateKey, _refuse_duplicate_keys, _short, ConfigError, ModelConfig, count_params, model_config_from_dict
from .mxfp4 import MXFP4, mxfp4_weights_bytes_per_gpu, ships_mxfp4
from .optimizer_step import DEFAULT_IMPL, OPTIMIZER_IMPLS
from .serving import check_tensor_parallel, serving_memory_per_gpu
from .billing import parse_price
from .catalogue import Bandwidth, Card
from .ranking import rank_runs, run_options
from .timing import decode_bound, shown_duration
from .units import bytes_to_gb

KINDS = ("training", "lora", "serving")
MULTIMODAL_GEMMA3 = "gemma3"  # vram.models: its vision tower is not modelled, its text_config is
OFFLOAD = ("none", "optimizer", "optimizer+params")
TRAINING_OPTIMIZERS = ("adamw", "adamw-bf16", "adam8bit")
SERVING_WEIGHTS = ("bf16", "fp8", "int4", MXFP4)
KV_DTYPES = ("bf16", "fp8")
MAX_CARDS = 1024
MAX_RANK = 2**16
MAX_MIB = 2**24  # 16 TiB: beyond any card
PART_ORDER = ("weights", "gradients", "optimizer", "working", "base", "adapters", "kv_cache")

JOB_FIELDS: dict[str, Any] = {
    "kind": "training", "config": None, "cards": 1,
    "framework": "fsdp2", "zero_stage": 0, "optimizer": "adamw", "optimizer_impl": DEFAULT_IMPL, "offload": "none",
    "seq_len": 2048, "micro_batch": 1, "recompute": "none", "attention": None,
    "rank": 16, "targets": ALL_LINEAR, "base_dtype": "bf16",
    "weights": "bf16", "kv_dtype": "bf16", "context": 8192, "concurrent": 1, "gpu_memory_utilization": 0.9,
    "gpus": [], "reserve_mib": 2048, "tight_free_fraction": TIGHT_FREE_FRACTION,
    "tokens": 10**9, "prices": {}, "host_ram_gb": {},
}
MAX_HOST_RAM_GB = 10**6  # 1 PB: beyond any machine
MAX_TOKENS = 10**15


class JobError(ValueError):
    """Bad job input: ``field`` (the job key), ``code`` ("integer", "choice", "fraction", "price",
    "too_long", "not_offered", "config_json" (with ``line`` and ``column``), "config_duplicate"
    (``key``), "config_object" (``got``: the JSON type), "config_unreadable", "config_family" (``key``
    and the supported ``choices``), "config_multimodal" (``key``: a multimodal gemma3, whose
    ``text_config`` saved alone, model_type gemma3_text, is read), "config_key", "config_value")
    and ``limits`` (what was allowed: minimum/maximum or the choices)."""

    def __init__(self, field: str, code: str, message: str, **limits: Any) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.code, self.limits = field, code, limits

    def as_dict(self) -> dict[str, Any]:
        """``{"field", "code", "message", "limits"}``, as the page shows it."""
        return {"field": self.field, "code": self.code, "message": str(self), "limits": self.limits}


# --- reading the job -------------------------------------------------------------------------

def _integer(job: Mapping[str, Any], field: str, minimum: int, maximum: int) -> int:
    value = job[field]
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise JobError(field, "integer", f"must be an integer from {minimum:,} to {maximum:,}, got {value!r}",
                       minimum=minimum, maximum=maximum)
    return value


def _choice(job: Mapping[str, Any], field: str, choices: tuple) -> Any:
    value = job[field]
    if value not in choices:
        raise JobError(field, "choice", f"must be one of {', '.join(map(str, choices))}, got {value!r}",
                       choices=list(choices))
    return value


def _fraction(job: Mapping[str, Any], field: str, low: float, high: float) -> float:
    value = job[field]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low < value <= high:
        raise JobError(field, "fraction", f"must be a number above {low} and at most {high}, got {value!r}",
                       minimum=low, maximum=high)
    return float(value)


def read_config(raw: Any) -> ModelConfig:
    """A ``config.json`` (text or parsed) -> ``ModelConfig``, with errors on the ``config``
    field: not JSON, unknown ``model_type``, missing size key, or a value the reader refuses."""
    if isinstance(raw, ModelConfig):
        return raw
    if isinstance(raw, str):
        try:
            raw = json.loads(raw, object_pairs_hook=_refuse_duplicate_keys)
        except _DuplicateKey as exc:
            raise JobError("config", "config_duplicate", f"key {_short(exc.args[0])} appears twice (JSON readers keep "
                           "one of them silently); keep one", key=str(exc.args[0])[:40]) from None
        except json.JSONDecodeError as exc:
            raise JobError("config", "config_json", f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                           "pass the model's config.json", line=exc.lineno, column=exc.colno) from None
        except (ValueError, RecursionError) as exc:  # a 5,000-digit integer, nesting too deep
            raise JobError("config", "config_unreadable", "too many digits or nested too deeply to be a config.json") from None
    if not isinstance(raw, dict):
        raise JobError("config", "config_object", f"expected a JSON object, got {type(raw).__name__}",
                       got=type(raw).__name__)
    model_type = raw.get("model_type")
    if model_type == MULTIMODAL_GEMMA3:  # vram.models refuses it and says what to pass instead
        try:
            model_config_from_dict(raw, "config.json")
        except ConfigError as exc:
            raise JobError("config", "config_multimodal", str(exc).removeprefix("config.json: "), key=model_type) from None
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise JobError("config", "config_family", f"unsupported model_type {_short(model_type)}; "
                       f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}", key=str(model_type)[:40],
                       choices=list(SUPPORTED_MODEL_TYPES))
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


# --- the answer ------------------------------------------------------------------------------

# Pure functions of a frozen ModelConfig, asked the same question by many jobs (the site's
# precomputed answers ask each model's a few hundred times): computed once per question.
_cached_shape = functools.lru_cache(maxsize=256)(model_shape)
_cached_params = functools.lru_cache(maxsize=256)(count_params)


@functools.lru_cache(maxsize=1024)
def _peak_activations(config: ModelConfig, seq_len: int, micro_batch: int, attention: str, recompute: str) -> int:
    return activation_memory(config, seq_len, micro_batch, attention, recompute).peak_bytes


def _not_offered(field: str, exc: ValueError) -> JobError:
    return JobError(field, "not_offered", str(exc))


def _training(job: dict, config: ModelConfig) -> tuple[dict[str, int], int, list[str], int]:
    framework = _choice(job, "framework", FRAMEWORKS)
    stage = _integer(job, "zero_stage", 0, 3)
    optimizer = _choice(job, "optimizer", TRAINING_OPTIMIZERS)
    implementation = _choice(job, "optimizer_impl", OPTIMIZER_IMPLS)
    offload = _choice(job, "offload", OFFLOAD)
    try:
        memory = framework_memory(framework, _cached_shape(config), job["cards"], stage, optimizer,
                                  offload != "none", offload == "optimizer+params", optimizer_impl=implementation)
    except ValueError as exc:
        field = "offload" if offload != "none" and "offload" in str(exc).lower() else "optimizer" \
            if "optimizer" in str(exc) and optimizer != "adamw" else "framework"
        raise _not_offered(field, exc) from None
    parts = {"weights": memory.weights_bytes, "gradients": memory.gradients_bytes,
             "optimizer": memory.optimizer_bytes, "working": memory.working_bytes}
    return parts, memory.host_bytes, list(memory.notes), memory.backward_bytes


def _lora(job: dict, config: ModelConfig) -> tuple[dict[str, int], int, list[str], int]:
    framework = _choice(job, "framework", FRAMEWORKS)
    stage = _integer(job, "zero_stage", 0, 3)
    if framework == "zero-paper":
        raise JobError("framework", "not_offered", "LoRA is modelled under DDP, DeepSpeed ZeRO-1/2/3 and FSDP2 "
                       "(vram.lora), not in the ZeRO paper's accounting")
    rank = _integer(job, "rank", 1, MAX_RANK)
    base = _choice(job, "base_dtype", BASE_DTYPES)
    targets = job["targets"]
    if targets != ALL_LINEAR:
        if not isinstance(targets, str) or not targets.strip():
            raise JobError("targets", "choice", "must be all-linear or comma-separated nn.Linear names")
        targets = tuple(t.strip() for t in targets.split(",") if t.strip())
    if framework == "fsdp2" and stage > 0:
        return _lora_fsdp2(job, config, stage, rank, base, targets)
    try:
        memory = lora_memory_per_gpu(config, rank, job["cards"], stage, targets, base)
    except ValueError as exc:
        raise JobError("targets", "not_offered", str(exc)) from None
    adapters = memory.adapter_weights_bytes + memory.adapter_gradients_bytes + memory.adapter_optimizer_bytes
    notes = []
    if base == "nf4" and stage == 3 and job["cards"] > 1:
        notes.append(QLORA_STORAGE_NOTE)
    return {"base": memory.base_weights_bytes, "adapters": adapters}, 0, notes, memory.total_bytes


QLORA_STORAGE_NOTE = ("QLoRA under ZeRO-3 or FSDP needs BitsAndBytesConfig(bnb_4bit_quant_storage=torch.bfloat16), "
                      "the compute dtype, so the 4-bit data can be sharded")
LORA_FSDP2_NOTE = (
    "LoRA under FSDP2 (vram.lora_fsdp2_memory): the {base} base and the fp32 adapters sharded, FSDP2 "
    "gathering {what}; the frozen weights have no gradients, so only the adapters are reduce-scattered."
)


def _lora_fsdp2(job: dict, config: ModelConfig, stage: int, rank: int, base: str,
                targets: Any) -> tuple[dict[str, int], int, list[str], int]:
    """LoRA under FSDP2 (``vram.lora_fsdp2_memory``): base shards, adapter states, and FSDP2's
    buffers at the fullest moment of backward or the optimizer step as ``working``."""
    if base not in ("bf16", "nf4"):
        raise JobError("framework", "not_offered", f"LoRA under FSDP2 is modelled with a bf16 or nf4 (QLoRA) base, "
                       f"not {base}; use DeepSpeed ZeRO-3 or DDP")
    implementation = _choice(job, "optimizer_impl", OPTIMIZER_IMPLS)
    try:
        lora_adapter_params(config, rank, targets)
    except ValueError as exc:
        raise JobError("targets", "not_offered", str(exc)) from None
    try:
        memory = lora_fsdp2_memory(config, rank, job["cards"], stage, targets, implementation, base)
    except ValueError as exc:  # what FSDP2 is not modelled for (module docstring of vram.lora)
        raise JobError("framework", "not_offered", str(exc)) from None
    adapters = memory.adapter_weights_bytes + memory.adapter_gradients_bytes + memory.adapter_optimizer_bytes
    what = ("one decoder layer at a time (and the next one, prefetched)" if stage == 3
            else "every layer from forward to its backward (reshard_after_forward=False)")
    parts = {"base": memory.base_weights_bytes, "adapters": adapters,
             "working": memory.per_gpu_bytes - memory.states_bytes}
    shown = "4-bit NF4 (its quantisation constants whole on every GPU)" if base == "nf4" else "bf16"
    notes = [LORA_FSDP2_NOTE.format(what=what, base=shown)] + ([QLORA_STORAGE_NOTE] if base == "nf4" else [])
    return parts, 0, notes, memory.backward_bytes


def _tokens(job: dict, field: str, config: ModelConfig) -> int:
    """Tokens per sequence: a whole number from 1 to the model's ``max_position_embeddings``
    ("too_long" beyond it) and to ``MAX_SEQ_LEN``."""
    maximum = config.max_position_embeddings
    value = job[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        _integer(job, field, 1, min(maximum or MAX_SEQ_LEN, MAX_SEQ_LEN))  # raises, with the limits that apply
    if maximum is not None and value > maximum:
        raise JobError(field, "too_long", f"{value:,} tokens is beyond the model's maximum, {maximum:,}",
                       minimum=1, maximum=maximum)
    return _integer(job, field, 1, MAX_SEQ_LEN)


def _activations(job: dict, config: ModelConfig) -> dict[str, Any]:
    seq_len = _tokens(job, "seq_len", config)
    micro_batch = _integer(job, "micro_batch", 1, MAX_MICRO_BATCH)
    recompute = _choice(job, "recompute", RECOMPUTE)
    try:
        attention = default_attention(config) if job["attention"] is None else _choice(job, "attention", ATTENTION)
        asked = _peak_activations(config, seq_len, micro_batch, attention, recompute)
        full = _peak_activations(config, seq_len, micro_batch, attention, "full")
    except JobError:
        raise
    except ValueError as exc:
        if job["attention"] is not None:  # an attention transformers refuses for this family
            raise JobError("attention", "not_offered", str(exc)) from None
        raise JobError("config", "config_value", str(exc), key="model_type") from None
    return {"seq_len": seq_len, "micro_batch": micro_batch, "attention": attention, "recompute": recompute,
            "bytes": asked, "gb": bytes_to_gb(asked), "full_bytes": full, "full_gb": bytes_to_gb(full)}


def _serving(job: dict, config: ModelConfig) -> tuple[dict[str, int], int]:
    weights = _choice(job, "weights", SERVING_WEIGHTS)
    kv_dtype = _choice(job, "kv_dtype", KV_DTYPES)
    context = _tokens(job, "context", config)
    concurrent = _integer(job, "concurrent", 1, MAX_MICRO_BATCH)
    if weights == MXFP4 and not ships_mxfp4(config):
        raise JobError("weights", "not_offered", f"only {config.model_type} checkpoints that ship MXFP4 experts "
                       "(gpt_oss) are served in MXFP4")
    try:
        check_tensor_parallel(config, job["cards"])
    except ValueError as exc:
        raise _not_offered("cards", exc) from None
    memory = serving_memory_per_gpu(config, "bf16" if weights == MXFP4 else weights, context, concurrent,
                                    kv_dtype, job["cards"])
    one = serving_memory_per_gpu(config, "bf16", context, 1, kv_dtype, job["cards"]).kv_cache_bytes
    weight_bytes = mxfp4_weights_bytes_per_gpu(config, job["cards"]) if weights == MXFP4 else memory.weights_bytes
    return {"weights": weight_bytes, "kv_cache": memory.kv_cache_bytes}, one


def _card_fits(job: dict, kind: str, need: int, backward: int, activations: dict | None, kv_one: int,
               weights: int) -> tuple[list[dict], list[dict]]:
    reserve = _integer(job, "reserve_mib", 0, MAX_MIB)
    tight_fraction = _fraction(job, "tight_free_fraction", 0.0, 0.99)
    utilization = _fraction(job, "gpu_memory_utilization", 0.0, 1.0) if kind == "serving" else 1.0
    cards = job["gpus"]
    if not isinstance(cards, list):
        raise JobError("gpus", "choice", "must be a list of {key, memory_mib}")
    fit_list, short = [], []
    for card in sorted(cards, key=lambda c: c.get("memory_mib", 0) if isinstance(c, dict) else 0):
        if not isinstance(card, dict) or not isinstance(card.get("key"), str):
            raise JobError("gpus", "choice", "every card needs a key and memory_mib")
        memory_mib = _integer(card, "memory_mib", reserve + 1, MAX_MIB)
        if kind == "serving":
            capacity = math.floor(utilization * mib_to_bytes(memory_mib)) - mib_to_bytes(reserve)
        else:
            capacity = usable_bytes(memory_mib, reserve)
        if capacity <= 0 or not fits(need, capacity):
            continue
        margin = capacity - need
        fit: dict[str, Any] = {"gpu": card["key"], "capacity_bytes": capacity, "margin_bytes": margin,
                               "margin_gb": bytes_to_gb(margin)}
        peak = need
        if activations is not None:  # backward with these activations, and the step, must both hold
            verdict = training_verdict(need, backward, activations["bytes"], activations["full_bytes"], capacity)
            if verdict is None:
                short.append(fit)
                continue
            fit["recompute"] = activations["recompute"] if verdict == "none" else "full"
            peak = peak_bytes(need, backward, activations["bytes" if verdict == "none" else "full_bytes"])
        else:
            fit["max_concurrent"] = (capacity - weights) // kv_one if kv_one else None
        fit["peak_bytes"] = peak
        fit["tight"] = is_tight(peak, capacity, tight_fraction)  # the one rule (vram.fit.is_tight)
        fit["free_fraction"] = free_fraction(peak, capacity)
        fit_list.append(fit)
    return fit_list, short


def _speed_card(entry: dict) -> Card | None:
    """The ``speed`` of a ``gpus`` entry (``bf16_dense_tflops``, ``memory_bandwidth_gb_per_s``,
    ``peer_gb_per_s`` [low, high], ``peer_to_peer``, ``host_gb_per_s`` [low, high]: the cited
    figures of gpus.yaml and interconnects.yaml) as a ``vram.catalogue.Card``; None without one."""
    speed = entry.get("speed")
    if speed is None:
        return None
    try:
        return Card(entry["key"], entry["key"], float(speed["bf16_dense_tflops"]),
                    float(speed["memory_bandwidth_gb_per_s"]),
                    Bandwidth("peer", *map(float, speed["peer_gb_per_s"]), peer_to_peer=bool(speed["peer_to_peer"])),
                    Bandwidth("host", *map(float, speed["host_gb_per_s"])))
    except (KeyError, TypeError, ValueError) as exc:
        raise JobError("gpus", "choice", f"{entry['key']}: speed needs bf16_dense_tflops, memory_bandwidth_gb_per_s, "
                       f"peer_gb_per_s, peer_to_peer and host_gb_per_s ({exc})") from None


def _decode_bounds(job: dict, config: ModelConfig, fit_list: list[dict]) -> None:
    """Serving: each fitting card with a ``speed`` gets ``decode``, the roofline bound of
    ``vram.timing.decode_bound`` for ``concurrent`` sequences of ``context`` tokens over
    ``cards`` tensor-parallel GPUs: ``bytes_per_step`` read per GPU, and at most
    ``tokens_per_s_per_sequence_at_most`` and ``tokens_per_s_at_most`` (all sequences), whole
    tokens/s rounded up (still an upper bound). Not for MXFP4 weights (the bytes a token reads
    of a mixed MXFP4/bf16 checkpoint are not modelled)."""
    if job["weights"] == MXFP4:
        return
    cards = {c["key"]: c for c in job["gpus"]}
    for fit in fit_list:
        card = _speed_card(cards[fit["gpu"]])
        if card is None:
            continue
        bound = decode_bound(config, card.memory_bandwidth_gb_per_s, job["context"], job["concurrent"], job["cards"],
                             job["weights"], job["kv_dtype"])
        fit["decode"] = {"bytes_per_step": bound.bytes_per_step,
                         "tokens_per_s_per_sequence_at_most": math.ceil(bound.tokens_per_second_per_sequence),
                         "tokens_per_s_at_most": math.ceil(bound.tokens_per_second)}


def _money(value: Any) -> str | None:
    return None if value is None else str(value)


def _run_times(job: dict, config: ModelConfig, fit_list: list[dict]) -> dict[str, Any] | None:
    """Training: each fitting card's step and run time and cost (``vram.ranking.run_options``,
    ``vram.timing``, ``vram.billing``) written into its fit as ``time``, and the ranking
    (``rank_runs``: by cost when every fitting machine has a price, else by time). None when a
    fitting card has no ``speed``. ``prices``: gpu key -> EUR per hour of the machine of
    ``cards`` such cards."""
    tokens = _integer(job, "tokens", 1, MAX_TOKENS)
    prices = job["prices"]
    if not isinstance(prices, dict):
        raise JobError("prices", "choice", "must map a card's key to a price in euros per hour")
    parsed = {}
    for key, price in prices.items():
        try:
            parsed[key] = parse_price(price, f"prices.{key}")
        except ValueError as exc:
            raise JobError("prices", "price", str(exc), key=str(key)[:40]) from None
    cards = {c["key"]: c for c in job["gpus"]}
    speeds = {fit["gpu"]: _speed_card(cards[fit["gpu"]]) for fit in fit_list}
    if not fit_list or any(card is None for card in speeds.values()):
        return None
    options = []
    lora = None
    if job["kind"] == "lora":  # the targets as _lora read them
        targets = job["targets"]
        if targets != ALL_LINEAR:
            targets = tuple(t.strip() for t in targets.split(",") if t.strip())
        lora = {"rank": job["rank"], "target_modules": targets, "base_dtype": job["base_dtype"]}
    for fit in fit_list:
        key = fit["gpu"]
        price = {key: parsed[key]} if key in parsed else {}
        option, = run_options(config, tokens, {key: (speeds[key], job["cards"])}, price, job["zero_stage"],
                              job["seq_len"], job["micro_batch"], fit["recompute"], job["offload"] != "none", lora)
        step = option.step
        fit["time"] = {"step_s": step.step.as_list(), "compute_s": step.compute.as_list(),
                       "communication_s": step.communication.as_list(), "offload_s": step.offload.as_list(),
                       "bound": step.bound, "run_s": option.run_s.as_list(),
                       "run_shown": [shown_duration(option.run_s.low, False), shown_duration(option.run_s.high, True)],
                       "price_eur_per_hour": _money(option.price_eur_per_hour),
                       "cost_eur": None if option.cost_eur is None else [str(c) for c in option.cost_eur]}
        options.append(option)
    by, ranked = rank_runs(options)
    return {"tokens": tokens, "ranked_by": by, "order": [o.key for o in ranked],
            "unpriced": [o.key for o in options if o.price_eur_per_hour is None]}


def _machines_ram(job: dict) -> dict[str, int]:
    """``host_ram_gb`` checked: card key -> whole GB from 1 to ``MAX_HOST_RAM_GB``."""
    machines = job["host_ram_gb"]
    if not isinstance(machines, dict):
        raise JobError("host_ram_gb", "choice", "must map a card's key to its machine's RAM in GB")
    for key, ram in machines.items():
        if isinstance(ram, bool) or not isinstance(ram, int) or not 1 <= ram <= MAX_HOST_RAM_GB:
            raise JobError("host_ram_gb", "integer", f"{str(key)[:40]}: must be whole GB from 1 to "
                           f"{MAX_HOST_RAM_GB:,}, got {ram!r}", minimum=1, maximum=MAX_HOST_RAM_GB)
    return machines


def _host_ram(job: dict, host: int, fit_list: list[dict], short: list[dict]) -> None:
    """Training with offload: write into every card's fit whether the RAM of its machine
    (``host_ram_gb``: card key -> whole GB) holds the ``host`` bytes the offload pins, or
    None for both when the machine's RAM is not given."""
    machines = _machines_ram(job)
    for fit in fit_list + short:
        ram = machines.get(fit["gpu"])
        fit["host_ram"] = {"machine_gb": ram, "holds": None if ram is None else host <= ram * 10**9}


def answer_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """Answer one job (module docstring): a JSON-able dict.

    Keys: ``kind``, ``cards``, ``params``/``active_params`` (of the whole model), ``model_type``
    and ``layers`` (what was read from the config.json),
    ``per_gpu_bytes``/``per_gpu_gb`` (model states and framework buffers, or weights and
    KV cache, on one card), ``parts`` (``[[part, bytes, gb]]``, largest first),
    ``host_bytes``/``host_gb`` (host RAM per machine for offload), ``activations``
    (training, LoRA: ``seq_len``, ``micro_batch``, ``attention``, ``recompute``, ``bytes``
    and ``full_bytes`` with their GB), ``kv_per_sequence_bytes`` (serving), ``fits`` and
    ``short`` (per card: ``gpu``, ``capacity_bytes``, ``margin_bytes``/``margin_gb``; a fit also
    ``peak_bytes``, ``free_fraction`` (at the peak), ``tight``, ``recompute`` or ``max_concurrent``) and ``notes``. Training
    and LoRA: ``accounting``, the name of the formula the bytes come from
    (``vram.accounting.ACCOUNTINGS``: what it assumes, e.g. "ddp-amp" or "ddp-bf16"). Training
    and LoRA on cards given with their ``speed``: each fit's ``time`` (``step_s``, ``compute_s``,
    ``communication_s``, ``offload_s``, ``run_s`` [low, high] seconds, ``run_shown`` (its ends
    as ``vram.timing.shown_duration`` writes them), ``bound``,
    ``price_eur_per_hour`` and ``cost_eur`` [low, high] as decimal strings or None) and
    ``run`` (``tokens``, ``ranked_by`` "cost" or "time", ``order`` of the fitting cards,
    ``unpriced``: those without a price, smallest first, why the order is by time).
    Training with offload: each card's ``host_ram`` (``machine_gb``, ``holds``: True, False
    or None where ``host_ram_gb`` does not give its machine's RAM).
    Serving: each fit's ``decode`` (``_decode_bounds``: tokens/s at most).
    Raises JobError (one line, naming the field).
    """
    job = normalised(job)
    kind = _choice(job, "kind", KINDS)
    config = read_config(job["config"])
    _integer(job, "cards", 1, MAX_CARDS)
    _machines_ram(job)
    activations, host, notes, kv_one, backward = None, 0, [], 0, None
    if kind == "serving":
        parts, kv_one = _serving(job, config)
    else:
        parts, host, notes, backward = (_training if kind == "training" else _lora)(job, config)
        activations = _activations(job, config)
    need = sum(parts.values())
    fit_list, short = _card_fits(job, kind, need, need if backward is None else backward, activations, kv_one,
                                 parts.get("weights", 0))
    if host:
        _host_ram(job, host, fit_list, short)
    ordered = sorted(((k, v) for k, v in parts.items() if v), key=lambda kv: (-kv[1], PART_ORDER.index(kv[0])))
    count = _cached_params(config)
    answer: dict[str, Any] = {
        "kind": kind, "cards": job["cards"], "params": count.total, "active_params": count.active,
        "model_type": config.model_type, "layers": config.num_hidden_layers,
        "max_context": config.max_position_embeddings,
        "per_gpu_bytes": need, "per_gpu_gb": bytes_to_gb(need), "backward_bytes": need if backward is None else backward,
        "parts": [[k, v, bytes_to_gb(v)] for k, v in ordered],
        "host_bytes": host, "host_gb": bytes_to_gb(host),
        "fits": fit_list, "short": short, "notes": notes,
    }
    if activations is not None:
        answer["accounting"] = job_accounting(job)  # what the bytes assume (vram.accounting.ACCOUNTINGS)
        answer["activations"] = activations
        if kind in ("training", "lora"):
            run = _run_times(job, config, fit_list)
            if run is not None:
                answer["run"] = run
    else:
        answer["kv_per_sequence_bytes"] = kv_one
        answer["kv_per_sequence_gb"] = bytes_to_gb(kv_one)
        _decode_bounds(job, config, fit_list)
    return answer


def answer_json(job_text: str) -> str:
    """``answer_job`` from and to JSON text (what the browser's worker calls): the answer, or
    ``{"error": JobError.as_dict()}`` for bad input. Sorted keys, compact separators: the
    same text as ``python -m vram job --json``."""
    try:
        job = json.loads(job_text)
        if not isinstance(job, dict):
            raise JobError("job", "choice", "must be a JSON object")
        result: dict[str, Any] = answer_job(job)
    except JobError as exc:
        result = {"error": exc.as_dict()}
    return dumps(result)


def dumps(result: Mapping[str, Any]) -> str:
    """The one JSON text of an answer (sorted keys, compact, ASCII)."""
    return json.dumps(result, sort_keys=True, separators=(",", ":"))
