"""Serving memory: the weights in bf16, fp8 or int4, plus the KV cache.

KV cache per token = 2 (K and V) x layers x kv_heads x head_dim x bytes per element:
each layer stores one key and one value vector per KV head (grouped-query attention,
Ainslie et al. 2023, arXiv:2305.13245: ``num_key_value_heads``, not the query heads).
llama-3.1-8b in bf16: 2 x 32 x 8 x 128 x 2 B = 128 KiB per token. Sliding-window
layers (mistral, gemma2) are counted in full: an upper bound. Activations, the CUDA
context and the allocator's slack are not included.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .dtypes import dtype_bits, tensor_bytes
from .models import ModelConfig, as_model_config, count_params
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
    """Bytes on the serving GPU(s): weights and KV cache (not split across GPUs)."""

    params: int
    weights_bytes: int
    kv_cache_bytes: int

    @property
    def total_bytes(self) -> int:
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
