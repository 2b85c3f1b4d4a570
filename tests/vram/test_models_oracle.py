"""Parameter counts against transformers 5.23 itself: the model it builds on the meta device.

Oracle (``transformers_oracle.built``): ``AutoModelForCausalLM.from_config`` of the same
dict, each parameter object counted once; DeepSpeed's largest-layer loop over its modules;
the elements of its ``nn.Linear`` modules; the parameters of each of its decoder layers.
Its config object gives what the calculator must resolve the same way (head_dim, KV
heads, activation, softcapping) and ``transformers.cache_utils.get_layer_types_and_kwargs``
gives each layer's cache kind and window. Checked for every config the repository ships
and for hypothesis-generated small variants of every family.
Also the "Parameter counts" cases of ../shared/cases/oracles.md, verbatim.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

import vram
from tests.conftest import REPO_ROOT
from tests.vram.conftest import LOCAL_CONFIGS, SHARED_CONFIGS
from tests.vram.model_variants import FAMILIES, config as family_config
from tests.vram.transformers_oracle import built, hf_config
from vram.models import ConfigError

CONFIG_FILES = sorted(
    [
        *(REPO_ROOT / "snippets" / "data" / "models").glob("*.json"),
        *LOCAL_CONFIGS.glob("*.json"),
        *SHARED_CONFIGS.glob("*.json"),
    ],
    key=lambda p: (p.parent.name, p.name),
)


def _raw(path: Path) -> dict:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if raw.get("model_type") == "gemma3":  # the multimodal file: its language model
        raw = {**raw["text_config"], "model_type": "gemma3_text"}
    return raw


def _assert_counts_equal(raw: dict, source: str) -> None:
    oracle = built(raw)
    config = vram.model_config_from_dict(raw, source)
    assert vram.count_params(config).total == oracle.total
    assert vram.largest_layer_params(config) == oracle.largest_module
    assert vram.linear_params(config) == oracle.linear
    assert vram.decoder_layer_params(config) == max(oracle.layers)
    assert vram.root_params(config) == oracle.total - sum(oracle.layers)
    resolved = hf_config(raw)
    if hasattr(
        resolved, "kv_lora_rank"
    ):  # latent attention: queries and keys of qk_head_dim (head_dim is the rotary part)
        assert (
            config.head_dim,
            config.qk_rope_head_dim,
            config.kv_lora_rank,
            config.q_lora_rank,
            config.v_head_dim,
        ) == (
            resolved.qk_head_dim,
            resolved.qk_rope_head_dim,
            resolved.kv_lora_rank,
            resolved.q_lora_rank or 0,
            resolved.v_head_dim,
        )
    else:
        assert config.head_dim == (
            getattr(resolved, "head_dim", None) or resolved.hidden_size // resolved.num_attention_heads
        )
    assert config.num_key_value_heads == resolved.num_key_value_heads
    assert config.hidden_act == (getattr(resolved, "hidden_activation", None) or resolved.hidden_act)
    assert config.attn_logit_softcapping == getattr(resolved, "attn_logit_softcapping", None)
    assert config.final_logit_softcapping == getattr(resolved, "final_logit_softcapping", None)
    assert config.norm_topk_prob == (
        resolved.model_type == "mixtral" or bool(getattr(resolved, "norm_topk_prob", False))
    )
    assert config.bidirectional_attention == bool(getattr(resolved, "use_bidirectional_attention", False))
    # DynamicCache keeps a chunked layer (llama4_text) as a window of attention_chunk_size
    window = (
        config.sliding_window
        if "sliding_attention" in config.layer_types
        else config.attention_chunk_size
        if "chunked_attention" in config.layer_types
        else None
    )
    assert (config.layer_types, window) == oracle.cache_layers


def test_every_config_file_is_covered():
    names = {p.name for p in CONFIG_FILES}
    assert {"llama-3.1-8b.json", "qwen3-30b-a3b.json", "gpt-oss-20b.json", "phi-4.json"} <= names
    assert len(CONFIG_FILES) >= 17


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_config_files_equal_transformers(path):
    _assert_counts_equal(_raw(path), str(path))


@pytest.mark.parametrize("family", FAMILIES)
def test_small_variants_equal_transformers(family):
    @settings(max_examples=6, deadline=None, derandomize=True, database=None)
    @given(family_config(family))
    def check(raw):
        _assert_counts_equal(raw, f"<{family} variant>")

    check()


# --- ../shared/cases/oracles.md, "Parameter counts" ----------------------------------------

GEMMA2_NO_HEAD_DIM = {
    "model_type": "gemma2",
    "vocab_size": 32000,
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
}
LLAMA_7B_SHAPE = {
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "tie_word_embeddings": False,
}


def test_gemma2_without_head_dim_uses_256():
    assert vram.count_params(GEMMA2_NO_HEAD_DIM).total == 92_554_240
    # the cache transformers builds (the case's oracle); vLLM reserves one block more per sliding layer
    assert vram.kv_cache_bytes(GEMMA2_NO_HEAD_DIM, 4096, kv_dtype="bf16", server="transformers") == 67_108_864


def test_null_kv_heads_are_the_attention_heads_as_when_absent():
    assert vram.count_params(LLAMA_7B_SHAPE).total == 6_738_415_616
    absent = {k: v for k, v in LLAMA_7B_SHAPE.items() if k != "num_key_value_heads"}
    assert vram.count_params(absent).total == 6_738_415_616


def test_kv_heads_not_dividing_the_heads_are_refused_in_one_line(tmp_path):
    path = tmp_path / "llama-7b-kv5.json"
    path.write_text(json.dumps({**LLAMA_7B_SHAPE, "num_key_value_heads": 5}))
    with pytest.raises(ConfigError) as info:
        vram.load_model_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert "num_key_value_heads 5 does not divide num_attention_heads 32" in message


# --- published totals of the new families (model cards; not recomputed here) -------------


@pytest.mark.parametrize(
    "name, total_b, non_embedding_b, decimals",
    [
        ("qwen3-8b.json", 8.2, 6.95, 2),  # Qwen/Qwen3-8B card: "Number of Parameters: 8.2B, Non-Embedding: 6.95B"
        ("qwen3-32b.json", 32.8, 31.2, 1),  # Qwen/Qwen3-32B: "32.8B, Non-Embedding: 31.2B"
        (
            "qwen3-30b-a3b.json",
            30.5,
            29.9,
            1,
        ),  # Qwen/Qwen3-30B-A3B: "30.5B in total and 3.3B activated, Non-Embedding: 29.9B"
    ],
)
def test_qwen3_cards(name, total_b, non_embedding_b, decimals):
    config = vram.load_model_config(REPO_ROOT / "snippets" / "data" / "models" / name)
    total = vram.count_params(config).total
    assert round(total / 1e9, 1) == total_b
    assert round((total - vram.models.embedding_params(config)) / 1e9, decimals) == non_embedding_b


def test_qwen3_30b_a3b_activates_3_3b():
    # "3.3B activated" (the card truncates: 8 of 128 experts, attention, both embeddings: 3.35B)
    count = vram.count_params(REPO_ROOT / "snippets" / "data" / "models" / "qwen3-30b-a3b.json")
    assert 3.3e9 <= count.active < 3.4e9


def test_phi_4_equals_its_safetensors_index():
    # microsoft/phi-4 model.safetensors.index.json: "total_size": 29319014400 bytes of bf16 weights.
    assert 2 * vram.count_params(REPO_ROOT / "snippets" / "data" / "models" / "phi-4.json").total == 29_319_014_400


def test_gpt_oss_20b_card():
    # OpenAI's gpt-oss model card: 20.91B parameters, 3.61B active per token; OpenAI leaves the
    # input embedding (a lookup) out of "active", the calculator keeps it in (Mistral AI's
    # convention for Mixtral's 12.9B): 201,088 x 2,880 = 579,133,440 apart.
    count = vram.count_params(REPO_ROOT / "snippets" / "data" / "models" / "gpt-oss-20b.json")
    assert round(count.total / 1e9, 2) == 20.91
    assert round((count.active - 201_088 * 2_880) / 1e9, 2) == 3.61


def test_a_multimodal_gemma3_is_refused_because_transformers_builds_more_than_its_language_model():
    # transformers builds a multimodal gemma3 config as Gemma3ForConditionalGeneration: a SigLIP
    # vision tower and a projector beside the language model (gemma-3-4b: 4,300,079,472 built,
    # 3,880,263,168 in its language model). Counting the text_config alone was silently low;
    # the calculator refuses in one line and says how to count the language model alone.
    import torch
    import transformers

    text = {
        "model_type": "gemma3_text",
        "head_dim": 8,
        "hidden_size": 32,
        "intermediate_size": 16,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "sliding_window": 4,
    }
    vision = {
        "model_type": "siglip_vision_model",
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": 28,
        "patch_size": 14,
    }
    raw = {"model_type": "gemma3", "text_config": text, "vision_config": vision, "mm_tokens_per_image": 4}
    with torch.device("meta"):
        whole = transformers.Gemma3ForConditionalGeneration(
            transformers.Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4)
        )
    language_model = built({**text, "vocab_size": 262_208})  # Gemma3TextConfig's default vocabulary
    assert sum(p.numel() for p in whole.parameters()) > language_model.total
    with pytest.raises(vram.ConfigError, match="save its text_config as a file of its own") as refused:
        vram.model_config_from_dict(raw, "gemma-3.json")
    assert "\n" not in str(refused.value) and str(refused.value).startswith("gemma-3.json: ")
    # the way out it names: the language model as a file, its defaults written out
    assert vram.count_params({**text, "vocab_size": 262_208}).total == language_model.total


@pytest.mark.parametrize("family", ["mixtral", "qwen3_moe", "gpt_oss"])
@pytest.mark.parametrize("order", ["num_experts first", "num_local_experts first"])
def test_num_experts_and_num_local_experts_both_given_resolve_as_transformers(family, order):
    # attribute_map aliases num_experts to num_local_experts; with both keys, the one that is not
    # the class's own field is set last and wins (mixtral, gpt_oss: num_experts; qwen3_moe:
    # num_local_experts, its field being num_experts), whatever the order in the file.
    experts = {"num_experts": 3, "num_local_experts": 2}
    if order == "num_local_experts first":
        experts = dict(reversed(list(experts.items())))
    raw = {
        "model_type": family,
        "vocab_size": 16,
        "hidden_size": 16,
        "intermediate_size": 8,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 4,
        "num_experts_per_tok": 1,
        **experts,
    }
    _assert_counts_equal(raw, f"<{family} with both expert keys>")


EDGE_CONFIGS = {
    # EmbeddingGemma's switch: the window becomes W // 2 + 1 and every layer gets a mask
    "gemma3_text bidirectional": {
        "model_type": "gemma3_text",
        "vocab_size": 16,
        "hidden_size": 16,
        "intermediate_size": 8,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 4,
        "sliding_window": 7,
        "sliding_window_pattern": 2,
        "use_bidirectional_attention": True,
    },
    # renormalised top-k, experts every second layer, layer 3 dense by name
    "qwen3_moe sparse step": {
        "model_type": "qwen3_moe",
        "vocab_size": 16,
        "hidden_size": 16,
        "intermediate_size": 8,
        "moe_intermediate_size": 4,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 4,
        "num_experts": 3,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 2,
        "mlp_only_layers": [3],
        "norm_topk_prob": True,
    },
    # partial rotary changes no parameter
    "phi3 partial rotary": {
        "model_type": "phi3",
        "vocab_size": 16,
        "hidden_size": 16,
        "intermediate_size": 8,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "partial_rotary_factor": 0.5,
        "pad_token_id": 0,
        "bos_token_id": 0,
        "eos_token_id": 0,
    },
    # gpt_oss without its default attention biases; sinks stay
    "gpt_oss no attention bias": {
        "model_type": "gpt_oss",
        "vocab_size": 16,
        "hidden_size": 16,
        "intermediate_size": 8,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 4,
        "num_local_experts": 2,
        "num_experts_per_tok": 1,
        "attention_bias": False,
    },
}


@pytest.mark.parametrize("name", sorted(EDGE_CONFIGS))
def test_edge_configs_equal_transformers(name):
    _assert_counts_equal(EDGE_CONFIGS[name], f"<{name}>")
