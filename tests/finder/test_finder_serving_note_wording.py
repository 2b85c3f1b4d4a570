"""The note under a serving answer, as a renter reads it (a new-reader trial in Chromium):
with the default single sequence it read "KV cache per 1 sequenze" / "pour 1 séquences", on
two cards its figure "per sequenza" was the KV cache of one sequence on EACH card (tensor
parallel splits the KV heads) while reading as the whole sequence's, and in Italian
"vLLM prende 90% della memoria" lacked its article.

Oracle for the figure: the KV cache of one sequence from Llama 3.1 8B's own config.json,
K and V x layers x KV heads x head_dim x 2 bytes (bf16) x tokens, split over the cards."""

from __future__ import annotations

import json
import re

import pytest
from bs4 import BeautifulSoup

from hooks.render.markdown import render_markdown
from tests.conftest import REPO_ROOT

CONFIG = json.loads((REPO_ROOT / "snippets" / "data" / "models" / "llama-3.1-8b.json").read_text())
CONTEXT, CARDS = 8192, 2
HEAD_DIM = CONFIG.get("head_dim") or CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
KV_PER_CARD_GB = 2 * CONFIG["num_hidden_layers"] * CONFIG["num_key_value_heads"] * HEAD_DIM * 2 * CONTEXT / CARDS / 1e9


def note(lang: str) -> str:
    html = render_markdown(
        f"{{{{ finder_table model=llama-3.1-8b task=serve-bf16 cards={CARDS} context={CONTEXT} }}}}", lang
    )
    note = BeautifulSoup(html, "html.parser").select_one("#finder-note")
    assert note is not None
    text = note.get_text()
    return re.sub(r"[\u00a0\u202f]", " ", text)


@pytest.mark.parametrize(
    "lang, per_card, unit", [("it", "per sequenza su ogni scheda", "GB"), ("fr", "par séquence sur chaque carte", "Go")]
)
def test_the_kv_figure_says_it_is_per_card(lang, per_card, unit):
    text = note(lang)
    figure = f"{KV_PER_CARD_GB:.1f}".replace(".", ",") + f" {unit} {per_card}"
    assert figure in text, (figure, text)


@pytest.mark.parametrize("lang, wrong", [("it", r"\b1 sequenze\b"), ("fr", r"\b1 séquences\b")])
def test_one_sequence_is_not_plural(lang, wrong):
    text = note(lang)
    assert not re.search(wrong, text), text


def test_italian_share_is_not_a_bare_percentage_object():
    # "prende 90% della memoria": Italian puts an article before a percentage (il 90%, l'80%)
    assert not re.search(r"prende \d+ ?%", note("it"))
