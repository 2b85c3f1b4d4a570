"""Serving memory: the weights in bf16, fp8 or int4, plus the KV cache.

KV cache: each layer stores one key and one value vector per KV head and token (grouped-
query attention, Ainslie et al. 2023, arXiv:2305.13245: ``num_key_value_heads``, not the
query heads), 2 x kv_heads x head_dim elements. llama-3.1-8b in bf16: 2 x 32 layers x 8 x
128 x 2 B = 128 KiB per token. deepseek_v3's multi-head latent attention (DeepSeek-AI 2024,
arXiv:2405.04434, §2.1) caches one latent per token and layer instead, kv_lora_rank +
qk_rope_head_dim elements (``ModelConfig.kv_cache_width``): transformers 5.23's cache
updates the compressed latent (``DeepseekV3Attention.forward``), and vLLM's ``MLAAttention``
(``vllm/model_executor/layers/attention/mla_attention.py``: ``head_size = kv_lora_rank +
qk_rope_head_dim``, ``num_kv_heads = 1``) reserves it through ``MLAAttentionSpec``
(``vllm/v1/kv_cache_interface.py``: block_size x 1 x head_size x dtype bytes per block, no
separate K and V), whole on every GPU under tensor parallel. DeepSeek-V3 in bf16: 61 x (512
+ 64) x 2 B = 70,272 B per token.

Sliding-window layers (``ModelConfig.layer_types``, from the family's registry entry:
gemma2 and gpt_oss every other layer, gemma3_text five of six, olmo3 three of four,
mistral/ministral/phi3/qwen3_moe every layer when the config has a ``sliding_window``,
qwen2/qwen3 past ``max_window_layers`` with ``use_sliding_window``) hold a window of W
tokens, and how much a server keeps for them differs (``kv_cache_tokens``, ``server``):

- vLLM (``"vllm"``, the default, the server the guide's serving figures assume) reserves
  per request what its KV-cache specs say (``vllm/v1/kv_cache_interface.py``): whole blocks
  of 16 tokens, all T tokens for a full layer, and for a sliding layer (``SlidingWindowSpec``)
  the last W - 1 tokens plus the prefill chunk it schedules, ``max_num_batched_tokens``
  (2,048 by default), capped at T, plus one block. gpt-oss-20b at 8,192 tokens: its 128-token
  windows hold 2,192 tokens each, not 128;
- transformers' ``DynamicCache`` right after a prefill (``"transformers"``: ``generate`` or
  a ``model(...)`` loop) keeps a view of the whole T-token prefill in every sliding layer
  until the first decoding step: every layer holds T tokens then (gemma3 27B at 32k tokens
  x 16 sequences: 266 GB);
- the same cache while it generates (``"transformers-decoding"``) holds min(T, W): each
  update concatenates the kept W - 1 tokens with the new one and keeps a view, so the
  storage is W tokens though ``keys.shape`` shows W - 1 (tests/vram/test_kv_cache_oracle.py
  measures both on a real cache).

Activations, the CUDA context and the allocator's slack are not included.

Tensor parallel (``serving_memory_per_gpu``; Megatron-LM, Shoeybi et al. 2019,
arXiv:1909.08053, §3; vLLM's ``--tensor-parallel-size``: ``vllm/model_executor/layers/
linear.py``, ``vocab_parallel_embedding.py``, ``fused_moe/layer.py``, ``models/gpt_oss.py``),
on each of tp GPUs:

- column-parallel, output split (``QKVParallelLinear``, ``MergedColumnParallelLinear``):
  ``q_proj`` keeps heads/tp query heads, ``gate_proj``/``up_proj`` intermediate/tp rows,
  phi3's fused ``qkv_proj`` its q part by heads and its k/v parts by KV heads, its
  ``gate_up_proj`` 2 x intermediate/tp rows; biases split alike;
- ``k_proj``/``v_proj`` keep kv_heads/tp KV heads; with tp > kv_heads each GPU keeps ONE
  KV head, replicated on tp/kv_heads GPUs (vLLM: ``num_kv_head_replicas``), so per GPU
  max(1, kv_heads/tp) KV heads, in the weights and in the KV cache;
- row-parallel, input split (``RowParallelLinear``): ``o_proj``, ``down_proj``; their
  biases are whole on every GPU;
- experts (``FusedMoE`` without expert parallelism): every expert on every GPU with its
  intermediate width split, ``gate_up_proj`` (and gpt_oss's ``gate_up_proj_bias``) by
  output, ``down_proj`` by input; gpt_oss's ``down_proj_bias`` whole on every GPU;
- vocab-parallel: the embedding and ``lm_head`` rows (vocab/tp, rounded up; vLLM's
  padding of the vocabulary to a multiple of 64 rows is not counted);
- gpt_oss's attention sinks: heads/tp per GPU (vLLM ``gpt_oss.py``: one per local head);
- deepseek_v3's latent attention (vLLM ``deepseek_v2.py``): ``q_a_proj`` and
  ``kv_a_proj_with_mqa`` replicated, ``q_b_proj`` (or ``q_proj``) and ``kv_b_proj`` split by
  heads, ``o_proj`` row-parallel; the latent KV cache whole on every GPU;
- replicated: the RMSNorm weights (q_norm/k_norm included), the MoE router
  (a ``ReplicatedLinear``; gpt_oss's router an ``nn.Linear`` with its bias) and qwen2_moe's
  one-output ``shared_expert_gate``; its ``shared_expert`` splits like a dense MLP.

vLLM refuses (and so does ``check_tensor_parallel``) a tp that does not divide the query
heads or an MLP/expert width, or where neither tp nor kv_heads divides the other.
Not counted: gpt_oss's published weights are MXFP4 (vLLM pads each expert's width to
blocks of 32 per GPU); the figures here are for the ``weight_dtype`` asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any, cast

from .dtypes import dtype_bits, tensor_bytes
from .family_spec import CHUNKED, SLIDING
from .models import ModelConfig, Module, as_model_config, count_params, layer_modules, root_modules
from .units import ceil_div
from .validate import check_int, check_params

ModelLike = ModelConfig | Mapping[str, Any] | str | Path
# Whose KV cache: vLLM's admission (its KV-cache specs), transformers' DynamicCache right after
# a prefill of the whole context, and the same cache while it generates token by token.
SERVERS = ("vllm", "transformers", "transformers-decoding")
# vLLM's chunk of prefill per scheduler step when the reader does not set --max-num-batched-tokens:
# SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS (vllm/config/scheduler.py at vllm-project/vllm
# 1f8758d584e8f599219d75adf658e182ed809a43), also what `vllm serve` takes on cards under 70 GiB and
# on A100s (EngineArgs.get_batch_defaults; 8192 on larger cards: pass it).
VLLM_MAX_NUM_BATCHED_TOKENS = 2048
MAX_BATCHED_TOKENS = 2**24
# Tokens per KV-cache block: what vLLM's CUDA platform sets when the block size is not given.
VLLM_BLOCK_SIZE = 16


def kv_cache_tokens(
    config: ModelLike,
    context_length: int,
    server: str = "vllm",
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
) -> tuple[int, ...]:
    """Tokens each layer's KV cache holds for one sequence of ``context_length`` tokens (T).

    ``server="vllm"`` (the default, the site's): what vLLM's KV-cache manager reserves per layer
    for a request of T tokens (``max_memory_usage_bytes`` of its specs, ``vllm/v1/kv_cache_interface.py``
    at vllm-project/vllm 001cabc1be16a59a70d720ed61a13b678c060a18), in whole blocks of
    ``VLLM_BLOCK_SIZE`` tokens: a full-attention layer (``FullAttentionSpec``) cdiv(T, 16)
    blocks; a sliding-window layer (``SlidingWindowSpec``) the last W - 1 computed tokens plus
    the newly scheduled chunk, min(W - 1 + ``max_num_batched_tokens``, T), rounded up to blocks,
    plus one block because the window need not start at a block's start. So a sliding layer
    holds more than its window while a prefill longer than it is chunked in. A chunked layer
    (llama4_text, ``ChunkedLocalAttentionSpec``) min(C + ``max_num_batched_tokens``, T) for a
    chunk of C tokens, in whole blocks (vLLM's hybrid KV-cache manager, which current vLLM
    enables for chunked local attention: ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE``
    defaults to 1 in ``vllm/envs.py``; with it off, vLLM reserves such layers as full ones).
    transformers keeps a chunked layer as a window of C tokens (``DynamicSlidingWindowLayer``).
    ``server="transformers"``: the most its ``DynamicCache`` holds, right after a prefill of
    the whole context: every layer all of it. ``server="transformers-decoding"``: the
    storage of that cache while it generates token by token: min(T, W) for sliding layers
    (``DynamicSlidingWindowLayer`` concatenates the kept W - 1 tokens with the new one and
    keeps a view), all T for full ones, and for a window of 1 every token (``keys[:, :, -W + 1:]``
    with -1 + 1 = 0 slices nothing off). Raises ValueError for context_length < 0, an unknown
    server, a max_num_batched_tokens outside 1..2**24 or a bad config.
    """
    config = as_model_config(config)
    t = check_int(context_length, "context_length", 0)
    if server not in SERVERS:
        raise ValueError(f"unknown server {server!r}; known: {', '.join(SERVERS)}")
    chunk = check_batched_tokens(max_num_batched_tokens)
    window, local = config.sliding_window, config.attention_chunk_size
    if server == "transformers":
        return (t,) * config.num_hidden_layers
    if server == "transformers-decoding":  # a chunked layer's cache is a window of the chunk size

        def kept(kind: str) -> int:
            w = window if kind == SLIDING else local if kind == CHUNKED else None
            return min(t, w) if w is not None and w > 1 else t

        return tuple(kept(kind) for kind in config.layer_types)
    if t == 0:
        return (0,) * config.num_hidden_layers
    block = VLLM_BLOCK_SIZE
    full = ceil_div(t, block) * block
    sliding = (ceil_div(min(window - 1 + chunk, t), block) + 1) * block if window is not None else full
    # ChunkedLocalAttentionSpec: the current chunk plus the scheduled tokens, no extra block
    chunked = ceil_div(min(local + chunk, t), block) * block if local is not None else full
    return tuple(sliding if kind == SLIDING else chunked if kind == CHUNKED else full for kind in config.layer_types)


def check_batched_tokens(value: int) -> int:
    """Return ``value`` if it is a whole number of tokens from 1 to 2**24 (vLLM's
    ``max_num_batched_tokens``), else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BATCHED_TOKENS:
        raise ValueError(f"max_num_batched_tokens must be an integer from 1 to {MAX_BATCHED_TOKENS:,}, got {value!r}")
    return value


def _kv_bytes(
    config: ModelConfig,
    context_length: int,
    batch: int,
    kv_dtype: str,
    kv_heads: int,
    server: str = "vllm",
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
) -> int:
    dtype_bits(kv_dtype)
    check_int(batch, "batch", 1)
    tokens = sum(kv_cache_tokens(config, context_length, server, max_num_batched_tokens))
    # MLA: one latent per token, whole on every GPU (vLLM's MLAAttention has one KV head)
    width = config.kv_cache_width if config.is_mla else 2 * kv_heads * config.head_dim
    return tensor_bytes(width * tokens * batch, kv_dtype)


def kv_cache_bytes_per_token(config: ModelLike, kv_dtype: str = "bf16") -> int:
    """Bytes of KV cache one token adds while no sliding window is full: 2 x L x kv_heads x head_dim x bytes.

    config: what ``vram.models.as_model_config`` accepts; kv_dtype: bf16, fp16, fp8, fp32...
    Past a sliding window, sliding layers stop growing: use ``kv_cache_bytes``.
    Raises ValueError (ConfigError) for a bad config or dtype.
    """
    config = as_model_config(config)
    return _kv_bytes(config, 1, 1, kv_dtype, config.num_key_value_heads, "transformers")


def kv_cache_bytes(
    config: ModelLike,
    context_length: int,
    batch: int = 1,
    kv_dtype: str = "bf16",
    server: str = "vllm",
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
) -> int:
    """KV-cache bytes for ``batch`` sequences of ``context_length`` tokens each, as vLLM
    reserves them (``server="vllm"``, with its prefill chunk ``max_num_batched_tokens``),
    whole right after the prefill under ``"transformers"``, or while transformers generates
    (``"transformers-decoding"``): ``kv_cache_tokens``.

    Sum over layers of 2 x kv_heads x head_dim x ``kv_cache_tokens`` x batch elements in
    ``kv_dtype``. gemma2 without head_dim (256 by Gemma2Config's default), 4 layers of 4
    KV heads, 4,096 tokens, bf16: 2 x 4 x 4 x 256 x 2 B x 4,096 = 67,108,864 bytes (its
    window, 4,096, is not exceeded). Raises ValueError for context_length < 0, batch < 1,
    a bad config, dtype or max_num_batched_tokens.
    """
    config = as_model_config(config)
    return _kv_bytes(
        config, context_length, batch, kv_dtype, config.num_key_value_heads, server, max_num_batched_tokens
    )


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
    server: str = "vllm",
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
) -> ServingMemory:
    """Weights plus KV cache for serving ``batch`` sequences of ``context_length`` tokens.

    model: a parameter count (int) or a config (``ModelConfig``, dict, path); with a
    count, pass ``kv_bytes_per_token`` unless context_length is 0 (no window cap then).
    With a config the KV cache is ``kv_cache_bytes`` (vLLM's reservation with its prefill
    chunk ``max_num_batched_tokens``, or transformers' cache: ``server``).
    weight_dtype: fp32, bf16, fp16, fp8, int8, int4 or nf4 (every parameter in that
    format; see ``vram.dtypes``). Returns ``ServingMemory`` in bytes. Raises ValueError.
    """
    check_int(context_length, "context_length", 0)
    check_int(batch, "batch", 1)
    if isinstance(model, int) and not isinstance(model, bool):
        params = check_params(model)
        if kv_bytes_per_token is None:
            if context_length:
                raise ValueError("kv_bytes_per_token is needed with a bare parameter count; pass a config")
            kv_bytes_per_token = 0
        kv = kv_bytes_per_token * context_length * batch
    else:
        config = as_model_config(cast(ModelLike, model))  # a bool is refused there (TypeError), as any non-config
        params = count_params(config).total
        if kv_bytes_per_token is None:
            kv = kv_cache_bytes(config, context_length, batch, kv_dtype, server, max_num_batched_tokens)
        else:
            kv = kv_bytes_per_token * context_length * batch
    return ServingMemory(params=params, weights_bytes=tensor_bytes(params, weight_dtype), kv_cache_bytes=kv)


