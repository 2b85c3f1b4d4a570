"""The built-in families of the registry (``vram.families``): ``BUILTIN_FAMILIES``, one ``Family`` each.

Each entry is read from transformers 5.23: ``defaults`` are the config class's field
defaults (``transformers/models/<family>/configuration_<family>.py``) for the keys the
calculator reads; the modules and norms from ``modeling_<family>.py``; ``peft_targets``
from PEFT 0.21's ``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``. Tests check every
entry against those sources (tests/vram/test_family_registry.py and the oracle tests).
"""

from __future__ import annotations

from dataclasses import replace

from .family_spec import Experts, Family

_GEMMA_NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                "post_feedforward_layernorm")
_QV = ("q_proj", "v_proj")
# PEFT 0.21 converts these transformers-4 names for model_types whose conversion pattern is
# qwen2_moe (transformers.conversion_mapping: qwen3_moe, olmoe, glm4_moe, deepseek_v3)
_QWEN2_MOE_V4 = {"gate": "router", "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj", "down_proj": "down_proj"}

# olmo2: no input norm; norms after attention and MLP; q/k norms over the whole projection
_OLMO2 = Family(
    "olmo2", "Olmo2Config", "modeling_olmo2.py",
    dict(vocab_size=50304, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
         num_attention_heads=32, num_key_value_heads=None, hidden_act="silu", tie_word_embeddings=False,
         attention_bias=False, max_position_embeddings=2048),
    nullable=frozenset({"num_key_value_heads"}), head_dim="attribute", layer_rule="none",
    qkv_bias="attention_bias", o_bias="attention_bias",
    layer_norms=("post_attention_layernorm", "post_feedforward_layernorm"), qk_norm="whole", norm="gpt_oss")

