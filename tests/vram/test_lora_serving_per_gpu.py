"""LoRA/QLoRA under ZeRO and serving under tensor parallel, per GPU, against hand-computed values.

Sources of the expected numbers (never recomputed with the code under test):
- Llama 3.1 8B: 8,030,261,248 parameters (memory.md); config: hidden 4096, 32 layers,
  32 query heads and 8 KV heads of 128, intermediate 14336, vocab 128256, untied.
- PEFT ``print_trainable_parameters()`` for r=16 on all seven projections of Llama-3-8B:
  "trainable params: 41,943,040"; by hand, per layer r x (in + out):
  q 4096+4096, k 4096+1024, v 4096+1024, o 4096+4096, gate/up 4096+14336, down 14336+4096
  = 81,920 x 16 = 1,310,720; x 32 layers = 41,943,040.
- KV cache of llama-3.1-8b in bf16: 128 KiB per token (memory.md).
- ZeRO (arXiv:1910.02054, §5.1): stage 1 splits optimizer states, 2 also gradients, 3 also
  weights; ZeRO-3 / FSDP FULL_SHARD also splits frozen parameters (transformers PR #29587:
  a 4-bit 70B base, 35 GB per GPU unsharded, is 17.5 GB per GPU on two).
- Tensor parallel (Megatron-LM arXiv:1909.08053 §3; vLLM): norms replicated, the rest split;
  KV heads replicated once the cards outnumber them.
"""

from __future__ import annotations

import pytest

import vram
from tests.conftest import REPO_ROOT
from vram import GB

REPO_CONFIGS = REPO_ROOT / "snippets" / "data" / "models"

LLAMA_8B = 8_030_261_248
LLAMA_8B_NORMS = 32 * 2 * 4096 + 4096  # two RMSNorms per layer and the final one: 266,240
ADAPTERS_8B_R16 = 41_943_040
KIB = 1024


@pytest.fixture(scope="module")
def llama_8b(shared_configs):
    return shared_configs / "llama-3.1-8b.json"


# --- LoRA / QLoRA under ZeRO ----------------------------------------------------------------


def test_adapter_count_by_hand_is_pefts(llama_8b):
    per_layer = 16 * (
        (4096 + 4096) + (4096 + 1024) + (4096 + 1024) + (4096 + 4096) + 2 * (4096 + 14336) + (14336 + 4096)
    )
    assert per_layer * 32 == ADAPTERS_8B_R16
    assert vram.lora_memory_per_gpu(llama_8b, 16, 4, 0).adapter_params == ADAPTERS_8B_R16


