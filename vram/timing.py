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
- **Offload** (``host_traffic``): what each GPU moves over its own PCIe link (``host_link``)
  per micro-batch and per optimizer step, from both directions at once at the link's high
  end to one after the other at its low end (``host_link_seconds``). DeepSpeed's
  ``offload_optimizer`` (ZeRO-Offload, Ren et al. 2021, arXiv:2101.06840, its data flow): each
  GPU sends its bf16 gradient partition (2P/N bytes) to the host and receives its updated bf16
  parameter partition (2P/N); with ``offload_param`` (ZeRO-3) the parameter partitions live in
  host memory and come to the GPU for each of the two all-gathers of a micro-batch (forward,
  backward), 2P/N each, and nothing comes back after the step. FSDP2's ``CPUOffloadPolicy``
  (``torch/distributed/fsdp/_fully_shard/_fsdp_param.py``, ``all_gather_inputs``: the sharded
  parameter copied to the device before each all-gather, then cast to ``param_dtype``;
  ``_fsdp_collectives.py``, ``foreach_reduce``: the reduce-scatter output copied to the CPU):
  the fp32 shards (4P/N) to the GPU for each all-gather (two per micro-batch with
  ``reshard_after_forward=True``, one with False), the fp32 gradient shards (4P/N) back; the
  step runs on the CPU. The CPU's own step is counted apart, below.
