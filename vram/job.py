"""One reader's job, answered: bytes per card, what takes them, and which cards hold it.

``answer_job(job)`` is the one place where "find the GPU" does arithmetic. The site's
precomputed answers (``hooks/finder/compute.py``), the command line (``python -m vram job``) and
the browser (this package run by Pyodide in a Web Worker, ``docs/assets/finder-worker.js``)
all call it, so the three give the same bytes for the same job.

A job is a JSON-able mapping (``JOB_FIELDS`` lists every key and its default):

- ``kind``: "training" (``vram.framework_memory`` under ``framework``/``zero_stage``, with
  ``optimizer``, its ``optimizer_impl`` (foreach, fused, forloop) and ``offload``), "lora" (``vram.lora_memory_per_gpu``: DDP or DeepSpeed
  ZeRO-1/2/3, ``rank``, ``targets``, ``base_dtype`` "nf4" = QLoRA; FSDP2 at zero_stage 2 or 3 with a
  bf16 or nf4 base: ``vram.lora_fsdp2_memory``, with ``optimizer_impl``; with ``offload``,
  FSDP2's ``CPUOffloadPolicy`` or DeepSpeed ZeRO-3's offload: ``vram.lora_offload_memory``) or "serving"
  (``vram.serving_memory_per_gpu``, tensor parallel over ``cards``; ``weights``,
  ``kv_dtype``, ``context``, ``concurrent`` sequences, ``gpu_memory_utilization``, and
  ``max_num_batched_tokens``, vLLM's prefill chunk, which sets what its sliding-window layers
  reserve: ``vram.serving.kv_cache_tokens``; the answer says which it assumed);
- ``config``: the model's parsed ``config.json`` (read by ``vram.model_config_from_dict``);
- ``cards``: data-parallel GPUs (training, LoRA) or the tensor-parallel size (serving);
- training and LoRA: ``seq_len`` tokens, ``micro_batch`` sequences, ``recompute`` and
  ``attention`` (None: the one transformers runs the family with) of the activations
  (``vram.activation_memory``; for LoRA the full fine-tuning figure, a lower bound), and
  ``grad_accum`` micro-batches per optimizer step (the memory of one micro-batch is the same
  under every framework modelled: DDP's ``no_sync`` accumulates into the gradients it holds,
  DeepSpeed's estimators do not depend on it, FSDP2 reduce-scatters each micro-batch into its
  sharded gradients; ``vram.timing``'s module docstring for the time);
- the catalogue: ``gpus`` (``[{"key", "memory_mib"}]``, nvidia-smi's totals, and optionally
  ``speed``: ``vram.catalogue.card_speed``, the cited peaks and links), ``reserve_mib`` (CUDA
  context and NCCL buffers; required with ``gpus``, no default: the catalogue's, gpus.yaml,
  is the one definition) and ``tight_free_fraction`` (``vram.fit.TIGHT_FREE_FRACTION``);
- the run (training on cards with a ``speed``): ``tokens`` to train (dataset x epochs) and
  ``prices`` (card key -> EUR per hour of the machine of ``cards`` such cards, the guide's
  or the reader's). Each fitting card gets its time per step and run (``vram.timing``), its
  cost (``vram.billing``: per minute, 15 minutes at least) and what bounds the step; the
  machines are ranked by ``vram.ranking.rank_runs`` (by cost when every one has a price, else
  by time). LoRA and QLoRA the same, from ``vram.timing.lora_step``'s FLOPs (frozen weights
  without weight gradients). Serving: each fitting card's decoding bound
  (``vram.timing.decode_bound``, memory bandwidth: an upper bound), not for MXFP4 weights.
- ``calibration``: ``vram.calibration.Calibration.as_job()`` of the published measurements
  (``measurements.yaml``); with it each time says which runs back it (``backing``) and is
  computed at its class's range, a MoE or communication-bound run warns (``run["warnings"]``), and a
  decoding bound gets the share the published runs reached of it; without it, torchtitan's ``MFU``.
- offload (training, LoRA): ``host_ram_gb`` (card key -> the system RAM of the machine of ``cards``
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
holds (``max_concurrent``). Every kind: a fit's ``peak_bytes`` is the most the job holds on
the card (training and LoRA: ``vram.fit.peak_bytes`` with the activations of the
recomputation the card runs with; serving: weights and KV cache), ``free_fraction`` what
that leaves of the capacity, and ``tight`` the one rule of ``vram.fit.is_tight`` (less than
``tight_free_fraction``, ``vram.fit.TIGHT_FREE_FRACTION`` unless the job says, left free at the peak).

The input is checked apart, by ``vram.job_input.check_job`` (every key read, range-checked
and typed before any arithmetic); bad input raises ``JobError`` (a ValueError) whose
``field`` names the job key, ``code`` the kind of fault and ``limits`` what was allowed: one
line, for the CLI and the page. A choice the calculator does not model is ``JobError``
"not_offered", raised here. The run a job makes on a fitting card (its recomputation,
offload, micro-batch and adapters) is settled by one function, ``settle_run``, which
``python -m vram time`` uses too (``settled_runs``).
Sizes are bytes (ints) with their GB (10**9 bytes) beside them, computed here.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .accounting import accounting
from .activations import activation_memory, default_attention
from .breakdown import model_shape
from .calibration import job_class, serving_class
from .fit import fits, free_fraction, is_tight, mib_to_bytes, peak_bytes, training_verdict, usable_bytes
from .frameworks import OFFLOAD, framework_memory
from .job_input import (
    JOB_FIELDS,
    KINDS,
    KV_DTYPES,
    MAX_CARDS,
    MAX_GRAD_ACCUM,
    MAX_HOST_RAM_GB,
    MAX_MIB,
    MAX_RANK,
    MAX_TOKENS,
    SERVING_WEIGHTS,
    TRAINING_OPTIMIZERS,
    GpuEntry,
    Job,
    JobError,
    check_job,
    normalised,
    read_config,
)
from .lora import lora_adapter_params, lora_fsdp2_memory, lora_memory_per_gpu
from .lora_offload import OffloadNotModelled, lora_offload_memory
from .measurements import is_moe
from .models import ModelConfig, count_params
from .mxfp4 import MXFP4, mxfp4_weights_bytes_per_gpu, ships_mxfp4
from .ranking import rank_runs, run_options
from .serving import check_tensor_parallel, serving_memory_per_gpu
from .timing import decode_bound, shown_duration
from .units import bytes_to_gb

__all__ = [  # vram.job_input's names, importable from here as before the split
    "JOB_FIELDS",
    "KINDS",
    "KV_DTYPES",
    "MAX_CARDS",
    "MAX_GRAD_ACCUM",
    "MAX_HOST_RAM_GB",
    "MAX_MIB",
    "MAX_RANK",
    "MAX_TOKENS",
    "OFFLOAD",
    "SERVING_WEIGHTS",
    "TRAINING_OPTIMIZERS",
    "Job",
    "JobError",
    # this module's own
    "Need",
    "RunSetting",
    "answer_job",
    "answer_json",
    "asked_run",
    "check_job",
    "dumps",
    "global_batch",
    "normalised",
    "read_config",
    "settle_run",
    "settled_runs",
    "training_need",
]

PART_ORDER = ("weights", "gradients", "optimizer", "working", "base", "adapters", "kv_cache")

# Pure functions of a frozen ModelConfig, asked the same question by many jobs (the site's
# precomputed answers ask each model's a few hundred times): computed once per question.
_cached_shape = functools.lru_cache(maxsize=256)(model_shape)
_cached_params = functools.lru_cache(maxsize=256)(count_params)


@functools.lru_cache(maxsize=1024)
def _peak_activations(config: ModelConfig, seq_len: int, micro_batch: int, attention: str, recompute: str) -> int:
    return activation_memory(config, seq_len, micro_batch, attention, recompute).peak_bytes


def _not_offered(field: str, exc: ValueError) -> JobError:
    return JobError(field, "not_offered", str(exc))


# --- what one card holds ---------------------------------------------------------------------


def _training(job: Job) -> tuple[dict[str, int], int, list[str], int]:
    try:
        memory = framework_memory(
            job.framework,
            _cached_shape(job.config),
            job.cards,
            job.zero_stage,
            job.optimizer,
            job.offload != "none",
            job.offload == "optimizer+params",
            optimizer_impl=job.optimizer_impl,
        )
    except ValueError as exc:
        field = (
            "offload"
            if job.offload != "none" and "offload" in str(exc).lower()
            else "optimizer"
            if "optimizer" in str(exc) and job.optimizer != "adamw"
            else "framework"
        )
        raise _not_offered(field, exc) from None
    parts = {
        "weights": memory.weights_bytes,
        "gradients": memory.gradients_bytes,
        "optimizer": memory.optimizer_bytes,
        "working": memory.working_bytes,
    }
    return parts, memory.host_bytes, list(memory.notes), memory.backward_bytes


def _lora(job: Job) -> tuple[dict[str, int], int, list[str], int]:
    if job.framework == "zero-paper":
        raise JobError(
            "framework",
            "not_offered",
            "LoRA is modelled under DDP, DeepSpeed ZeRO-1/2/3 and FSDP2 "
            "(vram.lora), not in the ZeRO paper's accounting",
        )
    if job.offload != "none":
        return _lora_offload(job)
    if job.framework == "fsdp2" and job.zero_stage > 0:
        return _lora_fsdp2(job)
    try:
        memory = lora_memory_per_gpu(job.config, job.rank, job.cards, job.zero_stage, job.targets, job.base_dtype)
    except ValueError as exc:
        raise JobError("targets", "not_offered", str(exc)) from None
    adapters = memory.adapter_weights_bytes + memory.adapter_gradients_bytes + memory.adapter_optimizer_bytes
    notes = []
    if job.base_dtype == "nf4" and job.zero_stage == 3 and job.cards > 1:
        notes.append(QLORA_STORAGE_NOTE)
    return {"base": memory.base_weights_bytes, "adapters": adapters}, 0, notes, memory.total_bytes


QLORA_STORAGE_NOTE = (
    "QLoRA under ZeRO-3 or FSDP needs BitsAndBytesConfig(bnb_4bit_quant_storage=torch.bfloat16), "
    "the compute dtype, so the 4-bit data can be sharded"
)
LORA_FSDP2_NOTE = (
    "LoRA under FSDP2 (vram.lora_fsdp2_memory): the {base} base and the fp32 adapters sharded, FSDP2 "
    "gathering {what}; the frozen weights have no gradients, so only the adapters are reduce-scattered."
)


def _lora_fsdp2(job: Job) -> tuple[dict[str, int], int, list[str], int]:
    """LoRA under FSDP2 (``vram.lora_fsdp2_memory``): base shards, adapter states, and FSDP2's
    buffers at the fullest moment of backward or the optimizer step as ``working``."""
    base = job.base_dtype
    if base not in ("bf16", "nf4"):
        raise JobError(
            "framework",
            "not_offered",
            f"LoRA under FSDP2 is modelled with a bf16 or nf4 (QLoRA) base, not {base}; use DeepSpeed ZeRO-3 or DDP",
        )
    try:
        lora_adapter_params(job.config, job.rank, job.targets)
    except ValueError as exc:
        raise JobError("targets", "not_offered", str(exc)) from None
    try:
        memory = lora_fsdp2_memory(
            job.config, job.rank, job.cards, job.zero_stage, job.targets, job.optimizer_impl, base
        )
    except ValueError as exc:  # what FSDP2 is not modelled for (module docstring of vram.lora)
        raise JobError("framework", "not_offered", str(exc)) from None
    adapters = memory.adapter_weights_bytes + memory.adapter_gradients_bytes + memory.adapter_optimizer_bytes
    what = (
        "one decoder layer at a time (and the next one, prefetched)"
        if job.zero_stage == 3
        else "every layer from forward to its backward (reshard_after_forward=False)"
    )
    parts = {
        "base": memory.base_weights_bytes,
        "adapters": adapters,
        "working": memory.per_gpu_bytes - memory.states_bytes,
    }
    shown = "4-bit NF4 (its quantisation constants whole on every GPU)" if base == "nf4" else "bf16"
    notes = [LORA_FSDP2_NOTE.format(what=what, base=shown)] + ([QLORA_STORAGE_NOTE] if base == "nf4" else [])
    return parts, 0, notes, memory.backward_bytes


def _lora_offload(job: Job) -> tuple[dict[str, int], int, list[str], int]:
    """LoRA with host memory (``vram.lora_offload_memory``): FSDP2's ``CPUOffloadPolicy`` or
    DeepSpeed ZeRO-3's offload; what stays on the GPU by part, the host bytes per machine."""
    try:
        lora_adapter_params(job.config, job.rank, job.targets)
    except ValueError as exc:
        raise JobError("targets", "not_offered", str(exc)) from None
    try:
        memory = lora_offload_memory(
            job.config,
            job.rank,
            job.cards,
            job.framework,
            job.zero_stage,
            job.offload == "optimizer+params",
            job.targets,
            job.base_dtype,
        )
    except OffloadNotModelled as exc:  # an offload this framework and stage do not offer (vram.lora_offload)
        raise JobError("offload", "not_offered", str(exc)) from None
    except ValueError as exc:  # a base, depth or target the LoRA model does not cover
        raise JobError("framework", "not_offered", str(exc)) from None
    parts = {
        "base": memory.base_weights_bytes,
        "adapters": memory.adapter_weights_bytes,
        "working": memory.working_bytes,
    }
    notes = list(memory.notes) + ([QLORA_STORAGE_NOTE] if job.base_dtype == "nf4" else [])
    return parts, memory.host_bytes, notes, memory.per_gpu_bytes


