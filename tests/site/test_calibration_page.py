"""The formulas page's "how good are these estimates" and the finder's note, as built (the
session's one build, tests/conftest.py): the figures are the validation's, the plot is there
with a text alternative in each language, every source is a link to its commit."""

from __future__ import annotations

import pytest
from babel.numbers import format_percent
from bs4 import BeautifulSoup

from hooks.data.measurements import validation

PAGES = {"it": "memory-formulas/index.html", "fr": "fr/memory-formulas/index.html"}


def _section(site, lang):
    soup = BeautifulSoup((site / PAGES[lang]).read_text(encoding="utf-8"), "html.parser")
    heading = soup.find(id="how-good")
    parts = []
    for element in heading.find_all_next():
        if element.name == "h2":
            break
        parts.append(element)
    return heading, parts


@pytest.mark.parametrize("lang", PAGES)
def test_the_section_shows_the_validation_and_the_plot(built_site, lang):
    _heading, parts = _section(built_site, lang)
    text = " ".join(" ".join(p.get_text(" ").split()) for p in parts if p.name in ("p", "table"))
    _, figures = validation()

    def spaced(value: str) -> str:  # typography binds numbers and units with no-break spaces
        return value.replace("\u202f", " ").replace("\u00a0", " ")

    assert spaced(format_percent(figures["training"].coverage, locale=lang)) in spaced(text)
    images = [p for p in parts if p.name == "img"]
    assert len(images) == 1 and len(images[0]["alt"]) > 80
    plot = (built_site / PAGES[lang]).parent / images[0]["src"]
    assert plot.resolve().is_file() and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    link = images[0].find_parent("a")  # at full size: on a phone the page shrinks it (a new reader's report)
    assert link is not None and link["href"] == images[0]["src"]
    links = [a["href"] for p in parts for a in p.find_all("a") if "/blob/" in a.get("href", "")]
    assert len(links) >= 10 and all(href.startswith("https://github.com/") for href in links)


@pytest.mark.parametrize("lang, path", [("it", "gpu-finder/index.html"), ("fr", "fr/gpu-finder/index.html")])
def test_the_finder_says_which_runs_back_each_time(built_site, lang, path):
    soup = BeautifulSoup((built_site / path).read_text(encoding="utf-8"), "html.parser")
    cells = [" ".join(td.get_text(" ").split()) for td in soup.select("#finder-table td")]
    words = {
        "it": ("misure pubblicate", "nessuna misura pubblicata"),
        "fr": ("mesures publiées", "aucune mesure publiée"),
    }
    assert cells and any(any(w in cell for w in words[lang]) for cell in cells)


@pytest.mark.parametrize("lang", PAGES)
def test_the_plot_points_are_listed_in_words_one_row_per_run(built_site, lang):
    """The plot's text alternative in full: under the image, a row per predicted run with its
    card, and whether it lies inside its range as leave-one-source-out decided; every card the
    plot colours is named (the legend is by card, hooks/render/calibration_plot.py)."""
    from hooks.data.load import load_yaml
    from hooks.data.measurements import measured_data
    from hooks.render.calibration_plot import card_order

    soup = BeautifulSoup((built_site / PAGES[lang]).read_text(encoding="utf-8"), "html.parser")
    rows = soup.select("details.calibration-points tbody tr")
    checks, _ = validation()
    measured = measured_data()
    assert len(rows) == len(checks)
    words = {"it": ("sì", "no"), "fr": ("oui", "non")}[lang]
    for row, check in zip(rows, checks, strict=True):
        cells = [" ".join(td.get_text(" ").split()) for td in row.find_all("td")]
        assert cells[0] == check.key and cells[1] == measured.cards[check.gpu].name
        assert cells[4] == words[0 if check.covered else 1]
    named = {" ".join(td.get_text(" ").split()) for row in rows for td in row.find_all("td")[1:2]}
    assert named == {measured.cards[card].name for card in card_order(checks, load_yaml("measurements")["families"])}


HOLDOUT_ROW = {
    "it": "Fonti raccolte dopo aver fissato la regola",
    "fr": "Sources recueillies après que la règle a été figée",
}


