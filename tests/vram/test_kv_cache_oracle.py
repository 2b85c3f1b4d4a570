"""KV cache against a real transformers cache: tiny models of every family, run on CPU.

Oracle: the ``DynamicCache`` that ``model(..., use_cache=True)`` returns, its key and value
tensors measured by their storage (``untyped_storage().nbytes()``, each storage once): that
is the memory they hold. After a prefill and one decoding step the storage of a sliding
layer is the window W (the update concatenates the kept W - 1 tokens with the new one and
keeps a view), which is what ``vram.kv_cache_bytes`` counts. Two facts of that
implementation are asserted as well, because the calculator's docstring states them: the
view shows W - 1 tokens, and right after a prefill longer than the window the storage is
still the whole prefill.
"""

from __future__ import annotations

import pytest
import torch

import vram

BASE = {
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 16,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "pad_token_id": 0,
    "bos_token_id": 0,
    "eos_token_id": 0,
}
WINDOW = 5
FAMILIES = {
    "llama": {},
    "mistral": {"sliding_window": WINDOW},
    "mixtral": {"num_local_experts": 2, "sliding_window": WINDOW},
    "qwen2": {"use_sliding_window": True, "sliding_window": WINDOW, "max_window_layers": 2},
    "qwen3": {"head_dim": 8, "use_sliding_window": True, "sliding_window": WINDOW, "max_window_layers": 1},
    "qwen3_moe": {"num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 8, "head_dim": 8},
    "gemma2": {"head_dim": 8, "sliding_window": WINDOW},
    "gemma3_text": {"head_dim": 8, "sliding_window": WINDOW, "sliding_window_pattern": 2},
    "phi3": {"sliding_window": WINDOW},
    "gpt_oss": {"num_local_experts": 2, "num_experts_per_tok": 1, "head_dim": 8, "sliding_window": WINDOW},
    "granite": {"embedding_multiplier": 2.0, "residual_multiplier": 0.5},
    "smollm3": {"use_sliding_window": True, "sliding_window": WINDOW, "no_rope_layer_interval": 2},
    "ministral": {"head_dim": 8, "sliding_window": WINDOW},
    "ministral3": {"head_dim": 8, "sliding_window": WINDOW},
    "olmo2": {},
    "olmo3": {"sliding_window": WINDOW},
    "glm4": {"head_dim": 8},
    "qwen2_moe": {
        "use_sliding_window": True,
        "sliding_window": WINDOW,
        "max_window_layers": 4,
        "num_experts": 2,
        "num_experts_per_tok": 1,
        "moe_intermediate_size": 8,
        "shared_expert_intermediate_size": 8,
    },
    "olmoe": {"num_experts": 2, "num_experts_per_tok": 1},
    "glm4_moe": {"n_routed_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 8, "use_qk_norm": True},
    # chunked RoPE layers (a window of the chunk in DynamicCache), every second layer full without RoPE
    "llama4_text": {
        "head_dim": 8,
        "num_local_experts": 2,
        "intermediate_size_mlp": 16,
        "attention_chunk_size": WINDOW,
        "no_rope_layer_interval": 2,
        "interleave_moe_layer_step": 2,
    },
    # latent attention: the cache keeps a latent of 12 and a rotary key of 4 per token and layer
    "deepseek_v3": {
        "num_key_value_heads": 4,
        "n_routed_experts": 2,
        "num_experts_per_tok": 1,
        "n_group": 1,
        "topk_group": 1,
        "moe_intermediate_size": 8,
        "kv_lora_rank": 12,
        "qk_rope_head_dim": 4,
        "qk_nope_head_dim": 6,
        "v_head_dim": 5,
        "q_lora_rank": 8,
        "first_k_dense_replace": 1,
    },
}
NO_WINDOW = (
    "llama",
    "qwen3_moe",
    "granite",
    "olmo2",
    "glm4",
    "olmoe",
    "glm4_moe",
    "deepseek_v3",
)  # no sliding layer in these configs
BATCH, PREFILL = 2, 9  # longer than the window


def _storage_and_view_bytes(cache) -> tuple[int, int]:
    storages, view = {}, 0
    for layer in cache.layers:
        for tensor in (layer.keys, layer.values):
            storage = tensor.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
            view += tensor.numel() * tensor.element_size()
    return sum(storages.values()), view


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def run(request):
    """(config dict, bytes after the prefill, bytes after one more token, which cache layers slide)."""
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    family = request.param
    cfg = {**BASE, **FAMILIES[family]}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(family, **cfg), dtype=torch.bfloat16).eval()
    with torch.no_grad():
        out = model(torch.randint(1, 64, (BATCH, PREFILL)), use_cache=True)
        after_prefill = _storage_and_view_bytes(out.past_key_values)
        out = model(torch.randint(1, 64, (BATCH, 1)), past_key_values=out.past_key_values, use_cache=True)
        after_step = _storage_and_view_bytes(out.past_key_values)
    sliding = [layer.is_sliding for layer in out.past_key_values.layers]
    return {**cfg, "model_type": family}, after_prefill, after_step, sliding


def test_cache_storage_while_generating_equals_the_calculator(run):
    cfg, _, (storage, _), _ = run
    assert vram.kv_cache_bytes(cfg, PREFILL + 1, BATCH, "bf16", server="transformers-decoding") == storage


def test_sliding_layers_show_w_minus_1_tokens_and_keep_the_prefill_until_the_first_step(run):
    cfg, (prefill_storage, prefill_view), (_, step_view), kinds = run
    head_dim = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    per_token_layer = 2 * cfg["num_key_value_heads"] * head_dim * 2 * BATCH  # K and V, bf16
    if "kv_lora_rank" in cfg:  # deepseek_v3: the compressed latent and the rotary key, bf16
        per_token_layer = (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * 2 * BATCH
    sliding = sum(kinds)  # the layers of transformers' own cache
    full = cfg["num_hidden_layers"] - sliding
    assert prefill_storage == cfg["num_hidden_layers"] * PREFILL * per_token_layer  # no cap yet
    assert prefill_view == (full * PREFILL + sliding * (WINDOW - 1)) * per_token_layer
    assert step_view == (full * (PREFILL + 1) + sliding * (WINDOW - 1)) * per_token_layer


def test_every_family_with_a_window_has_sliding_layers():
    kinds = {
        family: vram.model_config_from_dict({**BASE, **extra, "model_type": family}).layer_types
        for family, extra in FAMILIES.items()
    }
    windowed = {f for f, k in kinds.items() if "sliding_attention" in k or "chunked_attention" in k}
    assert windowed == set(FAMILIES) - set(NO_WINDOW)
    assert kinds["gemma2"] == ("sliding_attention", "full_attention") * 2  # Gemma2Config: every second layer full
    assert kinds["qwen2"] == ("full_attention",) * 2 + ("sliding_attention",) * 2  # past max_window_layers


def test_llama_3_1_8b_is_128_kib_per_token(shared_configs):
    config = shared_configs / "llama-3.1-8b.json"
    assert vram.kv_cache_bytes_per_token(config) == 128 * 1024
    assert vram.kv_cache_bytes(config, 8192) == 2**30


@pytest.mark.parametrize("family", ["gemma2", "mistral"])  # half the layers sliding; all of them
@pytest.mark.parametrize("window", [1, 2, 3])
def test_edge_lengths_while_decoding_token_by_token(family, window):
    # T = 1, W - 1, W, W + 1 tokens generated one at a time. A window of 1 keeps every token:
    # DynamicSlidingWindowLayer keeps keys[:, :, -W + 1:], and -1 + 1 = 0 slices nothing off.
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = {**BASE, **FAMILIES[family], "sliding_window": window}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(family, **cfg), dtype=torch.bfloat16).eval()
    measured = {}
    with torch.no_grad():
        out = model(torch.randint(1, 64, (BATCH, 1)), use_cache=True)
        for tokens in range(1, window + 2):
            if tokens > 1:
                out = model(torch.randint(1, 64, (BATCH, 1)), past_key_values=out.past_key_values, use_cache=True)
            measured[tokens] = _storage_and_view_bytes(out.past_key_values)[0]
    config = {**cfg, "model_type": family}
    assert {
        t: vram.kv_cache_bytes(config, t, BATCH, "bf16", server="transformers-decoding") for t in measured
    } == measured


def test_transformers_right_after_the_prefill_is_the_server_option(run):
    """DynamicCache after a real prefill longer than the window: every layer holds the whole
    prefill, which ``server="transformers"`` counts; while it generates, the sliding layers
    hold their window."""
    cfg, (prefill_storage, _), _, kinds = run
    assert vram.kv_cache_bytes(cfg, PREFILL, BATCH, "bf16", server="transformers") == prefill_storage
    if any(kinds):
        assert vram.kv_cache_bytes(cfg, PREFILL, BATCH, "bf16", server="transformers-decoding") < prefill_storage
    assert vram.serving_memory(cfg, "bf16", PREFILL, BATCH, server="transformers").kv_cache_bytes == prefill_storage


def test_deepseek_v3_latent_cache_as_vllm_reserves_it():
    """vLLM's MLAAttention (vllm/model_executor/layers/attention/mla_attention.py) caches one
    head of kv_lora_rank + qk_rope_head_dim per token; MLAAttentionSpec (vllm/v1/kv_cache_interface.py)
    reserves block_size x 1 x head_size x dtype bytes per block of 16 tokens, all T tokens (a
    full-attention spec), with no separate K and V. DeepSeek-V3 (61 layers, 512 + 64) in bf16 at
    T = 1,000: 63 blocks of 16 tokens per layer."""
    raw = {
        **BASE,
        **FAMILIES["deepseek_v3"],
        "model_type": "deepseek_v3",
        "num_hidden_layers": 61,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
    }
    assert vram.kv_cache_bytes(raw, 1000, 1, "bf16", server="vllm") == 61 * 63 * 16 * 1 * (512 + 64) * 2
    assert vram.kv_cache_bytes_per_token(raw) == 61 * (512 + 64) * 2  # 70,272 B
    # tensor parallel does not split the latent: each GPU keeps it whole
    per_gpu = vram.serving.serving_memory_per_gpu(raw, context_length=1000, tensor_parallel=4)
    assert per_gpu.kv_cache_bytes == vram.kv_cache_bytes(raw, 1000)


def test_llama4_chunked_layers_as_vllm_reserves_them():
    """vLLM's ChunkedLocalAttentionSpec (vllm/v1/kv_cache_interface.py): min(chunk +
    max_num_batched_tokens, T) tokens in blocks of 16, no extra block; the no-RoPE layers are
    full. Llama 4 Scout's 48 layers, 8 KV heads of 128, chunks of 8,192, 36 chunked and 12 full,
    at T = 32,768 with vLLM's default prefill chunk of 2,048: 36 x 10,240 + 12 x 32,768 tokens."""
    raw = {
        **BASE,
        "model_type": "llama4_text",
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_local_experts": 2,
        "intermediate_size_mlp": 16,
    }
    per_token_layer = 2 * 8 * 128 * 2
    assert vram.kv_cache_bytes(raw, 32768) == (36 * 10240 + 12 * 32768) * per_token_layer
    assert vram.kv_cache_bytes(raw, 32768, server="transformers-decoding") == (36 * 8192 + 12 * 32768) * per_token_layer
