"""Activation memory of a decoder-only transformer during training.

Two models live here.

``activation_memory(config, seq_len, micro_batch, attention, recompute, dtype)``: the bytes
that autograd keeps for the backward pass in a Hugging Face ``transformers`` (5.23)
``*ForCausalLM``, term by term from what each op of the decoder layer saves (read from
``modeling_llama.py``, ``modeling_qwen3.py``, ``modeling_gemma2.py``, ``modeling_gemma3.py``,
``modeling_phi3.py``, ``modeling_mixtral.py``, ``modeling_qwen3_moe.py``,
``integrations/sdpa_attention.py`` and ``integrations/moe.py``, and PyTorch's
``derivatives.yaml``). Tensors count once per storage: a view saved twice, or a tensor saved
by two ops, is one allocation. No constant is fitted; the oracle that checks it is
``torch.autograd.graph.saved_tensors_hooks`` on real decoder layers
(``tests/vram/test_activations_oracle.py``). See ``activation_memory`` for the terms.

``activation_bytes_per_layer`` / ``activation_bytes``: Korthikanti et al. 2022,
arXiv:2205.05198, Table 2 (no tensor or sequence parallelism, 16-bit activations, 1-byte
dropout masks), bytes per layer for sequence length s, micro-batch b, hidden size h, heads a:

- no recomputation:        s*b*h*(34 + 5*a*s/h)   (§4.1, equation 1)
- selective recomputation: 34*s*b*h                (§5: attention's s*s part recomputed)
- full recomputation:      2*s*b*h                 (only each layer's input is kept)

5*a*s/h * s*b*h = 5*a*s^2*b, so the results are exact integers. That formula is the paper's
GPT layer (multi-head attention, 4h GELU MLP, eager attention with dropout); it is exact for
that model only. Embeddings, the output layer and the loss are not included (§4.3).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .validate import check_int, lookup

if TYPE_CHECKING:
    from .models import ModelConfig

RECOMPUTE = ("none", "selective", "full")
ATTENTION = ("sdpa", "eager")
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
MAX_SEQ_LEN = 2**24  # 16,777,216 tokens: beyond any released context window
MAX_MICRO_BATCH = 2**16

FP32 = 4  # bytes: RMSNorm statistics, softmax outputs, log-sum-exp and the loss run in fp32
INT64 = 8  # bytes: token ids, labels and the routing indices of a mixture of experts
# Activation functions whose backward keeps ONE tensor of the MLP width (SiLU, GELU and
# GELU-tanh keep their input, ReLU its output); transformers' ACT2FN names.
ONE_TENSOR_ACTIVATIONS = ("silu", "swish", "gelu", "gelu_pytorch_tanh", "relu")


@dataclass(frozen=True)
class _Family:
    """How a family's decoder layer saves tensors (transformers 5.23 modeling files)."""

    gemma_norm: bool  # RMSNorm entirely in fp32, ``x * (1 + weight)`` (gemma) vs llama's
    norms_per_layer: int  # input + pre-MLP (2); gemma adds post-attention and post-MLP (4)
    qk_norm: bool  # RMSNorm on each query and key head (qwen3, gemma3)
    fused_qkv: bool  # phi3: v is a slice of one qkv_proj output, whose storage it keeps
    sdpa: bool  # transformers runs the family under sdpa (gemma2: refused, softcapping)
    attn_softcap: float | None  # transformers' config default
    final_softcap: float | None
    hidden_act: str


_FAMILIES: dict[str, _Family] = {
    "llama": _Family(False, 2, False, False, True, None, None, "silu"),
    "mistral": _Family(False, 2, False, False, True, None, None, "silu"),
    "qwen2": _Family(False, 2, False, False, True, None, None, "silu"),
    "mixtral": _Family(False, 2, False, False, True, None, None, "silu"),
    "qwen3": _Family(False, 2, True, False, True, None, None, "silu"),
    "qwen3_moe": _Family(False, 2, True, False, True, None, None, "silu"),
    "phi3": _Family(False, 2, False, True, True, None, None, "silu"),
    "gemma2": _Family(True, 4, False, False, False, 50.0, 30.0, "gelu_pytorch_tanh"),
    "gemma3_text": _Family(True, 4, True, False, True, None, None, "gelu_pytorch_tanh"),
}
ACTIVATION_MODEL_TYPES = tuple(sorted(_FAMILIES))