def check_tensor_parallel(config: ModelLike, tensor_parallel: int) -> int:
    """Return ``tensor_parallel`` if vLLM can split ``config`` over that many GPUs.

    Needs an int >= 1 that divides ``num_attention_heads``, the intermediate size of every
    dense MLP and the width of every expert, and either divides ``num_key_value_heads``
    or is a multiple of it (vLLM's ``QKVParallelLinear``). Raises ValueError naming the
    sizes otherwise.
    """
    config = as_model_config(config)
    tp = check_int(tensor_parallel, "tensor_parallel", 1)
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    if heads % tp:
        raise ValueError(f"tensor_parallel {tp} must divide num_attention_heads {heads} ({config.source})")
    if kv % tp and tp % kv:
        raise ValueError(f"tensor_parallel {tp} and num_key_value_heads {kv} must divide one another ({config.source})")
    widths = []
    if not all(config.moe_layers):
        widths.append((config.family.mlp_width, config.intermediate_size))
    if config.is_moe:
        spec = config.family.experts
        assert spec is not None  # config.is_moe
        key = spec.width
        widths.append((key, config.moe_intermediate_size))
        if config.shared_expert_size:
            shared = {"qwen2_moe": "shared_expert_intermediate_size", "llama4": "intermediate_size"}.get(
                spec.shared, "moe_intermediate_size x n_shared_experts"
            )
            widths.append((shared, config.shared_expert_size))
    for key, width in widths:
        if width % tp:
            raise ValueError(f"tensor_parallel {tp} must divide {key} {width} ({config.source})")
    return tp


