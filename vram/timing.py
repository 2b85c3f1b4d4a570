"""Time per training step and per run, and the decode-speed bound of serving: ranges, never points.

Every result is a ``Span`` [low, high] in seconds (or tokens/s), from cited inputs:

- **FLOPs per token** (``flops_per_token``), torchtitan's convention (``get_num_flop_per_token``,
  torchtitan/utils.py at commit 9dec370, the one that produced the measurements below):
  6 x the parameters a token goes through in matrix products (``count_params(...).active``:
  a mixture of experts counts its active experts; less the input embedding, a lookup, when
  it is not tied to ``lm_head``) + 12 x layers x heads x head_dim x sequence length for
  attention (2 matmuls forward, 4 backward, 2 FLOPs per multiply-add; causal masking not
  subtracted; a sliding-window layer attends to at most its window). Llama 3.1 8B at 8,192
  tokens: 6 x 7,504,924,672 + 12 x 32 x 32 x 128 x 8,192 = 57.9 GFLOP per token.
- **Compute time**: FLOPs / (dense BF16 peak x utilisation). Peaks: vendors' datasheets, per card
  in ``gpus.yaml``. The utilisation is a range handed in (``utilisation``): the calibrated range
  of the job's class, read from published measurements (``vram.calibration``,
  ``snippets/data/measurements.yaml``), which the site, the finder and the command line pass. A
  direct call without one uses ``MFU``, torchtitan ``benchmarks/llama3_h100_202412_torchtitan.md``:
  Llama 3.1 8B, FSDP2, 8 x H100, local batch 2, sequence 8,192, selective activation
  checkpointing, 5,762 tokens/s per GPU ("33% to 39% MFU", with and without torch.compile:
  6,667 tokens/s with it), one of those measurements.
  Full recomputation runs the forward twice: x 4/3 (Narayanan et al. 2021, arXiv:2104.04473,
  whose FLOPs count adds one more forward pass for activation recomputation: 4 passes' worth
  instead of 3). Selective recomputation is what the
  measurement ran with: x 1.
- **Communication time**: the bytes one GPU sends per step (``vram.communication``: DDP and
  ZeRO-1/2 one all-reduce's worth of gradients, ZeRO-3/FSDP2 two all-gathers of the weights
  plus a reduce-scatter; bf16 to fp32 gradients, the low and high end) divided by the link's
  bus bandwidth per direction (``interconnects.yaml``; nccl-tests doc/PERFORMANCE.md: the
  bytes each rank moves over busbw is the collective's time). Cards without peer-to-peer use
  the path through host memory (``without_p2p``).
- **Offload** (optimizer in host RAM, ZeRO-Offload, Ren et al. 2021, arXiv:2101.06840, its data flow):
  each GPU sends its fp16 gradient partition (2P/N bytes) to the host and receives its
  updated fp16 parameter partition (2P/N) over its own PCIe link (``host_link``): from both
  directions at once at the link's high end to one after the other at its low end. The CPU's
  Adam step is not counted: the offload time is what the link alone costs.
- **Overlap**: the step is at least the longest of compute, communication and offload
  (perfect overlap) and at most their sum (none). Without peer-to-peer (GeForce: NCCL copies
  through host memory) it is at least compute + communication: Answer.AI's dual-3090 runs
  (``measurements.yaml``) lost more under FSDP than under DDP than the gathered bytes take at
  the path's fastest.
- **LoRA and QLoRA** (``lora_flops_per_token``, ``lora_step``): the frozen weights get no
  gradient. A weight's backward costs twice its forward, half for the input's gradient and
  half for the weight's (Narayanan et al. 2021, arXiv:2104.04473, appendix: "the backward
  pass requires double the number of FLOPs since we need to calculate the gradients with
  respect to both input and weight tensors"), so a frozen weight costs 4 FLOPs per parameter
  and token instead of 6: the low end, ``LORA_FLOPS_PER_FROZEN_PARAM[0]``. The high end is the
  one measurement published: Hu et al. 2021 (LoRA, arXiv:2106.09685, section 4.2, "Practical
  benefits") saw training 25 % faster than full fine-tuning on GPT-3 175B, 6 / 1.25 = 4.8
  FLOPs' worth per frozen parameter (an oracle for that model only: elsewhere the range says
  no more than that). Adapters are trained (6 per parameter) and attention's 12 stays (it has
  no weights: its backward is the inputs' gradients). Full recomputation adds one forward
  (2 per parameter, 4 of attention's 12), Narayanan et al.'s count. QLoRA's dequantisation
  of the 4-bit weights is not counted: for ``base_dtype`` nf4 the time is a lower estimate.
  Communication: the adapters' gradients as in full training, plus at ZeRO-3 the two
  all-gathers of the frozen base (its bytes as stored: bf16, or the 4-bit data and bf16 rest;
  QLoRA's quantisation constants, about 0.127 bit per weight, stay on every GPU but are counted
  as gathered: a slight over-estimate of the traffic).
- **Serving** (``decode_bound``): a decoding step reads every weight a token goes through and
  the KV cache of every sequence once from memory, so tokens/s <= memory bandwidth / bytes
  read (the roofline limit, Williams et al. 2009): an upper bound, never a forecast.

Units in names: ``_s`` seconds, ``_tflops`` 10^12 FLOP/s, ``_gb_per_s`` 10^9 bytes/s.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from collections.abc import Iterable
from fractions import Fraction

from .catalogue import Bandwidth, Card
from .communication import allgather_bytes_per_gpu, bytes_per_gpu_per_step
from .lora import ALL_LINEAR, lora_adapter_params, lora_memory_per_gpu
from .models import SLIDING, ModelConfig, as_model_config, count_params
from .serving import serving_memory_per_gpu
from .sharding import check_world_size, check_zero_stage
from .validate import check_int, lookup

MFU = (0.33, 0.39)
MFU_SOURCE = ("torchtitan benchmarks/llama3_h100_202412_torchtitan.md: Llama 3.1 8B, FSDP2, 8 x H100, "
              "local batch 2, sequence 8,192, selective activation checkpointing, 5,762 tokens/s per GPU, "
              "33 % to 39 % MFU")
# Measured points the MFU range comes from: (tokens/s per GPU, sequence length, peak TFLOPS
# torchtitan divided by). Tests reproduce the range from them.
TORCHTITAN_H100 = {"fsdp": 5_762, "fsdp_compile": 6_667, "seq_len": 8_192, "peak_tflops": 989}
LORA_FLOPS_PER_FROZEN_PARAM = (Fraction(4), Fraction(6) / Fraction(5, 4))  # [Narayanan 2021, Hu 2021's 1.25x]
LORA_FLOPS_SOURCE = ("4 FLOPs per frozen parameter and token (no weight gradients: Narayanan et al. 2021, "
                     "arXiv:2104.04473, appendix) to 4.8 (Hu et al. 2021, arXiv:2106.09685, section 4.2: "
                     "LoRA trained 25 % faster than full fine-tuning on GPT-3 175B)")
RECOMPUTE_FACTOR = {"none": Fraction(1), "selective": Fraction(1), "full": Fraction(4, 3)}
BOUNDS = ("compute", "communication", "offload")
GB = 10**9
TERA = 10**12


@dataclass(frozen=True)
class Span:
    """A range [low, high] of one quantity (seconds, tokens/s, euros...)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not 0 <= self.low <= self.high:
            raise ValueError(f"a range needs 0 <= low <= high, got [{self.low!r}, {self.high!r}]")

    @property
    def middle(self) -> float:
        return (self.low + self.high) / 2

    def as_list(self) -> list[float]:
        return [self.low, self.high]