def _activations(job: Job) -> dict[str, Any]:
    try:
        attention = default_attention(job.config) if job.attention is None else job.attention
        asked = _peak_activations(job.config, job.seq_len, job.micro_batch, attention, job.recompute)
        full = _peak_activations(job.config, job.seq_len, job.micro_batch, attention, "full")
    except ValueError as exc:
        if job.attention is not None:  # an attention transformers refuses for this family
            raise JobError("attention", "not_offered", str(exc)) from None
        raise JobError("config", "config_value", str(exc), key="model_type") from None
    return {
        "seq_len": job.seq_len,
        "micro_batch": job.micro_batch,
        "attention": attention,
        "recompute": job.recompute,
        "bytes": asked,
        "gb": bytes_to_gb(asked),
        "full_bytes": full,
        "full_gb": bytes_to_gb(full),
    }


@dataclass(frozen=True)
class Need:
    """What a training or LoRA job holds on one card, whichever the card: ``parts`` (bytes of
    the model states and the framework's buffers, by part), ``host_bytes`` (host RAM per
    machine for offload), ``notes``, ``backward_bytes`` (what backward holds besides the
    activations) and ``activations`` (``answer_job``'s ``activations``: peak bytes with the
    recomputation asked, ``bytes``, and with full recomputation, ``full_bytes``)."""

    parts: dict[str, int]
    host_bytes: int
    notes: list[str]
    backward_bytes: int
    activations: dict[str, Any]

    @property
    def per_gpu_bytes(self) -> int:
        """The most the framework holds without activations (the optimizer step included)."""
        return sum(self.parts.values())


