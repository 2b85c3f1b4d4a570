"""The finder's summary counts card MODELS of the catalogue, not cards: after choosing 8
cards, "only one card suffices" contradicts the choice. Llama 3.1 70B, full fine-tuning
with AdamW on 8 cards under ZeRO-3 fits one model of card of the catalogue, the B200 (its
192 GB class memory is the only one above the per-card need)."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from hooks.render.markdown import render_markdown

CHOICE = "{{ finder_table model=llama-3.1-70b task=full-adamw cards=8 method=zero3 }}"


# Its margin, about 27 GB, holds the activations of 2,048 tokens only with full recomputation:
# without it the layers alone keep 49 sbh x 80 layers = 65.8 GB (oracles.md, h = 8,192).
@pytest.mark.parametrize(
    "lang, one_model",
    [
        (
            "it",
            (
                r"Basta un solo modello di scheda del catalogo, la B200, con [\d,]+ GB di margine\. "
                r"Su questa scheda le attivazioni ci stanno solo con il gradient checkpointing\.$"
            ),
        ),
        (
            "fr",
            (
                r"Un seul modèle de carte du catalogue suffit, la B200, avec [\d,]+ Go de marge\. "
                r"Sur cette carte, les activations ne tiennent qu’avec le gradient checkpointing\.$"
            ),
        ),
    ],
)
def test_eight_cards_of_one_model(lang, one_model):
    soup = BeautifulSoup(render_markdown(CHOICE, lang), "html.parser")
    status = re.sub(r"[\u00a0\u202f]", " ", soup.select_one("#finder-status").get_text())
    assert re.search(one_model, status), status
    assert [row.th.get_text() for row in soup.select("tbody tr")] == ["B200"]


@pytest.mark.parametrize(
    "lang, many_models",
    [
        ("it", r"Bastano (\d+) modelli di scheda del catalogo, a partire dalla "),
        ("fr", r"Parmi les cartes du catalogue, (\d+) modèles suffisent, à commencer par la "),
    ],
)
def test_several_models_of_card(lang, many_models):
    soup = BeautifulSoup(
        render_markdown("{{ finder_table model=llama-3.1-8b task=qlora cards=1 method=ddp }}", lang), "html.parser"
    )
    status = soup.select_one("#finder-status").get_text()
    count = re.search(many_models, status)
    assert count, status
    assert int(count.group(1)) == len(soup.select("tbody tr")) > 1
