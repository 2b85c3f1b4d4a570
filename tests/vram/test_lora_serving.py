"""LoRA/QLoRA, NF4 and serving against published numbers.

Sources:
- QLoRA (Dettmers et al. 2023, arXiv:2305.14314) §3: NF4 is 4 bits per weight; the
  quantisation constants cost 32/64 = 0.5 bit per parameter, 8/64 + 32/(64*256) = 0.127
  with Double Quantization, "a reduction of 0.373 bits per parameter", "approximately
  3 GB for a 65B model"; abstract: QLoRA finetunes "a 65B parameter model on a single
  48GB GPU".
- PEFT's ``print_trainable_parameters()``: Llama-2-7b, r=8 on q_proj and v_proj:
  "trainable params: 4,194,304 || all params: 6,742,609,920"; Llama-3-8B, r=16 on all
  seven projections: "trainable params: 41,943,040 || all params: 8,072,204,288".
"""

from __future__ import annotations

import pytest

import vram
from vram import GB, GIB


def test_nf4_constants_cost_0_5_bit_or_0_127_bit_with_double_quantization():
    n = 64 * 256 * 1000  # whole blocks at both levels
    data_bits = 4 * n
    plain = vram.nf4_bytes(n, double_quant=False) * 8 - data_bits
    dq = vram.nf4_bytes(n) * 8 - data_bits
    assert plain / n == 0.5
    assert round(dq / n, 3) == 0.127


def test_double_quantization_saves_about_3_gb_on_65b():
    saved = vram.nf4_bytes(65 * 10**9, double_quant=False) - vram.nf4_bytes(65 * 10**9)
    assert saved / GB == pytest.approx(3.0, rel=0.02)
    assert saved * 8 / (65 * 10**9) == pytest.approx(0.373, abs=0.001)


def test_qlora_65b_base_fits_a_48_gb_gpu():
    mem = vram.lora_memory(65 * 10**9, adapter_params=0, base_dtype="nf4")
    assert mem.base_weights_bytes < 48 * GB


def test_peft_llama_2_7b_rank_8_q_v(local_configs):
    config = local_configs / "llama-2-7b.json"
    adapters = vram.lora_adapter_params(config, 8, ("q_proj", "v_proj"))
    assert adapters == 4_194_304
    assert vram.count_params(config).total + adapters == 6_742_609_920


def test_peft_llama_3_8b_rank_16_all_linear(shared_configs):
    config = shared_configs / "llama-3.1-8b.json"
    adapters = vram.lora_adapter_params(config, 16)  # default: all seven projections
    assert adapters == 41_943_040
    assert vram.count_params(config).total + adapters == 8_072_204_288


def test_lora_memory_bf16_base_and_adapters_at_16_bytes(shared_configs):
    mem = vram.lora_memory_for_config(shared_configs / "llama-3.1-8b.json", 16, base_dtype="bf16")
    assert mem.base_weights_bytes == 2 * 8_030_261_248
    assert mem.adapter_weights_bytes + mem.adapter_gradients_bytes + mem.adapter_optimizer_bytes == 16 * 41_943_040
    assert mem.total_bytes == 2 * 8_030_261_248 + 16 * 41_943_040


def test_qlora_keeps_embeddings_in_bf16(shared_configs):
    config = shared_configs / "llama-3.1-8b.json"
    nf4 = vram.lora_memory_for_config(config, 16, base_dtype="nf4").base_weights_bytes
    # llama-3.1-8b: two 128256 x 4096 bf16 embedding matrices alone are 2.10 GB.
    assert nf4 > 2 * 128256 * 4096 * 2
    # the rest is about 4.127 bits per weight: between a 4-bit and a 4.5-bit base
    assert 8_030_261_248 / 2 < nf4 < 8_030_261_248 * 0.75


def test_lora_errors(shared_configs):
    config = shared_configs / "llama-3.1-8b.json"
    with pytest.raises(ValueError, match="unknown LoRA target"):
        vram.lora_adapter_params(config, 8, ("qkv",))
    with pytest.raises(ValueError, match="rank"):
        vram.lora_adapter_params(config, 0)
    with pytest.raises(ValueError, match="base_dtype"):
        vram.lora_memory(10**9, 10, base_dtype="int3")


def test_mixtral_all_linear_follows_pefts_transformers_5_conversion(local_configs):
    config = local_configs / "mixtral-8x7b-v0.1.json"
    # transformers 5 fuses the experts into 3-D parameters; PEFT 0.21 turns all-linear's v4 names
    # (gate, w1, w3, w2) into target_parameters. By hand, per layer at r = 8 (hidden 4096, 8
    # experts of 14336): q, k, v, o 8 x (8192 + 5120 + 5120 + 8192) = 212,992; router
    # 8 x (4096 + 8) = 32,832; gate_up_proj (w1 and w3 fused: rank 16) 16 x 8 x (4096 + 28672)
    # = 4,194,304; down_proj 8 x 8 x (14336 + 4096) = 1,179,648; 32 layers.
    assert vram.lora_adapter_params(config, 8) == 32 * (212_992 + 32_832 + 4_194_304 + 1_179_648) == 179_832_832
    assert vram.lora_adapter_params(config, 8, ["q_proj", "v_proj"]) == 32 * 8 * (8192 + 5120)  # PEFT's default
    with pytest.raises(ValueError, match="w1 of mixtral need w3 too"):
        vram.lora_adapter_params(config, 8, ("w1",))
    with pytest.raises(ValueError, match=r"experts of mixtral is not an nn\.Linear"):
        vram.lora_adapter_params(config, 8, ("experts",))