def training_need(job: Job) -> Need:
    """``Need`` of a checked training or LoRA job. Raises JobError "not_offered" for a choice
    the calculator does not model."""
    parts, host, notes, backward = (_training if job.kind == "training" else _lora)(job)
    return Need(parts, host, notes, backward, _activations(job))


def _serving(job: Job) -> tuple[dict[str, int], int]:
    if job.weights == MXFP4 and not ships_mxfp4(job.config):
        raise JobError(
            "weights",
            "not_offered",
            f"only {job.config.model_type} checkpoints that ship MXFP4 experts (gpt_oss) are served in MXFP4",
        )
    try:
        check_tensor_parallel(job.config, job.cards)
    except ValueError as exc:
        raise _not_offered("cards", exc) from None
    memory = serving_memory_per_gpu(
        job.config,
        "bf16" if job.weights == MXFP4 else job.weights,
        job.context,
        job.concurrent,
        job.kv_dtype,
        job.cards,
        job.max_num_batched_tokens,
    )
    one = serving_memory_per_gpu(
        job.config, "bf16", job.context, 1, job.kv_dtype, job.cards, job.max_num_batched_tokens
    ).kv_cache_bytes
    weight_bytes = mxfp4_weights_bytes_per_gpu(job.config, job.cards) if job.weights == MXFP4 else memory.weights_bytes
    return {"weights": weight_bytes, "kv_cache": memory.kv_cache_bytes}, one