@pytest.mark.parametrize(
    "stage, base, weights, gradients, optimizer",
    [
        # 4 cards; adapters in fp32 with AdamW (PEFT default): 4 + 4 + 8 B per parameter.
        (0, 2 * LLAMA_8B, 4 * ADAPTERS_8B_R16, 4 * ADAPTERS_8B_R16, 8 * ADAPTERS_8B_R16),
        (1, 2 * LLAMA_8B, 4 * ADAPTERS_8B_R16, 4 * ADAPTERS_8B_R16, 2 * ADAPTERS_8B_R16),
        (2, 2 * LLAMA_8B, 4 * ADAPTERS_8B_R16, ADAPTERS_8B_R16, 2 * ADAPTERS_8B_R16),
        (3, 2 * LLAMA_8B // 4, ADAPTERS_8B_R16, ADAPTERS_8B_R16, 2 * ADAPTERS_8B_R16),
    ],
)
def test_lora_8b_on_4_cards_per_zero_stage(llama_8b, stage, base, weights, gradients, optimizer):
    mem = vram.lora_memory_per_gpu(llama_8b, 16, 4, stage)
    assert (
        mem.base_weights_bytes,
        mem.adapter_weights_bytes,
        mem.adapter_gradients_bytes,
        mem.adapter_optimizer_bytes,
    ) == (base, weights, gradients, optimizer)
    assert mem.total_bytes == base + weights + gradients + optimizer


def test_lora_base_is_16_06_gb_per_card_up_to_zero_2(llama_8b):
    for stage in (0, 1, 2):
        assert vram.lora_memory_per_gpu(llama_8b, 16, 8, stage).base_weights_bytes / GB == pytest.approx(
            16.06, abs=0.005
        )
    assert vram.lora_memory_per_gpu(llama_8b, 16, 4, 3).base_weights_bytes == 4_015_130_624  # 16.06 GB / 4


def test_lora_on_one_card_is_the_same_for_every_stage(llama_8b):
    # world_size 1: nothing to shard; 2 x 8,030,261,248 + 16 x 41,943,040.
    for stage in range(4):
        assert vram.lora_memory_per_gpu(llama_8b, 16, 1, stage).total_bytes == 16_060_522_496 + 671_088_640


def test_qlora_zero3_splits_4_bit_data_and_bf16_rest_but_not_the_constants(llama_8b):
    # By hand, per layer: q and o 4096x4096 (16,777,216 weights), k and v 4096x1024 (4,194,304),
    # gate, up, down 4096x14336 (58,720,256). 4-bit data: half a byte per weight.
    data = 32 * (2 * 16_777_216 + 2 * 4_194_304 + 3 * 58_720_256) // 2
    # Constants, double-quantised: 1 B per block of 64 weights + 4 B per 256 blocks.
    q_c = 16_777_216 // 64 + 4 * (16_777_216 // 64 // 256)  # 266,240
    kv_c = 4_194_304 // 64 + 4 * (4_194_304 // 64 // 256)  # 66,560
    mlp_c = 58_720_256 // 64 + 4 * (58_720_256 // 64 // 256)  # 931,840
    # and bitsandbytes' tables, 1,092 B per quantised matrix (test_lora_serving.py), 7 a layer
    constants = 32 * (2 * q_c + 2 * kv_c + 3 * mlp_c + 7 * 1_092)
    rest = 2 * (LLAMA_8B - 32 * (2 * 16_777_216 + 2 * 4_194_304 + 3 * 58_720_256))  # embeddings, lm_head, norms in bf16
    assert (data, constants, rest) == (3_489_660_928, 111_000_448, 2_101_878_784)
    whole = vram.lora_memory_per_gpu(llama_8b, 16, 4, 2, base_dtype="nf4").base_weights_bytes
    assert whole == data + constants + rest
    assert (
        vram.lora_memory_per_gpu(llama_8b, 16, 4, 3, base_dtype="nf4").base_weights_bytes
        == (data + rest) // 4 + constants
    )


def test_qlora_70b_base_halves_on_two_cards_with_zero3():
    # transformers PR #29587: a 4-bit 70B base needs about 35 GB on each GPU unsharded and
    # about 17.5 GB per GPU sharded on 2. Here a little more: the embedding and lm_head stay in
    # bf16 (2 x 128256 x 8192 x 2 B = 4.2 GB, split at ZeRO-3) and the NF4 constants
    # (0.127 bit per weight, about 1.1 GB for 68 billion weights) stay whole on each card.
    config = REPO_CONFIGS / "llama-3.1-70b.json"
    whole = vram.lora_memory_per_gpu(config, 16, 2, 0, base_dtype="nf4").base_weights_bytes
    half = vram.lora_memory_per_gpu(config, 16, 2, 3, base_dtype="nf4").base_weights_bytes
    assert 35 * GB < whole < 35 * GB + 4.2 * GB + 1.1 * GB
    assert 17.5 * GB < half < 17.5 * GB + 2.1 * GB + 1.1 * GB


def test_lora_per_gpu_errors(llama_8b):
    with pytest.raises(ValueError, match="zero_stage"):
        vram.lora_memory_per_gpu(llama_8b, 16, 4, 4)
    with pytest.raises(ValueError, match="world_size"):
        vram.lora_memory_per_gpu(llama_8b, 16, 0, 3)
    with pytest.raises(ValueError, match="rank"):
        vram.lora_memory_per_gpu(llama_8b, 0, 4, 3)
    with pytest.raises(ValueError, match="base_dtype"):
        vram.lora_memory_per_gpu(llama_8b, 16, 4, 3, base_dtype="int4")
    with pytest.raises(ValueError, match="optimizer"):
        vram.lora_memory_per_gpu(llama_8b, 16, 4, 3, optimizer="lion")


# --- serving with tensor parallel ------------------------------------------------------------


@pytest.mark.parametrize(
    "tp, params_per_gpu",
    [
        (1, LLAMA_8B),
        (2, (LLAMA_8B - LLAMA_8B_NORMS) // 2 + LLAMA_8B_NORMS),  # 4,015,263,744
        (8, (LLAMA_8B - LLAMA_8B_NORMS) // 8 + LLAMA_8B_NORMS),  # 1,004,015,616
    ],
)
def test_llama_8b_weights_split_but_norms_replicated(llama_8b, tp, params_per_gpu):
    mem = vram.serving_memory_per_gpu(llama_8b, "bf16", tensor_parallel=tp)
    assert mem.params == LLAMA_8B and mem.tensor_parallel == tp
    assert mem.params_per_gpu == params_per_gpu
    assert mem.weights_bytes == 2 * params_per_gpu


def test_llama_8b_bf16_on_two_cards_is_about_half_of_16_06_gb(llama_8b):
    mem = vram.serving_memory_per_gpu(llama_8b, "bf16", tensor_parallel=2)
    assert mem.weights_bytes == 8_030_527_488
    assert mem.weights_bytes / GB == pytest.approx(16.06 / 2, abs=0.005)


def test_llama_8b_on_16_cards_replicates_the_kv_projections(llama_8b):
    # 8 KV heads on 16 cards: each card keeps one whole KV head (k and v: 128 x 4096 each a
    # layer) instead of half a head; everything else but the norms is divided by 16.
    kv_weights = 32 * 2 * 4096 * 1024  # k_proj and v_proj of all layers
    split = (LLAMA_8B - LLAMA_8B_NORMS - kv_weights) // 16
    expected = split + 32 * 2 * 4096 * 128 + LLAMA_8B_NORMS
    assert expected == 518_918_144
    assert vram.serving_memory_per_gpu(llama_8b, tensor_parallel=16).params_per_gpu == expected


@pytest.mark.parametrize("tp, kib_per_token", [(1, 128), (2, 64), (4, 32), (8, 16), (16, 16), (32, 16)])
def test_llama_8b_kv_cache_per_token_per_card(llama_8b, tp, kib_per_token):
    # one token takes a whole block of 16 tokens in vLLM's paged cache (FullAttentionSpec)
    mem = vram.serving_memory_per_gpu(llama_8b, "bf16", context_length=1, tensor_parallel=tp)
    assert mem.kv_cache_bytes == 16 * kib_per_token * KIB
    assert (
        vram.serving_memory_per_gpu(llama_8b, "bf16", context_length=16, tensor_parallel=tp).kv_cache_bytes
        == mem.kv_cache_bytes
    )
    assert vram.kv_heads_per_gpu(llama_8b, tp) == max(1, 8 // tp)


def test_kv_cache_scales_with_tokens_batch_and_dtype(llama_8b):
    # 8192 tokens x 4 sequences on 2 cards, bf16: 64 KiB x 32768 = 2 GiB; fp8 halves it.
    assert (
        vram.serving_memory_per_gpu(llama_8b, context_length=8192, batch=4, tensor_parallel=2).kv_cache_bytes
        == 2 * 2**30
    )
    fp8 = vram.serving_memory_per_gpu(llama_8b, "fp8", context_length=8192, batch=4, kv_dtype="fp8", tensor_parallel=2)
    assert fp8.kv_cache_bytes == 2**30 and fp8.weights_bytes == 4_015_263_744


def test_mixtral_router_is_replicated(local_configs):
    # Mixtral 8x7B: 46,702,792,704 parameters; norms 32 x 2 x 4096 + 4096 = 266,240 and the
    # routers 32 x 4096 x 8 = 1,048,576 whole on each card; experts, attention, embeddings halved.
    whole = 266_240 + 1_048_576
    mem = vram.serving_memory_per_gpu(local_configs / "mixtral-8x7b-v0.1.json", tensor_parallel=2)
    assert mem.params_per_gpu == (46_702_792_704 - whole) // 2 + whole == 23_352_053_760


def test_qwen2_biases_split_with_their_heads(local_configs):
    # Qwen2.5-7B: 7,615,616,512 parameters, 28 layers of hidden 3584, q/k/v biases (split
    # with their heads), no o_proj bias. 4 cards: 7 query heads and 1 of the 4 KV heads each;
    # only the norms (28 x 2 x 3584 + 3584 = 204,288) stay whole.
    mem = vram.serving_memory_per_gpu(local_configs / "qwen2.5-7b.json", tensor_parallel=4)
    assert mem.params_per_gpu == (7_615_616_512 - 204_288) // 4 + 204_288 == 1_904_057_344


def test_row_parallel_biases_stay_whole():
    # A toy llama with every bias: hidden 8, 4 heads of 2, 2 KV heads, intermediate 16, vocab 10,
    # one layer. On 2 cards: q 4x8+4, k and v 2x8+2 each, o 8x4 + 8 (bias whole),
    # gate and up 8x8+8 each, down 8x8 + 8 (bias whole), norms 2x8; embeddings 2 x 5x8; final norm 8.
    config = {
        "model_type": "llama",
        "vocab_size": 10,
        "hidden_size": 8,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "attention_bias": True,
        "mlp_bias": True,
    }
    layer = (32 + 4) + 2 * (16 + 2) + (32 + 8) + 2 * (64 + 8) + (64 + 8) + 16
    assert vram.serving_memory_per_gpu(config, tensor_parallel=2).params_per_gpu == layer + 80 + 8 == 432
    assert vram.serving_memory_per_gpu(config, tensor_parallel=1).params_per_gpu == 824  # count_params by hand


@pytest.mark.parametrize(
    "config_name, tp, match",
    [
        ("llama-3.1-8b.json", 3, "num_attention_heads"),
        ("llama-3.1-8b.json", 0, "tensor_parallel"),
    ],
)
def test_tensor_parallel_errors(shared_configs, config_name, tp, match):
    with pytest.raises(ValueError, match=match):
        vram.serving_memory_per_gpu(shared_configs / config_name, tensor_parallel=tp)


def test_qwen_28_heads_cannot_split_over_8_cards(local_configs):
    with pytest.raises(ValueError, match="num_attention_heads 28"):
        vram.check_tensor_parallel(local_configs / "qwen2.5-7b.json", 8)
    assert vram.check_tensor_parallel(local_configs / "qwen2.5-7b.json", 4) == 4


def test_kv_heads_and_tp_must_divide_one_another():
    # 12 query heads, 4 KV heads: 6 cards divide the query heads but neither 4 nor 6 divides the other.
    config = {
        "model_type": "mistral",
        "vocab_size": 10,
        "hidden_size": 24,
        "intermediate_size": 48,
        "num_hidden_layers": 1,
        "num_attention_heads": 12,
        "num_key_value_heads": 4,
    }
    with pytest.raises(ValueError, match="num_key_value_heads 4"):
        vram.serving_memory_per_gpu(config, tensor_parallel=6)
    with pytest.raises(ValueError, match="intermediate_size 50"):
        vram.serving_memory_per_gpu(dict(config, intermediate_size=50), tensor_parallel=4)