@pytest.mark.parametrize("lang", PAGES)
def test_the_held_out_sources_have_their_row_and_their_ratios(built_site, lang):
    """The sources collected after a rule was frozen (measurements.yaml ``holdout``,
    ``collected_after``): their own row, with the holdout group's figures recomputed here from the
    checks, and for each round (after R2, after R3) the sentences that say how many fell inside and
    how much slower than their ranges' low ends, or faster than their high ends, the others ran.
    The words name which sources ran slower and which faster in each round, that IBM's
    fms-acceleration runs fell inside but one, and R3's figures: the data must still say so."""
    import math
    import statistics

    from hooks.data.load import load_yaml
    from hooks.data.measurements import measured_data
    from hooks.render.locale_format import format_number
    from vram.calibration import group_of

    def spaced(value: str) -> str:
        return value.replace("\u202f", " ").replace("\u00a0", " ")

    _heading, parts = _section(built_site, lang)
    checks, _ = validation()
    measurements = measured_data().measurements
    held = [c for c in checks if group_of(c, measurements) == "holdout"]
    data = load_yaml("measurements")  # the held-out entries counted from the file itself, not from vram
    held_sources = {key for key, entry in data["sources"].items() if entry.get("holdout")}
    assert len(held) == sum(m["source"] in held_sources for m in data["measurements"].values())
    inside = sum(c.covered for c in held)
    rows = [
        [spaced(" ".join(td.get_text(" ").split())) for td in tr.find_all("td")]
        for p in parts
        if p.name == "table"
        for tr in p.select("tbody tr")
    ]
    (row,) = [r for r in rows if r[0].startswith(HOLDOUT_ROW[lang])]
    coverage = inside / len(held)
    width = statistics.median(c.predicted.high / c.predicted.low for c in held)
    assert row[1] == str(len(held)) and row[2] == spaced(format_percent(coverage, locale=lang))
    assert row[3].rstrip("× ") == format_number(math.ceil(width * 10) / 10, lang, 1)

    def outwards(ratios):
        return (
            format_number(math.floor(min(ratios) * 100) / 100, lang, 2),
            format_number(math.ceil(max(ratios) * 100) / 100, lang, 2),
        )

    text = spaced(" ".join(" ".join(p.get_text(" ").split()) for p in parts if p.name == "p"))
    named = {  # the sources the words name on each side, round by round
        "R2": (
            {"universal-llm-trainer-2025", "dgxc-hf-peft-fsdp-2024", "torchao-mx-b200-2025"},
            {"dgxc-nemo-llama31-2024", "flagperf-llama3-8b-megatron-2024"},
        ),
        "R3": (
            {
                "optimum-benchmark-llamas-2023",
                "optimum-benchmark-llamas-2023-08",
                "fms-acceleration-a100-2025",
                "torchtune-flags-a100-2024",
            },
            {"olmo-core-h100-2025"},
        ),
    }
    for after, (slower_named, faster_named) in named.items():
        chosen = [c for c in held if measurements[c.key].collected_after == after]
        slower = [c for c in chosen if c.measured < c.predicted.low]
        faster = [c for c in chosen if c.measured > c.predicted.high]
        assert ({c.source for c in slower}, {c.source for c in faster}) == (slower_named, faster_named), after
        inside_now = sum(c.covered for c in chosen)
        below = outwards([c.measured / c.predicted.low for c in slower])
        above = outwards([c.measured / c.predicted.high for c in faster])
        sources = len({c.source for c in chosen})
        words = {
            "it": (
                f"{len(chosen)} misure di {sources} fonti",
                f"l’intervallo ne contiene {inside_now}",
                (f"ne contiene {inside_now}; " if after == "R2" else "Delle altre, ")
                + f"{len(slower)} sono più lente dell’estremo basso",
                f"da {below[0]} a {below[1]} volte il suo valore",
                f"{len(faster)} sono più rapide dell’estremo alto, da {above[0]} a {above[1]} volte",
            ),
            "fr": (
                f"{len(chosen)} mesures de {sources} sources",
                f"la fourchette en contient {inside_now}",
                (f"en contient {inside_now} ; " if after == "R2" else "Parmi les autres, ")
                + f"{len(slower)} sont plus lentes que la borne basse",
                f"en atteignent de {below[0]} à {below[1]} fois la valeur",
                f"{len(faster)}",
            ),
        }[lang]
        assert all(w in text for w in words), (after, [w for w in words if w not in text])
        if after == "R3":  # "one of fms-acceleration and one of torchtune" among the slower; all but one inside
            fms = [c for c in chosen if c.source == "fms-acceleration-a100-2025"]
            assert sum(c.covered for c in fms) == len(fms) - 1
            assert [c.source for c in slower].count("fms-acceleration-a100-2025") == 1
            assert [c.source for c in slower].count("torchtune-flags-a100-2024") == 1
    _, loop_figures = validation(rule_name="R3")
    r3 = {
        "it": (
            f"contiene la misura nel {spaced(format_percent(loop_figures['training'].coverage, locale=lang))} dei casi",
            f"con intervalli larghi in mediana {format_number(math.ceil(loop_figures['training'].median_width * 10) / 10, lang, 1)} volte",
        ),
        "fr": (
            f"elle contient la mesure dans {spaced(format_percent(loop_figures['training'].coverage, locale=lang))} des cas",
            f"larges en médiane de {format_number(math.ceil(loop_figures['training'].median_width * 10) / 10, lang, 1)} fois",
        ),
    }[lang]
    assert all(w in text for w in r3), [w for w in r3 if w not in text]
    assert loop_figures["training"].median_width > 10  # "an interval so wide is no answer": the words' premise
    slower = [c for c in held if c.measured < c.predicted.low]
    faster = [c for c in held if c.measured > c.predicted.high]
    assert inside + len(slower) + len(faster) == len(held)
    overall = {  # the formulas page's sentence on both rounds: the misses on each side, not "not all on one side"
        "it": f"ne cadono {inside} su {len(held)}; delle altre, {len(slower)} sono più lente del previsto e "
        f"{len(faster)} più rapide",
        "fr": f"Il en tombe {inside} sur {len(held)} dans leur fourchette ; parmi les autres, {len(slower)} sont "
        f"plus lentes que prévu et {len(faster)} plus rapides",
    }[lang]
    assert overall in text
    home = {"it": "index.html", "fr": "fr/index.html"}[lang]
    said = spaced(
        " ".join(BeautifulSoup((built_site / home).read_text(encoding="utf-8"), "html.parser").get_text(" ").split())
    )
    clause = {
        "it": f"sulle {len(held_sources)} fonti raccolte dopo che la regola era stata fissata ne contiene {inside} su "
        f"{len(held)}: {len(slower)} più lente del previsto, {len(faster)} più rapide",
        "fr": f"sur les {len(held_sources)} sources recueillies après que la règle a été figée, elle en contient {inside} "
        f"sur {len(held)} : {len(slower)} plus lentes que prévu, {len(faster)} plus rapides",
    }
    assert clause[lang] in said  # the home page's clause: the same parts, the same figures


