"""The finder's JSON (assets/finder.json) against the calculator, every combination, and
against the independent values of ../shared/cases/memory.md and oracles.md.

The exhaustive test calls vram directly for each choice and compares; the anchor tests
type their expected values from memory.md and oracles.md (DeepSpeed's estimators, the
guide's accounting, published parameter counts), never recomputing them with the code
under test.
"""

from __future__ import annotations

import json

import pytest

import vram
from hooks.cache import Memo
from hooks.data.load import load_yaml
from hooks.finder import compute
from hooks.finder.compute import finder_json
from tests.catalogue import FROZEN, frozen_usable_bytes
from tests.finder.answers import remember
from vram.mxfp4 import mxfp4_weights_bytes_per_gpu

MODELS_DIR = FROZEN / "models"  # the frozen test catalogue's (tests/finder/conftest.py)
# finder.yaml's methods: (framework, zero_stage); LoRA is offered for the first four only.
METHODS = {
    "ddp": ("fsdp2", 0),
    "zero1": ("deepspeed", 1),
    "zero2": ("deepspeed", 2),
    "zero3": ("deepspeed", 3),
    "fsdp2-keep": ("fsdp2", 2),
    "fsdp2-reshard": ("fsdp2", 3),
    "paper": ("zero-paper", 0),
}
STAGES = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}


@pytest.fixture(scope="module")
def computed(frozen_data_dir) -> tuple[dict, str]:
    """``finder_data()`` and ``finder_json()``'s text, computed once: the data is what
    ``finder_json`` got from its own (only) call of ``finder_data``, recorded on the way."""
    calls, real = [], compute.finder_data

    def recording(*args, **kwargs):
        calls.append(real(*args, **kwargs))
        return calls[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compute, "finder_data", recording)
        patch.setattr(compute, "_json_memo", Memo())  # computed here, not taken from an earlier call
        text = finder_json(frozen_data_dir)
    assert len(calls) == 1, "finder_json computes finder_data once"
    remember(frozen_data_dir, calls[0])  # the same answers for the other tests of the frozen catalogue
    return calls[0], text


@pytest.fixture(scope="module")
def data(computed) -> dict:
    return computed[0]


def result(data, model, task, cards, option):
    return data["results"][model][task][str(cards)][str(option)]


def fitting(data, model, task, cards, option) -> list[str]:
    return [fit["gpu"] for fit in result(data, model, task, cards, option)["fits"]]


# --- every combination == the calculator, called directly ---------------------------------


def expected_requirement(config, task: dict, cards: int, option: str, rank: int):
    """(bytes per card, {part: bytes}, bytes at backward) straight from vram, or None where
    not computed. Training: torch.optim.AdamW's foreach step, as the guide's scripts run it
    (the page says so), or the task's own implementation (the all-bf16 task: the Trainer's fused)."""
    if task["kind"] == "training":
        framework, stage = METHODS[option]
        try:
            memory = vram.framework_memory(
                framework,
                vram.model_shape(config),
                cards,
                stage,
                task["optimizer"],
                optimizer_impl=task.get("optimizer_impl") or "foreach",
            )
        except ValueError:
            return (
                None  # all-bf16 AdamW: DeepSpeed and FSDP2 keep fp32 master weights, only the paper's accounting has it
            )
        return (
            memory.per_gpu_bytes,
            {
                "weights": memory.weights_bytes,
                "gradients": memory.gradients_bytes,
                "optimizer": memory.optimizer_bytes,
                "working": memory.working_bytes,
            },
            memory.backward_bytes,
        )
    if task["kind"] == "lora":
        framework, stage = METHODS[option]
        if framework == "fsdp2" and stage:  # LoRA and QLoRA under FSDP2; expert targets refused
            try:
                fsdp2 = vram.lora_fsdp2_memory(config, rank, cards, stage, "all-linear", "foreach", task["base_dtype"])
            except ValueError:
                return None
            states = fsdp2.states_bytes - fsdp2.base_weights_bytes
            return (
                fsdp2.per_gpu_bytes,
                {
                    "base": fsdp2.base_weights_bytes,
                    "adapters": states,
                    "working": fsdp2.per_gpu_bytes - fsdp2.states_bytes,
                },
                fsdp2.backward_bytes,
            )
        if option not in STAGES:
            return None  # the paper's accounting: not offered for LoRA
        # the page says: PEFT's target_modules="all-linear" (MoE experts included where PEFT adapts them)
        lora = vram.lora_memory_per_gpu(config, rank, cards, STAGES[option], "all-linear", task["base_dtype"])
        return (
            lora.total_bytes,
            {"base": lora.base_weights_bytes, "adapters": lora.total_bytes - lora.base_weights_bytes},
            lora.total_bytes,
        )
    kv = config.num_key_value_heads
    if config.num_attention_heads % cards or (kv % cards and cards % kv):
        return None  # vLLM's QKVParallelLinear cannot split the query heads, or the KV heads, over that many cards
    if task["weight_dtype"] == "mxfp4":
        if config.model_type != "gpt_oss":
            return None  # only gpt-oss checkpoints ship MXFP4 experts
        kv = vram.serving_memory_per_gpu(
            config, "bf16", context_length=int(option), tensor_parallel=cards
        ).kv_cache_bytes
        weights = mxfp4_weights_bytes_per_gpu(config, cards)
        return weights + kv, {"weights": weights, "kv_cache": kv}, weights + kv
    serving = vram.serving_memory_per_gpu(
        config, task["weight_dtype"], context_length=int(option), tensor_parallel=cards
    )
    return (
        serving.total_bytes,
        {"weights": serving.weights_bytes, "kv_cache": serving.kv_cache_bytes},
        serving.total_bytes,
    )