# --- the run a job makes on a card: one place for the finder and `vram time` -----------------


@dataclass(frozen=True)
class RunSetting:
    """How a training or LoRA job runs on a card that holds it, as its time is counted
    (``vram.timing.training_step`` / ``lora_step``, through ``vram.ranking.run_options``):
    ``seq_len`` tokens x ``micro_batch`` sequences per GPU and micro-batch, ``grad_accum``
    micro-batches per optimizer step, ``recompute`` (the job's, or "full" where only full
    recomputation lets the activations fit), ``offload`` (``vram.frameworks.OFFLOAD``) under
    ``framework``, and for LoRA its adapters (``lora``: ``rank``, ``target_modules``,
    ``base_dtype``)."""

    seq_len: int
    micro_batch: int
    recompute: str
    offload: str
    lora: dict[str, Any] | None
    grad_accum: int = 1
    framework: str = "deepspeed"

    def timing(self) -> dict[str, Any]:
        """The keyword arguments of ``vram.ranking.run_options`` after its ``zero_stage``."""
        return {
            "seq_len": self.seq_len,
            "micro_batch": self.micro_batch,
            "recompute": self.recompute,
            "offload": self.offload,
            "lora": self.lora,
            "grad_accum": self.grad_accum,
            "framework": self.framework,
        }


