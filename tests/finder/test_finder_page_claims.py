"""What the finder page (docs/gpu-finder.*.md, "Il margine" / "La marge") says about the margin
and the activations, against independent values:

- its example, Llama 3.1 8B on 8 cards under DeepSpeed ZeRO-1, with figures from the page's
  placeholders, checked against numbers derived by hand from the published sizes
  (8,030,261,248 parameters; the RTX A6000's 49,140 MiB, nvidia-smi; the 2,048 MiB reserve);
- "the reference is a minimum for LoRA: each PEFT adapter keeps its own copy of its input, in
  fp32 like its weights (bf16 under autocast)", against PEFT itself (saved-tensor hooks on a
  LoRA layer over a frozen bf16 linear).
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

import pytest
import torch

from hooks.render.markdown import render_markdown
from tests.catalogue import frozen_usable_bytes
from tests.conftest import REPO_ROOT
from tests.finder.answers import finder_answers

SPACES = str.maketrans({"\u00a0": " ", "\u202f": " "})
P_8B = 8_030_261_248
A6000_USABLE = frozen_usable_bytes("a6000")  # 49,379,540,992 B with 2,048 MiB reserved
# The activations of 2,048 tokens with full recomputation keep at least the bf16 input of each
# of the 32 layers (2sbh) and the fp32 logits the loss keeps (4 x 2,048 x 128,256): oracles.md.
FULL_RECOMPUTE_8B_AT_LEAST = 32 * 2 * 2048 * 4096 + 4 * 2048 * 128_256


def margin_paragraph(lang: str) -> str:
    """The page's bullet on the margin, rendered for ``lang``, with plain spaces."""
    page = (REPO_ROOT / "docs" / f"gpu-finder.{lang}.md").read_text(encoding="utf-8")
    (bullet,) = [line for line in page.splitlines() if line.startswith(("- **Il margine**", "- **La marge**"))]
    return render_markdown(bullet, lang).translate(SPACES)


@pytest.mark.parametrize(
    "lang, example",
    [
        (
            "it",
            (
                r"Llama 3\.1 8B chiede (\S+) GB per scheda: una RTX A6000, che dopo la riserva ne offre (\S+) GB, li contiene, "
                r"ma quello che le resta è meno dei (\S+) GB di attivazioni con il gradient checkpointing, "
                r"e la prima scheda che basta è la H100\."
            ),
        ),
        (
            "fr",
            (
                r"Llama 3\.1 8B demande (\S+) Go par carte : une RTX A6000, qui en offre (\S+) Go après la réserve, les contient, "
                r"mais ce qui lui reste est inférieur aux (\S+) Go d’activations avec le gradient checkpointing, "
                r"et la première carte qui suffit est la H100\."
            ),
        ),
    ],
)
def test_the_pages_example_holds(lang, example):
    found = re.search(example, margin_paragraph(lang))
    assert found, margin_paragraph(lang)
    need, usable, activations = (float(value.replace(",", ".")) for value in found.groups())
    # ZeRO-1: bf16 weights and gradients whole (2 + 2 B), fp32 gradients, master and moments
    # (16 B) split over 8: 6 B per parameter.
    assert need == round(6 * P_8B / 1e9, 1) == 48.2
    assert usable == round(A6000_USABLE / 1e9, 1) == 49.4
    assert A6000_USABLE - 6 * P_8B < FULL_RECOMPUTE_8B_AT_LEAST <= activations * 1e9 + 0.05e9
    got = finder_answers()["results"]["llama-3.1-8b"]["full-adamw"]["8"]["zero1"]
    assert [fit["gpu"] for fit in got["short"]] == ["a6000"] and got["fits"][0]["gpu"] == "h100"