# "tight": less than 10 % of the capacity left at the job's peak, the headroom vLLM's default
# gpu_memory_utilization of 0.9 leaves (vllm/engine/arg_utils.py)
TIGHT_SHARE = 0.1


def test_every_combination_is_what_the_calculator_says(data):
    finder = load_yaml("finder")
    models = load_yaml("models")["models"]
    gpus = load_yaml("gpus")
    machines = {(m["gpu"], m["count"]): m["price_eur_per_hour_from"] for m in gpus["machines"].values()}
    by_memory = sorted(gpus["gpus"], key=lambda key: gpus["gpus"][key]["memory_mib"])
    # what a card holds: nvidia-smi's total in MiB less the stated reserve (gpus.yaml), a tie fits
    usable = {key: (card["memory_mib"] - gpus["reserve_mib"]) * 2**20 for key, card in gpus["gpus"].items()}
    # serving: vLLM takes gpu_memory_utilization of nvidia-smi's total, the reserve included
    share = finder["settings"]["serving"]["gpu_memory_utilization"]
    served = {
        key: int(share * card["memory_mib"] * 2**20) - gpus["reserve_mib"] * 2**20 for key, card in gpus["gpus"].items()
    }
    rank = finder["settings"]["lora"]["rank"]
    reference = finder["settings"]["activations"]
    checked = skipped = 0
    for model_key, entry in models.items():
        config = vram.load_model_config(MODELS_DIR / entry["config"])
        max_context = json.loads((MODELS_DIR / entry["config"]).read_text())["max_position_embeddings"]
        activations = {
            mode: vram.activation_memory(
                config, reference["seq_length"], reference["micro_batch"], vram.default_attention(config), mode
            ).peak_bytes
            for mode in ("none", "full")
        }
        for task_key, task in finder["tasks"].items():
            serving = task["kind"] == "serving"
            for cards in finder["settings"]["cards"]:
                for option in finder["settings"]["contexts"] if serving else finder["methods"]:
                    where = (model_key, task_key, cards, option)
                    expected = expected_requirement(config, task, cards, str(option), rank)
                    if serving and option > max_context:
                        expected = None
                    answered = task.get("answers_of") or task_key  # a task with another's job shows its answers
                    got = data["results"].get(model_key, {}).get(answered, {}).get(str(cards), {}).get(str(option))
                    if expected is None:
                        assert got is None, where
                        skipped += 1
                        continue
                    need, parts, backward = expected
                    assert got["per_gpu_gb"] == vram.bytes_to_gb(need), where
                    assert dict(got["parts"]) == {k: vram.bytes_to_gb(v) for k, v in parts.items() if v}, where
                    assert [v for _, v in got["parts"]] == sorted((v for _, v in got["parts"]), reverse=True), where
                    room = served if serving else usable
                    holds = [k for k in by_memory if room[k] >= need]
                    # training and LoRA: backward must hold the activations at their peak with full
                    # recomputation; the step (no activations by then) must hold too
                    fits = [k for k in holds if serving or max(need, backward + activations["full"]) <= usable[k]]
                    assert [f["gpu"] for f in got["fits"]] == fits, where
                    assert [f["gpu"] for f in got["short"]] == [k for k in holds if k not in fits], where
                    for fit in got["short"]:
                        assert fit["margin_gb"] == vram.bytes_to_gb(usable[fit["gpu"]] - need), where
                    for fit in got["fits"]:
                        capacity = room[fit["gpu"]]
                        assert fit["margin_gb"] == vram.bytes_to_gb(capacity - need), where
                        assert fit.get("price_eur_per_hour_from") == machines.get((fit["gpu"], cards)), where
                        if serving:
                            assert "recompute" not in fit, where
                            peak = need  # weights and KV cache
                        else:
                            assert fit["recompute"] == (
                                "none" if max(need, backward + activations["none"]) <= capacity else "full"
                            ), where
                            peak = max(need, backward + activations[fit["recompute"]])
                        # one rule for every kind: under a tenth of the capacity free at the job's peak
                        assert fit["free_fraction"] == (capacity - peak) / capacity, where
                        assert fit["tight"] == (capacity - peak < TIGHT_SHARE * capacity), where
                    checked += 1
    assert checked >= 300 and skipped < checked


