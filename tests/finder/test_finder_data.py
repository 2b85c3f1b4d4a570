"""The finder's JSON (assets/finder.json) against the calculator, every combination, and
against the independent values of ../shared/cases/memory.md.

The exhaustive test calls vram directly for each choice and compares; the anchor tests
type their expected values from memory.md (the guide's table, published parameter
counts), never recomputing them with the code under test.
"""

from __future__ import annotations

import json

import pytest

import vram
from hooks.data import load_yaml
from hooks.finder import finder_data, finder_json
from tests.conftest import REPO_ROOT

MODELS_DIR = REPO_ROOT / "snippets" / "data" / "models"
STAGES = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}


@pytest.fixture(scope="module")
def data() -> dict:
    return finder_data()


def result(data, model, task, cards, option):
    return data["results"][model][task][str(cards)][str(option)]


def fitting(data, model, task, cards, option) -> list[str]:
    return [fit["gpu"] for fit in result(data, model, task, cards, option)["fits"]]


# --- every combination == the calculator, called directly ---------------------------------

def expected_requirement(config, task: dict, cards: int, option: str, rank: int):
    """(bytes per card, {part: bytes}) straight from vram, or None where not computed."""
    params = vram.count_params(config).total
    if task["kind"] == "training":
        memory = vram.training_memory_per_gpu(params, cards, STAGES[option], task["optimizer"])
        return memory.per_gpu_bytes, {"weights": memory.weights_bytes, "gradients": memory.gradients_bytes,
                                      "optimizer": memory.optimizer_bytes}
    if task["kind"] == "lora":
        if cards > 1 and option != "ddp":
            return None
        targets = [linear.name for linear in vram.models.decoder_linears(config)]
        memory = vram.lora_memory_for_config(config, rank, targets, task["base_dtype"])
        return memory.total_bytes, {"base": memory.base_weights_bytes,
                                    "adapters": memory.total_bytes - memory.base_weights_bytes}
    if cards > 1:
        return None
    memory = vram.serving_memory(config, task["weight_dtype"], context_length=int(option))
    return memory.total_bytes, {"weights": memory.weights_bytes, "kv_cache": memory.kv_cache_bytes}


def test_every_combination_is_what_the_calculator_says(data):
    finder = load_yaml("finder")
    models = load_yaml("models")["models"]
    gpus = load_yaml("gpus")
    machines = {(m["gpu"], m["count"]): m["price_eur_per_hour_from"] for m in gpus["machines"].values()}
    by_memory = sorted(gpus["gpus"], key=lambda key: gpus["gpus"][key]["memory_gb"])
    rank = finder["settings"]["lora"]["rank"]
    checked = skipped = 0
    for model_key, entry in models.items():
        config = vram.load_model_config(MODELS_DIR / entry["config"])
        max_context = json.loads((MODELS_DIR / entry["config"]).read_text())["max_position_embeddings"]
        for task_key, task in finder["tasks"].items():
            serving = task["kind"] == "serving"
            for cards in finder["settings"]["cards"]:
                for option in (finder["settings"]["contexts"] if serving else finder["methods"]):
                    where = (model_key, task_key, cards, option)
                    expected = expected_requirement(config, task, cards, str(option), rank)
                    if serving and option > max_context:
                        expected = None
                    got = data["results"].get(model_key, {}).get(task_key, {}).get(str(cards), {}).get(str(option))
                    if expected is None:
                        assert got is None, where
                        skipped += 1
                        continue
                    need, parts = expected
                    assert got["per_gpu_gb"] == vram.bytes_to_gb(need), where
                    assert dict(got["parts"]) == {k: vram.bytes_to_gb(v) for k, v in parts.items() if v}, where
                    assert [v for _, v in got["parts"]] == sorted((v for _, v in got["parts"]), reverse=True), where
                    fits = [k for k in by_memory if gpus["gpus"][k]["memory_gb"] * vram.GB >= need]
                    assert [f["gpu"] for f in got["fits"]] == fits, where
                    for fit in got["fits"]:
                        capacity = gpus["gpus"][fit["gpu"]]["memory_gb"] * vram.GB
                        assert fit["margin_gb"] == vram.bytes_to_gb(capacity - need), where
                        assert fit["free_fraction"] == vram.free_fraction(need, capacity), where
                        assert fit.get("price_eur_per_hour_from") == machines.get((fit["gpu"], cards)), where
                    checked += 1
    assert checked >= 300 and skipped < checked


def test_the_json_file_is_the_data(data):
    assert json.loads(finder_json()) == data


# --- independent anchors: ../shared/cases/memory.md ----------------------------------------

def test_parameter_counts_are_the_published_totals(data):
    params = {m["key"]: m["params"] for m in data["models"]}
    assert params["llama-3.1-8b"] == 8_030_261_248
    assert params["llama-3.2-1b"] == 1_235_814_400
    assert params["mistral-7b"] == 7_241_732_096
    assert params["mixtral-8x7b"] == 46_702_792_704  # every expert counts toward memory
    assert params["llama-3.1-70b"] == 70_553_706_496
    assert params["qwen2.5-7b"] == 7_615_616_512