def settle_run(job: Job, need: Need, capacity_bytes: int) -> RunSetting | None:
    """The run of a checked training or LoRA ``job`` on a card of ``capacity_bytes`` (its usable
    bytes, ``vram.fit.usable_bytes``): the job's recomputation where backward holds the
    activations it asks for, "full" where only fully recomputed ones fit (``vram.fit.
    training_verdict``); None where the card does not hold the job even then. The offload,
    micro-batch and adapters are the job's. ``answer_job`` and ``python -m vram time`` both
    settle a run here, so the finder and the command line time the same run."""
    activations = need.activations
    verdict = training_verdict(
        need.per_gpu_bytes, need.backward_bytes, activations["bytes"], activations["full_bytes"], capacity_bytes
    )
    if verdict is None:
        return None
    return replace(asked_run(job), recompute=job.recompute if verdict == "none" else "full")


def asked_run(job: Job) -> RunSetting:
    """The run a checked training or LoRA job asks for, whatever the card: its recomputation,
    offload, micro-batch, accumulation, framework and adapters."""
    return RunSetting(
        job.seq_len, job.micro_batch, job.recompute, job.offload, job.lora_adapters(), job.grad_accum, job.framework
    )


def _capacity(job: Job, gpu: GpuEntry) -> int:
    """Serving: vLLM's share of the card less the reserve; else the card less the reserve."""
    reserve_mib = job.reserve_mib or 0  # check_job: given with every card
    if job.kind == "serving":
        return math.floor(job.gpu_memory_utilization * mib_to_bytes(gpu.memory_mib)) - mib_to_bytes(reserve_mib)
    return usable_bytes(gpu.memory_mib, reserve_mib)


def settled_runs(job: Mapping[str, Any]) -> dict[str, RunSetting | None]:
    """A training or LoRA job's run on each card of its ``gpus`` (card key -> ``settle_run``'s
    ``RunSetting``, None where the card does not hold the job), as ``answer_job`` settles it.
    Raises JobError for bad input, a choice not modelled, or a serving job."""
    checked = check_job(job)
    if checked.kind == "serving":
        raise JobError(
            "kind",
            "choice",
            "must be training or lora: a serving job has no run to settle",
            choices=[kind for kind in KINDS if kind != "serving"],
        )
    need = training_need(checked)
    return {gpu.key: settle_run(checked, need, _capacity(checked, gpu)) for gpu in checked.gpus}


# --- the answer ------------------------------------------------------------------------------


def _card_fits(
    job: Job, need_bytes: int, need: Need | None, kv_one: int, weights: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, RunSetting]]:
    fit_list, short, runs = [], [], {}
    for gpu in job.gpus:
        capacity = _capacity(job, gpu)
        if capacity <= 0 or not fits(need_bytes, capacity):
            continue
        margin = capacity - need_bytes
        fit: dict[str, Any] = {
            "gpu": gpu.key,
            "capacity_bytes": capacity,
            "margin_bytes": margin,
            "margin_gb": bytes_to_gb(margin),
        }
        if need is not None:  # backward with these activations, and the step, must both hold
            run = settle_run(job, need, capacity)
            if run is None:
                short.append(fit)
                continue
            fit["recompute"] = run.recompute
            runs[gpu.key] = run
            activations = need.activations["bytes" if run.recompute == job.recompute else "full_bytes"]
            peak = peak_bytes(need_bytes, need.backward_bytes, activations)
        else:
            fit["max_concurrent"] = (capacity - weights) // kv_one if kv_one else None
            peak = need_bytes
        fit["peak_bytes"] = peak
        fit["tight"] = is_tight(peak, capacity, job.tight_free_fraction)  # the one rule (vram.fit.is_tight)
        fit["free_fraction"] = free_fraction(peak, capacity)
        fit_list.append(fit)
    return fit_list, short, runs