def test_the_json_file_is_the_data(computed):
    data, text = computed
    assert json.loads(text) == data


# --- independent anchors: ../shared/cases/memory.md ----------------------------------------


def test_parameter_counts_are_the_published_totals(data):
    params = {m["key"]: m["params"] for m in data["models"]}
    assert params["llama-3.1-8b"] == 8_030_261_248
    assert params["llama-3.2-1b"] == 1_235_814_400
    assert params["mistral-7b"] == 7_241_732_096
    assert params["mixtral-8x7b"] == 46_702_792_704  # every expert counts toward memory
    assert params["llama-3.1-70b"] == 70_553_706_496
    assert params["qwen2.5-7b"] == 7_615_616_512


# oracles.md, "Model states per GPU, DeepSpeed": Llama 3.1 8B, bytes per GPU from DeepSpeed
# 0.19's estimators (additional_buffer_factor=1).
DEEPSPEED_8B = {
    (8, "zero2"): 34_128_610_304,
    (8, "zero3"): 20_169_434_112,
    (4, "zero2"): 52_196_698_112,
    (4, "zero3"): 38_237_521_920,
}


@pytest.mark.parametrize("cards, method", DEEPSPEED_8B)
def test_8b_adamw_per_card_is_deepspeeds_estimate(data, cards, method):
    assert result(data, "llama-3.1-8b", "full-adamw", cards, method)["per_gpu_gb"] * 1e9 == DEEPSPEED_8B[cards, method]


def test_8b_adamw_on_one_card_is_128_gb_in_the_papers_accounting_and_fits_one_h200(data):
    one = result(data, "llama-3.1-8b", "full-adamw", 1, "paper")
    assert round(one["per_gpu_gb"]) == 128  # memory.md
    assert fitting(data, "llama-3.1-8b", "full-adamw", 1, "paper") == ["h200", "b200"]
    assert dict(one["parts"]) == pytest.approx({"optimizer": 96.36, "weights": 16.06, "gradients": 16.06}, abs=0.01)


def test_amp_on_one_card_is_4_4_8_plus_the_autocast_copies(data):
    # oracles.md: PyTorch AMP keeps fp32 weights and gradients (4 + 4) and AdamW's moments (8).
    parts = dict(result(data, "llama-3.1-8b", "full-adamw", 1, "ddp")["parts"])
    p = 8_030_261_248
    assert (parts["weights"] * 1e9, parts["gradients"] * 1e9, parts["optimizer"] * 1e9) == (4 * p, 4 * p, 8 * p)
    assert parts["working"] > 0  # the bf16 copies of the nn.Linear weights


