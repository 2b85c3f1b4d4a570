"""The finder's static run cells (issue 21): a number and its unit s, min, h or days joined by
the no-break space typography.yaml puts before a unit (U+00A0 in both languages: Lexique des
règles typographiques de l'Imprimerie nationale for French), never an ordinary space; a run of
several days in days and hours; LoRA runs timed, serving's decoding bound shown."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from hooks.finder.page import finder_table
from hooks.render.typography import rules

QLORA_ONE_CARD = {"model": "llama-3.1-8b", "task": "qlora", "cards": "1", "method": "ddp"}
FULL_8_CARDS = {"model": "llama-3.1-8b", "task": "full-adamw", "cards": "8", "method": "zero1"}
SERVE = {"model": "llama-3.1-8b", "task": "serve-bf16", "cards": "1", "context": "8192"}
UNIT = r"(?:s|min|h|giorni|jours|tokens?/s)(?![^\W\d_])"


def by_card(choice: dict, lang: str, column: int) -> dict[str, str]:
    soup = BeautifulSoup(finder_table(choice, lang), "html.parser")
    return {
        row.select("th")[0].get_text(): row.select("th, td")[column].get_text()
        for row in soup.select("#finder-table tbody tr")
    }


def cells(choice: dict, lang: str, column: int) -> list[str]:
    return list(by_card(choice, lang, column).values())


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_run_cells_join_numbers_and_time_units_with_the_rule_sets_space(lang):
    space = {"nbsp": "\u00a0", "nnbsp": "\u202f"}[rules()[0].languages[lang].units]
    texts = cells(QLORA_ONE_CARD, lang, 4) + cells(FULL_8_CARDS, lang, 4) + cells(SERVE, lang, 4)
    assert texts
    for text in texts:
        assert not re.search(r"\d[ \t\n]+" + UNIT, text), text  # an ordinary space before a unit
        assert re.search(r"\d" + space + UNIT, text), text


@pytest.mark.parametrize("lang, days, join", [("it", "giorni", " e "), ("fr", "jours", " et ")])
def test_a_run_of_several_days_is_written_in_days_and_hours(lang, days, join):
    # QLoRA of Llama 3.1 8B on one RTX 4090, 10^9 tokens: days (at the published QLoRA runs' share)
    run = by_card(QLORA_ONE_CARD, lang, 4)["RTX 4090 24GB"]
    ends = re.findall(rf"\b(\d+)\u00a0{days}(?:{join}(\d+)\u00a0h)?", run)
    assert len(ends) == 2 and int(ends[0][0]) <= int(ends[1][0]), run
    # Llama 3.1 8B in full on 8 x H100 under ZeRO-1: hours, to a tenth
    assert re.search(r"\b\d+,\d(–| à )\d+,\d\u00a0h\b", by_card(FULL_8_CARDS, lang, 4)["H100 80GB"])


@pytest.mark.parametrize("lang, word", [("it", "tetto"), ("fr", "plafond")])
def test_serving_shows_the_decoding_bound_as_a_ceiling(lang, word):
    assert all(word in cell for cell in cells(SERVE, lang, 4))
