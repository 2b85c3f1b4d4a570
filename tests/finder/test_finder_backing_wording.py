"""What the finder's cells say of the published runs behind a time (``answer_job``'s backing),
read on the frozen test catalogue: a range computed from runs of other classes names the count
as such (“intervallo ricavato da 12 misure di altre classi”), not as a bare number in brackets
inside brackets (“… di altre classi (12))”)."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from hooks.finder.page import finder_table
from tests.finder.answers import finder_answers

SPACES = str.maketrans({"\u00a0": " ", "\u202f": " "})  # the render layer's typography aside
FULL_8_CARDS = {"model": "llama-3.1-8b", "task": "full-adamw", "cards": "8", "method": "zero1"}
WIDENED = {
    "it": "(nessuna misura pubblicata per questa scheda e questo lavoro: intervallo ricavato da {runs} misure di altre classi)",
    "fr": "(aucune mesure publiée pour cette carte et ce travail : fourchette calculée sur {runs} mesures d’autres classes)",
}


def cells(choice: dict, lang: str, column: int) -> dict[str, str]:
    soup = BeautifulSoup(finder_table(choice, lang), "html.parser")
    rows = [row.select("th, td") for row in soup.select("#finder-table tbody tr")]
    return {found[0].get_text(): found[column].get_text().translate(SPACES) for found in rows}


def backings(choice: dict, option: str) -> dict[str, dict]:
    """Card name -> the backing the calculator gave its run (finder.json's shared list)."""
    answers = finder_answers()
    found = answers["results"][choice["model"]][choice["task"]][choice["cards"]][option]
    names = {g["key"]: g["name"] for g in answers["gpus"]}
    return {names[fit["gpu"]]: answers["backings"][fit["time"]["backing"]] for fit in found["fits"]}


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_range_from_other_classes_says_how_many_runs_it_reads(lang):
    shown, backing = cells(FULL_8_CARDS, lang, 4), backings(FULL_8_CARDS, FULL_8_CARDS["method"])
    widened = {card: b["runs"] for card, b in backing.items() if not b["exact"]}
    assert widened  # B200 and RTX PRO 6000: no published full fine-tuning on their families
    for card, runs in widened.items():
        assert shown[card].endswith(WIDENED[lang].format(runs=runs)), shown[card]
        assert "))" not in shown[card]


SERVE = {"model": "llama-3.1-8b", "task": "serve-bf16", "cards": "1", "context": "8192"}
PUBLISHED = {"it": "nelle misure pubblicate", "fr": "dans les mesures publiées"}
ESTIMATED = {
    "it": "con server di inferenza come vLLM, una stima da misure di altre classi: ",
    "fr": "avec des serveurs d’inférence comme vLLM, une estimation d’après des mesures d’autres classes : ",
}


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_decoding_range_from_other_classes_is_called_an_estimate(lang):
    """No published decoding run of the card's family: the range is not “in the published runs”."""
    answers = finder_answers()
    found = answers["results"][SERVE["model"]][SERVE["task"]][SERVE["cards"]][SERVE["context"]]
    names = {g["key"]: g["name"] for g in answers["gpus"]}
    exact = {names[fit["gpu"]]: answers["backings"][fit["decode"]["backing"]]["exact"] for fit in found["fits"]}
    assert set(exact.values()) == {True, False}  # A100: published vLLM runs; H100 and others: none
    for card, cell in cells(SERVE, lang, 4).items():
        assert (PUBLISHED[lang] in cell) == exact[card], cell
        assert (ESTIMATED[lang] in cell) != exact[card], cell


@pytest.mark.parametrize(
    "lang, one",
    [
        ("it", "intervallo ricavato da una sola misura di un’altra classe"),
        ("fr", "fourchette calculée sur une seule mesure d’une autre classe"),
    ],
)
def test_a_range_from_one_run_of_another_class_is_singular(lang, one):
    from hooks.finder.compute import load_catalogue
    from hooks.finder.page import backing_text

    said = backing_text(load_catalogue(), lang, {"family": "B200", "runs": 1, "on_card": 0, "exact": False})
    assert said.endswith(one) and "1" not in said


SOURCES = {"it": ("(una sola fonte)", "({n} fonti)"), "fr": ("(une seule source)", "({n} sources)")}


LORA_1_CARD = {"model": "llama-3.1-8b", "task": "lora", "cards": "1", "method": "ddp"}


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_time_backed_by_its_class_says_how_many_sources_its_runs_come_from(lang):
    """Runs of one source check nothing against another's: the cell says so. Oracle for the A100
    rows, read here from measurements.yaml with PyYAML: the sources with a run of that task on a
    card of the A100 family, on one machine, without offload, not excluded and not held out (a
    full fine-tune: vectorlm alone; LoRA: torchtune and vectorlm); every row's words follow its
    backing's count."""
    import yaml

    from tests.conftest import REPO_ROOT

    data = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "measurements.yaml").read_text(encoding="utf-8"))
    a100 = set(data["families"]["a100"]["cards"])
    held = {key for key, entry in data["sources"].items() if "collected_after" in entry}
    counts = set()
    for choice, task in ((FULL_8_CARDS, "full"), (LORA_1_CARD, "lora")):
        shown, backing = cells(choice, lang, 4), backings(choice, choice["method"])
        expected = {
            m["source"]
            for m in data["measurements"].values()
            if m["gpu"] in a100
            and m["task"] == task
            and m.get("nodes", 1) == 1
            and m.get("offload", "none") == "none"
            and not m.get("excluded")
            and m["source"] not in held
        }
        assert set(backing["A100 80GB"]["sources"]) == expected, task
        for card, b in backing.items():
            if not b["exact"]:
                continue
            one, many = SOURCES[lang]
            words = one if len(b["sources"]) == 1 else many.format(n=len(b["sources"]))
            assert shown[card].endswith(words + ")"), shown[card]
            counts.add(len(b["sources"]))
    assert counts == {1, 2}  # both wordings were read: one source and two


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_serving_table_says_how_far_its_realistic_range_held(lang):
    """Under a serving table, the server engines' validation (coverage, median width rounded up to
    a tenth, recomputed here from the checks); under a training table, not."""
    import math
    import statistics

    from babel.numbers import format_percent

    from hooks.data.measurements import measured_data, validation
    from vram.measurements import ENGINES, SERVER

    checks, _ = validation()
    measurements = measured_data().measurements
    chosen = [
        c
        for c in checks
        if not c.held_out
        and not c.scale_check
        and measurements[c.key].task == "serving"
        and ENGINES[measurements[c.key].engine] == SERVER
    ]
    coverage = format_percent(sum(c.covered for c in chosen) / len(chosen), locale=lang)
    width = str(math.ceil(statistics.median(c.predicted.high / c.predicted.low for c in chosen) * 10) / 10)
    words = {
        "it": f"contiene la misura nel {coverage} dei casi ed è largo in mediana {width.replace('.', ',')} volte",
        "fr": f"contient la mesure dans {coverage} des cas et elle est large en médiane de {width.replace('.', ',')} fois",
    }[lang].translate(SPACES)
    serving = BeautifulSoup(finder_table(SERVE, lang), "html.parser").select_one("#finder-note").get_text(" ")
    training = BeautifulSoup(finder_table(FULL_8_CARDS, lang), "html.parser").select_one("#finder-note").get_text(" ")
    assert words in serving.translate(SPACES)
    assert words not in training.translate(SPACES)