ZERO = Span(0.0, 0.0)


@dataclass(frozen=True)
class StepTime:
    """One training step on every GPU: ``tokens_per_gpu`` (micro_batch x seq_len) each.

    ``compute``, ``communication``, ``offload``: seconds; ``step``: [max of the three's lows,
    sum of their highs]; ``bound``: the part with the longest middle (``BOUNDS``).
    """

    world_size: int
    tokens_per_gpu: int
    flops_per_token: int
    compute: Span
    communication: Span
    offload: Span
    step: Span
    bound: str
    flops_per_token_high: int | None = None  # LoRA: the range's high end (``flops_per_token`` the low)

    @property
    def tokens_per_second(self) -> Span:
        """Tokens per second of the whole machine (all ``world_size`` GPUs)."""
        tokens = self.world_size * self.tokens_per_gpu
        return Span(tokens / self.step.high, tokens / self.step.low)


def flops_per_token(config: ModelConfig, seq_len: int) -> int:
    """Training FLOPs per token (forward and backward), torchtitan's convention (module
    docstring): 6 x matmul parameters + 12 x sum over layers of heads x head_dim x span,
    span = seq_len (a sliding layer: min(seq_len, window)). Raises ValueError for seq_len < 1."""
    matmul_params, attention = _matmul_and_attention(config, seq_len)
    return 6 * matmul_params + 12 * attention