@pytest.mark.parametrize(
    "lang, heading",
    [
        ("it", "Intervallo di utilizzo ricavato dalle misure (training: "),
        ("fr", "Fourchette d’utilisation d’après les mesures (entraînement : "),
    ],
)
def test_the_class_tables_share_column_is_called_a_range_from_the_runs(lang, heading):
    """Each cell of the column is a range the rule computes from a class's runs (class_range: its
    lowest and highest share, or the sources' centre x/÷ their dispersion), not a measured value:
    the heading says so."""
    import math

    from hooks.data.measurements import measured_data
    from hooks.render.calibration import calibration_table
    from vram.calibration import class_table

    soup = BeautifulSoup(calibration_table({"name": "calibration"}, lang), "html.parser")
    header = soup.select("thead th")[3].get_text()
    assert header.startswith(heading) and "misurato" not in header and "mesurée" not in header
    first = class_table(measured_data().calibration.points)[0]
    low, high = math.floor(first.low * 100), math.ceil(first.high * 100)
    cell = soup.select("tbody tr")[0].select("td")[3]
    assert low < high and cell["data-label"] == header  # on a phone, the card shows the same name
    assert cell.get_text().startswith(str(low)) and str(high) in cell.get_text()  # a range: low to high


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_class_tables_data_labels_are_typeset_like_their_headings(lang):
    """On a phone each row is a card whose labels come from ``data-label``: typeset by the same
    rule set as the ``<th>`` it repeats (French: a no-break space before “:” and “;”, never a
    plain one that lets the colon start a line)."""
    from hooks.render.markdown import render_markdown
    from hooks.render.typography import typeset_html

    html = render_markdown("{{ table name=calibration }}", lang)
    soup = BeautifulSoup(typeset_html(f'<html lang="{lang}"><body>{html}</body></html>', lang), "html.parser")
    headings = [th.get_text() for th in soup.select("thead th")]
    rows = soup.select("tbody tr")
    assert rows and all([td["data-label"] for td in row.select("td")] == headings for row in rows)
    share = headings[3]
    assert (" :" not in share and " ;" not in share) if lang == "fr" else ": " in share
    assert lang == "it" or (("\u00a0:" in share or "\u202f:" in share) and ("\u202f;" in share or "\u00a0;" in share))