# Activations of Llama 3.1 8B (h = 4,096, 32 layers, vocabulary 128,256) for the finder's
# reference, 2,048 tokens, micro-batch 1, bounded by hand from oracles.md ("full recomputation
# keeps the layer being recomputed as well as the 2sbh checkpoints"; about 49 sbh per layer
# under SDPA; the logits with the loss, fp32 upcast, counted once):
CHECKPOINTS_8B = 32 * 2 * 2048 * 4096  # 536,870,912 B: each layer's bf16 input
FP32_LOGITS_8B = 4 * 2048 * 128_256  # 1,050,673,152 B: what the loss keeps
BF16_LOGITS_8B = 2 * 2048 * 128_256  # 525,336,576 B: lm_head's output
# the loss's backward: nll_loss's and log_softmax's fp32 gradients, vocabulary x tokens each,
# while the above is still kept (tests/vram/test_loss_backward.py measures it)
LOSS_BACKWARD_8B = 8 * 2048 * 128_256  # 2,101,346,304 B
FULL_RECOMPUTE_8B_AT_LEAST = CHECKPOINTS_8B + FP32_LOGITS_8B + LOSS_BACKWARD_8B  # 3.69 GB
FULL_RECOMPUTE_8B_AT_MOST = (
    CHECKPOINTS_8B + 60 * 2048 * 4096 + FP32_LOGITS_8B + BF16_LOGITS_8B + LOSS_BACKWARD_8B
)  # 4.72 GB
NO_RECOMPUTE_8B_AT_LEAST = 49 * 2048 * 4096 * 32 * 95 // 100  # 12.5 GB
# A card's usable bytes: nvidia-smi's MiB less the 2,048 MiB reserve (gpus.yaml).
A6000_USABLE = frozen_usable_bytes("a6000")  # 49,379,540,992 with 2,048 MiB reserved
RTX_4090_USABLE = frozen_usable_bytes("rtx-4090")  # 23,609,933,824
P_8B = 8_030_261_248


def test_8b_full_fine_tuning_card_claims(data):
    # memory.md: 4 x 80 GB with ZeRO-2 or ZeRO-3; 4 x 48 GB with ZeRO-3; 24 GB cards only with 8 (ZeRO-3: 16 GB).
    for method in ("zero2", "zero3"):
        assert "h100" in fitting(data, "llama-3.1-8b", "full-adamw", 4, method)
    assert "a6000" in fitting(data, "llama-3.1-8b", "full-adamw", 4, "zero3")
    for method in METHODS:
        assert "rtx-4090" not in fitting(data, "llama-3.1-8b", "full-adamw", 4, method)
    # DeepSpeed ZeRO-3 on 8 cards: 20,169,434,112 B (oracles.md) leave 3.44 GB on an RTX 4090,
    # below the activations' peak even with full recomputation (the loss's backward alone is
    # 2.10 GB): it holds the model states only. The RTX 5090 holds the activations, tightly.
    margin = RTX_4090_USABLE - 20_169_434_112
    assert margin < FULL_RECOMPUTE_8B_AT_LEAST
    got = result(data, "llama-3.1-8b", "full-adamw", 8, "zero3")
    assert [f["gpu"] for f in got["short"]] == ["rtx-4090", "rtx-3090"]
    assert got["short"][0]["margin_gb"] * 1e9 == pytest.approx(margin)
    assert (got["fits"][0]["gpu"], got["fits"][0]["recompute"]) == ("rtx-5090", "full")


def test_a_margin_below_the_activations_is_not_a_fit(data):
    # The reviewers' case: Llama 3.1 8B on 8 cards under DeepSpeed ZeRO-1 keeps bf16 weights
    # and gradients whole (2 + 2 B) and 16 B / 8 of fp32 gradients, master and moments:
    # 6 x 8,030,261,248 = 48,181,567,488 B per card. An RTX A6000 holds that with 1,197,973,504 B
    # left, less than the activations keep even with full recomputation: not a fit, named as
    # holding the model states only; the first card that fits is the H100.
    got = result(data, "llama-3.1-8b", "full-adamw", 8, "zero1")
    assert got["per_gpu_gb"] * 1e9 == 6 * P_8B
    margin = A6000_USABLE - 6 * P_8B
    assert margin == 1_197_973_504 < FULL_RECOMPUTE_8B_AT_LEAST
    assert "a6000" not in fitting(data, "llama-3.1-8b", "full-adamw", 8, "zero1")
    assert got["short"] == [{"gpu": "a6000", "margin_gb": margin / 1e9}]
    assert got["fits"][0]["gpu"] == "h100" and got["fits"][0]["recompute"] == "none"  # 35.2 GB left
    # FSDP2 with reshard_after_forward=True on 8 cards: the RTX 4090 holds the states, 1.25 GB left
    fsdp2 = result(data, "llama-3.1-8b", "full-adamw", 8, "fsdp2-reshard")
    assert [f["gpu"] for f in fsdp2["short"]] == ["rtx-4090", "rtx-3090"]
    assert all(f["margin_gb"] * 1e9 < FULL_RECOMPUTE_8B_AT_LEAST for f in fsdp2["short"])
    assert fsdp2["fits"][0]["gpu"] == "rtx-5090"


