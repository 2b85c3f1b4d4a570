"""Hypothesis strategies: small, valid config.json dicts of every family the calculator supports.

Shapes stay tiny (hidden <= 64, <= 3 layers, vocab <= 48) so that transformers builds each
on the meta device (and, for the KV-cache tests, runs it on CPU) in milliseconds. Each
strategy draws the keys a family reads, and leaves some out or sets them to null where
the config class allows it, so that the family's defaults are exercised too.
"""

from __future__ import annotations

from hypothesis import strategies as st

# Default num_key_value_heads of each config class when the key is absent (None: the heads),
# read from transformers 5.23's configuration files; test_family_registry.py checks that
# these tables cover every registered family.
_KV_DEFAULT = {
    "llama": None,
    "phi3": None,
    "mistral": 8,
    "mixtral": 8,
    "qwen2": 32,
    "qwen3": 32,
    "qwen3_moe": 4,
    "gemma2": 4,
    "gemma3_text": 4,
    "gpt_oss": 8,
    "granite": None,
    "smollm3": 4,
    "ministral": 8,
    "ministral3": 8,
    "olmo2": None,
    "olmo3": None,
    "glm4": 2,
    "qwen2_moe": 16,
    "olmoe": None,
    "glm4_moe": 8,
    "deepseek_v3": 128,
    "llama4_text": 8,
}
FAMILIES = tuple(sorted(_KV_DEFAULT))
_KV_NULL_OK = {"llama", "phi3", "qwen2", "qwen3", "granite", "smollm3", "olmo2", "olmo3", "olmoe", "deepseek_v3"}
_HEAD_DIM_NULL_OK = {"llama", "mistral", "mixtral"}
# big defaults: keep them explicit
_HEAD_DIM_DEFAULT = {
    "gemma2": 256,
    "gemma3_text": 256,
    "qwen3": 128,
    "gpt_oss": 64,
    "ministral3": 128,
    "glm4": 128,
    "llama4_text": 128,
    "ministral": None,
}  # ministral: MinistralAttention cannot build without it


