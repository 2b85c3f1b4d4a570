"""LoRA and QLoRA with host memory: FSDP2's ``CPUOffloadPolicy`` and DeepSpeed ZeRO-3's
``offload_optimizer`` and ``offload_param``, per GPU and per machine.

The recipe this is for: Answer.AI's FSDP-QLoRA trains Llama-2 70B on two 24 GB cards
(``AnswerDotAI/fsdp_qlora``, README.md at 02fe695, "Finetune Llama-2 70B on Dual 24GB GPUs":
``--train_type qlora --use_gradient_checkpointing true --use_cpu_offload true``, "roughly 55GB
of CPU RAM for model loading and FSDP CPU offloading"): the 4-bit base sharded over the two
cards and its shards kept in host memory, gathered one layer at a time.

FSDP2 (``lora_offload_memory`` with framework "fsdp2", zero_stage 2 or 3): ``fully_shard(...,
offload_policy=CPUOffloadPolicy())`` moves every sharded parameter to the CPU
(``torch/distributed/fsdp/_fully_shard/_fsdp_param.py``, ``_init_sharded_param``), copies each
shard to the GPU before its all-gather (``all_gather_inputs``) and each reduce-scatter output
back to the CPU (``_fsdp_collectives.py``, ``foreach_reduce``); the optimizer then steps on the
CPU over CPU tensors. So what ``vram.lora.lora_fsdp2_memory`` counts splits in two:

- host, per machine of M GPUs: M x (the base shards, 2 B per FSDP2 element, and the fp32 adapter
  shards, their gradient shards and AdamW states, 16A/N);
- GPU: FSDP2's buffers at the fullest moment of backward, as without offload, plus the
  all-gather inputs of the largest FSDP2 group copied from the host (2 B per element of its
  rank-0 shard, bf16 after ``param_dtype``; at the prefetch's copy-in, before this block's
  adapter gradients exist: an upper bound by at most their 2a; without offload FSDP2 copies the
  same shard into one flat buffer, ``_get_param_all_gather_inputs``' foreach copy, which
  ``vram.lora.lora_fsdp2_memory`` does not count yet), and QLoRA's quantisation constants, which
  are not parameters: bitsandbytes keeps them with the module, on the GPU that dequantises. No
  optimizer step on the GPU.

Oracle: real ``fully_shard`` with ``CPUOffloadPolicy(pin_memory=False)`` on 2 gloo ranks, QLoRA
on a small Llama (tests/vram/test_qlora_fsdp2.py, scenario ``reshard_offload``): the host
tensors, FSDP2's buffers and every all-gather's inputs measured.

DeepSpeed ZeRO-3 (framework "deepspeed", zero_stage 3): ``zero.Init`` partitions every
parameter, frozen ones included, while the optimizer builds fp32 partitions only for those that
require gradients (``deepspeed/runtime/zero/stage3.py``, ``_get_trainable_parameter_groups``).
DeepSpeed 0.19's estimator (``estimate_zero3_model_states_mem_needs``, stage3.py:4016-4052)
counts, per trainable parameter, 2 B of bf16 partition (on the GPU, or in host memory with
``offload_param``) and 16 B in host memory with ``offload_optimizer`` (fp32 master, two
moments, fp32 gradients), and 4 B per parameter of the largest module gathered whole. So for A
adapter parameters and a frozen base of Pb elements (bf16, or QLoRA's packed data in bf16
storage and the bf16 rest):

- GPU: 4L + 2A/N + 2Pb/N with ``offload_optimizer`` alone, 4L with ``offload_param`` too (plus
  QLoRA's constants, whole on every GPU);
- host per machine: M x (16A/N), or M x (18A/N + 2Pb/N) with ``offload_param``.

Each partition is whole elements (ceil, as ``vram.deepspeed_zero``). Oracle:
tests/vram/test_lora_offload.py: the estimator over the adapters plus, for the frozen base,
what the estimator's two ``cpu_offload_params`` settings differ by (its bf16 partition); the
largest module's 4L is the estimator's, an upper bound here since frozen weights get no
gradients. Not modelled: ZeRO-1/2 with offload (refused), NVMe offload.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import prod

from .breakdown import model_shape
from .dtypes import NF4
from .fsdp2 import fsdp2_chunk_rows, rank0_shard_params
from .lora import (
    ALL_LINEAR,
    ModelLike,
    _qlora_base_parts,
    lora_adapter_params,
    lora_fsdp2_memory,
    lora_targets,
    nf4_packed_bf16_rows,
    qlora_fsdp2_shape,
)
from .models import ModelConfig, as_model_config, count_params, layer_modules
from .sharding import check_world_size, shard_elements
from .validate import check_int

BF16 = 2
LARGEST_LAYER_BYTES = 4  # DeepSpeed's estimator: bf16 weights + bf16 gradients of the module gathered whole
HOST_OPTIMIZER_BYTES = 16  # DeepSpeed's estimator with offload_optimizer: fp32 master, two moments, fp32 gradients
OFFLOAD_FRAMEWORKS = ("fsdp2", "deepspeed")
FSDP2_NOTE = (
    "FSDP2 with CPUOffloadPolicy: the {base} base shards and the fp32 adapters with their gradients and "
    "AdamW states in host memory, each shard copied to the GPU for its all-gather and the gradients back; "
    "the optimizer steps on the CPU (vram.lora_offload)"
)
DEEPSPEED_NOTE = (
    "DeepSpeed ZeRO-3 with offload_optimizer{params}: the adapters' fp32 master, moments and "
    "gradients in host memory{where}; DeepSpeedCPUAdam steps on the CPU (vram.lora_offload)"
)


class OffloadNotModelled(ValueError):
    """An offload the framework does not offer for LoRA, or that is not modelled here."""


@dataclass(frozen=True)
class LoraOffloadMemory:
    """Bytes of a LoRA/QLoRA job with host memory (``lora_offload_memory``): on one GPU the
    frozen base it keeps (a partition, or QLoRA's constants only), the adapters' bf16 partition
    (DeepSpeed without ``offload_param``) and the working buffers of backward; ``host_bytes``
    per machine of ``gpus_per_machine`` GPUs. ``adapter_params`` is the model's total."""

    framework: str
    world_size: int
    zero_stage: int
    offload_params: bool
    adapter_params: int
    base_weights_bytes: int
    adapter_weights_bytes: int
    working_bytes: int
    host_bytes: int
    notes: tuple[str, ...]

    @property
    def per_gpu_bytes(self) -> int:
        """Everything on one GPU, at backward's fullest moment (the step runs on the CPU)."""
        return self.base_weights_bytes + self.adapter_weights_bytes + self.working_bytes


def lora_offload_memory(
    config: ModelLike,
    rank: int,
    world_size: int,
    framework: str,
    zero_stage: int,
    offload_params: bool,
    target_modules: str | Iterable[str] = ALL_LINEAR,
    base_dtype: str = "bf16",
    gpus_per_machine: int | None = None,
) -> LoraOffloadMemory:
    """LoRA (``base_dtype`` bf16) or QLoRA (nf4) with host memory on ``world_size`` GPUs (module
    docstring): ``framework`` "fsdp2" at ``zero_stage`` 2 or 3 with ``offload_params`` True
    (``CPUOffloadPolicy`` offloads parameters, gradients and optimizer states together), or
    "deepspeed" at zero_stage 3 (``offload_optimizer``, and ``offload_param`` when
    ``offload_params``). ``gpus_per_machine``: GPUs sharing one host's RAM (default all).

    Returns ``LoraOffloadMemory`` in bytes. Raises ``OffloadNotModelled`` (a ValueError) for an
    offload the framework and stage do not offer here, ValueError (ConfigError) for a bad config,
    rank, target, world size or base, or what ``lora_fsdp2_memory`` does not model."""
    config = as_model_config(config)
    n = check_world_size(world_size)
    gpus = n if gpus_per_machine is None else check_int(gpus_per_machine, "gpus_per_machine", 1)
    if n % gpus:
        raise ValueError(f"gpus_per_machine {gpus} must divide world_size {n}")
    if framework == "fsdp2":
        if zero_stage not in (2, 3):
            raise OffloadNotModelled("CPUOffloadPolicy is an FSDP2 option: it needs zero_stage 2 or 3, not DDP")
        if not offload_params:
            raise OffloadNotModelled(
                "FSDP2 offloads with CPUOffloadPolicy: parameters, gradients and optimizer "
                "states together; offload optimizer+params"
            )
        return _fsdp2(config, rank, n, zero_stage, target_modules, base_dtype, gpus)
    if framework == "deepspeed":
        if zero_stage != 3:
            raise OffloadNotModelled(
                "LoRA with offload is modelled under DeepSpeed ZeRO-3 (offload_optimizer, "
                "offload_param) and FSDP2 (CPUOffloadPolicy)"
            )
        return _deepspeed(config, rank, n, offload_params, target_modules, base_dtype, gpus)
    raise OffloadNotModelled(
        f"LoRA with offload is modelled under {' and '.join(OFFLOAD_FRAMEWORKS)}, not {framework!r}"
    )


def _constants(config: ModelConfig, base_dtype: str) -> int:
    return _qlora_base_parts(config)[1] if base_dtype == NF4 else 0


def _fsdp2(
    config: ModelConfig, rank: int, n: int, zero_stage: int, targets: str | Iterable[str], base_dtype: str, gpus: int
) -> LoraOffloadMemory:
    memory = lora_fsdp2_memory(config, rank, n, zero_stage, targets, base_dtype=base_dtype)
    constants = _constants(config, base_dtype)
    shards = (
        memory.base_weights_bytes
        - constants
        + memory.adapter_weights_bytes
        + memory.adapter_gradients_bytes
        + memory.adapter_optimizer_bytes
    )
    working = memory.backward_working_bytes + BF16 * largest_group_shard(config, rank, n, targets, base_dtype)
    base = "4-bit NF4" if base_dtype == NF4 else "bf16"
    return LoraOffloadMemory(
        "fsdp2",
        n,
        zero_stage,
        True,
        memory.adapter_params,
        constants,
        0,
        working,
        shards * gpus,
        (FSDP2_NOTE.format(base=base),),
    )


def largest_group_shard(
    config: ModelLike,
    rank: int,
    world_size: int,
    target_modules: str | Iterable[str] = ALL_LINEAR,
    base_dtype: str = "bf16",
) -> int:
    """Elements of the largest rank-0 shard of one FSDP2 group when LoRA runs under ``fully_shard``
    per decoder layer and on the root: a layer's base parameters (QLoRA: each decoder
    ``nn.Linear`` weight as its packed bf16 rows) and adapters, or the root (embedding, final
    norm, lm_head), each parameter ceil(dim0 / N) rows (``vram.fsdp2``). What ``CPUOffloadPolicy``
    copies to the GPU before that group's all-gather. Raises ValueError (ConfigError)."""
    config = as_model_config(config)
    n = check_world_size(world_size)
    packed = base_dtype == NF4
    layer_base, largest = 0, 0
    for index in range(config.num_hidden_layers):
        base = 0
        for module in layer_modules(config, index):
            for name, dims in module.shapes:
                stored = dims
                if packed and module.kind == "linear" and name == "weight":
                    stored = (nf4_packed_bf16_rows(prod(dims)), 1)
                base += fsdp2_chunk_rows(stored[0], n) * prod(stored[1:])
        adapters = sum(
            fsdp2_chunk_rows(rank, n) * t.in_features + fsdp2_chunk_rows(t.out_features, n) * rank
            for t in lora_targets(config, index, target_modules)
        )
        layer_base += base
        largest = max(largest, base + adapters)
    shape = qlora_fsdp2_shape(config) if packed else model_shape(config)
    return max(largest, rank0_shard_params(shape, n) - layer_base)


def _deepspeed(
    config: ModelConfig,
    rank: int,
    n: int,
    offload_params: bool,
    targets: str | Iterable[str],
    base_dtype: str,
    gpus: int,
) -> LoraOffloadMemory:
    if base_dtype not in ("bf16", NF4):
        raise ValueError(
            f"LoRA with DeepSpeed's offload is modelled with a bf16 or nf4 (QLoRA) base, got {base_dtype!r}"
        )
    adapters = lora_adapter_params(config, rank, targets)
    base = qlora_fsdp2_shape(config).params if base_dtype == NF4 else count_params(config).total  # bf16 elements
    adapter_share, base_share = shard_elements(adapters, n), shard_elements(base, n)
    largest = model_shape(config).largest_layer_params
    assert largest is not None  # known for a config
    host = HOST_OPTIMIZER_BYTES * adapter_share + (BF16 * (adapter_share + base_share) if offload_params else 0)
    on_gpu = 0 if offload_params else BF16
    note = DEEPSPEED_NOTE.format(
        params=" and offload_param" if offload_params else "",
        where=", the base and adapter bf16 partitions too" if offload_params else "",
    )
    return LoraOffloadMemory(
        "deepspeed",
        n,
        3,
        offload_params,
        adapters,
        on_gpu * base_share + _constants(config, base_dtype),
        on_gpu * adapter_share,
        LARGEST_LAYER_BYTES * largest,
        host * gpus,
        (note,),
    )