@pytest.mark.parametrize(
    "lang, reference",
    [
        ("it", "una sequenza da 2.048 token con micro-batch 1"),
        ("fr", "une séquence de 2 048 tokens avec un micro-lot de 1"),
    ],
)
def test_the_page_names_the_reference_and_the_tight_rule(lang, reference):
    paragraph = margin_paragraph(lang)
    assert reference in paragraph
    assert "gpu_memory_utilization" in paragraph  # serving: the margin is inside vLLM's share
    # one rule for "tight", every kind of job: under a tenth of the card free at the job's peak
    page = (REPO_ROOT / "docs" / f"gpu-finder.{lang}.md").read_text(encoding="utf-8")
    (bullet,) = [line for line in page.splitlines() if line.startswith(("- **Al limite.**", "- **Serré.**"))]
    rule = render_markdown(bullet, lang).translate(SPACES)
    assert (
        "le resta libero meno del 10% della memoria che il lavoro può usare"
        if lang == "it"
        else "il lui reste moins de 10 % de la mémoire que le travail peut utiliser"
    ) in rule


@pytest.fixture(scope="module")
def lora_layer():
    from peft import LoraConfig, get_peft_model

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = torch.nn.Linear(64, 64, bias=False)
            self.k_proj = torch.nn.Linear(64, 16, bias=False)

        def forward(self, x):
            return self.q_proj(x).sum() + self.k_proj(x).sum()

    return get_peft_model(Block().to(torch.bfloat16), LoraConfig(r=4, target_modules=["q_proj", "k_proj"]))


@pytest.mark.parametrize("autocast, copy_dtype", [(False, torch.float32), (True, torch.bfloat16)])
def test_each_peft_adapter_keeps_its_own_copy_of_its_input(lora_layer, autocast, copy_dtype):
    assert {p.dtype for p in lora_layer.parameters() if p.requires_grad} == {torch.float32}  # the adapters
    x = torch.randn(8, 64, dtype=torch.bfloat16, requires_grad=True)
    saved: list[torch.Tensor] = []
    with (
        torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast),
        torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t),
    ):
        lora_layer(x)
    copies = [t for t in saved if t.shape == x.shape]
    # one per adapter (q_proj, k_proj), none of them x itself, which full fine-tuning keeps once for both
    assert len(copies) == 2 and len({t.untyped_storage().data_ptr() for t in copies}) == 2
    assert all(t.untyped_storage().data_ptr() != x.untyped_storage().data_ptr() for t in copies)
    assert {t.dtype for t in copies} == {copy_dtype}


