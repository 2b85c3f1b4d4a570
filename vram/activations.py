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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .families import Family, get_family, is_registered, model_types
from .validate import check_int, lookup

if TYPE_CHECKING:
    from .models import ModelConfig

RECOMPUTE = ("none", "selective", "full")
ATTENTION = ("sdpa", "eager")
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
MAX_SEQ_LEN = 2**24  # 16,777,216 tokens: beyond any released context window
MAX_MICRO_BATCH = 2**16

FP32 = 4  # bytes: RMSNorm statistics, softmax outputs, log-sum-exp and the loss run in fp32
INT64 = 8  # bytes: token ids, labels, max/top-k indices and the sort order of a mixture of experts
# Activation functions whose backward keeps ONE tensor of the MLP width (SiLU, GELU and
# GELU-tanh keep their input, ReLU its output); transformers' ACT2FN names.
ONE_TENSOR_ACTIVATIONS = ("silu", "swish", "gelu", "gelu_pytorch_tanh", "relu")
OUTPUT_KEEPING_ACTIVATIONS = ("relu",)


# The families whose layers are modelled here: every registered one (vram.families).
ACTIVATION_MODEL_TYPES = model_types()


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
    - ``loss_backward_bytes``: what the loss's backward adds while everything above is still
      kept: ``nll_loss``'s backward writes an fp32 vocabulary x tokens gradient, and
      ``log_softmax``'s backward a second one from it, before either is freed: 8*V*t.
    - ``attention_backward_bytes``: under eager attention, what the activations hold while
      the backward of one layer's attention core runs, at the layer where that is the most
      (0 under sdpa): the layers below it whole, what that layer still keeps (its MLP, the
      norms after its attention and its core's output are freed by then), the core's
      working set (the s*s gradients of its softmax, ``activation_memory``), the returned
      logits, token ids and labels.
    - ``peak_bytes``: the most the activations hold during the step: the largest of
      ``total_bytes`` (a recomputation under way), what is kept when the loss's backward
      runs (``total_bytes - recomputed_bytes``, no recomputation yet) plus
      ``loss_backward_bytes``, and ``attention_backward_bytes``. Oracle: the profiler's
      allocator events during a real backward (tests/vram/test_loss_backward.py).
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
    loss_backward_bytes: int = 0
    attention_backward_bytes: int = 0

    @property
    def peak_bytes(self) -> int:
        """Bytes at the activations' peak: ``max(total_bytes, total_bytes - recomputed_bytes
        + loss_backward_bytes, attention_backward_bytes)`` (see the class docstring)."""
        return max(
            self.total_bytes,
            self.total_bytes - self.recomputed_bytes + self.loss_backward_bytes,
            self.attention_backward_bytes,
        )


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


def _norm(rows: int, width: int, w: int, kind: str) -> int:
    """One RMSNorm over ``rows`` vectors of ``width`` (see ``activation_memory``)."""
    upcast = FP32 * rows * width  # x.to(float32): kept by pow(2) and by x * rsqrt(...)
    rsqrt = FP32 * rows  # rsqrt(mean + eps), kept by the multiplication
    if kind == "gemma":  # (x * rsqrt) * (1 + weight.float()): the fp32 product and 1 + weight
        return upcast + rsqrt + FP32 * rows * width + FP32 * width
    if kind == "gpt_oss":  # (weight * (x * rsqrt)).to(dtype): the fp32 product
        return upcast + rsqrt + FP32 * rows * width
    return upcast + rsqrt + w * rows * width  # weight * (x * rsqrt).to(dtype): the cast


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


@dataclass(frozen=True)
class _Core:
    kept: int  # bytes the attention core keeps until backward
    again: int  # bytes one recomputation of the core keeps (selective recomputation)
    out: int = 0  # of ``kept``: the core's output, o_proj's input (freed by o_proj's backward)
    working: int = 0  # what the core's backward allocates beyond ``kept`` at its most (eager)
    freed: int = 0  # of a layer's bytes: what its backward frees before the core's backward


def _eager_square(x: _Shape, config: ModelConfig) -> tuple[int, int]:
    """Eager attention's s*s tensors: what the core keeps, and what its softmax's backward
    allocates beyond that at its most (``activation_memory``: eager's backward)."""
    w, n, b, s = x.w, x.n, x.b, x.s
    probs = b * n * s * s
    if config.attention_sinks:  # gpt_oss: softmax in the dtype over s + 1 columns, after a max
        square = w * b * n * s * (s + 1) + INT64 * b * n * s
        # backward: the gradient of the probabilities over s + 1 columns and softmax's
        # gradient of its input, while the probabilities are still kept
        return square, 2 * w * b * n * s * (s + 1)
    if config.family.eager_softmax == "dtype":  # llama4_text: softmax in the dtype, its output kept
        # backward: the gradient of the probabilities and softmax's gradient of its input
        return w * probs, 2 * w * probs
    # fp32 softmax, its cast to the dtype, softcapping's tanh
    square = FP32 * probs + (w * probs if w != FP32 else 0)
    square += w * probs if config.attn_logit_softcapping is not None else 0
    # backward: the cast's fp32 gradient and softmax's fp32 gradient of its input, while the
    # fp32 probabilities are kept; the cast to the dtype is freed by then (the second matmul's
    # backward ran); in fp32 there is no cast
    return square, 2 * FP32 * probs - (w * probs if w != FP32 else 0)


def _mla_core(x: _Shape, config: ModelConfig, attention: str, masked: bool, selective: bool) -> _Core:
    """deepseek_v3's attention core: queries and keys of qk = nope + rope per head (the
    query a ``torch.cat``, the key a new tensor both parts are copied into), values a view
    of ``kv_b_proj``'s output (n x (nope + v) per token), every head its own key and value."""
    t, w, n, qk, v, b, s = x.t, x.w, x.n, x.d, config.v_head_dim, x.b, x.s
    q = k = w * t * n * qk
    kv_b = w * t * n * (qk - config.qk_rope_head_dim + v)  # kv_b_proj's output, whose view V is
    out = w * t * n * v  # o_proj's input
    if attention == "sdpa":  # the fused kernel keeps q, k, V's storage, its output and the fp32
        # log-sum-exp; its output is (b, n, s, v): o_proj keeps the contiguous copy besides
        sdpa_out = w * t * n * v if s > 1 and n > 1 else 0
        return _Core(q + k + kv_b + out + sdpa_out + FP32 * t * n + (w * b * s * s if masked else 0), 0, out)
    square, working = _eager_square(x, config)
    working += w * t * n * v  # the gradient of V
    v_copy = w * t * n * v  # eager's matmul copies the strided V
    if selective:  # under checkpoint the core keeps its inputs (V as kv_b_proj's output) and output
        return _Core(q + k + kv_b + out, square + v_copy, out, working)
    return _Core(q + k + v_copy + out + square, 0, out, working)


def _attention_core(
    x: _Shape, config: ModelConfig, fam: Family, attention: str, masked: bool, cache: bool, selective: bool
) -> _Core:
    t, w, n, kv, d, b, s = x.t, x.w, x.n, x.kv, x.d, x.b, x.s
    q = w * t * n * d  # the rotary output (q*cos + rotate_half(q)*sin), a new tensor
    out = w * t * n * d  # the core's output, o_proj's input (under sdpa one storage with SDPA's)
    at_kv = w * t * kv * d  # k or v at kv heads (with the cache on: the cache's contiguous copy)
    at_n = w * t * n * d  # repeat_kv's copy at n heads
    # phi3 without the cache (under checkpointing): v is a view of the fused qkv_proj output
    v_sdpa = w * t * (n + 2 * kv) * d if config.fused_projections and not cache else at_kv
    # repeat_kv is expand(b, kv, n/kv, s, d).reshape(b, n, s, d): a copy, except with one group
    # (n = kv: k and v themselves) and with one KV head (multi-query: the reshape is then a view,
    # which SDPA keeps as it is; eager's matmul views it as (b * n, s, d), a copy unless b = 1)
    copies = (kv not in (n, 1)) or (attention == "eager" and kv == 1 and n > 1 and b > 1)
    k_rep, v_rep = (at_n, at_n) if copies else (at_kv, v_sdpa)
    if attention == "sdpa":
        lse = FP32 * t * n  # log-sum-exp of the flash / memory-efficient kernel
        if fam.output_copy and s > 1 and n > 1:
            out += w * t * n * d  # SDPA keeps its output; o_proj keeps the contiguous copy
        # use_gqa_in_sdpa: K/V stay at kv heads (enable_gqa) without a mask and with head_dim <= 256;
        # otherwise transformers repeats them. SDPA keeps the mask it is given, cast to the dtype.
        if masked or d > 256:
            return _Core(q + k_rep + v_rep + out + lse + (w * b * s * s if masked else 0), 0)
        return _Core(q + at_kv + v_sdpa + out + lse, 0)
    square, working = _eager_square(x, config)
    working += w * t * n * d  # the second matmul's backward: the gradient of V at n heads
    if selective:  # eager_attention_forward under checkpoint keeps its inputs q, k, v and output
        return _Core(q + 2 * at_kv + out, square + (2 * at_n if copies else 0), out, working)
    return _Core(q + k_rep + v_rep + out + square, 0, out, working)


def _mlp(x: _Shape, config: ModelConfig, fam: Family, layer: int) -> int:
    t, w, h = x.t, x.w, x.h
    if not config.moe_layers[layer]:
        # act(gate) keeps gate; act(gate) * up keeps both; down_proj keeps the product. ReLU keeps
        # its output, the tensor the product keeps too, so gate is not kept, unless gate and up
        # are halves of one fused output (phi3's gate_up_proj), which up keeps whole anyway.
        kept = 3 if config.hidden_act in OUTPUT_KEEPING_ACTIVATIONS and not config.fused else 4
        return kept * w * t * config.intermediate_size
    inter = config.moe_intermediate_size or config.intermediate_size
    experts, k = config.num_local_experts, config.num_experts_per_tok
    spec = fam.experts
    assert spec is not None  # config.is_moe
    if spec.router == "llama4":  # Llama4TextMoe: every expert on every token (E x t rows)
        rows = experts * t
        # top-k index, fp32 sigmoid, its cast kept by the scaling, the repeated tokens and their
        # scaled copy (bmm's input), gate_up's output, the activation and down's input
        kept = INT64 * t * k + FP32 * t * experts + w * t * experts + 2 * w * rows * h + 4 * w * rows * inter
        return kept + 4 * w * t * config.shared_expert_size
    pairs = t * k  # token-expert pairs S of grouped_mm_experts_forward
    # per pair: the gathered input and the down output (2*w*h); int64 top-k index, gather
    # order, its inverse and the weights' order (4 * 8)
    per_pair = 2 * w * h + 4 * INT64
    if spec.router == "topk_softmax":  # gpt_oss: clamped SwiGLU keeps gate_up (2I) and 5 x I;
        # the softmax of the k chosen logits, the routing weight, the experts' bias index
        per_pair += 7 * w * inter + w + w + INT64
        return FP32 * experts + pairs * per_pair  # + grouped_mm's int32 offsets
    per_pair += 4 * w * inter  # gate_up output (2I), act output, down input
    per_pair += FP32 if spec.routing_fp32 else w  # routing weight kept by proj_out * weight
    router = FP32 * t * experts  # softmax(router_logits) in fp32 (sigmoid_group: the sigmoid scores)
    if spec.router == "sigmoid_group":  # F.linear on fp32 copies of the input and of the router weight
        router += FP32 * t * h + FP32 * experts * h
    if config.shared_expert_size:  # the shared MLP; qwen2_moe: its sigmoid gate and their product too
        router += 4 * w * t * config.shared_expert_size
        if spec.shared == "qwen2_moe":
            router += w * t + w * t * h
    if config.norm_topk_prob:  # the top-k renormalised in place (mixtral; qwen3_moe's norm_topk_prob)
        router += FP32 * t  # their sum
        per_pair += FP32  # their fp32 values
    return router + FP32 * experts + pairs * per_pair


def _layer(
    x: _Shape, fam: Family, config: ModelConfig, index: int, attention: str, masked: bool, cache: bool, selective: bool
) -> _Core:
    """Bytes one decoder layer keeps, and one recomputation of its attention core."""
    t, w, h, n, kv, d = x.t, x.w, x.h, x.n, x.kv, x.d
    total = config.norms_per_layer * _norm(t, h, w, fam.norm)
    total += w * t * h  # q/k/v projections' input (the input norm's output), kept once
    total += w * t * h  # the MLP's input (the pre-MLP norm's output): gate/up or router
    if config.qk_norm == "head":  # one norm per head: t*n and t*kv rows of head_dim
        total += _norm(t * n, d, w, fam.norm) + _norm(t * kv, d, w, fam.norm)
    elif config.qk_norm == "whole":  # olmo2/olmo3: t rows of the whole projection
        total += _norm(t, n * d, w, fam.norm) + _norm(t, kv * d, w, fam.norm)
    elif config.qk_norm == "olmoe":  # OLMoE: t rows of hidden and of (hidden // heads) * kv
        total += _norm(t, h, w, fam.norm) + _norm(t, h // n * kv, w, fam.norm)
    elif config.qk_norm == "l2" and config.rope_layers[index]:  # llama4_text: x.float() and rsqrt, no weight
        total += FP32 * t * (n + kv) * d + FP32 * t * (n + kv)
    if fam.query_scale:  # ministral3: q * scale(positions), the (1, s) scale cast to the dtype, kept
        total += w * x.s
    if config.attn_temperature_tuning and not config.rope_layers[index]:  # llama4_text: the fp32 (s) scale
        total += FP32 * x.s
    if config.rotary_dim:  # glm4: cos and sin cut to the rotary width and interleaved, per layer
        total += 2 * w * x.s * config.rotary_dim
    if config.is_mla:  # the latent's RMSNorm and its output (kv_b_proj's input); the query's, with a rank
        total += _norm(t, config.kv_lora_rank, w, fam.norm) + w * t * config.kv_lora_rank
        if config.q_lora_rank:
            total += _norm(t, config.q_lora_rank, w, fam.norm) + w * t * config.q_lora_rank
        core = _mla_core(x, config, attention, masked, selective and attention == "eager")
    else:
        core = _attention_core(x, config, fam, attention, masked, cache, selective and attention == "eager")
    mlp = _mlp(x, config, fam, index)
    # backward reaches the attention core after the norms that follow the attention, the MLP
    # with its input, and o_proj (which frees the core's output)
    after = config.norms_per_layer - ("input_layernorm" in fam.layer_norms)
    freed = after * _norm(t, h, w, fam.norm) + w * t * h + mlp + core.out
    return _Core(total + core.kept + mlp, core.again, core.out, core.working, freed)


def _layer_is_masked(config: ModelConfig, layer: int, seq_len: int, padded: bool) -> bool:
    """Whether transformers hands SDPA a mask tensor for this layer (masking_utils)."""
    if padded or config.bidirectional_attention:  # an or_mask_function rules out the is_causal skip
        return True
    # _ignore_causal_mask_sdpa: a sliding (chunked) layer needs its mask once kv_length >= window (chunk)
    kind = config.layer_types[layer]
    window = (
        config.sliding_window
        if kind == "sliding_attention"
        else (config.attention_chunk_size if kind == "chunked_attention" else None)
    )
    return window is not None and seq_len >= window


def _checkpointed_masks(config: ModelConfig, attention: str, s: int, b: int, w: int, padded: bool) -> int:
    """The 4-D attention masks every checkpointed layer receives, kept once each by the
    checkpoints until backward: under eager one (b, 1, s, s) mask in the dtype per kind of
    layer (full, sliding); under sdpa one boolean (1 B) mask per kind of layer that gets a
    mask (``_layer_is_masked``), of batch 1 broadcast to b without padding."""
    kinds = {}
    for index, kind in enumerate(config.layer_types):
        if attention == "eager":
            kinds[kind] = w * b * s * s
        elif _layer_is_masked(config, index, s, padded):
            kinds[kind] = (b if padded else 1) * s * s
    return sum(kinds.values())


def _family(config: ModelConfig) -> Family:
    if not is_registered(config.model_type):
        raise ValueError(f"unknown model_type for activations {config.model_type!r}; known: {', '.join(model_types())}")
    return get_family(config.model_type)


def default_attention(config: ModelConfig) -> str:
    """The attention a transformers training run of this model uses: "sdpa" where
    transformers runs the family under sdpa (its default), "eager" where it refuses sdpa
    (gemma2: attention softcapping; gpt_oss: attention sinks). Raises ValueError for a
    family not modelled here."""
    return _family(config).default_attention


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

    Inputs: ``config`` (``vram.models.ModelConfig``; families in ``ACTIVATION_MODEL_TYPES``),
    ``seq_len`` tokens per sequence, ``micro_batch`` sequences per GPU, ``attention`` "sdpa"
    (PyTorch's and transformers' default: a fused kernel that keeps no s*s matrix) or
    "eager", ``recompute`` "none", "selective" or "full", ``dtype`` of the weights and
    activations "bf16", "fp16" or "fp32" (w = 2 or 4 bytes), ``padded``: the batch carries
    an attention mask with padding. Output: ``ActivationMemory``, in bytes. Training mode,
    transformers' defaults (``use_cache`` as the config says, attention dropout 0, MoE
    experts through ``grouped_mm``), no tensor or sequence parallelism.

    Terms, for t = seq_len * micro_batch tokens, hidden h, heads n, KV heads kv, head_dim d,
    MLP width I, vocabulary V (bytes; per decoder layer unless said):

    - RMSNorm over t rows of width h: ``x.to(float32)``, kept by ``pow`` and ``mul``
      (4*t*h), and ``rsqrt`` (4*t); then llama's ``weight * x.to(dtype)`` keeps the cast
      (w*t*h), gemma's ``x * (1 + weight.float())`` the fp32 product (4*t*h) and
      ``1 + weight`` (4*h), gpt_oss's ``(weight * x).to(dtype)`` the fp32 product (4*t*h).
      Two per layer (input, pre-MLP); gemma2 and gemma3_text four (post-attention and
      post-MLP too); qwen3, qwen3_moe and gemma3_text one more per query head (t*n rows of
      d) and per key head (t*kv rows).
    - ``nn.Linear`` keeps its input: q/k/v (w*t*h, one tensor for the three), o_proj
      (w*t*n*d, the attention output below), gate/up (w*t*h), down (w*t*I). The rotary
      embedding keeps cos/sin, which all layers share (not counted).
    - MLP (SwiGLU, GeGLU): ``act(gate)`` keeps gate, ``act(gate) * up`` keeps both, down its
      input: 4*w*t*I; ReLU keeps its output, the tensor the product keeps, so 3*w*t*I (4 with
      phi3's fused gate_up_proj, whose output up keeps whole). Mixture of experts (``grouped_mm_experts_forward``), per token-expert
      pair (t*k of them): the gathered input and the down output (2*w*h), gate_up's output,
      the activation and down's input (4*w*I; gpt_oss's clamped SwiGLU 7*w*I), four int64
      indices (top-k, gather order, its inverse, the weights' order: 32) and the routing
      weight (fp32 for mixtral, w otherwise); the router's fp32 softmax over E experts
      (4*t*E; gpt_oss: a softmax over the k chosen logits, w per pair, and an int64 bias
      index per pair), the in-place top-k renormalisation of mixtral and of qwen3_moe with
      ``norm_topk_prob`` (4*t + 4 per pair), the int32 offsets (4*E); glm4_moe's and deepseek_v3's
      sigmoid router (``sigmoid_group``) runs ``F.linear`` on fp32 copies of its input and of its
      weight (4*t*h + 4*E*h) and keeps the fp32 sigmoid (4*t*E); a shared expert keeps what a
      dense MLP of its width keeps (qwen2_moe's also its sigmoid gate and their product);
      llama4_text runs every expert on every token: the top-k index (8*t*k), the fp32 sigmoid
      (4*t*E) and its cast (w*t*E), the tokens repeated E times and their scaled copy
      (2*w*E*t*h), gate_up's output, the activation and down's input (4*w*E*t*I). Its
      attention: the weightless L2 q/k norm of the RoPE layers keeps x.float() and rsqrt
      (4*t*(n + kv)*(d + 1)), the no-RoPE layers' query scale its fp32 (s) factors (4*s). Layers listed as dense (qwen3_moe ``mlp_only_layers``) count 4*w*t*I.
    - ``sdpa`` (``sdpa_attention_forward``, flash or memory-efficient kernel): q after
      rotary (w*t*n*d), k and v at kv heads (w*t*kv*d each: ``enable_gqa``), the output
      (w*t*n*d, one storage with o_proj's input; phi3, whose rotary ends in ``torch.cat``,
      has its output in (b, n, s, d) layout and o_proj keeps a copy: w*t*n*d more), the
      fp32 log-sum-exp (4*t*n). No s*s term.
      With a mask (``padded``, every layer of a gemma3_text with
      ``use_bidirectional_attention``, or a sliding-window layer once seq_len >= window:
      ``_ignore_causal_mask_sdpa``) transformers repeats K/V to n heads (w*t*n*d each) and
      SDPA keeps the mask cast to the dtype (w*b*s*s); with head_dim over 256 it repeats them
      without a mask too (``use_gqa_in_sdpa``). The repeat (``repeat_kv``: expand, then
      reshape) is a view, not a copy, when kv = 1 (multi-query attention): K/V stay w*t*d. Refused for gemma2 (softcapping) and
      gpt_oss (sinks), as transformers refuses them.
    - ``eager`` (``eager_attention_forward``): q, the repeated K and V (w*t*n*d each; with
      kv = 1 and b = 1 views of K and V, w*t*d each, as the matmul needs no copy), the
      output, and per head the s*s tensors: fp32 softmax (4*b*n*s*s), its cast to the dtype
      (w*b*n*s*s; none in fp32), gemma2's softcapping ``tanh`` (w*b*n*s*s); gpt_oss instead
      a softmax in the dtype over s + 1 columns (the sink) and the int64 indices of its max.
    - eager's backward (``attention_backward_bytes``): one layer's core at a time runs the
      backward of its softmax, whose s*s tensors come on top of what is kept: the cast's fp32
      gradient (4*b*n*s*s) and softmax's fp32 gradient of its input (4*b*n*s*s) while the
      fp32 probabilities are kept, less the probabilities' cast to the dtype, freed by then
      (w*b*n*s*s; none in fp32): 6 B per element of b*n*s*s in bf16, 8 in fp32; gpt_oss two
      gradients of its probabilities over s + 1 columns (2*w*b*n*s*(s + 1)); llama4_text, whose
      eager softmax runs in the dtype and keeps only its output (w*b*n*s*s), two gradients of
      it (2*w*b*n*s*s); and the gradient
      of V the second matmul's backward writes (w*t*n*d). By then the layer's MLP, its input,
      the norms after the attention and the core's output (o_proj's backward ran) are freed;
      the layers below keep everything (with ``full``: their checkpoints, the masks and the
      layer being re-run; with ``selective``: the core re-run, ``recomputed_bytes``); outside
      the layers the returned logits, the token ids and labels, and the gradient of the
      hidden states (w*t*h) remain. The moment is taken at the layer where it holds the most.
      Oracle: the profiler's allocator events of a real backward, within 2 %
      (tests/vram/test_attention_backward.py).
    - deepseek_v3's latent attention: the query's and the latent's RMSNorms and their outputs
      (``q_b_proj``'s and ``kv_b_proj``'s inputs, w*t*rank each), q and k of n heads of
      qk = nope + rope (w*t*n*qk each); under sdpa the fused kernel keeps V as a view of
      ``kv_b_proj``'s output (w*t*n*(nope + v)), its output and o_proj's copy (w*t*n*v each) and
      the log-sum-exp (CUDA's memory-efficient kernel takes unequal qk and v widths,
      ``sdp_utils.cpp``, ``check_head_dim_size_mem_efficient``; CPU's falls back to the math
      path, so the oracle runs equal widths under sdpa); under eager the matmul's copy of the
      strided V (w*t*n*v), the output and the s*s terms above.
    - ``recompute="selective"``: Korthikanti's selective recomputation, here
      ``eager_attention_forward`` under ``torch.utils.checkpoint``: it keeps q, k and v at
      kv heads and its output; while the backward recomputes one core, its s*s tensors and
      K/V repeats live once (``recomputed_bytes``). Under sdpa it changes nothing: the fused
      kernels already recompute the s*s part in their backward.
    - ``recompute="full"`` (``activation_checkpointing_enable``): each layer keeps its input
      (w*t*h); the backward re-runs one layer at a time, so the largest layer's terms above
      live once more. The checkpoints also keep the 4-D masks the layers receive, once per
      kind of layer (full, sliding): under eager a (b, 1, s, s) mask in the dtype (w*b*s*s),
      under sdpa a boolean one (s*s; b*s*s with padding) where a layer gets a mask; without
      checkpointing nothing saves them. Checkpointing turns the KV cache off: phi3's v is then a view of the
      fused qkv output and SDPA keeps that whole storage (w*t*(n+2*kv)*d); with the cache
      on, v is the cache's copy (w*t*kv*d).
    - ``head_bytes``, outside the layers: the final norm, lm_head's input (w*t*h), token ids
      and shifted labels (8*t each; with b = 1 the shifted labels are a view of the labels
      padded by one, 8*(s + 1)), the loss's fp32 total weight (4).
    - ``logits_bytes``: the logits the model returns (w*V*t), gemma2's final softcapping
      ``tanh`` (w*V*t), and the fp32 log-softmax that ``ForCausalLMLoss``'s cross-entropy
      keeps (4*V*t; the fp32 upcast it starts from is freed once the loss returns).

    - ``loss_backward_bytes``: the loss's backward, while all the above is still kept: the
      fp32 gradient ``nll_loss`` writes (4*V*t) and the one ``log_softmax``'s backward
      computes from it (4*V*t) coexist: 8*V*t on top (``peak_bytes``).

    Not counted: the rotary tables the checkpoints keep (cos and sin, 2*w*s*d per rotary
    embedding), transients of forward (the fp32 upcast and the log-softmax coexist for a
    moment), the KV cache copies held by the
    output under eager attention with grouped heads (2*w*t*kv*d per layer), gradients. A
    one-token sequence (seq_len 1, not a training shape) is not exact where K/V are repeated
    (the repeat is then a view: a few hundred bytes over).

    Raises ValueError (one line) for a seq_len or micro_batch that is not an integer in
    1..2**24 or 1..2**16, an unknown attention, recompute or dtype, a family or activation
    function not modelled, sdpa on gemma2 or gpt_oss. Sources: the transformers 5.23 and
    PyTorch 2.13 code named above; Korthikanti et al. 2022 (arXiv:2205.05198) §5 for
    "selective".
    """
    s = _bounded(seq_len, "seq_len", MAX_SEQ_LEN)
    b = _bounded(micro_batch, "micro_batch", MAX_MICRO_BATCH)
    lookup({a: a for a in ATTENTION}, attention, "attention")
    lookup({r: r for r in RECOMPUTE}, recompute, "recompute")
    w = lookup(DTYPE_BYTES, dtype, "dtype")
    fam = _family(config)
    if config.hidden_act not in ONE_TENSOR_ACTIVATIONS and not config.attention_sinks:
        known = ", ".join(ONE_TENSOR_ACTIVATIONS)
        raise ValueError(f"{config.source}: activation {config.hidden_act!r} is not modelled; known: {known}")
    if attention == "sdpa" and fam.no_sdpa:
        raise ValueError(
            f"{config.source}: transformers does not run {config.model_type} under sdpa "
            f"({fam.no_sdpa}); use attention='eager'"
        )

    x = _Shape(
        t=s * b,
        s=s,
        b=b,
        w=w,
        h=config.hidden_size,
        n=config.num_attention_heads,
        kv=config.num_key_value_heads,
        d=config.head_dim,
        vocab=config.vocab_size,
    )

    def layers(cache: bool) -> list[_Core]:
        return [
            _layer(
                x,
                fam,
                config,
                index,
                attention,
                attention == "sdpa" and _layer_is_masked(config, index, s, padded),
                cache,
                recompute == "selective",
            )
            for index in range(config.num_hidden_layers)
        ]

    if recompute == "full":
        # checkpointing turns transformers' KV cache off, in the recomputation too
        per_layer = w * x.t * x.h  # the layer's input hidden states, kept by the checkpoint
        replayed = layers(cache=False)
        recomputed = max(layer.kept for layer in replayed)
        masks = _checkpointed_masks(config, attention, s, b, w, padded)
        layers_bytes = per_layer * config.num_hidden_layers + recomputed + masks
        # layer i re-run: the checkpoints of layers 0..i and the masks, its own saves
        core_moment = max(
            per_layer * (i + 1) + masks + layer.kept - layer.freed + layer.working for i, layer in enumerate(replayed)
        )
    else:
        kept = layers(cache=True)
        per_layer = max(layer.kept for layer in kept)
        recomputed = max(layer.again for layer in kept)
        layers_bytes = sum(layer.kept for layer in kept) + recomputed
        # layer i's core: layers 0..i-1 whole, what layer i keeps then (and, selective, its core re-run)
        below = [sum(layer.kept for layer in kept[:i]) for i in range(len(kept))]
        core_moment = max(
            below[i] + layer.kept - layer.freed + layer.again + layer.working for i, layer in enumerate(kept)
        )
    # final norm, lm_head's input, token ids and shifted labels, nll_loss's fp32 total weight;
    # ForCausalLMLoss pads the labels by one and slices [..., 1:]: with b = 1 that slice is
    # contiguous, so .contiguous() keeps a view of the padded b * (s + 1) labels
    labels = INT64 * (s + 1) if b == 1 else INT64 * x.t
    final_norm_and_lm_head_input = _norm(x.t, x.h, w, fam.norm) + w * x.t * x.h
    head = final_norm_and_lm_head_input + INT64 * x.t + labels + FP32
    returned_logits = w * x.vocab * x.t
    logits = returned_logits + FP32 * x.vocab * x.t
    if config.final_logit_softcapping is not None:
        logits += w * x.vocab * x.t  # tanh(logits / cap), kept by tanh
    # an eager core's backward: the layers, the gradient of the residual stream, the logits the
    # model returned, the token ids and labels
    attention_backward = (
        core_moment + w * x.t * x.h + head - final_norm_and_lm_head_input + returned_logits
        if attention == "eager"
        else 0
    )
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
        loss_backward_bytes=2 * FP32 * x.vocab * x.t,
        attention_backward_bytes=attention_backward,
    )