@st.composite
def config(draw, family: str) -> dict:
    """One valid config dict of ``family`` (with its ``model_type``)."""
    heads = draw(st.sampled_from([1, 2, 4, 8]))
    head_dim = draw(st.sampled_from([2, 4, 8]))
    cfg: dict = {
        "model_type": family,
        "vocab_size": draw(st.integers(8, 48)),
        "hidden_size": heads * head_dim,
        "intermediate_size": draw(st.integers(1, 12)) * 2,
        "num_hidden_layers": draw(st.integers(1, 3)),
        "num_attention_heads": heads,
        # phi3's pad_token_id defaults to 32000, past these vocabularies
        "pad_token_id": 0,
        "bos_token_id": 0,
        "eos_token_id": 0,
    }
    kv_choices = [k for k in (1, 2, 4, 8) if heads % k == 0]
    kv_mode = draw(st.sampled_from(["given", "absent", "null"]))
    default = _KV_DEFAULT[family]
    if kv_mode == "absent" and (default is None or heads % default == 0):
        pass
    elif kv_mode == "null" and family in _KV_NULL_OK:
        cfg["num_key_value_heads"] = None
    else:
        cfg["num_key_value_heads"] = draw(st.sampled_from(kv_choices))
    hd_mode = draw(st.sampled_from(["derived", "explicit", "null"]))
    if family in _HEAD_DIM_DEFAULT or hd_mode == "explicit":
        cfg["head_dim"] = draw(st.sampled_from([2, 4, 6, 8]))
    elif hd_mode == "null" and family in _HEAD_DIM_NULL_OK:
        cfg["head_dim"] = None
    if draw(st.booleans()):
        cfg["tie_word_embeddings"] = draw(st.booleans())
    if family in (
        "llama",
        "qwen3",
        "qwen3_moe",
        "gemma2",
        "gemma3_text",
        "gpt_oss",
        "granite",
        "smollm3",
        "olmo2",
        "olmo3",
        "glm4",
        "olmoe",
        "glm4_moe",
        "llama4_text",
    ) and draw(st.booleans()):
        cfg["attention_bias"] = draw(st.booleans())
    if family == "qwen2_moe" and draw(st.booleans()):
        cfg["qkv_bias"] = draw(st.booleans())
    if family in ("llama", "granite", "smollm3") and draw(st.booleans()):
        cfg["mlp_bias"] = draw(st.booleans())
    layers = cfg["num_hidden_layers"]
    window = draw(st.integers(2, 6))
    if family in ("mistral", "mixtral", "phi3", "ministral", "ministral3"):
        cfg["sliding_window"] = draw(st.sampled_from([window, None]))
    if family == "olmo3" and draw(st.booleans()):  # null: refused (cannot run)
        cfg["sliding_window"] = window
    if family == "smollm3":
        cfg.update(use_sliding_window=draw(st.booleans()), sliding_window=draw(st.sampled_from([window, None])))
        if draw(st.booleans()):
            cfg["no_rope_layers"] = draw(st.lists(st.sampled_from([0, 1]), min_size=layers, max_size=layers))
        else:
            cfg["no_rope_layer_interval"] = draw(st.integers(1, 3))
    if family in ("gemma2", "gemma3_text", "gpt_oss") and draw(st.booleans()):  # null: refused (cannot run)
        cfg["sliding_window"] = window
    if family in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe"):
        cfg.update(use_sliding_window=draw(st.booleans()), sliding_window=window)
        if family != "qwen3_moe":
            cfg["max_window_layers"] = draw(st.integers(0, layers))
    if family == "gemma3_text":
        cfg["sliding_window_pattern"] = draw(st.integers(1, 3))
        if draw(st.booleans()):  # EmbeddingGemma's switch: halves the window, masks every layer
            cfg["use_bidirectional_attention"] = draw(st.sampled_from([True, False, None]))
    if family in ("gemma2", "gpt_oss") and cfg.get("sliding_window") and draw(st.booleans()):
        cfg["layer_types"] = draw(
            st.lists(st.sampled_from(["full_attention", "sliding_attention"]), min_size=layers, max_size=layers)
        )
    if family in ("mixtral", "qwen3_moe", "gpt_oss", "qwen2_moe", "olmoe"):
        experts = draw(st.integers(1, 4))
        keys = ["num_experts"] if family == "qwen2_moe" else ["num_local_experts", "num_experts"]
        cfg[draw(st.sampled_from(keys))] = experts
        cfg["num_experts_per_tok"] = draw(st.integers(1, experts))
    if family == "qwen2_moe":
        cfg["shared_expert_intermediate_size"] = draw(st.integers(1, 6)) * 2
    if family in ("glm4_moe", "deepseek_v3"):  # group-limited routing, dense first layers, a shared expert
        experts = draw(st.sampled_from([2, 4, 6]))
        groups = draw(st.sampled_from([g for g in (1, 2, 3) if experts % g == 0 and experts // g >= 2]))
        kept = draw(st.integers(1, groups))
        cfg[draw(st.sampled_from(["n_routed_experts", "num_local_experts"]))] = experts
        cfg.update(
            n_group=groups,
            topk_group=kept,
            num_experts_per_tok=draw(st.integers(1, kept * experts // groups)),
            moe_intermediate_size=draw(st.integers(1, 6)) * 2,
            n_shared_experts=draw(st.integers(1, 2)),
            first_k_dense_replace=draw(st.integers(0, layers)),
        )
        if draw(st.booleans()):
            cfg["norm_topk_prob"] = draw(st.booleans())
    if family == "glm4_moe" and draw(st.booleans()):
        cfg["use_qk_norm"] = draw(st.booleans())
    if family == "llama4_text":  # experts on every token beside a shared one, chunked and no-RoPE layers
        cfg.update(
            num_local_experts=draw(st.integers(1, 4)),
            intermediate_size_mlp=draw(st.integers(1, 6)) * 2,
            attention_chunk_size=window,
            use_qk_norm=draw(st.booleans()),
        )
        cfg["num_experts_per_tok"] = draw(st.integers(1, cfg["num_local_experts"]))
        if draw(st.booleans()):
            cfg["moe_layers"] = draw(st.lists(st.integers(0, layers - 1), unique=True, max_size=layers))
        else:
            cfg["interleave_moe_layer_step"] = draw(st.integers(1, 2))
        if draw(st.booleans()):
            cfg["no_rope_layers"] = draw(st.lists(st.sampled_from([0, 1]), min_size=layers, max_size=layers))
        else:
            cfg["no_rope_layer_interval"] = draw(st.integers(1, 3))
    if family == "deepseek_v3":  # latent attention: every width its own key
        cfg.update(
            kv_lora_rank=draw(st.integers(1, 8)),
            qk_rope_head_dim=draw(st.sampled_from([2, 4])),
            qk_nope_head_dim=draw(st.integers(0, 6)),
            v_head_dim=draw(st.integers(1, 6)),
            q_lora_rank=draw(st.sampled_from([None, 3, 8])),
            attention_bias=draw(st.booleans()),
        )
        if "num_key_value_heads" in cfg and cfg["num_key_value_heads"] is not None:
            cfg["num_key_value_heads"] = heads  # keys and values are expanded to every head
    if family in ("qwen3_moe", "qwen2_moe"):
        cfg["moe_intermediate_size"] = draw(st.integers(1, 6)) * 2
        cfg["decoder_sparse_step"] = draw(st.integers(1, 2))
        cfg["mlp_only_layers"] = draw(st.lists(st.integers(0, layers - 1), unique=True, max_size=layers))
        if draw(st.booleans()):
            cfg["norm_topk_prob"] = draw(st.booleans())
    return cfg