# --- serving -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, bytes_per_param", [("bf16", 2), ("fp8", 1), ("int4", 0.5), ("fp32", 4)])
def test_serving_weights_by_dtype(dtype, bytes_per_param):
    assert vram.serving_memory(8 * 10**9, dtype).weights_bytes == 8 * 10**9 * bytes_per_param


def test_serving_llama_3_1_8b_bf16_8192_tokens(shared_configs):
    mem = vram.serving_memory(shared_configs / "llama-3.1-8b.json", "bf16", context_length=8192, batch=4)
    assert mem.params == 8_030_261_248
    assert mem.weights_bytes == 2 * 8_030_261_248
    assert mem.kv_cache_bytes == 4 * GIB  # 1 GiB per 8192-token sequence
    assert mem.total_bytes == mem.weights_bytes + mem.kv_cache_bytes


def test_serving_with_a_bare_count_needs_kv_bytes_per_token():
    with pytest.raises(ValueError, match="kv_bytes_per_token"):
        vram.serving_memory(8 * 10**9, "bf16", context_length=10)
    mem = vram.serving_memory(8 * 10**9, "bf16", context_length=10, kv_bytes_per_token=128 * 1024)
    assert mem.kv_cache_bytes == 10 * 128 * 1024


def test_mistral_gqa_kv_cache_and_unknown_dtype(shared_configs):
    config = shared_configs / "mistral-7b-v0.1.json"
    # 8 KV heads of 4096/32 = 128, 32 layers, bf16: the same 128 KiB per token as llama-3.1-8b
    assert vram.kv_cache_bytes_per_token(config) == 128 * 1024
    with pytest.raises(ValueError, match="dtype"):
        vram.kv_cache_bytes_per_token(config, "bf12")


# --- sharding extras ---------------------------------------------------------------------


def test_hybrid_shard_is_full_shard_inside_the_group():
    # 16 GPUs as 2 machines of 8: HYBRID_SHARD shards over 8, so per GPU = FULL_SHARD on 8: 16 GB.
    assert vram.fsdp_model_states_per_gpu(8 * 10**9, 16, "HYBRID_SHARD", shard_group_size=8).total_bytes == 16 * GB
    # _HYBRID_SHARD_ZERO2 on groups of 4: ZeRO-2 on 4 = 44 GB (the guide's table)
    assert (
        vram.fsdp_model_states_per_gpu(8 * 10**9, 8, "_HYBRID_SHARD_ZERO2", shard_group_size=4).total_bytes == 44 * GB
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(world_size=8, sharding_strategy="HYBRID_SHARD"), "shard_group_size"),
        (dict(world_size=8, sharding_strategy="HYBRID_SHARD", shard_group_size=3), "divide"),
        (dict(world_size=8, sharding_strategy="FULL_SHARD", shard_group_size=4), "applies only"),
        (dict(world_size=8, sharding_strategy="FULLY_SHARD"), "unknown FSDP"),
    ],
)
def test_fsdp_strategy_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        vram.fsdp_model_states_per_gpu(10**9, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(params=0),
        dict(params=-5),
        dict(world_size=0),
        dict(zero_stage=4),
        dict(zero_stage=True),
        dict(optimizer="lion"),
    ],
)
def test_model_states_reject_out_of_range(kwargs):
    args = dict(params=10**9, world_size=4, zero_stage=3, optimizer="adamw") | kwargs
    with pytest.raises(ValueError):
        vram.model_states_per_gpu(**args)


def test_offload_needs_a_zero_stage_and_gpus_per_machine_must_divide():
    with pytest.raises(ValueError, match="zero_stage 1, 2 or 3"):
        vram.training_memory_per_gpu(10**9, 4, 0, offload_optimizer=True)
    with pytest.raises(ValueError, match="divide"):
        vram.training_memory_per_gpu(10**9, 4, 3, gpus_per_machine=3)


def test_qlora_base_counts_the_tables_bitsandbytes_keeps_per_tensor():
    """bitsandbytes 0.50.2, ``functional.quantize_4bit(w, blocksize=64, compress_statistics=True,
    quant_type="nf4")`` on CPU, a 4,096 x 4,096 bf16 weight: its storages hold 8,655,940 B:
    the packed data (8,388,608), one uint8 constant per 64 weights (262,144), one fp32 per 256
    of those (4,096), and 1,092 B of tables every tensor gets anew: the NF4 code (16 fp32),
    the offset (1 fp32) and the nested dynamic map (256 fp32). A tiny Llama, by hand: per layer
    q, o 64 x 64, k, v 32 x 64, gate, up 128 x 64, down 64 x 128; the rest in bf16."""
    assert vram.nf4_bytes(4096 * 4096) + 1_092 == 8_655_940
    config = {
        "model_type": "llama",
        "vocab_size": 100,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    }
    sizes = [4096, 2048, 2048, 4096, 8192, 8192, 8192]  # one layer's nn.Linear weights
    blocks = [-(-n // 64) for n in sizes]  # ceil(n / 64)
    per_tensor = [n // 2 + b + 4 * -(-b // 256) + 1_092 for n, b in zip(sizes, blocks, strict=True)]
    rest = 2 * (100 * 64) + 64 + 2 * 2 * 64  # embedding and lm_head, final norm, two norms a layer
    assert vram.qlora_base_bytes(config) == 2 * sum(per_tensor) + 2 * rest