@functools.lru_cache(maxsize=1024)  # a pure function of a frozen config, asked once per card by the finder
def _matmul_and_attention(config: ModelConfig, seq_len: int) -> tuple[int, int]:
    """(parameters a token multiplies, sum over layers of heads x head_dim x span): the two
    terms of ``flops_per_token`` before their factors."""
    config = as_model_config(config)
    check_int(seq_len, "seq_len", 1)
    lookup_params = 0 if config.tie_word_embeddings else config.vocab_size * config.hidden_size
    matmul_params = count_params(config).active - lookup_params
    window = config.sliding_window
    spans = (min(seq_len, window) if kind == SLIDING and window else seq_len for kind in config.layer_types)
    return matmul_params, config.num_attention_heads * config.head_dim * sum(spans)


def lora_flops_per_token(config: ModelConfig, seq_len: int, adapter_params: int, recompute: str = "none") -> tuple[int, int]:
    """LoRA/QLoRA FLOPs per token, [low, high] (module docstring): frozen matmul parameters x
    ``LORA_FLOPS_PER_FROZEN_PARAM`` (4 to 4.8, rounded up) + 6 x ``adapter_params`` + 12 x
    attention; full recomputation adds one forward (2 x all parameters + 4 x attention).
    Raises ValueError for seq_len < 1, adapter_params < 0 or an unknown recompute."""
    lookup(RECOMPUTE_FACTOR, recompute, "recompute")
    check_int(adapter_params, "adapter_params", 0)
    matmul_params, attention = _matmul_and_attention(config, seq_len)
    rest = 6 * adapter_params + 12 * attention
    if recompute == "full":
        rest += 2 * (matmul_params + adapter_params) + 4 * attention
    low, high = (math.ceil(factor * matmul_params) + rest for factor in LORA_FLOPS_PER_FROZEN_PARAM)
    return low, high


def compute_seconds(flops: int | float, bf16_dense_tflops: float, recompute: str = "none",
                    utilisation: tuple[float, float] = MFU) -> Span:
    """Seconds of ``flops`` model FLOPs at the card's dense BF16 peak x ``utilisation`` [low, high]
    (x 4/3 with full recomputation): the calibrated range of the job's class
    (``vram.calibration``), or torchtitan's ``MFU`` when none is handed in. Raises ValueError for
    a non-positive peak, an unknown recompute or a utilisation outside (0, 1]."""
    factor = lookup(RECOMPUTE_FACTOR, recompute, "recompute")
    if not 0 < bf16_dense_tflops < math.inf:
        raise ValueError(f"bf16_dense_tflops must be positive, got {bf16_dense_tflops!r}")
    low, high = check_utilisation(utilisation)
    work = flops * factor
    return Span(float(work / (bf16_dense_tflops * TERA * high)), float(work / (bf16_dense_tflops * TERA * low)))


