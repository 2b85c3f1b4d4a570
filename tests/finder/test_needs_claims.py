"""The guide's "Do you need more than one card?" table (snippets/data/needs.yaml) says what
the finder answers for the same choice, so a reader who checks a cell in the finder finds
the same cards.

Each claim is read off the finder's data (``hooks.finder.compute.finder_data``: the calculator,
whose figures are tested against PEFT, transformers and DeepSpeed in tests/vram, on the
cards as nvidia-smi reports them less the stated reserve). The card lists typed here are
the table's words, not recomputed. The 13-70B row's figures are also read from the rendered
cell, each with the accounting it names, and checked against bytes per parameter derived by
hand from the published config (Phi-4) and nvidia-smi's card sizes.
"""

from __future__ import annotations

import re

import pytest

import vram
from hooks.finder.compute import finder_data
from hooks.render.markdown import render_markdown

TODAYS_CATALOGUE = True  # the table's claims are about the service's cards as they are (tests/finder/conftest.py)


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


P_8B = 8_030_261_248
# Llama 3.1 8B's nn.Linear weights (32 layers x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x
# 14336) + the 128,256 x 4096 lm_head), from the published shapes
LINEAR_8B = 7_504_658_432


def test_8b_row_one_b200_with_foreach_an_h200_only_just_with_fused_no_80_gb_card(data):
    """The guide's scripts build torch.optim.AdamW(params): foreach on CUDA, whose step holds
    4 B per parameter more (test_optimizer_step.py measures it): 20 B per parameter under
    AMP on one card, 160.6 GB, more than an H200's usable 148.6 GB. With fused=True, 16 B
    per parameter and the bf16 autocast copies (2 B per Linear weight): 143.5 GB, 5.1 GB
    left, which hold the activations only with full recomputation."""
    assert answer(data, "llama-3.1-8b", "full-adamw", 1, "ddp") == {"b200": False}
    assert data["results"]["llama-3.1-8b"]["full-adamw"]["1"]["ddp"]["per_gpu_gb"] * 1e9 == 20 * P_8B
    assert 20 * P_8B > H200_USABLE
    fused = vram.framework_memory("fsdp2", vram.model_shape(_config("llama-3.1-8b")), 1, 0, optimizer_impl="fused")
    assert fused.per_gpu_bytes == 16 * P_8B + 2 * LINEAR_8B
    activations = next(m for m in data["models"] if m["key"] == "llama-3.1-8b")["activation_gb"]
    none, full = (round(activations[mode] * 1e9) for mode in ("none", "full"))
    assert vram.fit.training_verdict(fused.per_gpu_bytes, fused.backward_bytes, none, full, H200_USABLE) == "full"
    eight_bit = answer(data, "llama-3.1-8b", "full-adam8bit", 1, "ddp")
    assert eight_bit and not {"h100", "a100-80gb"} & set(eight_bit)


def test_8b_row_all_bf16_fits_one_h100_at_the_reference_length(data):
    """All in bf16 (weights, gradients and AdamW's two moments, no fp32 copy: 2 + 2 + 2 + 2 B
    per parameter, torch.optim.AdamW on bf16 parameters) is 8 x 8,030,261,248 B = 64.2 GB;
    an H100's usable 83.4 GB hold it and the activations of the reference sequence."""
    found = data["results"]["llama-3.1-8b"]["full-bf16"]["1"]["paper"]
    assert found["per_gpu_gb"] * 1e9 == 8 * P_8B
    assert found["fits"][0]["gpu"] == "h100" and found["fits"][0]["recompute"] == "none"
    for lang, words in (("it", ("Tutto in bf16", "64,2", "2.048 token basta una H100")),
                        ("fr", ("Tout en bf16", "64,2", "2 048 tokens, une H100 suffit"))):
        cell = needs_cell(lang, 2, 1)
        assert all(word in cell for word in words), (lang, cell)


