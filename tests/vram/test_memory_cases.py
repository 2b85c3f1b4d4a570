"""Every value of shared/cases/memory.md, asserted against the calculator.

The expected numbers are typed from memory.md (the guide's table, the ZeRO paper,
Korthikanti et al. 2022 Table 2, nccl-tests doc/PERFORMANCE.md, published model sizes);
none is recomputed with the code under test.
"""

from __future__ import annotations

import pytest

import vram
from vram import GB, GIB

P8B = 8_000_000_000


# --- Model states, AdamW in mixed precision ---------------------------------------------


def test_adamw_mixed_precision_is_2_2_12_16_bytes_per_param():
    bpp = vram.bytes_per_param("adamw")
    assert (bpp.weights, bpp.gradients, bpp.optimizer, bpp.total) == (2, 2, 12, 16)


# memory.md, "8B parameters, per GPU (the guide's own table)", in GB.
GUIDE_TABLE = [
    # (zero_stage, fsdp name or None, GB on 4 GPUs, GB on 8 GPUs)
    (0, "NO_SHARD", 128, 128),
    (1, None, 56, 44),
    (2, "SHARD_GRAD_OP", 44, 30),
    (3, "FULL_SHARD", 32, 16),
]


@pytest.mark.parametrize("zero_stage, fsdp, gb4, gb8", GUIDE_TABLE)
def test_guide_sharding_table_8b(zero_stage, fsdp, gb4, gb8):
    for world_size, gb in ((4, gb4), (8, gb8)):
        states = vram.model_states_per_gpu(P8B, world_size, zero_stage, "adamw")
        assert states.total_bytes == gb * GB
        if fsdp is not None:
            assert vram.fsdp_zero_stage(fsdp) == zero_stage
            assert vram.fsdp_model_states_per_gpu(P8B, world_size, fsdp).total_bytes == gb * GB


def test_6_7b_ddp_total_and_optimizer_in_gb_and_gib():
    states = vram.model_states_per_gpu(6_700_000_000, 1, 0, "adamw")
    assert states.total_bytes == 107_200_000_000  # 107.2 GB
    assert f"{vram.bytes_to_gib(states.total_bytes):.2f}" == "99.84"
    assert states.optimizer_bytes == 80_400_000_000  # 80.4 GB
    assert f"{vram.bytes_to_gib(states.optimizer_bytes):.2f}" == "74.88"


def test_fp32_gradients_make_18_bytes_per_param():
    assert vram.bytes_per_param("adamw-fp32-grads").total == 18
    assert vram.bytes_per_param("adamw-fp32-grads").gradients == 4


def test_7b_bf16_weights_are_14_gb_and_13_04_gib_never_14_gib():
    weights = vram.serving_memory(7_000_000_000, "bf16").weights_bytes
    assert weights == 14 * GB
    assert f"{vram.bytes_to_gb(weights):.2f}" == "14.00"
    assert f"{vram.bytes_to_gib(weights):.2f}" == "13.04"
    assert f"{vram.bytes_to_gib(weights):.2f}" != "14.00"


def test_optimizer_offload_of_8b_puts_96_gb_in_host_ram():
    mem = vram.training_memory_per_gpu(P8B, 8, 2, "adamw", offload_optimizer=True)
    assert mem.host_optimizer_bytes_per_machine == 96 * GB  # "about 100 GB" in the guide
    assert mem.optimizer_bytes == 0
    # Offloading is per rank: 8 ranks on 2 machines of 4 GPUs each put half on each host.
    two_hosts = vram.training_memory_per_gpu(P8B, 8, 2, "adamw", True, gpus_per_machine=4)
    assert two_hosts.host_optimizer_bytes_per_machine == 48 * GB


def test_full_checkpoint_of_8b_is_16_plus_96_equals_112_gb():
    ckpt = vram.checkpoint_bytes(P8B, "adamw")
    assert ckpt.weights_bytes == 16 * GB
    assert ckpt.optimizer_bytes == 96 * GB
    assert ckpt.total_bytes == 112 * GB  # the guide: "over 100 GB"
    assert vram.checkpoint_bytes(P8B, include_optimizer=False).total_bytes == 16 * GB


def test_8bit_adam_moments_shrink_from_8_to_2_bytes_optimizer_6():
    assert vram.bytes_per_param("adamw").optimizer - 4 == 8  # two fp32 moments
    assert vram.bytes_per_param("adam8bit").optimizer - 4 == 2  # two 8-bit moments
    assert vram.bytes_per_param("adam8bit").optimizer == 6


# --- Communication per GPU per step ---------------------------------------------------


@pytest.mark.parametrize("n, factor", [(2, 1.0), (4, 1.5), (8, 1.75)])
def test_allreduce_busbw_factor(n, factor):
    assert vram.allreduce_busbw_factor(n) == factor
    assert vram.busbw_from_algbw(100.0, n) == pytest.approx(100.0 * factor)


