"""The guide's "Do you need more than one card?" table (snippets/data/needs.yaml) says what
the finder answers for the same choice, so a reader who opens a cell's link finds the same cards.

Each claim is read off the finder's data (``hooks.finder.compute.finder_data``: the calculator,
whose figures are tested against PEFT, transformers and DeepSpeed in tests/vram, on the
cards as nvidia-smi reports them less the stated reserve); the card each link names is its
job's first fit (tests/site/test_finder_links.py). Here: that every card a cell names needs
the gradient checkpointing where the cell says so, and the 8B and 13-70B rows' figures
against bytes per parameter derived by hand from the published configs and nvidia-smi's sizes.
"""

from __future__ import annotations

import re

import pytest
import yaml
from bs4 import BeautifulSoup

from hooks.render.markdown import render_markdown
from tests.card_sources import memory_mib
from tests.conftest import REPO_ROOT
from tests.finder.answers import finder_answers

TODAYS_CATALOGUE = True  # the table's claims are about the service's cards as they are (tests/finder/conftest.py)


@pytest.fixture(scope="module")
def data() -> dict:
    return finder_answers()


def answer(data, model, task, cards, option) -> dict[str, str]:
    """{card: the recomputation it runs with} for the cards that suffice, smallest first
    ("full": the activations fit only with the gradient checkpointing on every layer)."""
    found = data["results"][model][task][str(cards)][str(option)]
    return {fit["gpu"]: fit["recompute"] for fit in found["fits"]}


def first(data, model, task, cards, option) -> tuple[str, str, bool]:
    """The first card that suffices: (key, recomputation, tight)."""
    fit = data["results"][model][task][str(cards)][str(option)]["fits"][0]
    return fit["gpu"], fit["recompute"], fit["tight"]


def short(data, model, task, cards, option) -> list[str]:
    """The cards that hold the model states but not the activations, even with recomputation."""
    return [fit["gpu"] for fit in data["results"][model][task][str(cards)][str(option)]["short"]]


def needs_cell(lang: str, row: int, column: int) -> str:
    """A cell of the rendered needs table (rows from 1), its text with the links' Markdown, plain spaces."""
    soup = BeautifulSoup(render_markdown("{{ table name=needs }}", lang), "html.parser")
    cells = soup.select("tbody tr")[row - 1].find_all("td")
    return cells[column].get_text().replace("\u00a0", " ").replace("\u202f", " ")


@pytest.mark.parametrize(
    "lang, words", [("it", "Tutte con il gradient checkpointing"), ("fr", "Toutes avec le gradient checkpointing")]
)
def test_lora_row_every_card_named_needs_the_gradient_checkpointing(data, lang, words):
    assert first(data, "llama-3.1-8b", "lora", 1, "ddp")[:2] == ("rtx-4090", "full")
    assert first(data, "llama-3.1-70b", "qlora", 1, "ddp")[:2] == ("a6000", "full")
    assert answer(data, "llama-3.1-70b", "lora", 1, "ddp") == {"b200": "full"}
    assert short(data, "llama-3.1-70b", "lora", 1, "ddp") == ["h200"]  # holds the weights, not the activations
    assert needs_cell(lang, 1, 1).endswith(words)


P_8B = 8_030_261_248
# Usable bytes: nvidia-smi's MiB (oracles.md, tests/card_sources.py) less today's reserve (gpus.yaml).
RESERVE_MIB = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "gpus.yaml").read_text(encoding="utf-8"))["reserve_mib"]
H200_USABLE = (memory_mib("h200") - RESERVE_MIB) * 2**20  # 148,607,336,448 B with 2,048 MiB reserved
B200_USABLE = (memory_mib("b200") - RESERVE_MIB) * 2**20  # 190,117,101,568 B


def test_8b_row_one_b200_under_amp_no_80_gb_card(data):
    """The guide's scripts build torch.optim.AdamW(params): foreach on CUDA, whose step holds
    4 B per parameter more (test_optimizer_step.py measures it): 20 B per parameter under
    AMP on one card, 160.6 GB, more than an H200's usable 148.6 GB: the B200."""
    assert answer(data, "llama-3.1-8b", "full-adamw", 1, "ddp") == {"b200": "none"}
    assert data["results"]["llama-3.1-8b"]["full-adamw"]["1"]["ddp"]["per_gpu_gb"] * 1e9 == 20 * P_8B
    assert 20 * P_8B > H200_USABLE
    for lang, figure in (("it", "160,6 GB"), ("fr", "160,6 Go")):
        assert figure in needs_cell(lang, 2, 1)
    eight_bit = answer(data, "llama-3.1-8b", "full-adam8bit", 1, "ddp")
    assert eight_bit and not {"h100", "a100-80gb"} & set(eight_bit)


def test_8b_row_all_bf16_fits_one_h100_only_just(data):
    """All in bf16 (weights, gradients and AdamW's two moments, no fp32 copy: 2 + 2 + 2 + 2 B
    per parameter, as the Trainer's DDP runs it with its fused AdamW: tests/vram/test_ddp_bf16.py)
    is 8 x 8,030,261,248 B = 64.2 GB; an H100's usable 83.4 GB hold it and the activations of
    the reference sequence with under a tenth left: "al limite", "de justesse" (tight)."""
    ddp = data["results"]["llama-3.1-8b"]["full-bf16"]["1"]["ddp"]
    assert ddp["per_gpu_gb"] * 1e9 == 8 * P_8B
    assert first(data, "llama-3.1-8b", "full-bf16", 1, "ddp") == ("h100", "none", True)
    for lang, words in (
        ("it", ("Tutto in bf16", "64,2 GB", "al limite")),
        ("fr", ("Tout en bf16", "64,2 Go", "de justesse")),
    ):
        cell = needs_cell(lang, 2, 1)
        assert all(word in cell for word in words), (lang, cell)


