"""Words a native reader of both languages corrected (a new reader's report), read where the
page renders them: the price fields' labels, the note on where the times come from, the
decoding cell and the formulas page's plot axis."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from hooks.finder.page import finder_form, finder_table

SPACES = str.maketrans({"\u00a0": " ", "\u202f": " "})


def test_no_french_price_label_leaves_de_unelided_before_a_card_name():
    """“Machine équipée de A100” wants “d’A100”; the label reads “Machine avec GPU A100 80GB”
    instead, for every card of the catalogue, whatever letter its name starts with."""
    soup = BeautifulSoup(finder_form({"assets": "../../assets"}, "fr"), "html.parser")
    labels = [label.get_text() for label in soup.select('label[for^="finder-price_"]')]
    assert len(labels) > 5 and any(re.search(r"\bA100\b", label) for label in labels)
    for label in labels:
        assert not re.search(r"\bde [AEIOUHaeiouh0-9]", label), label  # no "de A100", "de H100"
        assert label.startswith("Machine avec GPU "), label


@pytest.mark.parametrize(
    "lang, said, not_said",
    [
        ("fr", "Durées et coûts sont des estimations, et non des mesures de notre part : ", "pas nos mesures"),
        ("it", "Tempi e costi sono stime, non misure nostre: ", None),
    ],
)
def test_the_time_note_says_the_estimates_are_not_ours_natively(lang, said, not_said):
    note = BeautifulSoup(finder_table({}, lang), "html.parser").select_one("#finder-note").get_text()
    note = note.translate(SPACES)
    assert said in note and (not_said is None or not_said not in note)


@pytest.mark.parametrize("lang, total, not_said", [("it", " in totale", " in tutto"), ("fr", " au total", " en tout")])
def test_decoding_totals_and_the_plot_axis_say_in_total(lang, total, not_said, monkeypatch):
    """A rate summed over the sequences is “in totale” / “au total”, in the finder's decoding
    cell and on the x axis of the formulas page's plot."""
    import matplotlib.axes

    from hooks.finder.compute import load_catalogue
    from hooks.finder.page import decode_text
    from hooks.render.calibration_plot import draw

    # four sequences decoded together (the form's "Sequenze servite insieme"): 50 each, 200 in all
    cell = decode_text(load_catalogue(), lang, {"tokens_per_s_per_sequence_at_most": 50, "tokens_per_s_at_most": 200})
    assert f"200 token/s{total}" in cell.translate(SPACES).replace("tokens/s", "token/s") and not_said not in cell
    labels: list[str] = []
    real = matplotlib.axes.Axes.set_xlabel
    monkeypatch.setattr(
        matplotlib.axes.Axes, "set_xlabel", lambda self, text, *a, **k: labels.append(text) or real(self, text, *a, **k)
    )
    draw(lang)
    assert len(labels) == 1 and labels[0].endswith(total.strip() + ")") and not_said not in labels[0]
