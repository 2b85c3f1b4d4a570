"""The three tables of the guide, in each language.

Expected values are the seed articles' own tables (../shared/seeds) and
../shared/cases/memory.md, typed here from those sources.
"""

from __future__ import annotations

import pytest

from hooks.render.markdown import render_markdown
from tests.hooks.markdown_tables import parse_tables

SHARDING = "{{ table name=sharding params=8e9 world_sizes=4,8 }}"

# ../shared/cases/memory.md, "8B parameters, per GPU (the guide's own table)"
SEED_SHARDING_GB = {
    "DDP": (128, 128),
    "ZeRO-1": (56, 44),
    "ZeRO-2": (44, 30),
    "ZeRO-3": (32, 16),
}


@pytest.mark.parametrize(
    "lang,unit,header",
    [
        ("it", "GB", ["Metodo", "Cosa tiene ogni scheda", "Per scheda, 4 schede", "Per scheda, 8 schede"]),
        ("fr", "Go", ["Méthode", "Ce que détient chaque carte", "Par carte, 4 cartes", "Par carte, 8 cartes"]),
    ],
)
def test_sharding_table_matches_the_guide(lang, unit, header):
    (table,) = parse_tables(render_markdown(SHARDING, lang))
    assert table[0] == header
    rows = {row[0].split(",")[0]: row for row in table[1:]}
    assert list(rows) == list(SEED_SHARDING_GB)
    for method, (four, eight) in SEED_SHARDING_GB.items():
        assert rows[method][2:] == [f"{four} {unit}", f"{eight} {unit}"]


def test_sharding_table_names_the_fsdp_strategies():
    (table,) = parse_tables(render_markdown(SHARDING, "it"))
    assert table[3][0] == "ZeRO-2, FSDP `SHARD_GRAD_OP`"
    assert table[4][0] == "ZeRO-3, FSDP `FULL_SHARD`"


@pytest.mark.parametrize(
    "lang,first_row,last_row",
    [
        (
            "it",
            [
                "PCIe 4.0 x16",
                "25–32 GB/s per direzione",
                "RTX 3090, RTX 4090, A6000, la maggior parte delle schede PCIe",
            ],
            ["NVLink, B200", "900 GB/s per direzione", "Baseboard HGX B200 da 8 GPU"],
        ),
        (
            "fr",
            ["PCIe 4.0 x16", "25 à 32 Go/s par sens", "RTX 3090, RTX 4090, A6000, la plupart des cartes PCIe"],
            ["NVLink, B200", "900 Go/s par sens", "Cartes de base HGX B200 à 8 GPU"],
        ),
    ],
)
def test_interconnects_table_as_in_the_articles(lang, first_row, last_row):
    (table,) = parse_tables(render_markdown("{{ table name=interconnects }}", lang))
    assert len(table) == 7  # header + the articles' five links + B200 (NVLink 5)
    assert table[1] == first_row
    assert table[-1] == last_row


@pytest.mark.parametrize("lang,bridge", [("it", "circa 56 GB/s per direzione"), ("fr", "environ 56 Go/s par sens")])
def test_interconnects_approximate_figure(lang, bridge):
    (table,) = parse_tables(render_markdown("{{ table name=interconnects }}", lang))
    assert table[3][1] == bridge


# The 8B row opens with what the model needs under AMP; which cards suffice is checked
# against the finder in tests/finder/test_needs_claims.py and tests/site/test_finder_links.py.
@pytest.mark.parametrize(
    "lang,header,one_card_8b",
    [
        (
            "it",
            ["Lavoro", "Una scheda che basta", "Quando più schede hanno senso"],
            "Con AdamW e PyTorch AMP Llama 3.1 8B chiede 160,6 GB: una [B200](gpu-finder.md?model=llama-3.1-8b&task=full-adamw",
        ),
        (
            "fr",
            ["Tâche", "Une carte qui suffit", "Quand plusieurs cartes ont du sens"],
            "Avec AdamW et l’AMP de PyTorch, Llama 3.1 8B demande 160,6 Go : une [B200](gpu-finder.md?model=llama-3.1-8b&task=full-adamw",
        ),
    ],
)
def test_needs_table(lang, header, one_card_8b):
    (table,) = parse_tables(render_markdown("{{ table name=needs }}", lang))
    assert table[0] == header
    assert len(table) == 6  # header + the articles' five jobs
    assert table[2][1].startswith(one_card_8b)
    assert not any("{{" in cell for row in table for cell in row)


def test_a_pages_own_pipe_table_is_labelled_like_the_render_layers():
    """The formulas page writes its tables in Markdown: each body cell gets its column's
    heading (inline code as its text), as ``markdown_table`` labels the data tables, so a phone
    shows each row as a card; a table already labelled, or without a heading row, is left alone."""
    import markdown
    from bs4 import BeautifulSoup

    from hooks.render.markdown_table import label_cells

    def parse_html(text: str) -> BeautifulSoup:
        return BeautifulSoup(text, "html.parser")

    source = "| Stadio | Memoria `P` & co |\n|---|:---|\n| DDP (0) | P · 16 |\n| ZeRO-3 | P · 16 / N |\n"
    html = label_cells(markdown.markdown(source, extensions=["tables"]))
    rows = [
        [(td.get("data-label"), td.get_text()) for td in tr.select("td")] for tr in parse_html(html).select("tbody tr")
    ]
    assert rows == [
        [("Stadio", "DDP (0)"), ("Memoria P & co", "P · 16")],
        [("Stadio", "ZeRO-3"), ("Memoria P & co", "P · 16 / N")],
    ]
    assert parse_html(html).select_one("tbody td:nth-child(2)")["style"] == "text-align: left;"  # kept
    assert label_cells(html) == html  # labelled once
    bare = "<table>\n<tbody>\n<tr><td>x</td></tr>\n</tbody>\n</table>"
    assert label_cells(bare) == bare