def check_utilisation(utilisation: tuple[float, float]) -> tuple[float, float]:
    """``utilisation`` as (low, high) with 0 < low <= high <= 1; raises ValueError."""
    low, high = utilisation
    if not 0 < low <= high <= 1:
        raise ValueError(f"a utilisation is a range [low, high] within (0, 1], got [{low!r}, {high!r}]")
    return float(low), float(high)


def communication_seconds(params: int, world_size: int, zero_stage: int, link: Bandwidth) -> Span:
    """Seconds one GPU spends sending its share of a step's collectives over ``link``:
    bf16 gradients at the link's high end to fp32 gradients at its low end
    (``bytes_per_gpu_per_step`` / busbw). One GPU sends nothing: [0, 0]."""
    check_world_size(world_size)
    check_zero_stage(zero_stage)
    if world_size == 1:
        return ZERO
    low = bytes_per_gpu_per_step(params, world_size, zero_stage, grad_bytes_per_param=2)
    high = bytes_per_gpu_per_step(params, world_size, zero_stage, grad_bytes_per_param=4)
    return Span(low / (link.high_gb_per_s * GB), high / (link.low_gb_per_s * GB))


def offload_seconds(params: int, world_size: int, host: Bandwidth) -> Span:
    """Seconds of the optimizer offload's PCIe traffic per step and GPU (ZeRO-Offload): 2P/N
    bytes of fp16 gradients to the host and 2P/N of fp16 parameters back, both directions at
    once at the link's high end, one after the other at its low end. CPU time not counted."""
    check_world_size(world_size)
    share = 2 * params / world_size
    return Span(share / (host.high_gb_per_s * GB), 2 * share / (host.low_gb_per_s * GB))


def training_step(
    config: ModelConfig,
    card: Card,
    world_size: int,
    zero_stage: int,
    seq_len: int = 2048,
    micro_batch: int = 1,
    recompute: str = "none",
    offload_optimizer: bool = False,
    utilisation: tuple[float, float] = MFU,
) -> StepTime:
    """Time of one step (one micro-batch of ``micro_batch`` x ``seq_len`` tokens per GPU, then
    the gradients' collectives, no gradient accumulation) of a full training of ``config`` on
    ``world_size`` cards, at ``utilisation`` of the dense peak (``compute_seconds``). Memory is
    not checked here (``vram.frameworks``, ``vram.fit``).

    Returns ``StepTime`` (seconds). Raises ValueError for a bad config or argument.
    """
    config = as_model_config(config)
    check_int(micro_batch, "micro_batch", 1)
    per_token = flops_per_token(config, seq_len)
    tokens = micro_batch * seq_len
    compute = compute_seconds(per_token * tokens, card.bf16_dense_tflops, recompute, utilisation)
    params = count_params(config).total  # every expert's weights and gradients travel
    communication = communication_seconds(params, world_size, zero_stage, card.peer)
    offload = offload_seconds(params, world_size, card.host) if offload_optimizer else ZERO
    return _step(world_size, tokens, per_token, compute, communication, offload, overlap=card.peer.peer_to_peer)


def _step(world_size: int, tokens: int, per_token: int, compute: Span, communication: Span, offload: Span,
          per_token_high: int | None = None, overlap: bool = True) -> StepTime:
    parts = {"compute": compute, "communication": communication, "offload": offload}
    # fsum: correctly rounded, so every Python gives the same bits (3.12's sum() compensates, 3.11's does not)
    high = math.fsum(p.high for p in parts.values())
    # Without peer-to-peer the collectives are copies through host memory (NCCL's SHM transport):
    # Answer.AI's dual-3090 runs (measurements.yaml) were slower under FSDP than under DDP by more
    # than the bytes gathered at the path's fastest, so no overlap is assumed there.
    low = max(p.low for p in parts.values()) if overlap else \
        max(compute.low + communication.low, offload.low)
    step = Span(low, high)
    bound = max(BOUNDS, key=lambda name: parts[name].middle)
    return StepTime(world_size, tokens, per_token, compute, communication, offload, step, bound, per_token_high)