@dataclass(frozen=True)
class ActivationMemory:
    """Activation bytes of one micro-batch (all ints, bytes; GB = 10**9 bytes).

    - ``per_layer_bytes``: what the largest decoder layer keeps until its backward under
      ``recompute`` (``full``: its checkpointed input only).
    - ``recomputed_bytes``: what one recomputation keeps while the backward pass runs it,
      counted once (``full``: one whole layer; ``selective`` under eager: one attention
      core's s*s tensors; otherwise 0).
    - ``layers_bytes``: all decoder layers, ``recomputed_bytes`` included.
    - ``head_bytes``: outside the layers, not vocabulary-sized: the final norm, the
      ``lm_head`` input, the token ids and the shifted labels.
    - ``logits_bytes``: logits and loss, vocabulary x tokens: the logits in the model's dtype
      (returned in the output), the softcapping ``tanh`` where the family has it, and the
      fp32 log-softmax the cross-entropy keeps (the fp32 upcast counted once).
    - ``total_bytes``: ``layers_bytes + head_bytes + logits_bytes``.
    """

    per_layer_bytes: int
    recomputed_bytes: int
    layers_bytes: int
    head_bytes: int
    logits_bytes: int
    total_bytes: int
    tokens: int  # seq_len * micro_batch
    attention: str
    recompute: str
    dtype: str


def activation_bytes_per_layer(
    seq_length: int, micro_batch: int, hidden_size: int, num_heads: int, recompute: str = "none"
) -> int:
    """Bytes of activations one layer keeps for the backward pass (Korthikanti Table 2).

    The paper's GPT layer (eager attention, dropout); for a transformers model use
    ``activation_memory``. recompute: "none", "selective" or "full". Raises ValueError for a
    non-positive size or an unknown recompute mode.
    """
    s = check_int(seq_length, "seq_length", 1)
    b = check_int(micro_batch, "micro_batch", 1)
    h = check_int(hidden_size, "hidden_size", 1)
    a = check_int(num_heads, "num_heads", 1)
    if recompute == "none":
        return 34 * s * b * h + 5 * a * s * s * b
    if recompute == "selective":
        return 34 * s * b * h
    if recompute == "full":
        return 2 * s * b * h
    raise ValueError(f"unknown recompute {recompute!r}; known: {', '.join(RECOMPUTE)}")


def activation_bytes(
    seq_length: int,
    micro_batch: int,
    hidden_size: int,
    num_heads: int,
    num_layers: int,
    recompute: str = "none",
) -> int:
    """Bytes of activations of ``num_layers`` layers: L x ``activation_bytes_per_layer``.

    Raises ValueError as ``activation_bytes_per_layer`` does, or for num_layers < 1.
    """
    layers = check_int(num_layers, "num_layers", 1)
    return layers * activation_bytes_per_layer(seq_length, micro_batch, hidden_size, num_heads, recompute)