def test_serving_has_no_activation_comparison(data):
    got = result(data, "llama-3.1-8b", "serve-bf16", 1, 8192)
    assert got["short"] == [] and all("recompute" not in fit for fit in got["fits"])


def test_8b_with_an_8bit_optimizer_fits_one_h100_after_the_reserve(data):
    # oracles.md: Llama 3.1 8B, full fine-tuning with 8-bit Adam: 8,030,261,248 x 10 B = 80.3 GB of
    # model states; an H100 "80GB" reports 81,559 MiB (nvidia-smi), less the 2,048 MiB reserve:
    # 79,511 x 1,048,576 = 83,373,326,336 B, so 3,070,713,856 B (3.07 GB) are left.
    got = result(data, "llama-3.1-8b", "full-adam8bit", 1, "paper")  # the guide's accounting, named as such
    assert got["per_gpu_gb"] * 1e9 == 80_302_612_480
    h100 = next(fit for fit in got["short"] if fit["gpu"] == "h100")
    assert h100["margin_gb"] * 1e9 == pytest.approx(3_070_713_856)
    # 3.07 GB do not hold the activations of 2,048 tokens even with full recomputation: the
    # loss's backward alone needs 2.10 GB on top of what is kept. The H100 holds the model
    # states only; the first card that fits is the next larger one.
    assert FULL_RECOMPUTE_8B_AT_LEAST > 3_070_713_856
    assert "h100" not in fitting(data, "llama-3.1-8b", "full-adam8bit", 1, "paper")


def test_8bit_adam_is_10_bytes_per_parameter(data):
    # memory.md: 8-bit Adam keeps 6 B/param of optimizer state, 2 + 2 + 6 = 10 with weights and gradients.
    got = result(data, "mistral-7b", "full-adam8bit", 1, "paper")
    assert got["per_gpu_gb"] == pytest.approx(7_241_732_096 * 10 / 1e9)
    # in the paper's accounting a 7B fits an 80 GB card; under PyTorch AMP it does not (needs.yaml says so)
    assert "h100" in fitting(data, "mistral-7b", "full-adam8bit", 1, "paper")
    assert "h100" not in fitting(data, "mistral-7b", "full-adam8bit", 1, "ddp")


def test_kv_cache_of_llama_8b_is_128_kib_per_token(data):
    # memory.md: 8192 tokens in bf16 = 1.00 GiB (4.00 GiB would mean the KV heads were ignored).
    parts = dict(result(data, "llama-3.1-8b", "serve-bf16", 1, 8192)["parts"])
    assert parts["kv_cache"] * 1e9 == 2**30


def test_prices_only_where_the_guide_gives_one(data):
    # the frozen catalogue's gpus.yaml: 4 x RTX 4090 from 2.36 EUR/h, 8 x H100 from 31.20 EUR/h; nothing else has a price.
    four = {f["gpu"]: f for f in result(data, "llama-3.2-1b", "full-adamw", 4, "zero2")["fits"]}
    assert four["rtx-4090"]["price_eur_per_hour_from"] == 2.36
    assert "price_eur_per_hour_from" not in four["rtx-3090"] and "price_eur_per_hour_from" not in four["h100"]
    eight = {f["gpu"]: f for f in result(data, "llama-3.1-8b", "full-adamw", 8, "zero1")["fits"]}
    assert eight["h100"]["price_eur_per_hour_from"] == 31.20
    assert "price_eur_per_hour_from" not in eight["a100-80gb"]
    priced = [
        (m, t, c, o, f["gpu"])
        for m, tasks in data["results"].items()
        for t, by_cards in tasks.items()
        for c, options in by_cards.items()
        for o, r in options.items()
        for f in r["fits"]
        if "price_eur_per_hour_from" in f
    ]
    assert {(c, g) for *_, c, _, g in priced} == {("4", "rtx-4090"), ("8", "h100")}