@functools.lru_cache(maxsize=256)
def _lora_sizes(config: ModelConfig, rank: int, target_modules: str | tuple[str, ...], base_dtype: str) -> tuple[int, int]:
    """(trainable adapter parameters, bytes of the whole frozen base as stored)."""
    adapters = lora_adapter_params(config, rank, target_modules)
    return adapters, lora_memory_per_gpu(config, rank, 1, 0, target_modules, base_dtype).base_weights_bytes


def lora_step(
    config: ModelConfig,
    card: Card,
    world_size: int,
    zero_stage: int,
    seq_len: int = 2048,
    micro_batch: int = 1,
    recompute: str = "none",
    rank: int = 16,
    target_modules: str | Iterable[str] = ALL_LINEAR,
    base_dtype: str = "bf16",
    utilisation: tuple[float, float] | None = None,
) -> StepTime:
    """Time of one LoRA (``base_dtype`` nf4: QLoRA) step of ``micro_batch`` x ``seq_len`` tokens
    per GPU on ``world_size`` cards under ZeRO ``zero_stage`` (module docstring: FLOPs from
    ``lora_flops_per_token``, the adapters' gradients exchanged as in full training, and at
    stage 3 the frozen base all-gathered twice). With ``utilisation`` (a calibrated range,
    ``vram.calibration``, measured with the low FLOPs count) the compute is that count at that
    range; without, the FLOPs range at torchtitan's ``MFU``. Memory is not checked here
    (``vram.lora_memory_per_gpu``). Returns ``StepTime``, seconds, with
    ``flops_per_token_high``. Raises ValueError for a bad config, rank, target or argument."""
    config = as_model_config(config)
    check_int(micro_batch, "micro_batch", 1)
    check_world_size(world_size)
    check_zero_stage(zero_stage)
    targets = target_modules if isinstance(target_modules, str) else tuple(target_modules)
    adapters, base = _lora_sizes(config, rank, targets, base_dtype)
    low, high = lora_flops_per_token(config, seq_len, adapters, recompute)
    tokens = micro_batch * seq_len
    if utilisation is None:
        fast, slow = compute_seconds(low * tokens, card.bf16_dense_tflops), compute_seconds(high * tokens, card.bf16_dense_tflops)
    else:
        fast = slow = compute_seconds(low * tokens, card.bf16_dense_tflops, utilisation=utilisation)
    communication = communication_seconds(adapters, world_size, zero_stage, card.peer)
    if zero_stage == 3 and world_size > 1:
        gathers = 2 * allgather_bytes_per_gpu(base, world_size)  # in forward and again in backward
        communication = Span(communication.low + gathers / (card.peer.high_gb_per_s * GB),
                             communication.high + gathers / (card.peer.low_gb_per_s * GB))
    return _step(world_size, tokens, low, Span(fast.low, slow.high), communication, ZERO, high,
                 overlap=card.peer.peer_to_peer)


def run_seconds(tokens: int, step: StepTime) -> Span:
    """Wall-clock seconds to train on ``tokens`` tokens (dataset tokens x epochs) at ``step``'s
    pace. Raises ValueError for tokens < 1."""
    check_int(tokens, "tokens", 1)
    rate = step.tokens_per_second
    return Span(tokens / rate.high, tokens / rate.low)


DURATION_UNITS_S = {"days": 86_400, "h": 3_600, "min": 60, "s": 1}