def test_8b_row_all_bf16_names_both_accountings(data):
    """The paper's 8 B per parameter and DDP's as the Trainer runs it (tests/vram/test_ddp_bf16.py):
    the same with fused=True (the Trainer's default, what the finder's all-bf16 task counts:
    tests/finder/test_finder_trainer_step.py), 10 B with foreach (80.3 GB); one H100 holds
    the finder's answer with the reference activations."""
    ddp = data["results"]["llama-3.1-8b"]["full-bf16"]["1"]["ddp"]
    assert ddp["per_gpu_gb"] * 1e9 == 8 * P_8B
    assert ddp["fits"][0]["gpu"] == "h100" and ddp["fits"][0]["recompute"] == "none"
    for lang, words in (("it", ("nei conti del paper", "con DDP di PyTorch", "fused=True", "80,3", "foreach")),
                        ("fr", ("dans les comptes de l’article", "le DDP de PyTorch", "fused=True", "80,3", "foreach"))):
        cell = needs_cell(lang, 2, 1)
        assert all(word in cell for word in words), (lang, cell)


def _config(key: str) -> vram.ModelConfig:
    from hooks.data.load import DATA_DIR, load_yaml

    return vram.load_model_config(DATA_DIR / "models" / load_yaml("models")["models"][key]["config"])


@pytest.mark.parametrize("lang, words", [("it", ("B200", "foreach", "fused=True", "H200")),
                                         ("fr", ("B200", "foreach", "fused=True", "H200"))])
def test_8b_row_names_the_optimizer_implementation(lang, words):
    cell = needs_cell(lang, 2, 1)
    assert cell.startswith("Una B200" if lang == "it" else "Une B200"), cell
    assert all(word in cell for word in words), cell
    assert "160,6" in cell and "143,5" in cell, cell


@pytest.mark.parametrize("method", ["zero3", "fsdp2-reshard"])
def test_several_cards_row_8_h100_for_qwen3_32b_8_b200_for_70b_with_checkpointing(data, method):
    assert answer(data, "qwen3-32b", "full-adamw", 8, method)["h100"] is True
    assert answer(data, "llama-3.1-70b", "full-adamw", 8, method) == {"b200": True}


@pytest.mark.parametrize("cards", [1, 2])
def test_serving_row_70b_in_fp8_fits_h100s(data, cards):
    # one card: a single request of the finder's default context; two cards: vLLM's tensor parallel
    assert "h100" in answer(data, "llama-3.1-70b", "serve-fp8", cards, 8192)


# --- the 13-70B row, one card: which accounting each figure assumes --------------------------
# Usable bytes: nvidia-smi's MiB (oracles.md) less the 2,048 MiB reserve (gpus.yaml).
H200_USABLE = (143_771 - 2_048) * 2**20   # 148,607,336,448 B
B200_USABLE = (183_359 - 2_048) * 2**20   # 190,117,101,568 B
# Phi-4 (microsoft/phi-4 config.json: hidden 5,120, 40 layers, 40 heads and 10 KV heads of 128,
# MLP 17,920, vocabulary 100,352, embeddings not tied), by hand: per layer qkv_proj 5,120 x 7,680,
# o_proj 5,120^2, gate_up_proj 5,120 x 35,840, down_proj 17,920 x 5,120 = 340,787,200 Linear
# weights, plus two norms (10,240); embeddings and lm_head 513,802,240 each; final norm 5,120.
PHI4_LINEAR = 40 * 340_787_200 + 513_802_240                               # 14,145,290,240
PHI4_PARAMS = 40 * (340_787_200 + 10_240) + 2 * 513_802_240 + 5_120       # 14,659,507,200
# Its activations of 2,048 tokens with full recomputation keep at least the 2sbh checkpoints of
# 40 layers, one layer recomputed (at least 45 sbh: about 49 in oracles.md) and the fp32 logits.
PHI4_FULL_RECOMPUTE_AT_LEAST = 40 * 2 * 2048 * 5120 + 45 * 2048 * 5120 + 4 * 2048 * 100_352