def _decode_bounds(job: Job, fit_list: list[dict[str, Any]]) -> None:
    """Serving: each fitting card with a ``speed`` gets ``decode``, the roofline bound of
    ``vram.timing.decode_bound`` for ``concurrent`` sequences of ``context`` tokens over
    ``cards`` tensor-parallel GPUs: ``bytes_per_step`` read per GPU, and at most
    ``tokens_per_s_per_sequence_at_most`` and ``tokens_per_s_at_most`` (all sequences), whole
    tokens/s rounded up (still an upper bound). Not for MXFP4 weights (the bytes a token reads
    of a mixed MXFP4/bf16 checkpoint are not modelled)."""
    if job.weights == MXFP4:
        return
    speeds = {gpu.key: gpu.speed for gpu in job.gpus}
    for fit in fit_list:
        card = speeds[fit["gpu"]]
        if card is None:
            continue
        bound = decode_bound(
            job.config,
            card.memory_bandwidth_gb_per_s,
            job.context,
            job.concurrent,
            job.cards,
            job.weights,
            job.kv_dtype,
        )
        fit["decode"] = {
            "bytes_per_step": bound.bytes_per_step,
            "tokens_per_s_per_sequence_at_most": math.ceil(bound.tokens_per_second_per_sequence),
            "tokens_per_s_at_most": math.ceil(bound.tokens_per_second),
        }
        backing = (
            None
            if job.calibration is None
            else job.calibration.backing(fit["gpu"], serving_class("", job.weights, job.concurrent, job.cards)[1:])
        )
        if backing is not None:  # the published decoding runs' share of the roofline: a realistic range
            low, high = backing.range.utilisation
            fit["decode"]["backing"] = backing.as_dict()
            fit["decode"]["tokens_per_s_per_sequence"] = [
                math.floor(bound.tokens_per_second_per_sequence * low),
                math.ceil(bound.tokens_per_second_per_sequence * high),
            ]
            fit["decode"]["tokens_per_s"] = [
                math.floor(bound.tokens_per_second * low),
                math.ceil(bound.tokens_per_second * high),
            ]


def _money(value: Any) -> str | None:
    return None if value is None else str(value)


def _run_times(job: Job, fit_list: list[dict[str, Any]], runs: dict[str, RunSetting]) -> dict[str, Any] | None:
    """Training: each fitting card's step and run time and cost (``vram.ranking.run_options``,
    ``vram.timing``, ``vram.billing``) for the run ``settle_run`` settled, written into its fit
    as ``time``, and the ranking (``rank_runs``: by cost when every fitting machine has a
    price, else by time). None when a fitting card has no ``speed``. ``prices``: gpu key ->
    EUR per hour of the machine of ``cards`` such cards."""
    speeds = {gpu.key: gpu.speed for gpu in job.gpus if gpu.speed is not None}
    if not fit_list or any(fit["gpu"] not in speeds for fit in fit_list):
        return None
    options = []
    task = "full" if job.kind == "training" else "qlora" if job.base_dtype == "nf4" else "lora"
    klass = job_class("", is_moe(job.config), task, job.offload != "none")[1:]  # LoRA offloads too (vram.lora_offload)
    for fit in fit_list:
        key = fit["gpu"]
        price = {key: job.prices[key]} if key in job.prices else {}
        backing = None if job.calibration is None else job.calibration.backing(key, klass)
        share = None if backing is None else {key: backing.range.utilisation}
        (option,) = run_options(
            job.config,
            job.tokens,
            {key: (speeds[key], job.cards)},
            price,
            job.zero_stage,
            **runs[key].timing(),
            utilisation=share,
        )
        step = option.step
        fit["time"] = {
            "step_s": step.step.as_list(),
            "compute_s": step.compute.as_list(),
            "communication_s": step.communication.as_list(),
            "offload_s": step.offload.as_list(),
            "bound": step.bound,
            "run_s": option.run_s.as_list(),
            "run_shown": [shown_duration(option.run_s.low, False), shown_duration(option.run_s.high, True)],
            "price_eur_per_hour": _money(option.price_eur_per_hour),
            "cost_eur": None if option.cost_eur is None else [str(c) for c in option.cost_eur],
            "backing": None if backing is None else backing.as_dict(),
        }
        options.append(option)
    by, ranked = rank_runs(options)
    warnings = []
    if is_moe(job.config):
        warnings.append("expert_parallel")
    if any(o.step.communication.low > o.step.compute.high for o in options):
        warnings.append("communication_bound")
    found = {
        "tokens": job.tokens,
        "ranked_by": by,
        "order": [o.key for o in ranked],
        "unpriced": [o.key for o in options if o.price_eur_per_hour is None],
    }
    return found | ({"warnings": warnings} if warnings else {})