@pytest.mark.parametrize("lang", PAGES)
def test_the_page_says_how_many_entries_are_kept_out_and_of_how_many(built_site, lang):
    """The 126 entries the calibration's text counts include those kept out at or above the
    plausible share of the peak (measurements.yaml ``excluded``); the validation rows count the
    others. The page says how many, counted here from the data file itself."""
    import yaml

    from tests.conftest import REPO_ROOT

    raw = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "measurements.yaml").read_text(encoding="utf-8"))
    held = {key for key, source in raw["sources"].items() if source.get("holdout")}
    entries = [m for m in raw["measurements"].values() if m["source"] not in held]
    excluded = sum("excluded" in m for m in entries)
    assert excluded > 0
    text = " ".join(
        BeautifulSoup((built_site / PAGES[lang]).read_text(encoding="utf-8"), "html.parser").get_text(" ").split()
    )
    said = {"it": f"({excluded} delle {len(entries)})", "fr": f"({excluded} des {len(entries)})"}[lang]
    assert said in text.replace("\u202f", " ").replace("\u00a0", " ")


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            {"part": "inside", "group": "training", "after": "R3"},
            "after=R3: the name of a rule (R0, R1, R2, R3), with group=holdout",
        ),
        ({"part": "inside", "group": "holdout", "after": "R9"}, "after=R9: the name of a rule"),
        (
            {"part": "inside", "group": "holdout", "after": "R1"},
            "after=R1: no run of group=holdout was collected after that rule",
        ),
    ],
)
def test_a_round_of_held_out_sources_must_exist(raw, message):
    """``after`` picks one round of held-out sources; a round no source was collected in, or a
    group that is not the held-out one, is one line, not an empty figure."""
    from hooks.errors import RenderError
    from hooks.render.calibration import calibration

    with pytest.raises(RenderError) as info:
        calibration(raw, "it")
    assert str(info.value).startswith(message)


def test_one_round_adds_up_to_the_held_out_group():
    """The two rounds' runs, inside counts and sides add up to the whole held-out group."""
    from hooks.render.calibration import calibration

    def count(part, **extra):
        return int(calibration({"part": part, "group": "holdout", **extra}, "it").replace(".", ""))

    for part in ("runs", "inside", "slower", "faster", "measurements"):
        assert count(part) == count(part, after="R2") + count(part, after="R3"), part


@pytest.mark.parametrize("rule", ["R0", "R1", "R2", "R3"])
def test_the_counts_of_the_data_are_the_named_rules(rule):
    """``part=measurements``, ``sources`` and ``excluded`` count the data as the rule named reads
    it: a rule holds out the sources collected after it or a later rule was frozen (R3 reads the
    sources collected after R2). Oracle: the YAML file read with PyYAML and the order in which the
    rules were frozen (the project's history, typed here)."""
    import yaml

    from hooks.render.calibration import calibration
    from tests.conftest import REPO_ROOT

    order = ("R0", "R1", "R2", "R3")
    data = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "measurements.yaml").read_text(encoding="utf-8"))
    held = {
        key
        for key, entry in data["sources"].items()
        if "collected_after" in entry and order.index(rule) <= order.index(entry["collected_after"])
    }
    entries = data["measurements"].values()

    def count(part, group="training"):
        return int(calibration({"part": part, "group": group, "rule": rule}, "it").replace(".", ""))

    assert count("measurements", "holdout") == sum(e["source"] in held for e in entries)
    assert count("sources", "holdout") == len({e["source"] for e in entries} & held)
    assert count("measurements") == sum(e["source"] not in held for e in entries)
    assert count("sources") == len({e["source"] for e in entries} - held)
    assert count("excluded") == sum("excluded" in e and e["source"] not in held for e in entries)


