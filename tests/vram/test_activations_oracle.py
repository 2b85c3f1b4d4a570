"""activation_memory against real transformers models: saved-tensor bytes, equal to the byte.

The oracle (tests/vram/activations_oracle.py) runs a training forward of a small
``*ForCausalLM`` built by transformers from the SAME config dict that ``vram`` reads, and
counts the storages autograd keeps for backward (``saved_tensors_hooks``), per decoder layer
and outside the layers. sdpa and eager attention, with and without activation checkpointing
(``activation_checkpointing_enable``, i.e. ``torch.utils.checkpoint`` on every layer), bf16
on CPU, seq 128 x micro-batch 2 (other shapes, micro-batch 1 among them, in OTHER_SHAPES).
"""

from __future__ import annotations

import functools

import pytest
import torch
import transformers

import vram
from tests.vram.activations_oracle import attention_core_saves, build_model, measure
from vram.activations import activation_memory, default_attention

SEQ, BATCH = 128, 2
TOL = 0  # issue 10 asks for 5 %; every case here agrees to the byte, so any term left out fails

CONFIGS = {
    # SwiGLU width 3.5h, 4 heads per KV head (Llama 3's ratios), at h = 256 and h = 512
    "llama": {
        "model_type": "llama",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 896,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
    },
    "llama512": {
        "model_type": "llama",
        "vocab_size": 1000,
        "hidden_size": 512,
        "intermediate_size": 1792,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
    },
    # four norms, GeGLU, head_dim * heads != hidden, attention and final softcapping
    "gemma2": {
        "model_type": "gemma2",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 1024,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 64,
    },
    # q_norm / k_norm per head, head_dim * heads != hidden
    "qwen3": {
        "model_type": "qwen3",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 768,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
    },
    # gemma norms and q/k norms; layer 0 slides over 64 tokens < seq: sdpa gets a mask there
    "gemma3": {
        "model_type": "gemma3_text",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 1024,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "sliding_window": 64,
        "layer_types": ["sliding_attention", "full_attention"],
    },
    # every layer slides (mistral's rule) over a window shorter than the sequence
    "mistral": {
        "model_type": "mistral",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 896,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "sliding_window": 64,
    },
    # fused qkv_proj and gate_up_proj
    "phi3": {
        "model_type": "phi3",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 768,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "bos_token_id": 1,
    },
    "mixtral": {
        "model_type": "mixtral",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    },
    # experts of moe_intermediate_size; layer 1 dense (mlp_only_layers)
    "qwen3_moe": {
        "model_type": "qwen3_moe",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 768,
        "moe_intermediate_size": 384,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "mlp_only_layers": [1],
    },
    # sinks, biased experts with a clamped SwiGLU, top-k then softmax; eager only
    "gpt_oss": {
        "model_type": "gpt_oss",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 320,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "sliding_window": 64,
    },
}
# Shapes the cases above do not reach, each at hidden 64 (cheap): measured at micro-batch 1 and 3
# and odd sequence lengths in test_other_shapes_keep_what_the_formula_says.
_SMALL = {"vocab_size": 97, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2}
CONFIGS.update(
    {
        # multi-query attention (Gemma 3 1B has one KV head): repeat_kv is a view, not a copy
        "mqa": {
            "model_type": "gemma3_text",
            **_SMALL,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "sliding_window": 8,
            "layer_types": ["sliding_attention", "full_attention"],
        },
        # ReLU keeps its output, which the product keeps too; biases everywhere
        "relu": {
            "model_type": "llama",
            **_SMALL,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "hidden_act": "relu",
            "attention_bias": True,
            "mlp_bias": True,
        },
        # the top-k renormalised (Qwen3-30B-A3B sets it), experts every second layer
        "qwen3_moe_norm": {
            "model_type": "qwen3_moe",
            **_SMALL,
            "moe_intermediate_size": 32,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "decoder_sparse_step": 2,
            "norm_topk_prob": True,
        },
        # bidirectional attention: a mask on every layer under sdpa, the window W // 2 + 1
        "gemma3_bidir": {
            "model_type": "gemma3_text",
            **_SMALL,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "sliding_window": 16,
            "layer_types": ["sliding_attention", "full_attention"],
            "use_bidirectional_attention": True,
        },
        # phi3 with as many KV heads as heads (Phi-3-mini): K and V are not repeated
        "phi3_mha": {
            "model_type": "phi3",
            **_SMALL,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "partial_rotary_factor": 0.5,
            "pad_token_id": 0,
            "eos_token_id": 1,
            "bos_token_id": 1,
        },
        # head_dim over 256: transformers repeats K/V for sdpa even without a mask (use_gqa_in_sdpa)
        "head_dim_288": {
            "model_type": "llama",
            **_SMALL,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 288,
        },
    }
)
# The registry's newer families, each at hidden 64 over 4 layers (cheap), in OTHER_SHAPES below.
_FOUR = {
    **_SMALL,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "pad_token_id": 0,
    "bos_token_id": 0,
    "eos_token_id": 0,
}
CONFIGS.update(
    {
        # scalar multipliers only: llama's saves
        "granite": {
            "model_type": "granite",
            **_FOUR,
            "embedding_multiplier": 2.0,
            "residual_multiplier": 0.5,
            "logits_scaling": 4.0,
            "attention_multiplier": 0.1,
        },
        # no-RoPE layers every second layer, sliding windows (8 < seq) on them
        "smollm3": {
            "model_type": "smollm3",
            **_FOUR,
            "no_rope_layer_interval": 2,
            "use_sliding_window": True,
            "sliding_window": 8,
        },
        "ministral": {"model_type": "ministral", **_FOUR, "head_dim": 16, "sliding_window": 8},
        # the query scale of Llama 4's attention, kept per layer
        "ministral3": {"model_type": "ministral3", **_FOUR, "head_dim": 16},
        # norms after attention and MLP, q/k norms over the whole projection (fp32 product kept)
        "olmo2": {"model_type": "olmo2", **_FOUR},
        "olmo3": {"model_type": "olmo3", **_FOUR, "sliding_window": 8},
        # fused gate_up_proj, four norms, partial rotary: cos/sin cut and copied in every layer
        "glm4": {"model_type": "glm4", **_FOUR, "head_dim": 16},
        # a dense layer and an MoE layer with a sigmoid-gated shared expert
        "qwen2_moe": {
            "model_type": "qwen2_moe",
            **_FOUR,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 48,
            "decoder_sparse_step": 2,
        },
        "olmoe": {"model_type": "olmoe", **_FOUR, "num_experts": 4, "num_experts_per_tok": 2},
        # a dense first layer, then sigmoid group-limited routing (fp32 router) beside an ungated shared
        # expert; per-head q/k norms; the rotary ends in torch.cat
        "glm4_moe": {
            "model_type": "glm4_moe",
            **_FOUR,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
            "first_k_dense_replace": 1,
            "n_group": 2,
            "topk_group": 1,
            "use_qk_norm": True,
        },
        # latent attention: a rank-40 query, a latent of 24, keys of 8 + 8 (rotary), values of 16 (equal
        # widths: CPU's SDPA runs its flash kernel, as CUDA's memory-efficient one takes DeepSeek's 192 and
        # 128, sdp_utils.cpp check_head_dim_size_mem_efficient; CPU's falls back to the math path then)
        "deepseek_v3": {
            "model_type": "deepseek_v3",
            **_FOUR,
            "num_key_value_heads": 4,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
            "first_k_dense_replace": 1,
            "n_group": 2,
            "topk_group": 1,
            "kv_lora_rank": 24,
            "q_lora_rank": 40,
            "qk_rope_head_dim": 8,
            "qk_nope_head_dim": 8,
            "v_head_dim": 16,
        },
        # chunked RoPE layers (chunk 8 < seq: a mask under sdpa) with the weightless L2 q/k norm, no-RoPE
        # full layers with scaled queries; MoE every second layer: every expert on every token, a shared
        # expert; eager's softmax in the dtype
        "llama4_text": {
            "model_type": "llama4_text",
            **_FOUR,
            "intermediate_size": 32,
            "intermediate_size_mlp": 96,
            "head_dim": 16,
            "num_local_experts": 4,
            "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 2,
            "no_rope_layer_interval": 2,
            "attention_chunk_size": 8,
        },
        # DeepSeek's unequal widths (eager), one q_proj (q_lora_rank null)
        "deepseek_v3_widths": {
            "model_type": "deepseek_v3",
            **_FOUR,
            "num_key_value_heads": 4,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
            "first_k_dense_replace": 2,
            "n_group": 1,
            "topk_group": 1,
            "kv_lora_rank": 24,
            "q_lora_rank": None,
            "qk_rope_head_dim": 8,
            "qk_nope_head_dim": 16,
            "v_head_dim": 12,
        },
        # q/k/v biases, o none (no real-layer case had qwen2 before the registry's check)
        "qwen2": {"model_type": "qwen2", **_FOUR},
    }
)
NEW_FAMILIES = (
    "qwen2",
    "granite",
    "smollm3",
    "ministral",
    "ministral3",
    "olmo2",
    "olmo3",
    "glm4",
    "qwen2_moe",
    "olmoe",
    "glm4_moe",
    "deepseek_v3",
    "llama4_text",
)