def shown_duration(seconds: float, up: bool) -> list[list]:
    """How a run's length is written: ``[[unit, number], ...]`` (units of ``DURATION_UNITS_S``),
    rounded down (``up`` False: a range's low end) or up, so a range never claims more than the
    model. Under a minute whole seconds; under an hour whole minutes; under two days hours to
    a tenth; from two days on whole days and whole hours (``[["days", 3], ["h", 5]]``, no
    hours when none). Exact arithmetic (``Fraction``), so every Python gives the same numbers.
    Raises ValueError for a negative or non-finite ``seconds``."""
    if not 0 <= seconds < math.inf:
        raise ValueError(f"seconds must be finite and >= 0, got {seconds!r}")
    exact = Fraction(seconds)
    whole = math.ceil if up else math.floor
    units = DURATION_UNITS_S
    if seconds >= 2 * units["days"]:
        days, hours = divmod(whole(exact / units["h"]), 24)
        return [["days", days]] + ([["h", hours]] if hours else [])
    if seconds >= units["h"]:
        return [["h", whole(exact / units["h"] * 10) / 10]]
    if seconds >= units["min"]:
        return [["min", whole(exact / units["min"])]]
    return [["s", whole(exact)]]


def speedup(one: StepTime, many: StepTime) -> Span:
    """How many times faster ``many`` (N cards) trains than ``one`` (1 card), same per-GPU batch.

    The same card reaches the same MFU in both, so compute cancels: N x c / step_N, from the
    slowest compute with the slowest communication and no overlap to the fastest compute
    hidden behind the fastest communication (at most N). Raises ValueError if ``one`` is not
    one card or the batches differ.
    """
    if one.world_size != 1 or one.tokens_per_gpu != many.tokens_per_gpu:
        raise ValueError("speedup compares one card with N cards at the same micro-batch")
    n, c, m, o = many.world_size, many.compute, many.communication, many.offload
    low = n * c.low / (c.low + m.high + o.high)
    high = n * c.high / max(c.high, m.low, o.low)
    return Span(low, high)


@functools.lru_cache(maxsize=1024)  # the same for every card: asked once per card by the finder
def _decode_bytes_per_step(config: ModelConfig, context_length: int, batch: int, tensor_parallel: int,
                           weight_dtype: str, kv_dtype: str) -> int:
    """Bytes each GPU reads per decoding step (``decode_bound``)."""
    memory = serving_memory_per_gpu(config, weight_dtype, context_length, batch, kv_dtype, tensor_parallel)
    counts = count_params(config)
    lookup_params = 0 if config.tie_word_embeddings else config.vocab_size * config.hidden_size
    read_share = Fraction(counts.active - lookup_params, counts.total)
    return math.ceil(memory.weights_bytes * read_share) + memory.kv_cache_bytes


@dataclass(frozen=True)
class DecodeBound:
    """Upper bounds of decoding speed (the memory-bandwidth roofline): ``bytes_per_step`` read
    by each GPU per decoding step (one token of each of ``batch`` sequences);
    ``tokens_per_second_per_sequence`` and ``tokens_per_second`` (all sequences) at most."""

    batch: int
    bytes_per_step: int
    tokens_per_second_per_sequence: float
    tokens_per_second: float


def decode_bound(
    config: ModelConfig,
    memory_bandwidth_gb_per_s: float,
    context_length: int,
    batch: int = 1,
    tensor_parallel: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
) -> DecodeBound:
    """At most how many tokens per second decoding reaches: each of ``tensor_parallel`` GPUs
    reads its share of the weights a token goes through (a mixture of experts: the active
    share; the input embedding of an untied model is a lookup and not counted) and the KV
    cache of ``batch`` sequences of ``context_length`` tokens, at the datasheet's memory
    bandwidth. A roofline upper bound: kernels, communication between the GPUs and
    scheduling only slow it down. Raises ValueError for bad input.
    """
    config = as_model_config(config)
    if not 0 < memory_bandwidth_gb_per_s < math.inf:
        raise ValueError(f"memory_bandwidth_gb_per_s must be positive, got {memory_bandwidth_gb_per_s!r}")
    step_bytes = _decode_bytes_per_step(config, context_length, batch, tensor_parallel, weight_dtype, kv_dtype)
    steps_per_s = memory_bandwidth_gb_per_s * GB / step_bytes
    return DecodeBound(batch, step_bytes, steps_per_s, steps_per_s * batch)