@pytest.mark.parametrize("part", ["measurements", "sources", "excluded", "spread", "single_source", "coverage"])
def test_an_unknown_rule_is_an_error_whatever_the_part(part):
    """A figure of a rule that does not exist is one line, never the site's rule's figure."""
    from hooks.errors import RenderError
    from hooks.render.calibration import calibration

    with pytest.raises(RenderError, match=r"^rule=R9 is not one of R0, R1, R2, R3"):
        calibration({"part": part, "rule": "R9"}, "it")


PROSE = {  # what the formulas page says of the held-out runs and of R3, in both languages
    "fms": (
        "sequenze impacchettate da 4.096 token, su una o due A100",
        "séquences empaquetées de 4 096 tokens, sur une ou deux A100",
    ),
    "optimum": (
        "con esempi di 256 token, pochi per ogni step",
        "avec des exemples de 256 tokens, peu nombreux à chaque étape",
    ),
    "olmo": ("OLMo-core di AllenAI su otto H100", "OLMo-core, d’AllenAI, sur huit H100"),
    "b200": (
        "una scheda su cui la calibrazione non ha misure",
        "une carte sur laquelle la calibration n’a aucune mesure",
    ),
    "r3": (
        "le fonti costruite su transformers non concordano tra loro più di quanto concordino con le altre",
        "les sources bâties sur transformers ne s’accordent pas mieux entre elles qu’avec les autres",
    ),
}


def test_the_held_out_and_r3_paragraphs_say_what_the_data_holds():
    """The facts the prose states about the held-out runs and R3, read from the data: IBM's
    fms-acceleration runs packed 4,096-token sequences on one or two A100; optimum-benchmark's
    256-token examples, a few (at most 16) per step; OLMo-core's runs on eight H100; no run of the
    site's calibration on the B200 torchtitan's power-limited run used; and under R3, the runs on
    transformers' code reach both a lower and a higher share of the peak than any run on a
    framework's own code (the model code does not order the runs: transformers-code sources
    disagree among themselves at least as much as with the others)."""
    from hooks.data.measurements import measured_data
    from tests.conftest import REPO_ROOT
    from vram.calibration import LOOP_RULE, calibration_points

    for lang in ("it", "fr"):
        text = (REPO_ROOT / "docs" / f"memory-formulas.{lang}.md").read_text(encoding="utf-8")
        said = [words[lang == "fr"] for words in PROSE.values()]
        assert all(w in text for w in said), [w for w in said if w not in text]
    measured = measured_data()
    runs = measured.measurements.values()
    fms = [m for m in runs if m.source == "fms-acceleration-a100-2025"]
    assert {m.seq_len for m in fms} == {4096} and {m.count for m in fms} == {1, 2}
    assert {measured.calibration.families[m.gpu] for m in fms} == {"a100"}
    optimum = [m for m in runs if m.source.startswith("optimum-benchmark-llamas")]
    assert {m.seq_len for m in optimum} == {256} and max(m.micro_batch for m in optimum) <= 16
    olmo = [m for m in runs if m.source == "olmo-core-h100-2025"]
    assert {(m.gpu, m.count) for m in olmo} == {("h100", 8)}
    b200 = [m for m in runs if m.source == "torchao-mx-b200-2025"]
    assert {m.gpu for m in b200} == {"b200"}
    assert not [p for p in measured.calibration.points if p.family == measured.calibration.families["b200"]]
    read = calibration_points(measured.points, measured.measurements, measured.link_shares, LOOP_RULE)
    shares = {
        code: [p.share for p in read if p.arch != "serving" and p.code == code] for code in ("transformers", "own")
    }
    assert min(shares["transformers"]) < min(shares["own"]) and max(shares["own"]) < max(shares["transformers"])


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_single_source_classes_of_r3_name_their_model_code(lang):
    """``part=single_source rule=R3``: R3's training classes have a model code, and the words say
    which (snippets/data/timing.yaml's ``transformers`` and ``own``, read here with PyYAML); the
    site's rule (R2) has none, and its words name no code."""
    import yaml

    from hooks.render.calibration import calibration
    from tests.conftest import REPO_ROOT

    words = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "timing.yaml").read_text(encoding="utf-8"))
    words = words["calibration"]["words"]
    codes = {words[code][lang] for code in ("transformers", "own")}
    separator = words["list_separator"][lang]
    r3 = calibration({"part": "single_source", "rule": "R3"}, lang).split(separator)
    assert r3 and all(any(item.endswith(", " + code) for code in codes) for item in r3), r3
    assert {code for code in codes if any(item.endswith(code) for item in r3)} == codes  # both codes have one
    r2 = calibration({"part": "single_source"}, lang)
    assert not any(code in r2 for code in codes)