def build(name: str, attention: str, checkpointing: bool = False, dtype: str = "bf16"):
    return build_model(CONFIGS[name], attention, checkpointing, dtype)


@functools.cache
def measured(
    name: str,
    attention: str,
    checkpointing: bool = False,
    dtype: str = "bf16",
    padded: bool = False,
    use_cache: bool | None = None,
):
    model = build(name, attention, checkpointing, dtype)
    torch.manual_seed(1)
    ids = torch.randint(0, CONFIGS[name]["vocab_size"], (BATCH, SEQ))
    mask = None
    if padded:
        mask = torch.ones(BATCH, SEQ, dtype=torch.long)
        mask[0, : SEQ // 4] = 0  # left padding on the first sequence
    return measure(model, ids, attention_mask=mask, use_cache=use_cache)


def formula(name: str, attention: str, recompute: str = "none", dtype: str = "bf16", padded: bool = False):
    config = vram.model_config_from_dict(CONFIGS[name], name)
    return activation_memory(config, SEQ, BATCH, attention, recompute, dtype, padded=padded)


CASES = [
    ("llama", "sdpa"),
    ("llama", "eager"),
    ("llama512", "sdpa"),
    ("gemma2", "eager"),
    ("qwen3", "sdpa"),
    ("qwen3", "eager"),
    ("gemma3", "sdpa"),
    ("gemma3", "eager"),
    ("mistral", "sdpa"),
    ("phi3", "sdpa"),
    ("phi3", "eager"),
    ("mixtral", "sdpa"),
    ("mixtral", "eager"),
    ("qwen3_moe", "sdpa"),
    ("gpt_oss", "eager"),
]


@pytest.mark.parametrize("name, attention", CASES)
def test_each_layer_keeps_what_the_formula_says(name, attention):
    saved, model = measured(name, attention), formula(name, attention)
    assert max(saved.layers) == pytest.approx(model.per_layer_bytes, rel=TOL)
    # layers differ where a sliding window masks one (gemma3) or one MLP is dense (qwen3_moe)
    assert sum(saved.layers) == pytest.approx(model.layers_bytes, rel=TOL)


@pytest.mark.parametrize("name, attention", CASES)
def test_head_and_logits_with_the_loss_are_counted_once(name, attention):
    saved, model = measured(name, attention), formula(name, attention)
    assert saved.head == pytest.approx(model.head_bytes, rel=TOL)
    # the fp32 log-softmax kept by the loss, gemma's softcapping tanh, and the returned logits
    assert saved.logits + saved.returned_logits == pytest.approx(model.logits_bytes, rel=TOL)


@pytest.mark.parametrize("name", ["llama", "llama512"])
def test_hf_llama_keeps_about_49_sbh_per_layer_under_sdpa(name):
    sbh = SEQ * BATCH * CONFIGS[name]["hidden_size"]
    for layer in measured(name, "sdpa").layers:  # shared/cases/oracles.md: 49, not Korthikanti's 34
        assert layer / sbh == pytest.approx(49, abs=0.5)
    assert formula(name, "sdpa").per_layer_bytes / sbh == pytest.approx(49, abs=0.5)


# The 4-D masks the checkpoints keep besides each layer's input, once per kind of layer
# (shared by the layers, so the saved-tensor oracle leaves them out; their live bytes are
# measured in test_loss_backward.py): eager, a (b, 1, s, s) bf16 mask per kind (gemma2's
# window, 64, is shorter than the sequence: a full and a sliding one); sdpa, a boolean
# (1, 1, s, s) one for gemma3's sliding layers, none where no layer is masked.
CHECKPOINT_MASKS = {
    ("llama", "sdpa"): 0,
    ("llama", "eager"): 2 * BATCH * SEQ * SEQ,
    ("gemma2", "eager"): 2 * 2 * BATCH * SEQ * SEQ,
    ("gemma3", "sdpa"): SEQ * SEQ,
    ("phi3", "sdpa"): 0,
    ("mixtral", "sdpa"): 0,
}


@pytest.mark.parametrize("name, attention", list(CHECKPOINT_MASKS))
def test_full_recompute_keeps_each_input_and_one_whole_layer(name, attention):
    checkpointed = measured(name, attention, checkpointing=True)
    # the backward pass re-runs one layer's forward, with the KV cache off as checkpointing
    # turns it off: its saves live once, beside the checkpoints
    replayed = measured(name, attention, use_cache=False)
    model = formula(name, attention, "full")
    for layer in checkpointed.layers:
        assert layer == pytest.approx(model.per_layer_bytes, rel=TOL)
    assert model.recomputed_bytes == pytest.approx(max(replayed.layers), rel=TOL)
    assert model.layers_bytes == pytest.approx(
        sum(checkpointed.layers) + max(replayed.layers) + CHECKPOINT_MASKS[name, attention], rel=TOL
    )
    assert checkpointed.logits == replayed.logits and checkpointed.head == replayed.head


SELECTIVE = "eager_checkpointed_core"


def _register_checkpointed_eager(family_module):
    """Korthikanti's selective recomputation: the eager attention core under checkpoint."""
    eager = family_module.eager_attention_forward

    def core(module, query, key, value, attention_mask, **kwargs):
        return torch.utils.checkpoint.checkpoint(
            lambda q, k, v, m: eager(module, q, k, v, m, **kwargs),
            query,
            key,
            value,
            attention_mask,
            use_reentrant=False,
        )

    transformers.AttentionInterface.register(SELECTIVE, core)
    return eager


@pytest.mark.parametrize("name, family", [("llama", "llama"), ("gemma2", "gemma2"), ("gpt_oss", "gpt_oss")])
def test_selective_recompute_under_eager_drops_the_s_squared_part(name, family):
    family_module = __import__(f"transformers.models.{family}.modeling_{family}", fromlist=["x"])
    eager = _register_checkpointed_eager(family_module)
    model = build(name, "eager")
    model.config._attn_implementation = SELECTIVE
    torch.manual_seed(1)
    saved = measure(model, torch.randint(0, 1000, (BATCH, SEQ)))
    expected = formula(name, "eager", "selective")
    for layer in saved.layers:
        assert layer == pytest.approx(expected.per_layer_bytes, rel=TOL)
    # what one recomputation of the core keeps beyond its inputs while backward runs it
    attn = model.model.layers[0].self_attn
    raw = CONFIGS[name]
    heads, kv = raw["num_attention_heads"], raw["num_key_value_heads"]
    d = raw.get("head_dim", raw["hidden_size"] // heads)
    q = torch.randn(BATCH, heads, SEQ, d, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(BATCH, kv, SEQ, d, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(BATCH, kv, SEQ, d, dtype=torch.bfloat16, requires_grad=True)
    extra = {"softcap": attn.attn_logit_softcapping} if hasattr(attn, "attn_logit_softcapping") else {}
    once = attention_core_saves(eager, attn, q, k, v, None, dropout=0.0, scaling=attn.scaling, **extra)
    assert expected.recomputed_bytes == pytest.approx(once, rel=TOL)


def test_padded_batch_under_sdpa_repeats_kv_and_keeps_the_mask_per_layer():
    saved, model = measured("llama", "sdpa", padded=True), formula("llama", "sdpa", padded=True)
    for layer in saved.layers:
        assert layer == pytest.approx(model.per_layer_bytes, rel=TOL)
    assert model.per_layer_bytes > formula("llama", "sdpa").per_layer_bytes


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_fp32_model(attention):
    saved, model = measured("llama", attention, dtype="fp32"), formula("llama", attention, dtype="fp32")
    for layer in saved.layers:
        assert layer == pytest.approx(model.per_layer_bytes, rel=TOL)
    assert saved.logits + saved.returned_logits == pytest.approx(model.logits_bytes, rel=TOL)


@pytest.mark.parametrize("name, family", [("gemma2", "gemma2"), ("gpt_oss", "gpt_oss")])
def test_sdpa_is_refused_where_transformers_refuses_it(name, family):
    with pytest.raises(ValueError, match="scaled_dot_product_attention"):
        build(name, "sdpa")
    with pytest.raises(ValueError, match=f"{family} under sdpa"):
        formula(name, "sdpa")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_default_attention_is_sdpa_exactly_where_transformers_builds_it(name):
    try:
        build(name, "sdpa")
        builds = True
    except ValueError:
        builds = False
    assert default_attention(vram.model_config_from_dict(CONFIGS[name], name)) == ("sdpa" if builds else "eager")


OTHER_SHAPES = [
    # (name, attention, seq, micro_batch, padded, checkpointing)
    ("llama", "sdpa", 37, 1, False, False),  # micro-batch 1: the shifted labels are a view of the padded ones
    ("llama", "eager", 37, 1, False, False),
    ("mqa", "eager", 11, 1, False, False),
    ("mqa", "eager", 11, 3, False, False),
    ("mqa", "sdpa", 11, 3, True, False),
    ("relu", "sdpa", 13, 1, False, False),
    ("qwen3_moe_norm", "sdpa", 13, 3, False, False),
    ("gemma3_bidir", "sdpa", 13, 1, False, False),
    ("phi3_mha", "eager", 13, 2, False, True),
    ("head_dim_288", "sdpa", 13, 2, False, False),
    *((name, attention, 16, 2, False, False) for name in NEW_FAMILIES for attention in ("sdpa", "eager")),
    ("glm4", "sdpa", 16, 2, False, True),
    ("qwen2_moe", "sdpa", 16, 1, False, True),
    ("olmo3", "eager", 16, 2, False, True),
    ("glm4_moe", "sdpa", 16, 1, False, True),
    ("deepseek_v3_widths", "eager", 16, 2, False, False),
    ("deepseek_v3_widths", "eager", 16, 1, False, True),
    ("deepseek_v3", "sdpa", 16, 2, False, True),
    ("llama4_text", "eager", 16, 1, False, True),
    ("llama4_text", "sdpa", 7, 3, True, False),
]


@pytest.mark.parametrize("name, attention, seq, batch, padded, checkpointing", OTHER_SHAPES)
def test_other_shapes_keep_what_the_formula_says(name, attention, seq, batch, padded, checkpointing):
    model = build(name, attention, checkpointing)
    torch.manual_seed(1)
    ids = torch.randint(0, CONFIGS[name]["vocab_size"], (batch, seq))
    mask = None
    if padded:
        mask = torch.ones(batch, seq, dtype=torch.long)
        mask[0, : seq // 4] = 0
    saved = measure(model, ids, attention_mask=mask)
    config = vram.model_config_from_dict(CONFIGS[name], name)
    expected = activation_memory(config, seq, batch, attention, "full" if checkpointing else "none", padded=padded)
    if checkpointing:
        assert list(saved.layers) == [expected.per_layer_bytes] * len(saved.layers)
    else:
        assert sum(saved.layers) == expected.layers_bytes
    assert saved.head == expected.head_bytes
    assert saved.logits + saved.returned_logits == expected.logits_bytes