def test_ddp_1b_bf16_gradients_are_2_gb_per_step():
    assert vram.gradient_bytes(1_000_000_000, 2) == 2 * GB


def test_ddp_ring_allreduce_of_14_gb_on_8_ranks_sends_24_5_gb():
    assert vram.ring_allreduce_bytes_per_gpu(14 * GB, 8) == pytest.approx(24.5 * GB)
    # the same through the per-step function: 7B bf16 gradients are 14 GB
    assert vram.bytes_per_gpu_per_step(7_000_000_000, 8, 0) == pytest.approx(24.5 * GB)


def test_zero3_8b_on_4_gpus_moves_36_gb_bf16_48_gb_fp32_grads():
    assert vram.bytes_per_gpu_per_step(P8B, 4, 3, grad_bytes_per_param=2) == pytest.approx(36 * GB)
    assert vram.bytes_per_gpu_per_step(P8B, 4, 3, grad_bytes_per_param=4) == pytest.approx(48 * GB)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_zero3_moves_1_5x_ddp_and_zero12_the_same_as_ddp(n):
    ddp = vram.bytes_per_gpu_per_step(P8B, n, 0)
    assert vram.bytes_per_gpu_per_step(P8B, n, 3) == pytest.approx(1.5 * ddp)
    assert vram.bytes_per_gpu_per_step(P8B, n, 1) == pytest.approx(ddp)
    assert vram.bytes_per_gpu_per_step(P8B, n, 2) == pytest.approx(ddp)


def test_seconds_at_busbw():
    # 24.5 GB sent at a bus bandwidth of 245 GB/s: 0.1 s.
    assert vram.seconds_at_busbw(24.5 * GB, 245 * GB) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        vram.seconds_at_busbw(1, 0)


# --- Activations (Korthikanti et al. 2022, Table 2) -----------------------------------

ACT = dict(seq_length=2048, micro_batch=1, hidden_size=4096, num_heads=32)


def test_activations_no_recomputation():
    per_layer = vram.activation_bytes_per_layer(**ACT, recompute="none")
    assert f"{per_layer / GIB:.3f}" == "0.891"
    assert vram.activation_bytes(**ACT, num_layers=32) / GIB == pytest.approx(28.5)


def test_activations_selective_and_full_recomputation():
    assert vram.activation_bytes(**ACT, num_layers=32, recompute="selective") / GIB == pytest.approx(8.5)
    assert vram.activation_bytes(**ACT, num_layers=32, recompute="full") / GIB == pytest.approx(0.5)


def test_activations_unknown_recompute_raises():
    with pytest.raises(ValueError, match="recompute"):
        vram.activation_bytes(**ACT, num_layers=32, recompute="some")


# --- Parameter counts from configuration files ----------------------------------------


@pytest.mark.parametrize(
    "name, published",
    [
        ("llama-3.1-8b.json", 8_030_261_248),
        ("llama-3.2-1b.json", 1_235_814_400),
        ("mistral-7b-v0.1.json", 7_241_732_096),
    ],
)
def test_shared_config_param_counts(shared_configs, name, published):
    count = vram.count_params(shared_configs / name)
    assert count.total == published
    assert count.active == published  # dense


def test_untying_a_32000_x_4096_embedding_adds_131_072_000(shared_configs):
    config = vram.load_model_config(shared_configs / "mistral-7b-v0.1.json")
    assert (config.vocab_size, config.hidden_size, config.tie_word_embeddings) == (32000, 4096, False)
    from dataclasses import replace

    tied = replace(config, tie_word_embeddings=True)
    assert vram.count_params(config).total - vram.count_params(tied).total == 131_072_000


def test_kv_cache_llama_3_1_8b_bf16_is_128_kib_per_token_and_1_gib_at_8192(shared_configs):
    config = vram.load_model_config(shared_configs / "llama-3.1-8b.json")
    assert vram.kv_cache_bytes_per_token(config, "bf16") == 128 * 1024
    total = vram.kv_cache_bytes(config, 8192, batch=1, kv_dtype="bf16")
    assert f"{vram.bytes_to_gib(total):.2f} GiB" == "1.00 GiB"  # 4.00 GiB = KV heads ignored


# --- Edges (shared/cases/oracles.md) -------------------------------------------------------


def test_one_parameter_on_4_gpus_zero3_holds_whole_elements():
    """Shards round up: each GPU holds 2 bytes of bf16 weights, never 1 (half an element)."""
    states = vram.model_states_per_gpu(1, 4, 3, "adamw")
    assert (states.weights_bytes, states.gradients_bytes, states.optimizer_bytes) == (2, 2, 12)