def test_an_excluded_run_of_a_held_out_source_counts_for_the_rules_that_read_it(tmp_path, monkeypatch):
    """``part=excluded`` counts the entries a rule reads that are kept out with a reason: an
    entry of a source collected after R2 marked excluded (in a copy of the data) is not among
    R2's (R2 never reads that source) and is among R3's (R3 reads it)."""
    import shutil

    import hooks.data.load
    from hooks.render.calibration import calibration
    from tests.conftest import REPO_ROOT

    def count(rule):
        return int(calibration({"part": "excluded", "rule": rule}, "it"))

    before = {rule: count(rule) for rule in ("R2", "R3")}
    folder = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "snippets" / "data", folder)
    path = folder / "measurements.yaml"
    entry = "  ult-8b-full-a100:\n    source: universal-llm-trainer-2025\n"  # collected after R2
    text = path.read_text(encoding="utf-8")
    assert entry in text
    path.write_text(text.replace(entry, entry + "    excluded: a test's copy\n", 1), encoding="utf-8")
    monkeypatch.setattr(hooks.data.load, "DATA_DIR", folder)
    assert {rule: count(rule) for rule in ("R2", "R3")} == {"R2": before["R2"], "R3": before["R3"] + 1}


def test_a_held_out_run_is_predicted_from_the_sources_the_rule_reads_not_the_other_held_out_ones():
    """The page says each held-out run is predicted from every source the rule reads, the other
    held-out sources left out (not "every other source"): the range behind each held-out run of
    the site's rule comes from sources none of which is held out (measurements.yaml ``holdout``,
    read with PyYAML)."""
    import yaml

    from tests.conftest import REPO_ROOT

    said = {
        "it": "prevista dalla calibrazione di tutte le fonti che la regola legge, le altre tenute da parte escluse",
        "fr": "prévue par la calibration de toutes les sources que la règle lit, sans les autres sources mises de côté",
    }
    for lang, words in said.items():
        assert words in (REPO_ROOT / "docs" / f"memory-formulas.{lang}.md").read_text(encoding="utf-8")
    data = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "measurements.yaml").read_text(encoding="utf-8"))
    held = {key for key, entry in data["sources"].items() if "holdout" in entry}
    checks, _ = validation()
    backed = [c for c in checks if c.held_out]
    assert backed and all(not set(c.backing.sources) & held for c in backed)


@pytest.mark.parametrize(
    "raw", [{"group": "holdout", "after": "R3"}, {"group": "serving"}], ids=["a round of held-out", "decoding"]
)
def test_the_excluded_count_refuses_a_group_it_does_not_count(raw):
    """``part=excluded`` counts the excluded entries of the data the rule reads, whatever their
    task: a group (or a round of held-out sources) it would silently not apply is one line."""
    from hooks.errors import RenderError
    from hooks.render.calibration import calibration

    with pytest.raises(RenderError, match=r"^part=excluded counts the data the rule reads"):
        calibration({"part": "excluded", **raw}, "it")
