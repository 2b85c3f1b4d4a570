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

BASE = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}
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
    "qwen2_moe": {"use_sliding_window": True, "sliding_window": WINDOW, "max_window_layers": 4, "num_experts": 2,
                  "num_experts_per_tok": 1, "moe_intermediate_size": 8, "shared_expert_intermediate_size": 8},
    "olmoe": {"num_experts": 2, "num_experts_per_tok": 1},
}
NO_WINDOW = ("llama", "qwen3_moe", "granite", "olmo2", "glm4", "olmoe")  # no sliding layer in these configs
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
    sliding = sum(kinds)  # the layers of transformers' own cache
    full = cfg["num_hidden_layers"] - sliding
    assert prefill_storage == cfg["num_hidden_layers"] * PREFILL * per_token_layer  # no cap yet
    assert prefill_view == (full * PREFILL + sliding * (WINDOW - 1)) * per_token_layer
    assert step_view == (full * (PREFILL + 1) + sliding * (WINDOW - 1)) * per_token_layer


def test_every_family_with_a_window_has_sliding_layers():
    kinds = {family: vram.model_config_from_dict({**BASE, **extra, "model_type": family}).layer_types
             for family, extra in FAMILIES.items()}
    assert all(("sliding_attention" in kinds[f]) == (f not in NO_WINDOW) for f in FAMILIES)
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
    assert {t: vram.kv_cache_bytes(config, t, BATCH, "bf16", server="transformers-decoding") for t in measured} == measured


def test_transformers_right_after_the_prefill_is_the_server_option(run):
    """DynamicCache after a real prefill longer than the window: every layer holds the whole
    prefill, which ``server="transformers"`` counts; while it generates, the sliding layers
    hold their window."""
    cfg, (prefill_storage, _), _, kinds = run
    assert vram.kv_cache_bytes(cfg, PREFILL, BATCH, "bf16", server="transformers") == prefill_storage
    if any(kinds):
        assert vram.kv_cache_bytes(cfg, PREFILL, BATCH, "bf16", server="transformers-decoding") < prefill_storage
    assert vram.serving_memory(cfg, "bf16", PREFILL, BATCH, server="transformers").kv_cache_bytes == prefill_storage