def test_activation_reference_is_sdpa_not_korthikantis_eager_formula(data):
    # oracles.md: Llama 3.1 8B, s = 2,048, b = 1, SDPA: 49 s*b*h x 32 layers = 13.2 GB plus logits,
    # not Korthikanti's 30.6 GB (28.5 GiB); full recomputation keeps far less.
    llama = next(m for m in data["models"] if m["key"] == "llama-3.1-8b")
    assert llama["activation_gb"]["attention"] == "sdpa"
    # at their peak: what is kept (13.2 GB and more) plus the loss's backward (2.10 GB)
    assert 13.2 + LOSS_BACKWARD_8B / 1e9 < llama["activation_gb"]["none"] < 30.6 / 2 + LOSS_BACKWARD_8B / 1e9
    assert llama["activation_gb"]["full"] < llama["activation_gb"]["none"] / 3
    assert FULL_RECOMPUTE_8B_AT_LEAST < llama["activation_gb"]["full"] * 1e9 < FULL_RECOMPUTE_8B_AT_MOST


def test_70b_fp8_serving_fits_one_h200(data):
    # needs.yaml: serving a 70B in fp8 -> H200.
    assert "h200" in fitting(data, "llama-3.1-70b", "serve-fp8", 1, 8192)


# --- several cards: LoRA/QLoRA under ZeRO, serving with tensor parallel -----------------------

# PEFT's all-linear adapts these models' fused experts (target_parameters): not modelled under FSDP2
EXPERT_LORA = {"mixtral-8x7b", "qwen3-30b-a3b"}


def test_lora_and_qlora_offer_every_method_on_every_card_count(data):
    """DDP and ZeRO-1/2/3 for both; FSDP2 for both (vram.lora_fsdp2_memory: a bf16 base, or QLoRA's
    NF4 base stored in bf16, measured on CPU with bitsandbytes), not on fused experts."""
    for model in data["results"]:
        for task in ("lora", "qlora"):
            fsdp2 = {"fsdp2-keep", "fsdp2-reshard"} if model not in EXPERT_LORA else set()
            for cards in ("1", "2", "4", "8"):
                assert set(data["results"][model][task][cards]) == set(STAGES) | fsdp2, (model, task, cards)