# What the published runs did that the guide's FSDP/ZeRO model on one machine does not describe,
# said beside the answer, each on a rule the answer itself shows:
# - "expert_parallel" (``run["warnings"]``): a mixture of experts; every MoE training run of
#   measurements.yaml split its experts over the GPUs.
# - "communication_bound" (``run["warnings"]``): on a fitting card the collectives at the link's
#   fastest outlast the compute at its slowest (the calibrated range): FSDP/ZeRO alone waits on
#   the link. The published runs of such models add tensor parallelism inside the machine
#   (torchtitan benchmarks/llama3_h100_202412_torchtitan.md: Llama 3.1 70B on FSDP 32 x TP 8,
#   405B on FSDP x TP 8 x PP 8; docs/performance.md at 9515a14: 405B "OOM for 1D parallelism
#   (FSDP2), so we only tested 2D"; NeMo AutoModel's Llama 3 70B LoRA: TP 2 inside 8 H100).
# - "several_machines" (``answer["warnings"]``): no card of the job holds it on one machine of
#   ``MACHINE_GPUS_MAX`` cards even with everything sharded (ZeRO-3), full recomputation and
#   one sequence per micro-batch: it needs several machines, or tensor / pipeline parallelism.
MACHINE_GPUS_MAX = 8  # the largest machine the guide describes: an HGX baseboard of 8 GPUs (interconnects.yaml)


def _needs_several_machines(job: Job) -> bool:
    """Training or LoRA: whether no card of ``job`` holds it on one machine of
    ``MACHINE_GPUS_MAX`` cards under ZeRO-3 with full recomputation and a micro-batch of one
    (``settle_run`` on each card; a probe the framework does not offer says nothing: False)."""
    probe = replace(job, cards=MACHINE_GPUS_MAX, zero_stage=3, micro_batch=1, recompute="full")
    try:
        need = training_need(probe)
    except JobError:
        return False
    return all(
        not fits(need.per_gpu_bytes, _capacity(probe, gpu)) or settle_run(probe, need, _capacity(probe, gpu)) is None
        for gpu in job.gpus
    )