- **The CPU's optimizer step** under offload (``cpu_optimizer_seconds``): Adam on the host
  reads and writes every byte of its state once per step, so it lasts at least those bytes
  over the host's memory bandwidth. DeepSpeed's CPU Adam (``csrc/includes/cpu_adam.h``,
  ``Step_AVX``, deepspeedai/DeepSpeed at 14e1981) loads the fp32 gradient, first and second
  moment and parameter of each element and stores the parameter and both moments: 16 + 12 =
  ``ADAM_HOST_BYTES_PER_PARAM`` = 28 bytes per parameter (PyTorch's fused AdamW on the CPU,
  FSDP2's ``CPUOffloadPolicy``, touches the same four fp32 tensors). Every rank of a machine
  updates its shard at once from the same memory, so the machine's whole parameter count
  goes through one host's bandwidth, ``HOST_MEMORY_GB_PER_S``: from two channels of DDR4-3200
  (a desktop board, 2 x 25.6 GB/s, JEDEC JESD79-4's 3,200 MT/s x 8 bytes) to two sockets of
  eight channels of DDR5-4800 (16 x 38.4 GB/s: the two Xeon Platinum 8480C, fourth-generation
  Xeon Scalable with eight channels each, and DDR5-4800 DIMMs of NVIDIA's 8 x H200 SXM system,
  mlcommons/inference_results_v4.1 closed/NVIDIA/systems/H200-SXM-141GBx8_TRT_MaxQ.json):
  51.2 to 614.4 GB/s, peaks a CPU approaches but does not pass, so the step is never shorter
  than the range's low end. The step runs after the last gradient reaches the host and before
  the updated weights leave it (ZeRO-Offload's delayed parameter update, which would hide it,
  is off by default): it adds to the step, never overlaps, once per optimizer step however
  many micro-batches it accumulates; under LoRA it updates the adapters only. Checked against
  torchtune's Llama 3.1 70B full fine-tune with CPU offload on 8 A100 (``measurements.yaml``).
- **Overlap**: the step is at least the longest of compute, communication and offload
  (perfect overlap) and at most their sum (none). Without peer-to-peer (GeForce: NCCL copies
  through host memory, its SHM transport) it is at least compute + communication: Answer.AI's
  dual-3090 and dual-4090 runs (``measurements.yaml``) lost, under FSDP against DDP, about what
  the gathered bytes take over the host path (3.7 s per step on the 3090s, whose old board
  gives the path's low end; 0.52 s on the 4090s at full x16, the path's high end), while
  their compute (10 s and 5 s) would have hidden all of it had the two overlapped.
- **Gradient accumulation** (``grad_accum`` micro-batches per optimizer step): compute and
  what repeats on every micro-batch count ``grad_accum`` times, what happens at the optimizer
  step once (``micro_share``). DDP accumulates without communication under ``no_sync``
  (PyTorch ``DistributedDataParallel.no_sync``: "gradients will be accumulated on module
  variables, which will later be synchronized in the first forward-backward pass exiting the
  context"), and DeepSpeed at ZeRO-0/1 reduces only at the accumulation boundary; DeepSpeed's
  ZeRO-2 reduce-scatters the gradients of every micro-batch ("ZeRO stage >= 2 communicates
  during non gradient accumulation boundaries as well", ``deepspeed/runtime/engine.py``,
  ``allreduce_gradients``) and all-gathers the updated weights once; ZeRO-3 gathers the
  weights for every forward and backward; FSDP2 reduce-scatters every micro-batch into the
  sharded gradients (``foreach_reduce``: ``sharded_param.grad._local_tensor += ...``): its
  ``set_requires_gradient_sync(False)`` would skip that but keep fp32 unsharded gradients of
  the whole model (``_fsdp_param.py``, ``to_accumulated_grad_if_needed``), not modelled. Only
  the last micro-batch's backward can hide the step's own communication: the step is at least
  (grad_accum - 1) x the longest part of a micro-batch + the longest part of the last one
  with the step's traffic, and at most the sum of everything.
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
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from .catalogue import Bandwidth, Card
from .communication import allgather_bytes_per_gpu, bytes_per_gpu_per_step
from .dtypes import NF4
from .family_spec import SLIDING
from .frameworks import OFFLOAD
from .lora import ALL_LINEAR, _qlora_base_parts, lora_adapter_params, lora_memory_per_gpu
from .models import ModelConfig, as_model_config, count_params
from .serving import serving_memory_per_gpu
from .sharding import check_world_size, check_zero_stage
from .validate import check_int, lookup

MFU = (0.33, 0.39)
MFU_SOURCE = (
    "torchtitan benchmarks/llama3_h100_202412_torchtitan.md: Llama 3.1 8B, FSDP2, 8 x H100, "
    "local batch 2, sequence 8,192, selective activation checkpointing, 5,762 tokens/s per GPU, "
    "33 % to 39 % MFU"
)
# Measured points the MFU range comes from: (tokens/s per GPU, sequence length, peak TFLOPS
# torchtitan divided by). Tests reproduce the range from them.
TORCHTITAN_H100 = {"fsdp": 5_762, "fsdp_compile": 6_667, "seq_len": 8_192, "peak_tflops": 989}
LORA_FLOPS_PER_FROZEN_PARAM = (Fraction(4), Fraction(6) / Fraction(5, 4))  # [Narayanan 2021, Hu 2021's 1.25x]
LORA_FLOPS_SOURCE = (
    "4 FLOPs per frozen parameter and token (no weight gradients: Narayanan et al. 2021, "
    "arXiv:2104.04473, appendix) to 4.8 (Hu et al. 2021, arXiv:2106.09685, section 4.2: "
    "LoRA trained 25 % faster than full fine-tuning on GPT-3 175B)"
)
RECOMPUTE_FACTOR = {"none": Fraction(1), "selective": Fraction(1), "full": Fraction(4, 3)}
BOUNDS = ("compute", "communication", "offload")
ADAM_HOST_BYTES_PER_PARAM = 28  # fp32 gradient, moments, parameter read (16); parameter, moments written (12)
HOST_MEMORY_GB_PER_S = (51.2, 614.4)  # a machine's host memory bandwidth: 2 x DDR4-3200 to 2 sockets x 8 x DDR5-4800
CPU_ADAM_SOURCE = (
    "28 bytes per parameter: DeepSpeed's CPU Adam (deepspeedai/DeepSpeed csrc/includes/cpu_adam.h at "
    "14e1981, Step_AVX: four fp32 loads, three stores); host memory 51.2 GB/s (two channels of "
    "DDR4-3200, 25.6 GB/s each, JEDEC JESD79-4) to 614.4 GB/s (two sockets of eight channels of "
    "DDR5-4800, 38.4 GB/s each: the two Intel Xeon Platinum 8480C and DDR5-4800 DIMMs of NVIDIA's "
    "8 x H200 SXM system, MLCommons inference v4.1)"
)
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
    """One optimizer step on every GPU: ``tokens_per_gpu`` (grad_accum x micro_batch x seq_len) each.

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
    grad_accum: int = 1  # micro-batches per optimizer step: ``tokens_per_gpu`` and every Span count them all

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


def lora_flops_per_token(
    config: ModelConfig, seq_len: int, adapter_params: int, recompute: str = "none"
) -> tuple[int, int]:
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


def compute_seconds(
    flops: float, bf16_dense_tflops: float, recompute: str = "none", utilisation: tuple[float, float] = MFU
) -> Span:
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
    once at the link's high end, one after the other at its low end. The CPU's step: ``cpu_optimizer_seconds``."""
    check_world_size(world_size)
    share = 2 * params / world_size
    return host_link_seconds(share, share, host)


def host_link_seconds(to_gpu_bytes: float, to_host_bytes: float, host: Bandwidth) -> Span:
    """Seconds one GPU's PCIe link (``host``) takes to move ``to_gpu_bytes`` from host memory and
    ``to_host_bytes`` back: both directions at once at the link's high end, one after the other
    at its low end. Raises ValueError for negative bytes."""
    if to_gpu_bytes < 0 or to_host_bytes < 0:
        raise ValueError(f"bytes over the host link must be >= 0, got {to_gpu_bytes!r}, {to_host_bytes!r}")
    return Span(
        max(to_gpu_bytes, to_host_bytes) / (host.high_gb_per_s * GB),
        (to_gpu_bytes + to_host_bytes) / (host.low_gb_per_s * GB),
    )


@dataclass(frozen=True)
class HostTraffic:
    """Bytes one GPU moves over its host link for the offload: on every micro-batch
    (``*_per_micro``) and once per optimizer step (``*_per_step``); to the GPU and to the host."""

    to_gpu_per_micro: float = 0.0
    to_host_per_micro: float = 0.0
    to_gpu_per_step: float = 0.0
    to_host_per_step: float = 0.0


NO_TRAFFIC = HostTraffic()
OFFLOAD_FRAMEWORKS = ("deepspeed", "zero-paper", "fsdp2")


def host_traffic(
    framework: str, zero_stage: int, world_size: int, trained_params: int, offload_params: bool, frozen_bytes: int = 0
) -> HostTraffic:
    """What one of ``world_size`` GPUs moves over its host link with the optimizer offloaded
    (module docstring, "Offload"): ``trained_params`` parameters with gradients and optimizer
    states; ``frozen_bytes`` of frozen parameters as stored (LoRA's base), which only an offload of
    the parameters moves. ``framework`` "fsdp2" is ``CPUOffloadPolicy`` (parameters always
    offloaded: ``offload_params`` must be True; the frozen shards as stored, the trained ones in
    fp32, copied for each all-gather, one per micro-batch at zero_stage 2, two at 3: the root
    module, which FSDP2 keeps gathered from forward to the end of backward, is counted twice too,
    an upper bound by one root shard, tests/vram/test_qlora_fsdp2.py); "deepspeed" and "zero-paper" are ``offload_optimizer`` (bf16
    gradient partitions to the host on every micro-batch from ZeRO-2 on, at the step at ZeRO-1;
    bf16 parameter partitions back after the step) and, at ZeRO-3, ``offload_param`` (bf16
    partitions to the GPU for both all-gathers of every micro-batch, nothing back after the
    step). Raises ValueError for a combination the framework does not offer."""
    lookup({f: f for f in OFFLOAD_FRAMEWORKS}, framework, "framework")
    check_world_size(world_size)
    check_zero_stage(zero_stage)
    n = world_size
    if framework == "fsdp2":
        if zero_stage not in (2, 3) or not offload_params:
            raise ValueError(
                "FSDP2 offloads with CPUOffloadPolicy, parameters with gradients and optimizer states, "
                "at zero_stage 2 or 3"
            )
        gathers = 2 if zero_stage == 3 else 1
        return HostTraffic(
            to_gpu_per_micro=gathers * (frozen_bytes + 4 * trained_params) / n, to_host_per_micro=4 * trained_params / n
        )
    if zero_stage == 0 or (offload_params and zero_stage != 3):
        raise ValueError("DeepSpeed offloads the optimizer from ZeRO-1 on and the parameters at ZeRO-3 only")
    gradients = 2 * trained_params / n
    if offload_params:
        return HostTraffic(to_gpu_per_micro=2 * (frozen_bytes + 2 * trained_params) / n, to_host_per_micro=gradients)
    if zero_stage == 1:
        return HostTraffic(to_host_per_step=gradients, to_gpu_per_step=gradients)
    return HostTraffic(to_host_per_micro=gradients, to_gpu_per_step=gradients)


def micro_share(framework: str, zero_stage: int) -> Fraction:
    """The share of one micro-batch's collective traffic (``communication_seconds``) that repeats
    on every micro-batch of an accumulated step; the rest happens once, at the optimizer step
    (module docstring, "Gradient accumulation"): 0 under DDP and ZeRO-1, 1/2 under DeepSpeed's
    (and the ZeRO paper's) ZeRO-2, 1 under ZeRO-3 and FSDP2. Raises ValueError."""
    lookup({f: f for f in OFFLOAD_FRAMEWORKS}, framework, "framework")
    check_zero_stage(zero_stage)
    if zero_stage <= 1:
        return Fraction(0)
    if zero_stage == 2 and framework != "fsdp2":
        return Fraction(1, 2)
    return Fraction(1)


def cpu_optimizer_seconds(params: int, host_memory_gb_per_s: tuple[float, float] = HOST_MEMORY_GB_PER_S) -> Span:
    """Seconds of Adam's step on the host of one machine whose GPUs train ``params`` parameters
    with the optimizer offloaded (module docstring): ``ADAM_HOST_BYTES_PER_PARAM`` x ``params``
    over the host memory bandwidth [low, high] GB/s, from its high end (the shortest step) to
    its low end. Raises ValueError for a negative count or a non-positive bandwidth."""
    check_int(params, "params", 0)
    low, high = host_memory_gb_per_s
    if not 0 < low <= high:
        raise ValueError(f"a host memory bandwidth is a range 0 < low <= high GB/s, got [{low!r}, {high!r}]")
    work = ADAM_HOST_BYTES_PER_PARAM * params
    return Span(work / (high * GB), work / (low * GB))


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
    *,
    offload_params: bool = False,
    grad_accum: int = 1,
    framework: str = "deepspeed",
) -> StepTime:
    """Time of one optimizer step of a full training of ``config`` on ``world_size`` cards:
    ``grad_accum`` micro-batches of ``micro_batch`` x ``seq_len`` tokens per GPU and the
    gradients' collectives (module docstring: what repeats on every micro-batch under
    ``framework`` at ``zero_stage``), at ``utilisation`` of the dense peak (``compute_seconds``),
    with the optimizer offloaded (``offload_optimizer``, and ``offload_params``: DeepSpeed's
    ``offload_param``; under FSDP2 both, ``CPUOffloadPolicy``; ``host_traffic``). Memory is not
    checked here (``vram.frameworks``, ``vram.fit``).

    Returns ``StepTime`` (seconds). Raises ValueError for a bad config or argument.
    """
    config = as_model_config(config)
    check_int(micro_batch, "micro_batch", 1)
    per_token = flops_per_token(config, seq_len)
    tokens = micro_batch * seq_len
    compute = compute_seconds(per_token * tokens, card.bf16_dense_tflops, recompute, utilisation)
    params = count_params(config).total  # every expert's weights and gradients travel
    communication = communication_seconds(params, world_size, zero_stage, card.peer)
    traffic = (
        host_traffic(framework, zero_stage, world_size, params, offload_params) if offload_optimizer else NO_TRAFFIC
    )
    cpu = cpu_optimizer_seconds(params) if offload_optimizer else ZERO
    return _step(
        world_size,
        tokens,
        per_token,
        compute,
        communication,
        traffic,
        card.host,
        micro_share(framework, zero_stage),
        grad_accum,
        overlap=card.peer.peer_to_peer,
        serial=cpu,
    )


def _step(
    world_size: int,
    tokens: int,
    per_token: int,
    compute: Span,
    communication: Span,
    traffic: HostTraffic,
    host: Bandwidth,
    share: Fraction,
    grad_accum: int,
    per_token_high: int | None = None,
    overlap: bool = True,
    serial: Span = ZERO,
) -> StepTime:
    """One optimizer step of ``grad_accum`` micro-batches, each of ``compute`` and ``share`` of
    ``communication``, the rest of it at the step, and the host ``traffic`` (module docstring);
    without ``overlap`` (no peer-to-peer) compute and communication add up. ``serial``: what
    neither overlaps nor is overlapped (the CPU's optimizer step, once per optimizer step),
    added to both ends of the step and counted in ``offload``."""
    accum = check_int(grad_accum, "grad_accum", 1)
    micro_comm = Span(float(communication.low * share), float(communication.high * share))
    last_comm = communication  # the last micro-batch's share and the step's own
    micro_off = host_link_seconds(traffic.to_gpu_per_micro, traffic.to_host_per_micro, host)
    last_off = host_link_seconds(
        traffic.to_gpu_per_micro + traffic.to_gpu_per_step, traffic.to_host_per_micro + traffic.to_host_per_step, host
    )
    earlier = accum - 1

    def total(one: Span, last: Span, extra: Span = ZERO) -> Span:
        return Span(
            math.fsum([earlier * one.low, last.low, extra.low]), math.fsum([earlier * one.high, last.high, extra.high])
        )

    def shortest(comm: Span, off: Span) -> float:
        # Without peer-to-peer the collectives are copies through host memory (NCCL's SHM transport):
        # Answer.AI's dual-3090 and dual-4090 runs (measurements.yaml) lost under FSDP against DDP about
        # the gathered bytes' time, which their compute would have hidden: no overlap is assumed there.
        return max(compute.low, comm.low, off.low) if overlap else max(compute.low + comm.low, off.low)

    parts = {
        "compute": Span(accum * compute.low, accum * compute.high),
        "communication": total(micro_comm, last_comm),
        "offload": total(micro_off, last_off, serial),
    }
    low = math.fsum([earlier * shortest(micro_comm, micro_off), shortest(last_comm, last_off), serial.low])
    # fsum: correctly rounded, so every Python gives the same bits (3.12's sum() compensates, 3.11's does not)
    step = Span(low, math.fsum(p.high for p in parts.values()))
    bound = max(BOUNDS, key=lambda name: parts[name].middle)
    return StepTime(
        world_size,
        accum * tokens,
        per_token,
        parts["compute"],
        parts["communication"],
        parts["offload"],
        step,
        bound,
        per_token_high,
        accum,
    )


@functools.lru_cache(maxsize=256)
def _lora_sizes(
    config: ModelConfig, rank: int, target_modules: str | tuple[str, ...], base_dtype: str
) -> tuple[int, int, int]:
    """(trainable adapter parameters, bytes of the whole frozen base as stored, those of its
    parameters: QLoRA's quantisation constants are not parameters, never sharded or offloaded)."""
    adapters = lora_adapter_params(config, rank, target_modules)
    stored = lora_memory_per_gpu(config, rank, 1, 0, target_modules, base_dtype).base_weights_bytes
    constants = _qlora_base_parts(config)[1] if base_dtype == NF4 else 0
    return adapters, stored, stored - constants


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
    *,
    offload: str = "none",
    grad_accum: int = 1,
    framework: str = "deepspeed",
) -> StepTime:
    """Time of one LoRA (``base_dtype`` nf4: QLoRA) optimizer step of ``grad_accum`` micro-batches
    of ``micro_batch`` x ``seq_len`` tokens per GPU on ``world_size`` cards under ZeRO
    ``zero_stage`` of ``framework`` (module docstring: FLOPs from ``lora_flops_per_token``, the
    adapters' gradients exchanged as in full training, at stage 3 the frozen base all-gathered
    twice per micro-batch; what repeats on every micro-batch). With ``utilisation`` (a calibrated
    range, ``vram.calibration``, measured with the low FLOPs count) the compute is that count at
    that range; without, the FLOPs range at torchtitan's ``MFU``. ``offload``: "none",
    "optimizer" (DeepSpeed's ``offload_optimizer`` of the adapters) or "optimizer+params"
    (DeepSpeed's ``offload_param`` too, or FSDP2's ``CPUOffloadPolicy``: the frozen base comes
    from host memory for every all-gather; ``host_traffic``). Memory is not checked here
    (``vram.lora_memory_per_gpu``, ``vram.lora_offload``). Returns ``StepTime``, seconds, with
    ``flops_per_token_high``. Raises ValueError for a bad config, rank, target or argument."""
    config = as_model_config(config)
    check_int(micro_batch, "micro_batch", 1)
    check_world_size(world_size)
    check_zero_stage(zero_stage)
    targets = target_modules if isinstance(target_modules, str) else tuple(target_modules)
    adapters, base, parameters = _lora_sizes(config, rank, targets, base_dtype)
    low, high = lora_flops_per_token(config, seq_len, adapters, recompute)
    tokens = micro_batch * seq_len
    if utilisation is None:
        fast, slow = (
            compute_seconds(low * tokens, card.bf16_dense_tflops),
            compute_seconds(high * tokens, card.bf16_dense_tflops),
        )
    else:
        fast = slow = compute_seconds(low * tokens, card.bf16_dense_tflops, utilisation=utilisation)
    communication = communication_seconds(adapters, world_size, zero_stage, card.peer)
    if zero_stage == 3 and world_size > 1:
        gathers = 2 * allgather_bytes_per_gpu(base, world_size)  # in forward and again in backward
        communication = Span(
            communication.low + gathers / (card.peer.high_gb_per_s * GB),
            communication.high + gathers / (card.peer.low_gb_per_s * GB),
        )
    lookup({o: o for o in OFFLOAD}, offload, "offload")
    traffic = (
        NO_TRAFFIC
        if offload == "none"
        else host_traffic(framework, zero_stage, world_size, adapters, offload == "optimizer+params", parameters)
    )
    cpu = ZERO if offload == "none" else cpu_optimizer_seconds(adapters)  # the adapters' Adam on the host
    return _step(
        world_size,
        tokens,
        low,
        Span(fast.low, slow.high),
        communication,
        traffic,
        card.host,
        micro_share(framework, zero_stage),
        grad_accum,
        high,
        overlap=card.peer.peer_to_peer,
        serial=cpu,
    )


def run_seconds(tokens: int, step: StepTime) -> Span:
    """Wall-clock seconds to train on ``tokens`` tokens (dataset tokens x epochs) at ``step``'s
    pace. Raises ValueError for tokens < 1."""
    check_int(tokens, "tokens", 1)
    rate = step.tokens_per_second
    return Span(tokens / rate.high, tokens / rate.low)


DURATION_UNITS_S = {"days": 86_400, "h": 3_600, "min": 60, "s": 1}


def shown_duration(seconds: float, up: bool) -> list[list[str | float]]:
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
        shown: list[list[str | float]] = [["days", days]]
        return [*shown, ["h", hours]] if hours else shown
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
def _decode_bytes_per_step(
    config: ModelConfig, context_length: int, batch: int, tensor_parallel: int, weight_dtype: str, kv_dtype: str
) -> int:
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