# The guide's table for 8B, AdamW (memory.md), in whole GB: Llama 3.1 8B has 8.03e9
# parameters, so its numbers round to the table's.
GUIDE_TABLE = {4: {"ddp": 128, "zero1": 56, "zero2": 44, "zero3": 32},
               8: {"ddp": 128, "zero1": 44, "zero2": 30, "zero3": 16}}


@pytest.mark.parametrize("cards", [4, 8])
def test_8b_adamw_per_card_is_the_guides_table(data, cards):
    got = {m: round(result(data, "llama-3.1-8b", "full-adamw", cards, m)["per_gpu_gb"]) for m in GUIDE_TABLE[cards]}
    assert got == GUIDE_TABLE[cards]


def test_8b_adamw_on_one_card_is_128_gb_and_fits_one_h200(data):
    one = result(data, "llama-3.1-8b", "full-adamw", 1, "ddp")
    assert round(one["per_gpu_gb"]) == 128
    assert fitting(data, "llama-3.1-8b", "full-adamw", 1, "ddp") == ["h200", "b200"]
    assert dict(one["parts"]) == pytest.approx({"optimizer": 96.36, "weights": 16.06, "gradients": 16.06}, abs=0.01)


def test_8b_full_fine_tuning_card_claims(data):
    # memory.md: 4 x 80 GB with ZeRO-2 or ZeRO-3; 4 x 48 GB with ZeRO-3; 24 GB cards only with 8 (ZeRO-3: 16 GB).
    for method in ("zero2", "zero3"):
        assert "h100" in fitting(data, "llama-3.1-8b", "full-adamw", 4, method)
    assert "a6000" in fitting(data, "llama-3.1-8b", "full-adamw", 4, "zero3")
    for method in STAGES:
        assert "rtx-4090" not in fitting(data, "llama-3.1-8b", "full-adamw", 4, method)
    assert "rtx-4090" in fitting(data, "llama-3.1-8b", "full-adamw", 8, "zero3")


def test_8bit_adam_is_10_bytes_per_parameter(data):
    # memory.md: 8-bit Adam keeps 6 B/param of optimizer state, 2 + 2 + 6 = 10 with weights and gradients.
    got = result(data, "mistral-7b", "full-adam8bit", 1, "ddp")
    assert got["per_gpu_gb"] == pytest.approx(7_241_732_096 * 10 / 1e9)
    assert "h100" in fitting(data, "mistral-7b", "full-adam8bit", 1, "ddp")  # needs.yaml: a 7B on an 80 GB card


def test_kv_cache_of_llama_8b_is_128_kib_per_token(data):
    # memory.md: 8192 tokens in bf16 = 1.00 GiB (4.00 GiB would mean the KV heads were ignored).
    parts = dict(result(data, "llama-3.1-8b", "serve-bf16", 1, 8192)["parts"])
    assert parts["kv_cache"] * 1e9 == 2**30


def test_prices_only_where_the_guide_gives_one(data):
    # gpus.yaml: 4 x RTX 4090 from 2.36 EUR/h, 8 x H100 from 31.20 EUR/h; nothing else has a price.
    four = {f["gpu"]: f for f in result(data, "llama-3.2-1b", "full-adamw", 4, "ddp")["fits"]}
    assert four["rtx-4090"]["price_eur_per_hour_from"] == 2.36
    assert "price_eur_per_hour_from" not in four["rtx-3090"] and "price_eur_per_hour_from" not in four["h100"]
    eight = {f["gpu"]: f for f in result(data, "llama-3.1-8b", "full-adamw", 8, "zero1")["fits"]}
    assert eight["h100"]["price_eur_per_hour_from"] == 31.20
    assert "price_eur_per_hour_from" not in eight["a100-80gb"]
    priced = [(m, t, c, o, f["gpu"]) for m, tasks in data["results"].items() for t, by_cards in tasks.items()
              for c, options in by_cards.items() for o, r in options.items() for f in r["fits"] if "price_eur_per_hour_from" in f]
    assert {(c, g) for *_, c, _, g in priced} == {("4", "rtx-4090"), ("8", "h100")}


def test_activation_reference_is_korthikanti_table_2(data):
    # memory.md: s=2048, b=1, h=4096, a=32, L=32: 28.5 GiB without recomputation, 0.5 GiB with full.
    llama = next(m for m in data["models"] if m["key"] == "llama-3.1-8b")
    assert llama["activation_gb"]["none"] * 1e9 / 2**30 == pytest.approx(28.5, abs=0.05)
    assert llama["activation_gb"]["full"] * 1e9 / 2**30 == pytest.approx(0.5)


def test_70b_fp8_serving_fits_one_h200(data):
    # needs.yaml: serving a 70B in fp8 -> H200.
    assert "h200" in fitting(data, "llama-3.1-70b", "serve-fp8", 1, 8192)
