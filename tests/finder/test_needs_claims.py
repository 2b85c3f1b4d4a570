"""The guide's "Do you need more than one card?" table (snippets/data/needs.yaml) says what
the finder answers for the same choice, so a reader who checks a cell in the finder finds
the same cards.

Each claim is read off the finder's data (``hooks.finder.finder_data``: the calculator,
whose figures are tested against PEFT, transformers and DeepSpeed in tests/vram, on the
cards as nvidia-smi reports them less the stated reserve). The card lists typed here are
the table's words, not recomputed.
"""

from __future__ import annotations

import pytest

from hooks.finder import finder_data


@pytest.fixture(scope="module")
def data() -> dict:
    return finder_data()


def answer(data, model, task, cards, option) -> dict[str, bool]:
    """{card: tight} for the cards that suffice, smallest first (training and LoRA: tight =
    the margin holds the reference activations only with gradient checkpointing)."""
    found = data["results"][model][task][str(cards)][str(option)]
    return {fit["gpu"]: fit["tight"] for fit in found["fits"]}


def short(data, model, task, cards, option) -> list[str]:
    """The cards that hold the model states but not the activations, even with recomputation."""
    return [fit["gpu"] for fit in data["results"][model][task][str(cards)][str(option)]["short"]]


def test_lora_row_rtx_4090_for_an_8b_a6000_for_qlora_on_a_70b_with_checkpointing(data):
    assert answer(data, "llama-3.1-8b", "lora", 1, "ddp")["rtx-4090"] is True
    assert answer(data, "llama-3.1-70b", "qlora", 1, "ddp")["a6000"] is True


def test_lora_row_lora_on_a_70b_needs_a_b200_the_h200_holds_only_the_weights(data):
    assert answer(data, "llama-3.1-70b", "lora", 1, "ddp") == {"b200": True}
    assert short(data, "llama-3.1-70b", "lora", 1, "ddp") == ["h200"]


def test_8b_row_one_h200_only_just_and_no_80_gb_card_even_with_8bit_adam(data):
    assert answer(data, "llama-3.1-8b", "full-adamw", 1, "ddp") == {"h200": True, "b200": False}
    eight_bit = answer(data, "llama-3.1-8b", "full-adam8bit", 1, "ddp")
    assert eight_bit and not {"h100", "a100-80gb"} & set(eight_bit)


@pytest.mark.parametrize("method", ["zero3", "fsdp2-reshard"])
def test_several_cards_row_8_h100_for_qwen3_32b_8_b200_for_70b_with_checkpointing(data, method):
    assert answer(data, "qwen3-32b", "full-adamw", 8, method)["h100"] is True
    assert answer(data, "llama-3.1-70b", "full-adamw", 8, method) == {"b200": True}


@pytest.mark.parametrize("cards", [1, 2])
def test_serving_row_70b_in_fp8_fits_h100s(data, cards):
    # one card: a single request of the finder's default context; two cards: vLLM's tensor parallel
    assert "h100" in answer(data, "llama-3.1-70b", "serve-fp8", cards, 8192)