def global_batch(job: Job) -> dict[str, int]:
    """A training or LoRA job's batch per optimizer step: ``micro_batch`` sequences per GPU and
    micro-batch, ``grad_accum`` micro-batches, on ``cards`` data-parallel GPUs: ``global_batch``
    sequences (micro_batch x grad_accum x cards, transformers' Trainer's "Total train batch size
    (w. parallel, distributed & accumulation)"), ``tokens_per_step`` (x ``seq_len``) and the
    ``optimizer_steps`` that train on the job's ``tokens`` (rounded up: a last, partial step
    still runs)."""
    sequences = job.micro_batch * job.grad_accum * job.cards
    per_step = sequences * job.seq_len
    return {
        "micro_batch": job.micro_batch,
        "grad_accum": job.grad_accum,
        "cards": job.cards,
        "global_batch": sequences,
        "tokens_per_step": per_step,
        "optimizer_steps": -(-job.tokens // per_step),
    }


def _host_ram(job: Job, host: int, fit_list: list[dict[str, Any]], short: list[dict[str, Any]]) -> None:
    """Training with offload: write into every card's fit whether the RAM of its machine
    (``host_ram_gb``: card key -> whole GB) holds the ``host`` bytes the offload pins, or
    None for both when the machine's RAM is not given."""
    for fit in fit_list + short:
        ram = job.host_ram_gb.get(fit["gpu"])
        fit["host_ram"] = {"machine_gb": ram, "holds": None if ram is None else host <= ram * 10**9}


def answer_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """Answer one job (module docstring): a JSON-able dict.

    Keys: ``kind``, ``cards``, ``params``/``active_params`` (of the whole model), ``model_type``
    and ``layers`` (what was read from the config.json),
    ``per_gpu_bytes``/``per_gpu_gb`` (model states and framework buffers, or weights and
    KV cache, on one card), ``parts`` (``[[part, bytes, gb]]``, largest first),
    ``host_bytes``/``host_gb`` (host RAM per machine for offload), ``activations``
    (training, LoRA: ``seq_len``, ``micro_batch``, ``attention``, ``recompute``, ``bytes``
    and ``full_bytes`` with their GB), ``kv_per_sequence_bytes`` and ``max_num_batched_tokens`` (serving), ``fits`` and
    ``short`` (per card: ``gpu``, ``capacity_bytes``, ``margin_bytes``/``margin_gb``,
    and, for a fit, ``peak_bytes``, ``free_fraction`` at the peak, ``tight``, ``recompute`` or
    ``max_concurrent``) and ``notes``. Training
    and LoRA: ``accounting``, the name of the formula the bytes come from
    (``vram.accounting.ACCOUNTINGS``: what it assumes, e.g. "ddp-amp" or "ddp-bf16"). Training
    and LoRA on cards given with their ``speed``: each fit's ``time`` (``step_s``, ``compute_s``,
    ``communication_s``, ``offload_s``, ``run_s`` [low, high] seconds, ``run_shown`` (its ends
    as ``vram.timing.shown_duration`` writes them), ``bound``,
    ``price_eur_per_hour`` and ``cost_eur`` [low, high] as decimal strings or None) and
    ``run`` (``tokens``, ``ranked_by`` "cost" or "time", ``order`` of the fitting cards,
    ``unpriced``: those without a price, the reason the order is by time); a step is an
    optimizer step of ``grad_accum`` micro-batches. Training and LoRA: ``batch``
    (``global_batch``: sequences and tokens per optimizer step, optimizer steps for ``tokens``).
    Training and LoRA with offload: each card's ``host_ram`` (``machine_gb``, ``holds``: True,
    False or None where ``host_ram_gb`` does not give its machine's RAM).
    Serving: each fit's ``decode`` (``_decode_bounds``: tokens/s at most). Training and LoRA that
    no card holds: ``warnings`` ["several_machines"] when not even one machine of
    ``MACHINE_GPUS_MAX`` such cards holds it under ZeRO-3, full recomputation and micro-batch 1.
    Raises JobError (one line, naming the field).
    """
    checked = check_job(job)
    config = checked.config
    need, host, notes, kv_one = None, 0, [], 0
    if checked.kind == "serving":
        parts, kv_one = _serving(checked)
        backward = sum(parts.values())
    else:
        need = training_need(checked)
        parts, host, notes, backward = need.parts, need.host_bytes, need.notes, need.backward_bytes
    need_bytes = sum(parts.values())
    fit_list, short, runs = _card_fits(checked, need_bytes, need, kv_one, parts.get("weights", 0))
    if host:
        _host_ram(checked, host, fit_list, short)
    ordered = sorted(((k, v) for k, v in parts.items() if v), key=lambda kv: (-kv[1], PART_ORDER.index(kv[0])))
    count = _cached_params(config)
    answer: dict[str, Any] = {
        "kind": checked.kind,
        "cards": checked.cards,
        "params": count.total,
        "active_params": count.active,
        "model_type": config.model_type,
        "layers": config.num_hidden_layers,
        "max_context": config.max_position_embeddings,
        "per_gpu_bytes": need_bytes,
        "per_gpu_gb": bytes_to_gb(need_bytes),
        "backward_bytes": backward,
        "parts": [[k, v, bytes_to_gb(v)] for k, v in ordered],
        "host_bytes": host,
        "host_gb": bytes_to_gb(host),
        "fits": fit_list,
        "short": short,
        "notes": notes,
    }
    if need is not None:
        # what the bytes assume (vram.accounting.ACCOUNTINGS)
        answer["accounting"] = accounting(
            checked.kind, checked.framework, checked.zero_stage, checked.optimizer, checked.base_dtype, checked.offload
        )
        answer["activations"] = need.activations
        answer["batch"] = global_batch(checked)
        run = _run_times(checked, fit_list, runs)
        if run is not None:
            answer["run"] = run
        if not fit_list and _needs_several_machines(checked):
            answer["warnings"] = ["several_machines"]
    else:
        answer["max_num_batched_tokens"] = checked.max_num_batched_tokens  # the prefill chunk vLLM is assumed to run
        answer["kv_per_sequence_bytes"] = kv_one
        answer["kv_per_sequence_gb"] = bytes_to_gb(kv_one)
        _decode_bounds(checked, fit_list)
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