def needs_cell(lang: str, row: int, column: int) -> str:
    """A cell of the rendered needs table (rows from 1 after the header), plain spaces."""
    lines = [line for line in render_markdown("{{ table name=needs }}", lang).splitlines() if line.startswith("|")]
    cells = [cell.strip() for cell in lines[1 + row].strip("|").split(" | ")]
    return cells[column].replace("\u00a0", " ").replace("\u202f", " ")


@pytest.mark.parametrize("lang, claims", [
    ("it", [r"già nei conti ideali del paper ZeRO, senza i buffer dei framework, un 13B chiede (\S+) GB\.",
            r"Con un ottimizzatore a 8 bit quei conti scendono a (\S+) GB, che una H200 \((\S+) GB\) conterrebbe; "
            r"ma con PyTorch AMP, che aggiunge le copie bf16 di autocast, Phi-4 14B chiede (\S+) GB "
            r"\((\S+) GB nei conti del paper\): serve una B200 \((\S+) GB\), e con PyTorch AMP le attivazioni "
            r"ci stanno solo con il gradient checkpointing$"]),
    ("fr", [r"déjà dans les comptes idéaux de l’article ZeRO, sans les tampons des frameworks, un 13B demande (\S+) Go\.",
            r"Avec un optimiseur 8 bits, ces comptes descendent à (\S+) Go, qu’une H200 \((\S+) Go\) contiendrait ; "
            r"mais avec l’AMP de PyTorch, qui ajoute les copies bf16 d’autocast, Phi-4 14B demande (\S+) Go "
            r"\((\S+) Go dans les comptes de l’article\) : il faut une B200 \((\S+) Go\), et avec l’AMP de PyTorch "
            r"les activations n’y tiennent qu’avec le gradient checkpointing$"]),
])
def test_13_70b_row_one_card_names_the_accounting_of_each_figure(data, lang, claims):
    cell = needs_cell(lang, 3, 1)
    first, second = (re.search(claim, cell) for claim in claims)
    assert first and second, cell
    adamw_13b = number(first.group(1))
    eight_bit_13b, h200, phi4_amp, phi4_paper, b200 = (number(g) for g in second.groups())
    # the paper's accounting: 2 + 2 + 12 B per parameter with AdamW, 2 + 2 + 6 with 8-bit Adam
    assert adamw_13b == 16 * 13 and 16 * 13e9 > B200_USABLE  # no card, even a B200
    assert eight_bit_13b == 10 * 13 and 10 * 13e9 <= H200_USABLE  # an H200 would hold it
    assert h200 == round(143_771 * 2**20 / 1e9, 1) and b200 == round(183_359 * 2**20 / 1e9, 1)
    # PyTorch AMP: fp32 weights and gradients (4 + 4), 8-bit moments (2), and the bf16 copies
    # autocast keeps of every Linear weight (2 B each); the paper's 10 B per parameter
    assert PHI4_PARAMS == data_params(data, "phi-4")
    amp, paper = 10 * PHI4_PARAMS + 2 * PHI4_LINEAR, 10 * PHI4_PARAMS
    assert (phi4_amp, phi4_paper) == (round(amp / 1e9, 1), round(paper / 1e9, 1)) == (174.9, 146.6)
    assert H200_USABLE < amp <= B200_USABLE  # under AMP the H200 does not hold the model states
    # in the paper's accounting it does, without room for the activations even with checkpointing
    assert paper <= H200_USABLE and H200_USABLE - paper < PHI4_FULL_RECOMPUTE_AT_LEAST
    # what the finder answers for the same choices
    assert answer(data, "phi-4", "full-adam8bit", 1, "ddp") == {"b200": True}  # AMP: only with checkpointing
    assert answer(data, "phi-4", "full-adam8bit", 1, "paper") == {"b200": False}
    assert short(data, "phi-4", "full-adam8bit", 1, "paper") == ["h200"]


def number(text: str) -> float:
    """A figure of the cell, decimal comma in both languages (all under 1,000 here)."""
    return float(text.replace(",", "."))


def data_params(data, model: str) -> int:
    return next(entry["params"] for entry in data["models"] if entry["key"] == model)