@pytest.mark.parametrize(
    "lang, heading, no_measurement",
    [
        ("it", "- **Tempo e costo.**", "Nessuna nostra misura su GPU conferma ancora questi tempi."),
        ("fr", "- **Durée et coût.**", "Aucune de nos mesures sur GPU ne confirme encore ces durées."),
    ],
)
def test_the_time_column_names_its_sources(lang, heading, no_measurement):
    """The reading list explains the time/cost column with the sources the times come from (the
    datasheets' peaks in gpus.yaml, the published runs of the job's class: vram.calibration),
    and the note under a table with a run gives the validation's coverage, from the same data."""
    from babel.numbers import format_percent

    from hooks.data.measurements import measured_data, validation

    page = (REPO_ROOT / "docs" / f"gpu-finder.{lang}.md").read_text(encoding="utf-8")
    (bullet,) = [line for line in page.splitlines() if line.startswith(heading)]
    shown = " ".join(render_markdown(bullet, lang).translate(SPACES).split())
    assert "gpus.yaml" in shown and "python -m vram time" in shown and no_measurement in shown
    assert "torchtitan" not in shown  # one published run no longer stands for every card
    table = " ".join(render_markdown("{{ finder_table }}", lang).translate(SPACES).split())
    checks, figures = validation()
    assert format_percent(figures["training"].coverage, locale=lang).translate(SPACES) in table
    held = [c for c in checks if c.held_out]
    inside = sum(c.covered for c in held)
    # a run slower than its range: its time per token (1 / measured tokens/s) over the longest
    # time the range allows (1 / its lowest tokens/s); a faster one: over the shortest (1 / its
    # highest tokens/s); rounded outwards to a tenth
    times = [(1 / c.measured) / (1 / c.predicted.low) for c in held if c.measured < c.predicted.low]
    shorter = [(1 / c.measured) / (1 / c.predicted.high) for c in held if c.measured > c.predicted.high]
    assert inside + len(times) + len(shorter) == len(held) and times and shorter  # the words name both sides
    # the words' names: the faster runs' stacks, and mostly transformers-code loops among the slower
    assert {c.source for c in held if c.measured > c.predicted.high} == {
        "dgxc-nemo-llama31-2024",
        "flagperf-llama3-8b-megatron-2024",
        "olmo-core-h100-2025",
    }
    codes = [measured_data().measurements[c.key].model_code for c in held if c.measured < c.predicted.low]
    assert codes.count("transformers") > len(codes) / 2

    def outwards(values, step):
        return (
            Decimal(min(values)).quantize(Decimal(step), rounding=ROUND_FLOOR),
            Decimal(max(values)).quantize(Decimal(step), rounding=ROUND_CEILING),
        )

    def comma(d: Decimal) -> str:  # both languages write 1,3 and 8 (no trailing ,0)
        return str(d.normalize()).replace(".", ",")

    (low, high), (short_low, short_high) = outwards(times, "0.1"), outwards(shorter, "0.01")
    sources = len({c.source for c in held})
    said = {
        "it": f"Delle {len(held)} misure di {sources} fonti raccolte dopo che la regola era stata fissata, "
        f"l’intervallo ne contiene {inside}. Delle altre, {len(times)} hanno richiesto da {comma(low)} a "
        f"{comma(high)} volte il tempo più lungo del loro intervallo (erano per lo più cicli di training basati su "
        "Hugging Face Transformers, come lo script train_hf.py di questa guida, che usa il Trainer di "
        f"transformers) e {len(shorter)}, con NeMo, Megatron-LM e OLMo-core, da {comma(short_low)} a "
        f"{comma(short_high)} volte il tempo più breve. Il ciclo di training conta quanto la scheda: prima di "
        "noleggiare una macchina per giorni, misura per qualche minuto quanto dura su di essa uno step del tuo "
        "ciclo, e moltiplicalo per gli step che servono, scritti qui sopra.",
        "fr": f"Sur les {len(held)} mesures de {sources} sources recueillies après que la règle a été figée, "
        f"la fourchette en contient {inside}. Parmi les autres, {len(times)} ont pris de {comma(low)} à "
        f"{comma(high)} fois la durée la plus longue de leur fourchette (pour la plupart des boucles "
        "d’entraînement bâties sur Hugging Face Transformers, comme le script train_hf.py de ce guide, qui "
        f"utilise le Trainer de transformers) et {len(shorter)}, avec NeMo, Megatron-LM et OLMo-core, de "
        f"{comma(short_low)} à {comma(short_high)} fois la durée la plus courte. La boucle d’entraînement compte "
        "autant que la carte : avant de louer une machine pour des jours, mesurez-y pendant quelques minutes la "
        "durée d’une étape de votre boucle, et multipliez-la par le nombre d’étapes nécessaires, indiqué plus haut.",
    }
    assert said[lang] in table  # what the held-out sources gave, next to the coverage, and what to do about it
    # "the steps needed, above": the note's earlier paragraph gives them (batch_text, vram.job.global_batch)
    steps = {"it": "step", "fr": "étapes"}[lang]
    assert table.index(f" {steps}.</p>") < table.index(said[lang][:40])
    # the guide's train_hf.py is such a loop: it trains with transformers' Trainer
    assert "Trainer(model=" in (REPO_ROOT / "snippets" / "train_hf.py").read_text(encoding="utf-8")