BUILTIN_FAMILIES: tuple[Family, ...] = (
    Family(
        "llama", "LlamaConfig", "modeling_llama.py",
        dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=None, head_dim=None, hidden_act="silu",
             tie_word_embeddings=False, attention_bias=False, mlp_bias=False, max_position_embeddings=2048),
        nullable=frozenset({"num_key_value_heads", "head_dim"}), checks_hidden_heads=True, layer_rule="none",
        qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias", peft_targets=_QV),

    Family(
        "mistral", "MistralConfig", "modeling_mistral.py",
        dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=8, head_dim=None, hidden_act="silu",
             tie_word_embeddings=False, sliding_window=4096, max_position_embeddings=4096 * 32),
        nullable=frozenset({"head_dim"}), peft_targets=_QV),

    Family(
        "mixtral", "MixtralConfig", "modeling_mixtral.py",
        dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=8, head_dim=None, hidden_act="silu",
             tie_word_embeddings=False, sliding_window=None, max_position_embeddings=4096 * 32,
             num_local_experts=8, num_experts_per_tok=2),
        nullable=frozenset({"head_dim"}), peft_targets=_QV,
        experts=Experts(norm_topk="always", routing_fp32=True,
                        peft_v4_names={"gate": "router", "w1": "gate_up_proj", "w3": "gate_up_proj", "w2": "down_proj"})),

    Family(
        "qwen2", "Qwen2Config", "modeling_qwen2.py",
        dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=32, hidden_act="silu", tie_word_embeddings=False,
             use_sliding_window=False, sliding_window=4096, max_window_layers=28, max_position_embeddings=32768),
        nullable=frozenset({"num_key_value_heads"}), head_dim="attribute", qkv_bias=True, layer_rule="qwen",
        peft_targets=_QV),

    Family(
        "qwen3", "Qwen3Config", "modeling_qwen3.py",
        dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=32, head_dim=128, hidden_act="silu",
             tie_word_embeddings=False, attention_bias=False, use_sliding_window=False, sliding_window=4096,
             max_window_layers=28, max_position_embeddings=32768),
        nullable=frozenset({"num_key_value_heads"}), qkv_bias="attention_bias", o_bias="attention_bias",
        qk_norm="head", layer_rule="qwen", peft_targets=_QV),

    Family(
        "qwen3_moe", "Qwen3MoeConfig", "modeling_qwen3_moe.py",
        dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=24,
             num_attention_heads=32, num_key_value_heads=4, hidden_act="silu", tie_word_embeddings=False,
             attention_bias=False, use_sliding_window=False, sliding_window=4096, max_position_embeddings=32768,
             decoder_sparse_step=1, moe_intermediate_size=768, num_experts_per_tok=8, num_experts=128,
             mlp_only_layers=None, norm_topk_prob=False),
        nullable=frozenset({"mlp_only_layers"}), head_dim="attribute", qkv_bias="attention_bias",
        o_bias="attention_bias", qk_norm="head", layer_rule="qwen_moe",
        experts=Experts(key="num_experts", alias="num_local_experts", width="moe_intermediate_size",
                        dense_rule="qwen", min_experts=0, norm_topk="key",
                        peft_v4_names=_QWEN2_MOE_V4)),

    Family(
        "gemma2", "Gemma2Config", "modeling_gemma2.py",
        dict(vocab_size=256000, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
             num_attention_heads=8, num_key_value_heads=4, head_dim=256, hidden_activation="gelu_pytorch_tanh",
             tie_word_embeddings=True, attention_bias=False, sliding_window=4096, max_position_embeddings=8192,
             final_logit_softcapping=30.0, attn_logit_softcapping=50.0),
        checks_hidden_heads=True, qkv_bias="attention_bias", o_bias="attention_bias",
        activation_key="hidden_activation", layer_norms=_GEMMA_NORMS, layer_rule="every_2nd_full",
        norm="gemma", no_sdpa="attention softcapping", peft_targets=_QV),

    Family(
        "gemma3_text", "Gemma3TextConfig", "modeling_gemma3.py",
        dict(vocab_size=262208, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
             num_attention_heads=8, num_key_value_heads=4, head_dim=256, hidden_activation="gelu_pytorch_tanh",
             tie_word_embeddings=True, attention_bias=False, sliding_window=4096, max_position_embeddings=131072,
             final_logit_softcapping=None, attn_logit_softcapping=None, use_bidirectional_attention=False,
             sliding_window_pattern=6),
        nullable=frozenset({"use_bidirectional_attention"}), checks_hidden_heads=True,
        qkv_bias="attention_bias", o_bias="attention_bias", activation_key="hidden_activation",
        layer_norms=_GEMMA_NORMS, qk_norm="head", layer_rule="gemma3", norm="gemma", peft_targets=_QV),

    Family(
        "phi3", "Phi3Config", "modeling_phi3.py",
        dict(vocab_size=32064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=None, hidden_act="silu", tie_word_embeddings=False,
             sliding_window=None, max_position_embeddings=4096),
        nullable=frozenset({"num_key_value_heads"}), head_dim="attribute", fused="qkv_gate_up", output_copy=True),

    Family(
        "gpt_oss", "GptOssConfig", "modeling_gpt_oss.py",
        dict(vocab_size=201088, hidden_size=2880, intermediate_size=2880, num_hidden_layers=36,
             num_attention_heads=64, num_key_value_heads=8, head_dim=64, hidden_act="silu",
             tie_word_embeddings=False, attention_bias=True, sliding_window=128, max_position_embeddings=131072,
             num_local_experts=128, num_experts_per_tok=4),
        qkv_bias="attention_bias", o_bias="attention_bias", sinks=True, layer_rule="every_2nd_full",
        norm="gpt_oss", no_sdpa="attention sinks",
        experts=Experts(layout="gpt_oss", router_bias=True, router="topk_softmax")),

    # --- llama-shaped: the same modules as llama once the keys are mapped ---------------------
    # granite: llama with scalar multipliers (embedding, residual, attention, logits): no parameter
    Family(
        "granite", "GraniteConfig", "modeling_granite.py",
        dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=None, hidden_act="silu", tie_word_embeddings=False,
             attention_bias=False, mlp_bias=False, max_position_embeddings=2048),
        nullable=frozenset({"num_key_value_heads"}), head_dim="attribute", layer_rule="none",
        qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias"),

    # smollm3: llama with no-RoPE layers (every 4th by default) and optional sliding windows on them
    Family(
        "smollm3", "SmolLM3Config", "modeling_smollm3.py",
        dict(vocab_size=128256, hidden_size=2048, intermediate_size=11008, num_hidden_layers=36,
             num_attention_heads=16, num_key_value_heads=4, hidden_act="silu", tie_word_embeddings=True,
             attention_bias=False, mlp_bias=False, max_position_embeddings=32768, use_sliding_window=False,
             sliding_window=None, no_rope_layers=None, no_rope_layer_interval=4),
        nullable=frozenset({"num_key_value_heads", "no_rope_layers"}), head_dim="attribute", layer_rule="smollm3",
        qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias"),

    # ministral: mistral with per-layer layer_types
    Family(
        "ministral", "MinistralConfig", "modeling_ministral.py",
        dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=8, head_dim=None, hidden_act="silu",
             tie_word_embeddings=False, sliding_window=4096, max_position_embeddings=4096 * 32),
        head_dim="required"),

    # ministral3: mistral with a position-dependent query scale (Llama 4's), no sliding window by default
    Family(
        "ministral3", "Ministral3Config", "modeling_ministral3.py",
        dict(vocab_size=131072, hidden_size=4096, intermediate_size=14336, num_hidden_layers=34,
             num_attention_heads=32, num_key_value_heads=8, head_dim=128, hidden_act="silu",
             tie_word_embeddings=False, sliding_window=None, max_position_embeddings=262144),
        query_scale=True),

    _OLMO2,

    # olmo3: olmo2 with sliding windows on three layers of four
    replace(_OLMO2, model_type="olmo3", config_class="Olmo3Config", modeling="modeling_olmo3.py",
            defaults={**_OLMO2.defaults, "sliding_window": 4096}, layer_rule="every_4th_full"),

    # glm4: q/k/v biases (o none), fused gate_up_proj, four norms, partial rotary ending in torch.cat
    Family(
        "glm4", "Glm4Config", "modeling_glm4.py",
        dict(vocab_size=151552, hidden_size=4096, intermediate_size=13696, num_hidden_layers=40,
             num_attention_heads=32, num_key_value_heads=2, head_dim=128, hidden_act="silu",
             tie_word_embeddings=False, attention_bias=True, max_position_embeddings=131072),
        layer_rule="none", qkv_bias="attention_bias", fused="gate_up", output_copy=True, partial_rotary=0.5,
        layer_norms=("input_layernorm", "post_attention_layernorm", "post_self_attn_layernorm",
                     "post_mlp_layernorm")),

    # --- mixtures of experts --------------------------------------------------------------
    # qwen2_moe: qwen2 attention, experts with a sigmoid-gated shared expert; PEFT converts no v4 name
    Family(
        "qwen2_moe", "Qwen2MoeConfig", "modeling_qwen2_moe.py",
        dict(vocab_size=151936, hidden_size=2048, intermediate_size=5632, num_hidden_layers=24,
             num_attention_heads=16, num_key_value_heads=16, hidden_act="silu", tie_word_embeddings=False,
             use_sliding_window=False, sliding_window=4096, max_window_layers=28, max_position_embeddings=32768,
             decoder_sparse_step=1, moe_intermediate_size=1408, shared_expert_intermediate_size=5632,
             num_experts_per_tok=4, num_experts=60, norm_topk_prob=False, mlp_only_layers=None, qkv_bias=True),
        nullable=frozenset({"mlp_only_layers"}), head_dim="attribute",
        layer_rule="qwen2_moe", qkv_bias="qkv_bias",
        experts=Experts(key="num_experts", alias="", width="moe_intermediate_size", dense_rule="qwen",
                        min_experts=0, norm_topk="key", shared="qwen2_moe")),

    # olmoe: mixtral-like experts, q/k norms of hidden and (hidden // heads) * kv_heads
    Family(
        "olmoe", "OlmoeConfig", "modeling_olmoe.py",
        dict(vocab_size=50304, hidden_size=2048, intermediate_size=2048, num_hidden_layers=16,
             num_attention_heads=16, num_key_value_heads=None, hidden_act="silu", tie_word_embeddings=False,
             attention_bias=False, max_position_embeddings=4096, num_experts_per_tok=8, num_experts=64,
             norm_topk_prob=False, clip_qkv=None),
        nullable=frozenset({"num_key_value_heads", "clip_qkv"}), head_dim="attribute", layer_rule="none",
        qkv_bias="attention_bias", o_bias="attention_bias", qk_norm="olmoe",
        experts=Experts(key="num_experts", alias="num_local_experts", norm_topk="key",
                        peft_v4_names=_QWEN2_MOE_V4)),
)
