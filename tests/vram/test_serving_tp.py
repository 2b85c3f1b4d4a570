"""Tensor-parallel serving of the new families: what stays whole on every GPU, counted by hand.

vLLM's layouts (``vllm/model_executor/models/gpt_oss.py``, ``qwen3_moe.py``, ``phi3``→llama;
``layers/linear.py``, ``fused_moe``): every weight is split over the tp GPUs except the
RMSNorm weights (q_norm/k_norm included), the MoE routers and gpt_oss's expert down-projection
bias and the biases of row-parallel layers (o_proj, down_proj), which each GPU holds whole. So params per GPU = (total - whole) / tp + whole, with the
total from transformers itself and "whole" counted by hand from the config below.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

import vram
from tests.conftest import REPO_ROOT
from tests.vram.model_variants import FAMILIES, config as family_config
from tests.vram.transformers_oracle import built

MODELS = REPO_ROOT / "snippets" / "data" / "models"


@pytest.mark.parametrize(
    "name, tp, whole",
    [
        # gpt-oss-20b: 24 layers, hidden 2880, 32 experts. Norms 24 x 2 x 2880 + 2880; routers
        # 24 x (32 x 2880 + 32); experts' down_proj_bias 24 x 32 x 2880; o_proj's bias (a
        # row-parallel bias) 24 x 2880. Sinks: 64 heads, split.
        ("gpt-oss-20b.json", 2, 141_120 + 2_212_608 + 2_211_840 + 69_120),
        # Phi-4: 40 layers, hidden 5120; fused qkv_proj/gate_up_proj split; 10 KV heads -> 5 a GPU.
        ("phi-4.json", 2, 40 * 2 * 5120 + 5120),
        # Qwen3-30B-A3B: 48 layers, hidden 2048, head_dim 128, 128 experts. Norms 48 x 2 x 2048 +
        # 2048, q_norm/k_norm 48 x 2 x 128, routers 48 x 128 x 2048.
        ("qwen3-30b-a3b.json", 4, 198_656 + 12_288 + 12_582_912),
        ("qwen3-8b.json", 8, 36 * 2 * 4096 + 4096 + 36 * 2 * 128),
    ],
)
def test_split_except_what_vllm_replicates(name, tp, whole):
    total = built(json.loads((MODELS / name).read_text())).total
    assert (total - whole) % tp == 0
    mem = vram.serving_memory_per_gpu(MODELS / name, tensor_parallel=tp)
    assert mem.params == total
    assert mem.params_per_gpu == (total - whole) // tp + whole


def test_phi_4_cannot_be_split_over_4_cards():
    # 10 KV heads: vLLM's QKVParallelLinear needs tp and the KV heads to divide one another.
    with pytest.raises(ValueError, match="num_key_value_heads 10"):
        vram.check_tensor_parallel(MODELS / "phi-4.json", 4)
    assert vram.kv_heads_per_gpu(MODELS / "phi-4.json", 2) == 5


def test_gpt_oss_kv_cache_is_what_vllm_reserves_on_its_sliding_half():
    # 24 layers, 12 sliding with a 128-token window; 8 KV heads of 64, bf16: 2 x 8 x 64 x 2 B
    # = 2 KiB per token and layer. vLLM's SlidingWindowSpec.max_memory_usage_bytes
    # (vllm/v1/kv_cache_interface.py at 001cabc1be16a59a70d720ed61a13b678c060a18): cdiv(min(W - 1 +
    # max_num_batched_tokens, T), block_size) + 1 blocks of 16 tokens: with vLLM's default chunk
    # of 2,048 tokens, cdiv(2,175, 16) + 1 = 137 blocks = 2,192 tokens; full layers cdiv(T, 16) blocks.
    config = MODELS / "gpt-oss-20b.json"
    assert vram.kv_cache_bytes(config, 32_768) == 2048 * (12 * 32_768 + 12 * 2_192)
    # two cards: 4 KV heads each, half of it
    assert vram.serving_memory_per_gpu(config, context_length=32_768, tensor_parallel=2).kv_cache_bytes == 1024 * (
        12 * 32_768 + 12 * 2_192
    )
    # `vllm serve` on an H100 chunks 8,192 tokens (EngineArgs.get_batch_defaults): at 8,192 tokens
    # the window layers then hold cdiv(8,192, 16) + 1 = 513 blocks, 8,208 tokens
    assert vram.kv_cache_tokens(config, 8_192, max_num_batched_tokens=8_192) == (8_208, 8_192) * 12


@pytest.mark.parametrize("chunk, below", [(2_048, 0.20), (8_192, 0.49)])
def test_the_window_alone_was_20_to_49_percent_below_what_vllm_reserves(chunk, below):
    # issue 32: gpt-oss-20b x 16 sequences x 8k, the window alone (128 tokens per sliding layer)
    config = MODELS / "gpt-oss-20b.json"
    window_only = 2048 * 16 * (12 * 8_192 + 12 * 128)
    reserved = vram.kv_cache_bytes(config, 8_192, 16, max_num_batched_tokens=chunk)
    assert round(1 - window_only / reserved, 2) == below


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_serves_on_one_card_whole_and_splits_on_two(family):
    @settings(max_examples=3, deadline=None, derandomize=True, database=None)
    @given(family_config(family))
    def check(raw):
        total = built(raw).total  # transformers' own count
        one = vram.serving_memory_per_gpu(raw, tensor_parallel=1)
        assert one.params_per_gpu == one.params == total
        try:
            vram.check_tensor_parallel(raw, 2)
        except ValueError:
            return  # vLLM would refuse it too: heads, KV heads or a width not divisible by 2
        two = vram.serving_memory_per_gpu(raw, tensor_parallel=2)
        assert total / 2 <= two.params_per_gpu < total  # replicated parts (norms, routers) on both

    check()


def test_a_vocabulary_of_32001_puts_16001_rows_on_each_of_two_cards():
    # oracles.md (edges): vocab-parallel embedding and lm_head rows are ceil(32001 / 2) = 16,001 per card.
    # A one-layer llama of hidden 8 (4 heads of 2, 2 KV heads, intermediate 16), untied: per card
    # 2 x 16,001 x 8 embedding and lm_head elements, the final norm 8, and the layer: q 4 x 8, k and
    # v 2 x 8 each, o 8 x 4, gate and up 8 x 8 each, down 8 x 8, two norms of 8.
    config = {
        "model_type": "llama",
        "vocab_size": 32001,
        "hidden_size": 8,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    }
    layer = 32 + 16 + 16 + 32 + 64 + 64 + 64 + 16
    assert vram.serving_memory_per_gpu(config, tensor_parallel=2).params_per_gpu == 2 * 16_001 * 8 + 8 + layer
