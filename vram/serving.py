"""Serving memory: the weights in bf16, fp8 or int4, plus the KV cache.

KV cache per token = 2 (K and V) x layers x kv_heads x head_dim x bytes per element:
each layer stores one key and one value vector per KV head (grouped-query attention,
Ainslie et al. 2023, arXiv:2305.13245: ``num_key_value_heads``, not the query heads).
llama-3.1-8b in bf16: 2 x 32 x 8 x 128 x 2 B = 128 KiB per token. Sliding-window
layers (mistral, gemma2) are counted in full: an upper bound. Activations, the CUDA
context and the allocator's slack are not included.

Tensor parallel (``serving_memory_per_gpu``; Megatron-LM, Shoeybi et al. 2019,
arXiv:1909.08053, §3; vLLM's ``--tensor-parallel-size``, ``vllm/model_executor/layers/
linear.py`` and ``vocab_parallel_embedding.py``), on each of tp GPUs:

- column-parallel, output split (``QKVParallelLinear``, ``MergedColumnParallelLinear``):
  ``q_proj`` keeps heads/tp query heads, ``gate_proj``/``up_proj`` (mixtral: ``w1``/``w3``
  of every expert) intermediate/tp rows, biases split alike;
- ``k_proj``/``v_proj`` keep kv_heads/tp KV heads; with tp > kv_heads each GPU keeps ONE
  KV head, replicated on tp/kv_heads GPUs (vLLM: ``num_kv_head_replicas``), so per GPU
  max(1, kv_heads/tp) KV heads, in the weights and in the KV cache;
- row-parallel, input split (``RowParallelLinear``): ``o_proj``, ``down_proj`` (``w2``);
  their biases are whole on every GPU;
- vocab-parallel: the embedding and ``lm_head`` rows (vocab/tp, rounded up; vLLM's
  padding of the vocabulary to a multiple of 64 rows is not counted);
- replicated: the RMSNorm weights and the MoE router (``gate``, a ``ReplicatedLinear``).

vLLM refuses (and so does ``check_tensor_parallel``) a tp that does not divide the query
heads or the intermediate size, or where neither tp nor kv_heads divides the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .dtypes import dtype_bits, tensor_bytes
from .models import ModelConfig, as_model_config, count_params, decoder_linears
from .validate import check_int, check_params

ModelLike = ModelConfig | Mapping[str, Any] | str | Path


def kv_cache_bytes_per_token(config: ModelLike, kv_dtype: str = "bf16") -> int:
    """Bytes of KV cache one token adds, all layers: 2 x L x kv_heads x head_dim x bytes.

    config: what ``vram.models.as_model_config`` accepts; kv_dtype: bf16, fp16, fp8, fp32...
    Raises ValueError (ConfigError) for a bad config or dtype.
    """
    config = as_model_config(config)
    dtype_bits(kv_dtype)
    elements = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim
    return tensor_bytes(elements, kv_dtype)


def kv_cache_bytes(
    config: ModelLike, context_length: int, batch: int = 1, kv_dtype: str = "bf16"
) -> int:
    """KV-cache bytes for ``batch`` sequences of ``context_length`` tokens each.

    Raises ValueError for context_length < 0, batch < 1, a bad config or dtype.
    """
    check_int(context_length, "context_length", 0)
    check_int(batch, "batch", 1)
    return kv_cache_bytes_per_token(config, kv_dtype) * context_length * batch


@dataclass(frozen=True)
class ServingMemory:
    """Bytes of weights and KV cache on ONE serving GPU of ``tensor_parallel``.

    ``params``: parameters of the whole model; ``params_per_gpu``: those one GPU holds
    (defaults to ``params``: tensor_parallel 1, nothing split).
    """

    params: int
    weights_bytes: int
    kv_cache_bytes: int
    tensor_parallel: int = 1
    params_per_gpu: int | None = None  # set to params when not given

    def __post_init__(self) -> None:
        if self.params_per_gpu is None:
            object.__setattr__(self, "params_per_gpu", self.params)

    @property
    def total_bytes(self) -> int:
        """Weights plus KV cache on one GPU (bytes)."""
        return self.weights_bytes + self.kv_cache_bytes


def serving_memory(
    model: int | ModelLike,
    weight_dtype: str = "bf16",
    context_length: int = 0,
    batch: int = 1,
    kv_dtype: str = "bf16",
    kv_bytes_per_token: int | None = None,
) -> ServingMemory:
    """Weights plus KV cache for serving ``batch`` sequences of ``context_length`` tokens.

    model: a parameter count (int) or a config (``ModelConfig``, dict, path); with a
    count, pass ``kv_bytes_per_token`` unless context_length is 0. weight_dtype: fp32,
    bf16, fp16, fp8, int8, int4 or nf4 (every parameter in that format; see
    ``vram.dtypes``). Returns ``ServingMemory`` in bytes. Raises ValueError.
    """
    check_int(context_length, "context_length", 0)
    check_int(batch, "batch", 1)
    if isinstance(model, int) and not isinstance(model, bool):
        params = check_params(model)
        if kv_bytes_per_token is None:
            if context_length:
                raise ValueError("kv_bytes_per_token is needed with a bare parameter count; pass a config")
            kv_bytes_per_token = 0
    else:
        config = as_model_config(model)
        params = count_params(config).total
        if kv_bytes_per_token is None:
            kv_bytes_per_token = kv_cache_bytes_per_token(config, kv_dtype)
    return ServingMemory(
        params=params,
        weights_bytes=tensor_bytes(params, weight_dtype),
        kv_cache_bytes=kv_bytes_per_token * context_length * batch,
    )


# Tensor-parallel layout of the decoder's nn.Linear modules (names of vram.models.decoder_linears).
_COLUMN = frozenset({"q_proj", "gate_proj", "up_proj", "w1", "w3"})  # output split
_KV = frozenset({"k_proj", "v_proj"})  # output split by KV heads, replicated past kv_heads
_ROW = frozenset({"o_proj", "down_proj", "w2"})  # input split, bias whole
_REPLICATED = frozenset({"gate"})  # the MoE router


def check_tensor_parallel(config: ModelLike, tensor_parallel: int) -> int:
    """Return ``tensor_parallel`` if vLLM can split ``config`` over that many GPUs.

    Needs an int >= 1 that divides ``num_attention_heads`` and ``intermediate_size``,
    and either divides ``num_key_value_heads`` or is a multiple of it (vLLM's
    ``QKVParallelLinear``). Raises ValueError naming the sizes otherwise.
    """
    config = as_model_config(config)
    tp = check_int(tensor_parallel, "tensor_parallel", 1)
    heads, kv, inter = config.num_attention_heads, config.num_key_value_heads, config.intermediate_size
    if heads % tp:
        raise ValueError(f"tensor_parallel {tp} must divide num_attention_heads {heads} ({config.source})")
    if kv % tp and tp % kv:
        raise ValueError(
            f"tensor_parallel {tp} and num_key_value_heads {kv} must divide one another ({config.source})"
        )
    if inter % tp:
        raise ValueError(f"tensor_parallel {tp} must divide intermediate_size {inter} ({config.source})")
    return tp


def kv_heads_per_gpu(config: ModelLike, tensor_parallel: int = 1) -> int:
    """KV heads one GPU keeps under tensor parallel: max(1, kv_heads / tp) (vLLM replicates
    a KV head on tp / kv_heads GPUs when tp > kv_heads). Raises ValueError as
    ``check_tensor_parallel``."""
    config = as_model_config(config)
    tp = check_tensor_parallel(config, tensor_parallel)
    return max(1, config.num_key_value_heads // tp)


def _params_per_gpu(config: ModelConfig, tp: int) -> int:
    kv_out = kv_heads_per_gpu(config, tp) * config.head_dim
    per_layer = config.norms_per_layer * config.hidden_size  # RMSNorm weights: replicated
    for lin in decoder_linears(config):
        if lin.name in _COLUMN:
            rows, cols, bias = lin.out_features // tp, lin.in_features, lin.out_features // tp
        elif lin.name in _KV:
            rows, cols, bias = kv_out, lin.in_features, kv_out
        elif lin.name in _ROW:
            rows, cols, bias = lin.out_features, lin.in_features // tp, lin.out_features
        elif lin.name in _REPLICATED:
            rows, cols, bias = lin.out_features, lin.in_features, lin.out_features
        else:  # a module added to decoder_linears without a layout here
            raise AssertionError(f"no tensor-parallel layout for {lin.name}")
        per_layer += lin.copies * (rows * cols + bias * lin.bias)
    vocab_rows = -(-config.vocab_size // tp)
    embeddings = vocab_rows * config.hidden_size * (1 if config.tie_word_embeddings else 2)
    return embeddings + config.hidden_size + config.num_hidden_layers * per_layer  # + final norm


def serving_memory_per_gpu(
    config: ModelLike,
    weight_dtype: str = "bf16",
    context_length: int = 0,
    batch: int = 1,
    kv_dtype: str = "bf16",
    tensor_parallel: int = 1,
) -> ServingMemory:
    """Weights and KV cache on ONE of ``tensor_parallel`` GPUs serving ``config``.

    Weights: the parameters one GPU holds under the layout of this module's docstring
    (Megatron-LM §3, vLLM), every one in ``weight_dtype`` (as ``serving_memory``; nf4
    treats them as one tensor). KV cache: ``batch`` sequences of ``context_length``
    tokens, 2 x layers x ``kv_heads_per_gpu`` x head_dim elements per token in
    ``kv_dtype`` (llama-3.1-8b, bf16: 128 KiB per token on one GPU, 64 KiB on 2,
    16 KiB on 8 and on 16). With tensor_parallel 1 it equals ``serving_memory``.

    Returns ``ServingMemory`` in bytes per GPU. Raises ValueError (ConfigError) for a
    bad config or dtype, context_length < 0, batch < 1, or a tensor_parallel that
    ``check_tensor_parallel`` refuses.
    """
    config = as_model_config(config)
    check_int(context_length, "context_length", 0)
    check_int(batch, "batch", 1)
    tp = check_tensor_parallel(config, tensor_parallel)
    dtype_bits(kv_dtype)
    per_token = tensor_bytes(2 * config.num_hidden_layers * kv_heads_per_gpu(config, tp) * config.head_dim, kv_dtype)
    params_per_gpu = _params_per_gpu(config, tp)
    return ServingMemory(
        params=count_params(config).total,
        weights_bytes=tensor_bytes(params_per_gpu, weight_dtype),
        kv_cache_bytes=per_token * context_length * batch,
        tensor_parallel=tp,
        params_per_gpu=params_per_gpu,
    )
