"""What the family registry (``vram.families``) holds for each ``model_type``: ``Family``, ``Experts``.

Every fact about a family of Hugging Face causal LMs that the calculator uses: the keys and
defaults as transformers 5.23's config class resolves them, the modules and shapes of
its modeling file, what is tied, the modules PEFT targets, the attention it runs by
default, and its KV-cache layout (how vLLM allocates it: ``vram.serving``). Standard
library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# layer_types as transformers' DynamicCache and vLLM see each decoder layer
FULL, SLIDING, CHUNKED = "full_attention", "sliding_attention", "chunked_attention"
# keys a config.json must name (a file without them is cut short: refused, not defaulted)
REQUIRED_KEYS = frozenset(
    {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"}
)
# how a family's config class fills ``layer_types`` when the file leaves it out (vram.models._layer_types)
LAYER_RULES = (
    "none",
    "from_window",
    "qwen",
    "qwen_moe",
    "qwen2_moe",
    "every_2nd_full",
    "every_4th_full",
    "gemma3",
    "smollm3",
    "llama4",
)
# how a family's RMSNorm keeps tensors for backward (vram.activations._norm)
NORMS = ("llama", "gemma", "gpt_oss")
# q/k norms: per head (qwen3: head_dim wide), whole projection (olmo2: heads*head_dim), OLMoE's own widths;
# llama4_text: a weightless L2 norm per head on the rotary layers ("l2")
QK_NORMS = ("", "head", "whole", "olmoe", "l2")


@dataclass(frozen=True)
class Experts:
    """How a family builds its mixture of experts (transformers 5.x fused 3-D expert parameters).

    - ``layout``: "gate_up_first" (``gate_up_proj`` (E, 2I, h), ``down_proj`` (E, h, I):
      mixtral, qwen3_moe...), "gpt_oss" (transposed, with ``gate_up_proj_bias`` (E, 2I) and
      ``down_proj_bias`` (E, h));
    - ``key``: the config class's own field for E, ``alias`` its ``attribute_map`` name
      (with both keys in a file, the alias is set after the fields and wins);
    - ``width``: the key of one expert's width I ("intermediate_size" or "moe_intermediate_size");
    - ``dense_rule``: which layers keep a dense MLP: "none" (every layer is MoE), "qwen"
      (``mlp_only_layers`` and ``decoder_sparse_step``) or "first_k" (the first
      ``first_k_dense_replace`` layers: glm4_moe, deepseek_v3);
    - ``router_bias``: the router holds a bias of E (gpt_oss); ``min_experts``: 0 where the
      class accepts no experts (qwen3_moe: every layer dense);
    - ``norm_topk``: the router renormalises the top-k weights "always" (mixtral), by the
      ``norm_topk_prob`` key ("key") or "never";
    - ``router``: how the activations of routing are kept (``vram.activations``):
      "softmax_topk", "topk_softmax" (gpt_oss) or "sigmoid_group" (glm4_moe, deepseek_v3: fp32
      sigmoid scores, the top-k chosen within the ``topk_group`` best of ``n_group`` groups,
      scaled by ``routed_scaling_factor``); ``routing_fp32``: the routing weights stay fp32
      (mixtral) or are cast to the model's dtype;
    - ``shared``: a shared expert beside the routed ones: "" , "qwen2_moe" (``shared_expert``
      MLP of ``shared_expert_intermediate_size`` and a one-output ``shared_expert_gate``) or
      "deepseek" (``shared_experts``, one MLP of ``moe_intermediate_size`` x
      ``n_shared_experts``, ungated);
    - ``peft_v4_names``: PEFT 0.21's conversion of transformers-4 expert names
      (``_MOE_TARGET_MODULE_MAPPING``): v4 name -> "router", "gate_up_proj" or "down_proj";
    - ``router_is_linear``: the router is an ``nn.Linear`` subclass (llama4_text's
      ``Llama4Router``), which PEFT adapts as a Linear ("all-linear", or by name) while
      transformers' selections of exactly ``nn.Linear`` (bitsandbytes) leave it out.

    llama4_text (``layout`` "llama4", ``router`` "llama4", ``shared`` "llama4",
    ``dense_rule`` "llama4"): ``gate_up_proj`` (E, h, 2I), ``down_proj`` (E, I, h), every
    expert run on every token (``Llama4TextMoe`` repeats the tokens E times, scaled by the
    sigmoid of the top-k logits and zero elsewhere), a ``shared_expert`` MLP of the expert
    width, MoE layers listed in ``moe_layers`` or every ``interleave_moe_layer_step``-th.
    """

    layout: str = "gate_up_first"
    key: str = "num_local_experts"
    alias: str = "num_experts"
    width: str = "intermediate_size"
    dense_rule: str = "none"
    router_bias: bool = False
    min_experts: int = 1
    norm_topk: str = "never"
    router: str = "softmax_topk"
    routing_fp32: bool = False
    shared: str = ""
    peft_v4_names: Mapping[str, str] = field(default_factory=dict)
    router_is_linear: bool = False


@dataclass(frozen=True)
class Family:
    """Everything the calculator knows of one ``model_type`` (module docstring).

    Config (``configuration_<family>.py``): ``config_class``; ``defaults`` of every key read
    (None: computed by the class's ``__post_init__``); ``nullable`` keys typed ``X | None``
    (a null elsewhere is refused as transformers does); ``head_dim`` "field" (a dataclass
    field) or "attribute" (no field: the modeling file's ``getattr(config, "head_dim",
    hidden // heads)``) or "required" (a field whose default, None, the modeling file cannot
    use: ministral) or "mla" (deepseek_v3: queries and keys of ``qk_nope_head_dim`` +
    ``qk_rope_head_dim``, values of ``v_head_dim``); ``checks_hidden_heads`` (``validate_architecture``: hidden % heads);
    ``activation_key``; ``layer_rule`` (``LAYER_RULES``: how ``layer_types`` is filled).

    Modules (``modeling``, the file ``AutoModelForCausalLM`` builds from): ``attention``
    "gqa" (q/k/v/o projections over heads and KV heads) or "mla" (DeepSeek's multi-head latent
    attention: ``q_a_proj``/``q_a_layernorm``/``q_b_proj`` of rank ``q_lora_rank`` or one
    ``q_proj`` when it is null, ``kv_a_proj_with_mqa`` to the ``kv_lora_rank`` latent and the
    shared rotary key, ``kv_a_layernorm``, ``kv_b_proj`` to every head's key and value,
    ``o_proj``; the KV cache keeps the latent and the rotary key); biases
    ``qkv_bias``, ``o_bias``, ``mlp_bias`` (a config key, or fixed); ``layer_norms``, the
    RMSNorms of a decoder layer by name; ``qk_norm`` (``QK_NORMS``) and ``qk_norm_key`` (the
    config flag that switches them, "" when always on); ``mlp_width``, the key of a dense
    MLP's width (llama4_text: ``intermediate_size_mlp``) and ``mlp_prefix`` its module's name
    (llama4_text: ``feed_forward``); ``fused`` "" , "qkv_gate_up" (phi3's
    ``qkv_proj`` and ``gate_up_proj``) or "gate_up" (glm4's ``gate_up_proj``); ``experts``
    (``Experts`` or None); ``sinks`` (gpt_oss's attention-sink logits). Tying follows the
    config's ``tie_word_embeddings`` (its default in ``defaults``).

    Activations (``vram.activations``): ``norm`` (``NORMS``); ``no_sdpa``, why transformers
    refuses sdpa for the family ("" : it runs sdpa, its default attention, else "eager");
    ``output_copy`` (the rotary ends in ``torch.cat``, so o_proj's input is a copy);
    ``query_scale`` (ministral3: q times a position-dependent scale, kept per layer; llama4_text
    scales the queries of its no-RoPE layers under ``attn_temperature_tuning``, ``ModelConfig``);
    ``eager_softmax``: eager attention's softmax in "fp32" (then cast to the dtype) or in the
    "dtype" (llama4_text's ``eager_attention_forward``). A
    ``partial_rotary``: the default ``partial_rotary_factor`` of a family whose cos/sin are
    cut to the rotary width and copied in every layer (glm4: 0.5; 0.0 for the others; the
    config's own factor wins, ``ModelConfig.rotary_dim``).

    LoRA: ``peft_targets``, PEFT 0.21's default ``target_modules`` for the family (empty:
    PEFT asks for targets).

    KV cache: every layer keeps K and V of ``num_key_value_heads`` x ``head_dim`` per token;
    full layers hold the context, sliding layers (``layer_types``) a window. vLLM allocates
    ``FullAttentionSpec`` for full layers and ``SlidingWindowSpec`` for sliding ones
    (``vram.serving``). Under "mla" a layer keeps one latent of ``kv_lora_rank`` +
    ``qk_rope_head_dim`` per token (transformers' cache and vLLM's ``MLAAttentionSpec``).
    """

    model_type: str
    config_class: str
    modeling: str
    defaults: Mapping[str, Any]
    nullable: frozenset[str] = frozenset()
    head_dim: str = "field"
    attention: str = "gqa"
    checks_hidden_heads: bool = False
    activation_key: str = "hidden_act"
    layer_rule: str = "from_window"
    qkv_bias: str | bool = False
    o_bias: str | bool = False
    mlp_bias: str | bool = False
    layer_norms: tuple[str, ...] = ("input_layernorm", "post_attention_layernorm")
    qk_norm: str = ""
    qk_norm_key: str = ""
    mlp_width: str = "intermediate_size"
    mlp_prefix: str = "mlp"
    fused: str = ""
    experts: Experts | None = None
    sinks: bool = False
    norm: str = "llama"
    no_sdpa: str = ""
    output_copy: bool = False
    query_scale: bool = False
    eager_softmax: str = "fp32"
    partial_rotary: float = 0.0
    peft_targets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.layer_rule not in LAYER_RULES:
            raise ValueError(f"{self.model_type}: layer_rule {self.layer_rule!r}; known: {', '.join(LAYER_RULES)}")
        if self.attention not in ("gqa", "mla") or (self.attention == "mla") != (self.head_dim == "mla"):
            raise ValueError(f"{self.model_type}: attention {self.attention!r} with head_dim {self.head_dim!r}")
        if self.norm not in NORMS or self.qk_norm not in QK_NORMS:
            raise ValueError(f"{self.model_type}: norm {self.norm!r} or qk_norm {self.qk_norm!r} not modelled")
        missing = sorted(REQUIRED_KEYS - set(self.defaults))
        if missing:
            raise ValueError(f"{self.model_type}: defaults lack {', '.join(missing)}")
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))

    @property
    def default_attention(self) -> str:
        """ "sdpa" where transformers runs the family under sdpa, else "eager"."""
        return "eager" if self.no_sdpa else "sdpa"