def kv_heads_per_gpu(config: ModelLike, tensor_parallel: int = 1) -> int:
    """KV heads one GPU keeps under tensor parallel: max(1, kv_heads / tp) (vLLM replicates
    a KV head on tp / kv_heads GPUs when tp > kv_heads). Raises ValueError as
    ``check_tensor_parallel``."""
    config = as_model_config(config)
    tp = check_tensor_parallel(config, tensor_parallel)
    return max(1, config.num_key_value_heads // tp)


def _share(config: ModelConfig, module: Module, name: str, shape: tuple[int, ...], tp: int) -> int:
    """Elements of one parameter that one of tp GPUs holds (layout of the module docstring)."""
    whole = prod(shape)
    if module.kind in ("norm", "router") or module.name in ("shared_expert_gate", "q_a_proj", "kv_a_proj_with_mqa"):
        return whole  # replicated (MLA's down-projections: vLLM's ReplicatedLinear)
    if module.name in ("q_b_proj", "kv_b_proj"):  # MLA's up-projections: column-parallel over the heads
        return whole // tp
    hd = config.head_dim
    kv_rows = kv_heads_per_gpu(config, tp) * hd
    rest = whole // shape[0]  # elements per output row
    if module.kind == "attention":  # gpt_oss sinks: one per local query head
        return whole // tp
    if module.kind == "experts":
        return whole if name == "down_proj_bias" else whole // tp
    if module.kind == "embedding" or module.path == "lm_head":
        return ceil_div(config.vocab_size, tp) * config.hidden_size
    column = {
        "q_proj": config.num_attention_heads * hd // tp,
        "k_proj": kv_rows,
        "v_proj": kv_rows,
        "qkv_proj": config.num_attention_heads * hd // tp + 2 * kv_rows,
    }
    if module.name in column:
        return column[module.name] * rest
    if module.name in ("gate_proj", "up_proj", "gate_up_proj"):
        return whole // tp
    if module.name in ("o_proj", "down_proj"):  # row-parallel: input split, bias whole
        return whole // tp if name == "weight" else whole
    raise AssertionError(f"no tensor-parallel layout for {module.path}.{name}")  # a new module kind


def _params_per_gpu(config: ModelConfig, tp: int) -> int:
    def held(modules: Iterable[Module]) -> int:
        return sum(_share(config, m, name, shape, tp) for m in modules if not m.tied for name, shape in m.shapes)

    per_kind = {}
    for index, moe in enumerate(config.moe_layers):
        if moe not in per_kind:
            per_kind[moe] = held(layer_modules(config, index))
    return held(root_modules(config)) + sum(per_kind[moe] for moe in config.moe_layers)


def serving_memory_per_gpu(
    config: ModelLike,
    weight_dtype: str = "bf16",
    context_length: int = 0,
    batch: int = 1,
    kv_dtype: str = "bf16",
    tensor_parallel: int = 1,
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
) -> ServingMemory:
    """Weights and KV cache on ONE of ``tensor_parallel`` GPUs serving ``config``.

    Weights: the parameters one GPU holds under the layout of this module's docstring
    (Megatron-LM §3, vLLM), every one in ``weight_dtype`` (as ``serving_memory``; nf4
    treats them as one tensor). KV cache: ``batch`` sequences of ``context_length``
    tokens, 2 x ``kv_heads_per_gpu`` x head_dim elements per token and layer in
    ``kv_dtype``, sliding layers capped as ``kv_cache_tokens`` (llama-3.1-8b, bf16:
    128 KiB per token on one GPU, 64 KiB on 2, 16 KiB on 8 and on 16). With
    tensor_parallel 1 it equals ``serving_memory``. ``max_num_batched_tokens``: vLLM's prefill
    chunk (``kv_cache_tokens``; default ``VLLM_MAX_NUM_BATCHED_TOKENS``).

    Returns ``ServingMemory`` in bytes per GPU. Raises ValueError (ConfigError) for a
    bad config or dtype, context_length < 0, batch < 1, or a tensor_parallel that
    ``check_tensor_parallel`` refuses.
    """
    config = as_model_config(config)
    check_int(context_length, "context_length", 0)
    check_int(batch, "batch", 1)
    tp = check_tensor_parallel(config, tensor_parallel)
    params_per_gpu = _params_per_gpu(config, tp)
    return ServingMemory(
        params=count_params(config).total,
        weights_bytes=tensor_bytes(params_per_gpu, weight_dtype),
        kv_cache_bytes=_kv_bytes(
            config, context_length, batch, kv_dtype, kv_heads_per_gpu(config, tp), "vllm", max_num_batched_tokens
        ),
        tensor_parallel=tp,
        params_per_gpu=params_per_gpu,
    )
