"""LoRA and QLoRA memory: a frozen base plus small trainable adapters, on one GPU.

LoRA (Hu et al. 2021, arXiv:2106.09685, §4.1): a frozen ``nn.Linear`` W (in -> out) gets
B @ A with A: rank x in and B: out x rank, so rank * (in + out) trainable parameters per
adapted module. Only the adapters have gradients and optimizer states.

QLoRA (Dettmers et al. 2023, arXiv:2305.14314, §3): the frozen base is stored in 4-bit
NF4 with double-quantised constants (``vram.dtypes.nf4_bytes``: 4.127 bits per weight).
Assumed, as ``transformers``' bitsandbytes integration does: the weight matrices of the
decoder layers' ``nn.Linear`` modules (MoE experts and router included) are quantised, one
tensor each; embeddings, ``lm_head``, norms and biases stay in bf16.

Adapter bytes per parameter come from the optimizer (``vram.states.OPTIMIZERS``). The
default "adamw-fp32" matches PEFT, which keeps adapter weights in fp32
(``autocast_adapter_dtype=True``): 4 + 4 + 8 = 16 B per adapter parameter.
Activations are not included.

On several GPUs (``lora_memory_per_gpu``): the adapters are the only trainable
parameters, so ZeRO (Rajbhandari et al. 2019, arXiv:1910.02054, §5.1) shards their
optimizer states (stage 1), gradients (2) and weights (3) as ``vram.sharding`` does for
a full model. The frozen base has no gradients or optimizer states: stages 0-2 keep a
whole copy on every GPU; stage 3 (DeepSpeed ZeRO-3, FSDP ``FULL_SHARD``) partitions
every parameter, frozen ones included, so each GPU keeps 1/N of it (``transformers``
PR #29587 "Add support for FSDP+QLoRA and DeepSpeed ZeRO3+QLoRA": a 70B base in 4 bit,
35 GB, becomes 17.5 GB per GPU on two).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from .dtypes import NF4, nf4_bytes, tensor_bytes
from .models import ModelConfig, as_model_config, count_params, decoder_linears
from .sharding import check_world_size, check_zero_stage, model_states_per_gpu
from .states import BytesPerParam, as_bytes_per_param
from .validate import check_int, check_params

ModelLike = ModelConfig | Mapping[str, Any] | str | Path
# PEFT's usual "all linear layers" choice for llama-style models.
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BASE_DTYPES = ("fp32", "bf16", "fp16", NF4)


@dataclass(frozen=True)
class LoraMemory:
    """Bytes on one GPU: frozen base weights and the adapters' model states.

    ``adapter_params`` is the number of trainable parameters of the whole model (not a
    per-GPU share); every ``*_bytes`` field is what one GPU holds.
    """

    base_weights_bytes: int
    adapter_params: int
    adapter_weights_bytes: int
    adapter_gradients_bytes: int
    adapter_optimizer_bytes: int

    @property
    def total_bytes(self) -> int:
        """Base weights plus adapter weights, gradients and optimizer states (bytes)."""
        return (
            self.base_weights_bytes
            + self.adapter_weights_bytes
            + self.adapter_gradients_bytes
            + self.adapter_optimizer_bytes
        )


def lora_adapter_params(config: ModelLike, rank: int, target_modules: Iterable[str] = ALL_LINEAR) -> int:
    """Trainable LoRA parameters: layers x copies x rank x (in + out) over the targets.

    target_modules: names of ``vram.models.decoder_linears`` (q_proj ... down_proj; for
    mixtral w1, w2, w3, gate). Raises ValueError for rank < 1 or an unknown name.
    """
    config = as_model_config(config)
    check_int(rank, "rank", 1)
    linears = {lin.name: lin for lin in decoder_linears(config)}
    targets = tuple(target_modules)
    unknown = [name for name in targets if name not in linears]
    if unknown or not targets:
        raise ValueError(
            f"unknown LoRA target modules {unknown!r} for {config.model_type}; known: {', '.join(linears)}"
        )
    per_layer = sum(
        linears[n].copies * rank * (linears[n].in_features + linears[n].out_features) for n in set(targets)
    )
    return config.num_hidden_layers * per_layer


def _qlora_base_parts(config: ModelConfig) -> tuple[int, int, int]:
    """(packed 4-bit data, NF4 quantisation constants, bf16 rest) of a QLoRA base, in bytes."""
    quantized = packed = nf4_total = 0
    for lin in decoder_linears(config):
        n = lin.in_features * lin.out_features
        quantized += lin.weight_params
        packed += lin.copies * -(-n // 2)
        nf4_total += lin.copies * nf4_bytes(n)
    layers = config.num_hidden_layers
    rest = count_params(config).total - layers * quantized
    return layers * packed, layers * (nf4_total - packed), tensor_bytes(rest, "bf16")


def qlora_base_bytes(config: ModelLike) -> int:
    """Bytes of a QLoRA base: decoder Linear weights in NF4 (per tensor), the rest in bf16."""
    return sum(_qlora_base_parts(as_model_config(config)))


def _adapter_memory(base_weights_bytes: int, adapter_params: int, optimizer: str | BytesPerParam) -> LoraMemory:
    bpp = as_bytes_per_param(optimizer)
    return LoraMemory(
        base_weights_bytes=base_weights_bytes,
        adapter_params=adapter_params,
        adapter_weights_bytes=adapter_params * bpp.weights,
        adapter_gradients_bytes=adapter_params * bpp.gradients,
        adapter_optimizer_bytes=adapter_params * bpp.optimizer,
    )


def _check_base_dtype(base_dtype: str) -> str:
    if base_dtype not in BASE_DTYPES:
        raise ValueError(f"unknown base_dtype {base_dtype!r}; known: {', '.join(BASE_DTYPES)}")
    return base_dtype


def lora_memory(
    base_params: int,
    adapter_params: int,
    base_dtype: str = "bf16",
    optimizer: str | BytesPerParam = "adamw-fp32",
) -> LoraMemory:
    """LoRA/QLoRA bytes on one GPU from bare counts.

    base_params: frozen parameters (> 0); adapter_params: trainable ones (>= 0);
    base_dtype: fp32, bf16, fp16 or nf4 (nf4 here treats the whole base as one quantised
    tensor; use ``lora_memory_for_config`` to keep embeddings and norms in bf16).
    Returns ``LoraMemory`` in bytes. Raises ValueError.
    """
    check_params(base_params)
    check_int(adapter_params, "adapter_params", 0)
    base = tensor_bytes(base_params, _check_base_dtype(base_dtype))
    return _adapter_memory(base, adapter_params, optimizer)


def lora_memory_for_config(
    config: ModelLike,
    rank: int,
    target_modules: Iterable[str] = ALL_LINEAR,
    base_dtype: str = "bf16",
    optimizer: str | BytesPerParam = "adamw-fp32",
) -> LoraMemory:
    """LoRA (base_dtype bf16/fp16/fp32) or QLoRA (base_dtype "nf4") bytes for a model config.

    One GPU: ``lora_memory_per_gpu`` with world_size 1 (nothing to shard). Returns
    ``LoraMemory`` in bytes. Raises ValueError (ConfigError) for a bad config, rank,
    target or dtype.
    """
    return lora_memory_per_gpu(config, rank, 1, 0, target_modules, base_dtype, optimizer)


def lora_memory_per_gpu(
    config: ModelLike,
    rank: int,
    world_size: int,
    zero_stage: int,
    target_modules: Iterable[str] = ALL_LINEAR,
    base_dtype: str = "bf16",
    optimizer: str | BytesPerParam = "adamw-fp32",
) -> LoraMemory:
    """LoRA/QLoRA bytes on ONE of ``world_size`` data-parallel GPUs under ZeRO ``zero_stage``.

    Adapters (``rank``, ``target_modules`` as in ``lora_adapter_params``; ``optimizer``
    as in ``vram.states.OPTIMIZERS``): sharded exactly like ``model_states_per_gpu``
    (ZeRO paper §5.1): optimizer states from stage 1, gradients from 2, weights at 3,
    each rank's share rounded up to whole bytes. ``adapter_params`` stays the model's
    total count of trainable parameters; the byte fields are per GPU.

    Frozen base (``base_dtype`` fp32/bf16/fp16, or "nf4" sized as ``qlora_base_bytes``):
    the whole of it on every GPU at stages 0-2; at stage 3 each GPU keeps 1/world_size
    (rounded up; FSDP's padding of each flat parameter is not counted).
    QLoRA at stage 3 assumes what FSDP and DeepSpeed ZeRO-3 need to shard 4-bit weights
    at all: ``BitsAndBytesConfig(bnb_4bit_quant_storage=torch.bfloat16)`` (bitsandbytes
    docs, "FSDP-QLoRA"; bitsandbytes PR #970), which stores the packed 4-bit data in a
    float dtype of the same bytes. The data and the bf16 rest are split; the NF4
    quantisation constants (absmax, about 0.127 bit per weight) live in each layer's
    ``quant_state``, which is not a parameter, and stay whole on every GPU (Answer.AI
    fsdp_qlora PR #4: the ``quant_state`` is left "attached to all rank's Linear4bit
    layers"). With world_size 1 every stage gives the one-GPU figure.

    Returns ``LoraMemory`` in bytes per GPU. Raises ValueError (ConfigError) for a bad
    config, rank, target, dtype or optimizer, world_size < 1 or zero_stage not 0-3.
    """
    config = as_model_config(config)
    check_world_size(world_size)
    check_zero_stage(zero_stage)
    adapters = lora_adapter_params(config, rank, target_modules)
    states = model_states_per_gpu(adapters, world_size, zero_stage, optimizer)
    if _check_base_dtype(base_dtype) == NF4:
        packed, constants, rest = _qlora_base_parts(config)
    else:
        packed, constants, rest = 0, 0, tensor_bytes(count_params(config).total, base_dtype)
    if zero_stage == 3:
        base = -(-(packed + rest) // world_size) + constants
    else:
        base = packed + constants + rest
    return LoraMemory(
        base_weights_bytes=base,
        adapter_params=adapters,
        adapter_weights_bytes=states.weights_bytes,
        adapter_gradients_bytes=states.gradients_bytes,
        adapter_optimizer_bytes=states.optimizer_bytes,
    )