@pytest.mark.parametrize(
    "lang, words", [("it", "Tutte con il gradient checkpointing"), ("fr", "Toutes avec le gradient checkpointing")]
)
def test_several_cards_row_8_h100_for_qwen3_32b_8_b200_for_70b_with_checkpointing(data, lang, words):
    assert first(data, "qwen3-32b", "full-adamw", 8, "fsdp2-reshard")[:2] == ("h100", "full")
    assert answer(data, "llama-3.1-70b", "full-adamw", 8, "fsdp2-reshard") == {"b200": "full"}
    assert needs_cell(lang, 3, 2).endswith(words)


# --- the 13-70B row, one card ---------------------------------------------------------------
# Phi-4 (microsoft/phi-4 config.json: hidden 5,120, 40 layers, 40 heads and 10 KV heads of 128,
# MLP 17,920, vocabulary 100,352, embeddings not tied), by hand: per layer qkv_proj 5,120 x 7,680,
# o_proj 5,120^2, gate_up_proj 5,120 x 35,840, down_proj 17,920 x 5,120 = 340,787,200 Linear
# weights, plus two norms (10,240); embeddings and lm_head 513,802,240 each; final norm 5,120.
PHI4_LINEAR = 40 * 340_787_200 + 513_802_240  # 14,145,290,240
PHI4_PARAMS = 40 * (340_787_200 + 10_240) + 2 * 513_802_240 + 5_120  # 14,659,507,200
# Its activations of 2,048 tokens with full recomputation keep at least the 2sbh checkpoints of
# 40 layers, one layer recomputed (at least 45 sbh: about 49 in oracles.md) and the fp32 logits.
PHI4_FULL_RECOMPUTE_AT_LEAST = 40 * 2 * 2048 * 5120 + 45 * 2048 * 5120 + 4 * 2048 * 100_352


@pytest.mark.parametrize(
    "lang, claims",
    [
        (
            "it",
            [
                r"già nei conti ideali del paper ZeRO un 13B chiede (\S+) GB\.",
                (
                    r"Con un ottimizzatore a 8 bit Phi-4 14B ne chiede (\S+) GB: una \[B200\]\([^)]*\), con il gradient "
                    r"checkpointing$"
                ),
            ],
        ),
        (
            "fr",
            [
                r"déjà dans les comptes idéaux de l’article ZeRO, un 13B demande (\S+) Go\.",
                (
                    r"Avec un optimiseur 8 bits, Phi-4 14B en demande (\S+) Go : une \[B200\]\([^)]*\), avec le gradient "
                    r"checkpointing$"
                ),
            ],
        ),
    ],
)
def test_13_70b_row_one_card_figures(data, lang, claims):
    cell = needs_cell(lang, 3, 1)
    first_claim, second = (re.search(claim, cell) for claim in claims)
    assert first_claim and second, cell
    adamw_13b, phi4_amp = number(first_claim.group(1)), number(second.group(1))
    # the paper's accounting: 2 + 2 + 12 B per parameter with AdamW: no card, even a B200
    assert adamw_13b == 16 * 13 and B200_USABLE < 16 * 13e9
    # PyTorch AMP: fp32 weights and gradients (4 + 4), 8-bit moments (2), and the bf16 copies
    # autocast keeps of every Linear weight (2 B each)
    assert data_params(data, "phi-4") == PHI4_PARAMS
    amp = 10 * PHI4_PARAMS + 2 * PHI4_LINEAR
    assert phi4_amp == round(amp / 1e9, 1) == 174.9
    assert H200_USABLE < amp <= B200_USABLE  # under AMP the H200 does not hold the model states
    assert answer(data, "phi-4", "full-adam8bit", 1, "ddp") == {"b200": "full"}  # only with checkpointing
    # in the paper's accounting the H200 holds the states, without room for the activations
    paper = 10 * PHI4_PARAMS
    assert paper <= H200_USABLE and H200_USABLE - paper < PHI4_FULL_RECOMPUTE_AT_LEAST
    assert short(data, "phi-4", "full-adam8bit", 1, "paper") == ["h200"]


def number(text: str) -> float:
    """A figure of the cell, decimal comma in both languages (all under 1,000 here)."""
    return float(text.replace(",", "."))


def data_params(data, model: str) -> int:
    return next(entry["params"] for entry in data["models"] if entry["key"] == model)


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_small_model_row_states_the_calculators_speedup_not_an_invented_one(lang):
    """The row said "from 40 hours to 10", a fourfold speed-up that no source gave (a new reader's
    report; the guide's own estimate for this job is lower at its low end). It now names a job
    and gives the calculator's range for it, the one the guide's DDP section gives, which four
    cards cannot push past four times one card's speed."""
    import vram
    from hooks.render.placeholders import Args
    from hooks.render.timing import JOB, job_step

    said = render_markdown("{{ speedup model=llama-3.2-1b gpu=a6000 gpus=4 zero_stage=0 micro_batch=2 }}", lang)
    args = Args({"model": "llama-3.2-1b", "gpu": "a6000", "gpus": "4", "zero_stage": "0", "micro_batch": "2"}, JOB)
    span = vram.timing.speedup(job_step(args, gpus=1), job_step(args))
    assert 1 < span.low <= span.high <= 4  # no more than linear in the cards
    cell = needs_cell(lang, 4, 2)
    assert re.sub(r"<[^>]+>", "", said).strip().replace("\u00a0", " ").replace("\u202f", " ") in cell
    assert "Llama 3.2 1B" in cell and "4 RTX A6000" in cell and "40" not in cell