def _bounded(value: int, name: str, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ValueError(f"{name} must be an integer from 1 to {maximum:,}, got {value!r}")
    return value


def _norm(rows: int, width: int, w: int, gemma: bool) -> int:
    """One RMSNorm over ``rows`` vectors of ``width`` (see ``activation_memory``)."""
    upcast = FP32 * rows * width  # x.to(float32): kept by pow(2) and by x * rsqrt(...)
    rsqrt = FP32 * rows  # rsqrt(mean + eps), kept by the multiplication
    if gemma:  # (x * rsqrt) * (1 + weight.float()): keeps the fp32 product and 1 + weight
        return upcast + rsqrt + FP32 * rows * width + FP32 * width
    return upcast + rsqrt + w * rows * width  # weight * x.to(dtype): keeps the cast


@dataclass(frozen=True)
class _Shape:
    t: int  # tokens = s * b
    s: int
    b: int
    w: int  # bytes per activation element
    h: int
    n: int  # attention heads
    kv: int  # key/value heads
    d: int  # head_dim
    vocab: int


def _attention_core(x: _Shape, fam: _Family, attention: str, masked: bool, softcap: bool) -> tuple[int, int]:
    """(bytes kept by the attention core, of which s*s-sized) for one layer."""
    t, w, n, kv, d, b, s = x.t, x.w, x.n, x.kv, x.d, x.b, x.s
    q = w * t * n * d  # rotary output q*cos + rotate_half(q)*sin, a new tensor
    out = w * t * n * d  # the core's output: o_proj's input (sdpa: one storage with SDPA's saved output)
    v_own = w * t * (n + 2 * kv) * d if fam.fused_qkv else w * t * kv * d  # phi3: the qkv storage
    repeated = w * t * n * d  # repeat_kv copy (or, with one group, k/v themselves at n heads)
    grouped = n != kv
    if attention == "sdpa":
        lse = FP32 * t * n  # log-sum-exp of the flash / memory-efficient kernel
        if masked:  # transformers repeats K/V for a mask; SDPA keeps the mask cast to dtype
            v = repeated if grouped else v_own
            return q + repeated + v + out + lse + w * b * s * s, w * b * s * s
        return q + w * t * kv * d + v_own + out + lse, 0  # enable_gqa: K/V at kv heads
    v = repeated if grouped else v_own
    probs = b * n * s * s
    square = FP32 * probs + (w * probs if w != FP32 else 0) + (w * probs if softcap else 0)
    return q + repeated + v + out + square, square


def _mlp(x: _Shape, config: ModelConfig, layer: int) -> int:
    t, w, h = x.t, x.w, x.h
    moe_layers = getattr(config, "moe_layers", None) or (config.is_moe,) * config.num_hidden_layers
    if not moe_layers[layer]:
        # act(gate) keeps gate; act(gate) * up keeps both; down_proj keeps the product
        return 4 * w * t * config.intermediate_size
    inter = getattr(config, "moe_intermediate_size", 0) or config.intermediate_size
    experts, k = config.num_local_experts, config.num_experts_per_tok
    pairs = t * k  # token-expert pairs S of grouped_mm_experts_forward
    router = FP32 * t * experts + FP32 * t  # softmax(router_logits) in fp32; top-k renormalisation sum
    # per pair: gathered input, gate_up output (2I), act output, down input, down output;
    # fp32 routing weight, int64 sort/gather indices (3) and top-k value/index (1 + 1 word)
    per_pair = w * (2 * h + 4 * inter) + FP32 + 3 * INT64 + FP32 + INT64
    return router + FP32 * experts + pairs * per_pair


def _layer(x: _Shape, fam: _Family, config: ModelConfig, index: int, attention: str, masked: bool,
           softcap: bool, selective: bool) -> tuple[int, int]:
    """(bytes one decoder layer keeps, bytes one recomputation of it keeps) under the mode."""
    t, w, h, n, kv, d = x.t, x.w, x.h, x.n, x.kv, x.d
    total = fam.norms_per_layer * _norm(t, h, w, fam.gemma_norm)
    total += w * t * h  # q/k/v projections' input (the input norm's output), kept once
    total += w * t * h  # the MLP's input (the pre-MLP norm's output): gate/up or router
    if fam.qk_norm:
        total += _norm(t * n, d, w, fam.gemma_norm) + _norm(t * kv, d, w, fam.gemma_norm)
    core, square = _attention_core(x, fam, attention, masked, softcap)
    recomputed = 0
    if selective and attention == "eager":
        # checkpointed core: q, k, v (kv heads) and the output kept; s*s part recomputed
        kept = w * t * n * d + 2 * w * t * kv * d + w * t * n * d
        if fam.fused_qkv:
            kept += w * t * (n + kv) * d
        recomputed = square + (2 * w * t * n * d if n != kv else 0)
        core = kept
    return total + core + _mlp(x, config, index), recomputed


def _layer_is_masked(config: ModelConfig, layer: int, seq_len: int, padded: bool) -> bool:
    """Whether transformers hands SDPA a mask tensor for this layer (masking_utils)."""
    if padded:
        return True
    types = getattr(config, "layer_types", None)
    window = getattr(config, "sliding_window", None)
    if not types or window is None:
        return False
    # _ignore_causal_mask_sdpa: a sliding layer needs its mask once kv_length >= window
    return types[layer] == "sliding_attention" and seq_len >= window


def activation_memory(
    config: ModelConfig,
    seq_len: int,
    micro_batch: int,
    attention: str = "sdpa",
    recompute: str = "none",
    dtype: str = "bf16",
    *,
    padded: bool = False,
) -> ActivationMemory:
    """Bytes a transformers ``*ForCausalLM`` keeps for backward on one micro-batch.

    Inputs: ``config`` (``vram.models.ModelConfig``), ``seq_len`` tokens per sequence,
    ``micro_batch`` sequences per GPU, ``attention`` "sdpa" (PyTorch's and transformers'
    default: a fused kernel that keeps no s*s matrix) or "eager", ``recompute`` "none",
    "selective" or "full", ``dtype`` of the weights and activations "bf16", "fp16" or
    "fp32" (w = 2 or 4 bytes), ``padded``: the batch carries an attention mask with padding.
    Output: ``ActivationMemory`` in bytes. Training mode, attention dropout 0 (every
    family's default), no tensor or sequence parallelism.

    Terms, for t = seq_len * micro_batch tokens, hidden h, heads n, KV heads kv, head_dim d,
    MLP width I (bytes; per layer unless said):

    - each RMSNorm over t rows of width h: ``x.to(float32)`` kept by ``pow`` and ``mul``
      (4*t*h), ``rsqrt`` (4*t), and llama's ``weight * x.to(dtype)`` keeps the cast
      (w*t*h) or gemma's ``x * (1 + weight.float())`` the fp32 product (4*t*h) and
      ``1 + weight`` (4*h). Two per layer (input, pre-MLP); gemma2/gemma3 four (post-attention,
      post-MLP too). qwen3/gemma3 add one per query head (t*n rows of d) and key head (t*kv).
    - ``nn.Linear`` keeps its input: q/k/v (w*t*h, one tensor for the three), o_proj
      (w*t*n*d), gate/up (w*t*h), down (w*t*I). Rotary embedding keeps only cos/sin, which are
      shared by all layers (not counted).
    - MLP (SwiGLU, GeGLU): ``act(gate)`` keeps gate, ``act(gate) * up`` keeps both: with
      down's input, 4*w*t*I. Mixture of experts (``integrations/moe.py``, grouped_mm, the
      default): router input w*t*h, fp32 router softmax 4*t*E and top-k sum 4*t; per
      token-expert pair (t*k of them) the gathered input and the down output (2*w*h), the
      four MLP tensors (4*w*I), an fp32 routing weight, four int64 indices and an fp32 top-k
      value (32 bytes); offsets 4*E.
    - ``sdpa`` (``scaled_dot_product_attention``, flash or memory-efficient kernel): keeps
      q (w*t*n*d), k and v (w*t*kv*d each: ``enable_gqa``), its output (= o_proj's input)
      and the fp32 log-sum-exp (4*t*n). No s*s term. With a mask (``padded``, or a sliding-
      window layer once seq_len >= window) transformers repeats K/V to n heads and SDPA keeps
      the mask cast to the dtype (w*b*s*s). phi3's v is a view of the fused qkv output, whose
      whole storage (w*t*(n+2kv)*d) stays alive. gemma2 is refused: transformers does not run
      it under sdpa (attention softcapping).
    - ``eager`` (``eager_attention_forward``): q, the repeated K and V (w*t*n*d each), the
      fp32 softmax (4*b*n*s*s), its cast to dtype (w*b*n*s*s, not in fp32), the softcapping
      ``tanh`` (w*b*n*s*s; gemma2) and the output (w*t*n*d).
    - ``recompute="selective"``: Korthikanti's selective recomputation, the attention core
      (``eager_attention_forward``) under ``torch.utils.checkpoint``: it keeps q, k, v at kv
      heads and its output; one core's s*s tensors and K/V repeats live while the backward
      recomputes it (``recomputed_bytes``). Under sdpa it changes nothing: the fused kernels
      already recompute the s*s part in their backward.
    - ``recompute="full"`` (``gradient_checkpointing_enable``): each layer keeps its input
      (w*t*h); the layer being recomputed keeps everything above once (the largest layer).
    - outside the layers (``head_bytes``): the final norm, lm_head's input (w*t*h), token ids
      and shifted labels (8*t each), the loss's fp32 total weight (4 bytes).
      ``logits_bytes``: the logits (w*V*t), gemma's final softcapping ``tanh`` (w*V*t), and
      ``ForCausalLMLoss``'s log-softmax of the fp32 upcast (4*V*t; the upcast is freed). While the loss runs, and while its backward runs,
      one or two more fp32 V x t buffers exist for a moment: they are transients, not here.

    Raises ValueError (one line) for a seq_len or micro_batch not an integer in 1..2**24 /
    1..2**16, an unknown attention, recompute or dtype, an unsupported family or activation
    function, and sdpa on gemma2. Source: the transformers 5.23 and PyTorch 2.13 code named
    above; Korthikanti et al. 2022 (arXiv:2205.05198) §5 for "selective".
    """
    s = _bounded(seq_len, "seq_len", MAX_SEQ_LEN)
    b = _bounded(micro_batch, "micro_batch", MAX_MICRO_BATCH)
    lookup({a: a for a in ATTENTION}, attention, "attention")
    lookup({r: r for r in RECOMPUTE}, recompute, "recompute")
    w = lookup(DTYPE_BYTES, dtype, "dtype")
    fam = lookup(_FAMILIES, config.model_type, "model_type for activations")
    act = getattr(config, "hidden_act", None) or fam.hidden_act
    if act not in ONE_TENSOR_ACTIVATIONS:
        known = ", ".join(ONE_TENSOR_ACTIVATIONS)
        raise ValueError(f"{config.source}: activation {act!r} is not modelled; known: {known}")
    if attention == "sdpa" and not fam.sdpa:
        raise ValueError(
            f"{config.source}: transformers does not run {config.model_type} under sdpa "
            "(attention softcapping); use attention='eager'"
        )
    qk_norm = getattr(config, "qk_norm", None)
    if qk_norm is not None and qk_norm != fam.qk_norm:
        fam = replace(fam, qk_norm=bool(qk_norm))
    attn_softcap = getattr(config, "attn_logit_softcapping", fam.attn_softcap)
    final_softcap = getattr(config, "final_logit_softcapping", fam.final_softcap)

    x = _Shape(t=s * b, s=s, b=b, w=w, h=config.hidden_size, n=config.num_attention_heads,
               kv=config.num_key_value_heads, d=config.head_dim, vocab=config.vocab_size)
    layers = []
    for index in range(config.num_hidden_layers):
        masked = attention == "sdpa" and _layer_is_masked(config, index, s, padded)
        layers.append(_layer(x, fam, config, index, attention, masked, attn_softcap is not None,
                             selective=recompute == "selective"))
    if recompute == "full":
        checkpoint = w * x.t * x.h  # the layer's input hidden states, kept by the checkpoint
        per_layer = checkpoint
        recomputed = max(kept for kept, _ in layers)
        layers_bytes = checkpoint * len(layers) + recomputed
    else:
        per_layer = max(kept for kept, _ in layers)
        recomputed = max(again for _, again in layers)
        layers_bytes = sum(kept for kept, _ in layers) + recomputed
    # final norm, lm_head's input, token ids and shifted labels, nll_loss's fp32 total weight
    head = _norm(x.t, x.h, w, fam.gemma_norm) + w * x.t * x.h + 2 * INT64 * x.t + FP32
    logits = (w + FP32) * x.vocab * x.t + (w * x.vocab * x.t if final_softcap is not None else 0)
    return ActivationMemory(
        per_layer_bytes=per_layer,
        recomputed_bytes=recomputed,
        layers_bytes=layers_bytes,
        head_bytes=head,
        logits_bytes=logits,
        total_bytes=layers_bytes + head + logits,
        tokens=x.t,
        attention=attention,
        recompute=recompute,
        dtype=dtype,
    )
