"""The ranking line warns when its first machine's time rests on no published run of its own
class (``answer_job``'s backing with ``exact`` false: the range comes from other classes' runs),
read on the frozen test catalogue: each machine is made the cheapest in turn by the prices typed,
and the sentence is there exactly when that machine's backing is not exact."""

from __future__ import annotations

import pytest

import vram
from hooks.finder.compute import job, load_catalogue
from hooks.finder.page import _label, ranking_text
from hooks.render.locale_format import format_number


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_first_machine_without_runs_of_its_class_is_named(lang):
    catalogue = load_catalogue()
    reference = job(catalogue, "llama-3.1-8b", "full-adamw", 8, "zero3")
    fits = vram.answer_job(reference)["fits"]
    names = {key: gpu["name"] for key, gpu in catalogue.gpus}
    seen = set()
    for cheapest in fits:
        prices = {fit["gpu"]: "1" if fit is cheapest else "999" for fit in fits}
        answer = vram.answer_job({**reference, "prices": prices})
        assert answer["run"]["ranked_by"] == "cost" and answer["run"]["order"][0] == cheapest["gpu"]
        exact = cheapest["time"]["backing"]["exact"]
        sentence = _label(catalogue, "ranked_first_unbacked", lang, gpu=names[cheapest["gpu"]])
        assert (sentence in ranking_text(catalogue, lang, answer, 8)) is not exact, cheapest["gpu"]
        seen.add(exact)
    assert seen == {True, False}  # both cases met: the test can fail either way


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_one_machine_alone_gets_no_such_sentence(lang):
    """Nothing is ranked when one machine fits: its line names it alone, without the warning."""
    catalogue = load_catalogue()
    reference = job(catalogue, "llama-3.1-8b", "full-adamw", 8, "zero3")
    unbacked = next(fit for fit in vram.answer_job(reference)["fits"] if not fit["time"]["backing"]["exact"])
    answer = vram.answer_job({**reference, "gpus": [g for g in reference["gpus"] if g["key"] == unbacked["gpu"]]})
    assert answer["run"]["order"] == [unbacked["gpu"]]
    label = "ranked_one_unpriced" if answer["run"].get("unpriced") else "ranked_one"
    tokens = format_number(answer["run"]["tokens"], lang, 0)
    name = dict(catalogue.gpus)[unbacked["gpu"]]["name"]
    assert ranking_text(catalogue, lang, answer, 8) == _label(catalogue, label, lang, tokens=tokens, order=name)
