"""Prose that states facts of the catalogue comes from gpus.yaml (issue 18: "the largest cards of
the catalogue are the B200…" went stale when a card was added): adding a card or a machine to
the data changes the sentence, in both languages."""

from __future__ import annotations

import pytest

from hooks.render.markdown import render_markdown
from tests.conftest import REPO_ROOT
from tests.hooks.test_schemas import edit

NEW_CARD = """  x300:
    name: X300 288GB
    short_name: X300
    memory_mib: 294912
    source: a test card
    bf16_dense_tflops: 2500
    memory_bandwidth_gb_per_s: 8000
    datasheet: a test datasheet
    peer_link: nvlink-b200
    host_link: pcie5
"""


def shown(markdown: str, lang: str) -> str:
    """The rendered text, its no-break spaces (number and unit: hooks/render/locale_format.py) as spaces."""
    return render_markdown(markdown, lang).replace("\u00a0", " ")


def test_the_pages_state_the_largest_cards_and_the_priced_machines_by_placeholder():
    for lang in ("it", "fr"):
        page = (REPO_ROOT / "docs" / f"index.{lang}.md").read_text(encoding="utf-8")
        assert "{{ largest_cards count=3 }}" in page and "{{ priced_machines }}" in page
        finder = (REPO_ROOT / "docs" / f"gpu-finder.{lang}.md").read_text(encoding="utf-8")
        assert "{{ priced_machines prices=yes }}" in finder


@pytest.mark.parametrize(
    "lang, before, after",
    [
        (
            "it",
            "la B200 con 192,3 GB, la H200 con 150,8 GB e la RTX PRO 6000 con 102,6 GB",
            "la X300 con 309,2 GB, la B200 con 192,3 GB e la H200 con 150,8 GB",
        ),
        (
            "fr",
            "la B200 avec 192,3 Go, la H200 avec 150,8 Go et la RTX PRO 6000 avec 102,6 Go",
            "la X300 avec 309,2 Go, la B200 avec 192,3 Go et la H200 avec 150,8 Go",
        ),
    ],
)
def test_adding_a_card_changes_the_largest_cards(data_dir, lang, before, after):
    # 183,359 MiB (the B200's nvidia-smi memory.total) x 2^20 = 192.3 GB; 294,912 MiB = 309.2 GB
    assert shown("{{ largest_cards count=3 }}", lang) == before
    edit(data_dir / "gpus.yaml", "gpus:\n", "gpus:\n" + NEW_CARD)
    assert shown("{{ largest_cards count=3 }}", lang) == after


def test_adding_a_machine_changes_the_priced_machines(data_dir):
    assert shown("{{ priced_machines }}", "it") == "4 × RTX 4090 e 8 × H100"
    edit(
        data_dir / "gpus.yaml",
        "machines:\n",
        "machines:\n  2x-h200: {gpu: h200, count: 2, price_eur_per_hour_from: 7.5, host_ram_gb: 512, "
        "host_ram_source: a test machine}\n",
    )
    assert shown("{{ priced_machines }}", "it") == "2 × H200, 4 × RTX 4090 e 8 × H100"
    assert shown("{{ priced_machines }}", "fr") == "2 × H200, 4 × RTX 4090 et 8 × H100"


def test_the_prices_of_the_machines_come_with_them(data_dir):
    assert shown("{{ priced_machines prices=yes }}", "it") == "4 × RTX 4090 da 2,36 €/h e 8 × H100 da 31,20 €/h"
    edit(data_dir / "gpus.yaml", "price_eur_per_hour_from: 2.36", "price_eur_per_hour_from: 2.5")
    assert (
        shown("{{ priced_machines prices=yes }}", "fr")
        == "4 × RTX 4090 à partir de 2,50 €/h et 8 × H100 à partir de 31,20 €/h"
    )


def test_the_cards_the_needs_table_recommends_follow_the_catalogue(data_dir):
    """ "una B200 per LoRA su un 70B in bf16 (una H200 ne contiene i pesi…)": the finder's answers,
    so a card between the two becomes the one the table names."""
    cell = "{{ first_fit model=llama-3.1-70b task=lora }} / {{ largest_short model=llama-3.1-70b task=lora }}"
    assert shown(cell, "it") == "B200 / H200"
    # 165,000 MiB = 173.0 GB: Llama 3.1 70B's LoRA states, 144.4 GB, and its activations under full
    # recomputation fit (the B200 keeps 45.7 GB of margin)
    edit(data_dir / "gpus.yaml", "gpus:\n", "gpus:\n" + NEW_CARD.replace("294912", "165000").replace("X300", "X170"))
    assert shown(cell, "it") == "X170 / H200"
    assert "X170" in shown("{{ table name=needs }}", "fr")