def test_lora_8b_per_card_under_zero(data):
    # Llama 3.1 8B, rank 16 on all seven projections: 41,943,040 adapter parameters (PEFT),
    # 16 B each (fp32 weights, gradients, AdamW m and v: 4 + 4 + 8); bf16 base 2 x 8,030,261,248 B.
    base, adapters = 16_060_522_496, 16 * 41_943_040
    expected = {  # (base, adapters) per card on 4 cards
        "ddp": (base, adapters),
        "zero1": (base, 4 * 41_943_040 + 4 * 41_943_040 + 8 * 41_943_040 // 4),
        "zero2": (base, 4 * 41_943_040 + (4 * 41_943_040 + 8 * 41_943_040) // 4),
        "zero3": (base // 4, adapters // 4),  # ZeRO-3 / FULL_SHARD splits the frozen base too
    }
    for method, (base_bytes, adapter_bytes) in expected.items():
        got = result(data, "llama-3.1-8b", "lora", 4, method)
        assert dict(got["parts"]) == {"base": base_bytes / 1e9, "adapters": adapter_bytes / 1e9}, method
        assert got["per_gpu_gb"] == (base_bytes + adapter_bytes) / 1e9, method


def test_qlora_8b_zero3_splits_the_4_bit_data_and_keeps_the_constants(data):
    # By hand for llama-3.1-8b (32 layers; per layer q, o 4096x4096, k, v 4096x1024,
    # gate, up, down 4096x14336): 4-bit data n/2 B per matrix = 109,051,904 B a layer;
    # NF4 constants (1 B per 64 weights + 4 B per 256 of them) = 3,461,120 B a layer, and
    # 1,092 B of bitsandbytes' tables per matrix (test_lora_serving.py): 7 x 1,092 = 7,644;
    # the rest (embeddings, lm_head, norms) 8,030,261,248 - 32 x 218,103,808 = 1,050,939,392
    # parameters in bf16. ZeRO-3 on 8 cards splits data and rest, not the quant_state constants.
    data_b, constants, rest = 32 * 109_051_904, 32 * (3_461_120 + 7_644), 2 * 1_050_939_392
    one = dict(result(data, "llama-3.1-8b", "qlora", 8, "zero2")["parts"])
    assert one["base"] == (data_b + constants + rest) / 1e9 == 5_702_540_160 / 1e9
    sharded = dict(result(data, "llama-3.1-8b", "qlora", 8, "zero3")["parts"])
    assert sharded["base"] == ((data_b + rest) // 8 + constants) / 1e9
    assert sharded["adapters"] == 16 * 41_943_040 / 8 / 1e9


def test_serving_8b_tensor_parallel_splits_weights_and_kv_heads(data):
    # Llama 3.1 8B bf16: 8,030,261,248 parameters; the RMSNorm weights (32 layers x 2 x 4096
    # + final 4096 = 266,240) are whole on every card, everything else (vocab-parallel
    # embeddings and lm_head, q/k/v/o, gate/up/down) is divided by the card count.
    # KV cache: 128 KiB per token on one card (memory.md), 8 KV heads split: /2, /4, /8.
    norms = 266_240
    for cards, kv_per_token in ((1, 128 * 1024), (2, 64 * 1024), (4, 32 * 1024), (8, 16 * 1024)):
        parts = dict(result(data, "llama-3.1-8b", "serve-bf16", cards, 8192)["parts"])
        assert parts["weights"] == 2 * ((8_030_261_248 - norms) // cards + norms) / 1e9, cards
        assert parts["kv_cache"] == kv_per_token * 8192 / 1e9, cards
    assert dict(result(data, "llama-3.1-8b", "serve-bf16", 2, 8192)["parts"])["weights"] == 8.030527488


def test_serving_cards_follow_the_heads(data):
    # qwen2.5-7b: 28 query heads, 4 KV heads: vLLM splits it over 2 or 4 cards, not 8.
    assert set(data["results"]["qwen2.5-7b"]["serve-bf16"]) == {"1", "2", "4"}
    for model in ("llama-3.2-1b", "llama-3.1-8b", "mistral-7b", "mixtral-8x7b", "llama-3.1-70b"):
        assert set(data["results"][model]["serve-fp8"]) == {"1", "2", "4", "8"}, model


def test_70b_bf16_serving_fits_two_h100(data):
    # 70B in bf16 is 141 GB of weights: no 80 GB card alone, two with tensor parallel
    # (70.6 GB of weights each, plus 0.67 GB of KV cache for 4096 tokens).
    assert "h100" not in fitting(data, "llama-3.1-70b", "serve-bf16", 1, 4096)
    assert "h100" in fitting(data, "llama-3.1-70b", "serve-bf16", 2, 4096)


def test_the_audits_verdicts_by_the_step_and_the_loss_backward(data):
    """Issue 17's examples. The step of the guide's AdamW (foreach) holds 20 B per local
    parameter under FSDP2 (tests/vram/test_optimizer_step.py measures it): Qwen3 32B on
    4 x H200 and gpt-oss-20b on 4 x RTX PRO 6000 no longer hold; the loss's backward
    (8 x vocabulary x tokens, tests/vram/test_loss_backward.py) leaves Llama 3.1 70B LoRA on
    2 x H200 under ZeRO-2 with the model states only."""
    params = {m["key"]: m["params"] for m in data["models"]}
    h200 = frozen_usable_bytes("h200")
    rtx_pro = frozen_usable_bytes("rtx-pro-6000")
    for model, card, capacity in (("qwen3-32b", "h200", h200), ("gpt-oss-20b", "rtx-pro-6000", rtx_pro)):
        got = result(data, model, "full-adamw", 4, "fsdp2-reshard")
        assert got["per_gpu_gb"] * 1e9 >= 20 * params[model] / 4 > capacity, model
        assert card not in [f["gpu"] for f in got["fits"] + got["short"]], model
    lora = result(data, "llama-3.1-70b", "lora", 2, "zero2")
    assert "h200" in [f["gpu"] for f in lora["short"]]
    # the margin is below even the loss's two fp32 buffers plus
    # the 2sbh checkpoints of 80 layers and the fp32 logits (8,192 x 2,048 x 2 x 80 + 12 x 128,256 x 2,048)
    margin = next(f for f in lora["short"] if f["gpu"] == "h200")["margin_gb"] * 1e9
    assert margin < 2 * 2048 * 8192 * 80 + 12 * 128_256 * 2048
