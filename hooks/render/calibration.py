"""The formulas page's "how good are these estimates": the validation figures, the class table,
the sources and the plot, from ``vram.calibration`` (the code the times come from).

- ``{{ calibration part=coverage|width|runs group=training|serving|serving_local|scale|holdout rule=R2|R1|R0|R3
  after=R2|R3 }}``
  -> ``66%``, ``1,7``, ``35``: leave-one-source-out figures (``vram.calibration.validation_figures``)
  of the site's rule (default, ``vram.calibration.RULE``) or of another (``holdout``: the
  runs of the sources held out of the calibration, predicted from all the others; with
  ``after``, only those of the sources collected after that rule was frozen: one round);
  ``part=verdict`` whether both targets are met (``raggiunto``/``non raggiunto``);
  ``part=inside`` how many of the group's runs lie inside their range, ``part=slower`` how many
  below its low end, ``part=faster`` how many above its high end; ``part=measured_low_min`` and
  ``part=measured_low_max`` the smallest and largest measured ÷ predicted low end of the group's
  runs below their range (``vram.calibration.Check.measured_over_low``), ``part=measured_high_min``
  and ``part=measured_high_max`` the same of measured ÷ predicted high end for the runs above it
  (to two decimals, rounded outwards; a group with no such run is an error);
  ``part=spread group=training|serving`` the dispersion of sources that sets the ranges
  (``vram.calibration.dispersion``), ``part=single_source group=training|serving`` the classes
  whose runs all come from one source, in words, ``part=measurements``
  and ``part=sources`` how many entries and sources the data holds besides the held-out sources
  (with ``group=holdout``: the held-out ones), ``part=target_coverage``
  and ``part=target_width`` the targets, ``part=compute_bound`` the share of a step above which
  communication and offload make a run a check only, ``part=excluded`` how many of the
  calibration's entries are kept out with a reason (``excluded``: an implied share at or above
  ``part=implausible``), ``part=implausible`` the share of the peak
  at or above which an entry stays only marked excluded (``vram.measurements.IMPLAUSIBLE_SHARE``).
  Every part that reads the data reads it as ``rule`` does (which sources it holds out, which
  points it calibrates on); an unknown rule is an error.
- ``{{ table name=calibration }}``: every class with published runs and its range.
- ``{{ calibration_sources }}``: the sources as links (repository, file and commit).
- ``{{ calibration_plot }}``: the plot (``hooks/render/calibration_plot.py``) with its text
  alternative; the image itself is written by the build (``plot_files``).
"""

from __future__ import annotations

import math
import re
from datetime import date

from babel.dates import format_date
from babel.numbers import format_percent

from hooks.data.load import label, load_model, load_yaml
from hooks.data.measurements import measured_data, validation
from hooks.errors import RenderError
from hooks.render.locale_format import format_number
from hooks.render.markdown_table import markdown_table
from hooks.render.placeholders import Args
from vram.calibration import (
    ANY,
    COMPUTE_BOUND,
    COVERAGE_TARGET,
    RULE,
    RULES,
    WIDTH_TARGET,
    ClassRange,
    Figures,
    calibration_points,
    class_table,
    coverage,
    dispersion,
    group_of,
    held_out,
    median_width,
)
from vram.measurements import IMPLAUSIBLE_SHARE, Measurement

PLOT_DIR = "assets/calibration"
PARTS = (
    "coverage",
    "width",
    "runs",
    "verdict",
    "spread",
    "measurements",
    "sources",
    "target_coverage",
    "target_width",
    "compute_bound",
    "single_source",
    "implausible",
    "excluded",
    "inside",
    "measured_low_min",
    "measured_low_max",
    "slower",
    "faster",
    "measured_high_min",
    "measured_high_max",
)
SIDE_PARTS = {  # part -> (which runs: below their range's low end or above its high end, the ratio, outwards)
    "measured_low_min": ("slower", "low", math.floor),
    "measured_low_max": ("slower", "low", math.ceil),
    "measured_high_min": ("faster", "high", math.floor),
    "measured_high_max": ("faster", "high", math.ceil),
}
GITHUB_BLOB = re.compile(r"^https://github\.com/([^/]+/[^/]+)/blob/([0-9a-f]{7,40})/(.+)$")


def _texts():
    return load_model("timing").calibration


def _word(key: str, lang: str) -> str:
    return label(_texts().words, key, lang, "snippets/data/timing.yaml: calibration.words")


def percent(value: float, lang: str) -> str:
    """A share as the page writes it (Babel: ``66%``, ``66 %``)."""
    return format_percent(value, locale=lang)


def times(value: float, lang: str) -> str:
    """A ratio such as a range's width, to one decimal, rounded up (never narrower than computed)."""
    return format_number(math.ceil(value * 10) / 10, lang, 1)


def calibration(raw: dict[str, str], lang: str) -> str:
    args = Args(raw, {"part", "group", "rule", "after"})
    part = args.str("part")
    if part not in PARTS:
        raise RenderError(f"part={part} is not one of {', '.join(PARTS)}")
    if part == "target_coverage":
        return percent(COVERAGE_TARGET, lang)
    if part == "target_width":
        return format_number(WIDTH_TARGET, lang, 1)
    if part == "compute_bound":
        return percent(COMPUTE_BOUND, lang)
    if part == "implausible":
        return percent(IMPLAUSIBLE_SHARE, lang)
    measured = measured_data()
    group = args.str("group", "training")
    rules = {rule.name: rule for rule in RULES}
    rule = rules.get(args.str("rule", RULE.name))  # every part that reads the data reads it as this rule does
    if rule is None:
        raise RenderError(f"rule={args.str('rule')} is not one of {', '.join(rules)}")
    read = calibration_points(measured.points, measured.measurements, measured.link_shares, rule)
    after = args.str("after", "")  # group=holdout: only the sources collected after that rule was frozen
    if after and (group != "holdout" or after not in rules):
        raise RenderError(f"after={after}: the name of a rule ({', '.join(r.name for r in RULES)}), with group=holdout")

    def this_round(m: Measurement) -> bool:
        return not after or m.collected_after == after

    if part == "spread":
        if group not in ("training", "serving"):
            raise RenderError(f"group={group} is not one of training, serving")
        return times(dispersion(read, group == "serving"), lang)
    if part == "single_source":  # classes leave-one-source-out can only predict from a nearer class
        if group not in ("training", "serving"):
            raise RenderError(f"group={group} is not one of training, serving")
        alone = [
            ", ".join(words[:1] + words[2:] if group == "serving" else words)  # the group already says decoding
            for found in class_table(read, rule)
            if len(found.sources) == 1 and (found.key[1] == "serving") == (group == "serving")
            for words in [class_words(found, lang)]
        ]
        return _word("list_separator", lang).join(alone)
    if part == "excluded":  # entries of the calibration's data kept out with their reason
        if group != "training" or after:
            raise RenderError(f"part=excluded counts the data the rule reads, every task: no group={group} or after")
        return format_number(
            sum(bool(m.excluded) and not held_out(m, rule) for m in measured.measurements.values()), lang, 0
        )
    if part in ("measurements", "sources"):  # the data the calibration reads from, or (holdout) the held-out data
        if group not in ("training", "holdout"):
            raise RenderError(f"group={group} is not one of training, holdout (for part={part})")
        held = group == "holdout"
        chosen_runs = [m for m in measured.measurements.values() if held_out(m, rule) == held and this_round(m)]
        if part == "measurements":
            return format_number(len(chosen_runs), lang, 0)
        return format_number(len({m.source for m in chosen_runs}), lang, 0)
    checks, figures = validation(rule_name=rule.name)
    if group not in figures:
        raise RenderError(f"group={group} is not one of {', '.join(figures)}")
    chosen = [
        c for c in checks if group_of(c, measured.measurements) == group and this_round(measured.measurements[c.key])
    ]
    if not chosen:
        raise RenderError(f"after={after}: no run of group={group} was collected after that rule")
    found = Figures(len(chosen), coverage(chosen), median_width(chosen)) if after else figures[group]
    if part in ("inside", "slower", "faster", *SIDE_PARTS):
        sides = {
            "slower": [c for c in chosen if c.measured < c.predicted.low],
            "faster": [c for c in chosen if c.measured > c.predicted.high],
        }
        if part == "inside":
            return format_number(sum(c.covered for c in chosen), lang, 0)
        if part in sides:
            return format_number(len(sides[part]), lang, 0)
        side, end, outwards = SIDE_PARTS[part]
        ratios = [c.measured / (c.predicted.low if end == "low" else c.predicted.high) for c in sides[side]]
        if not ratios:
            raise RenderError(
                f"part={part}: no run of group={group} lies {'below' if side == 'slower' else 'above'} its range"
            )
        value = min(ratios) if outwards is math.floor else max(ratios)
        return format_number(outwards(value * 100) / 100, lang, 2)
    if part == "coverage":
        return percent(found.coverage, lang)
    if part == "width":
        return times(found.median_width, lang)
    if part == "verdict":  # whether the group meets both targets together
        return _word("met" if found.meets_targets else "missed", lang)
    return format_number(found.runs, lang, 0)


def class_words(found: ClassRange, lang: str) -> list[str]:
    """The class of a range in words: family, kind of model, task (with its offload or weights, and
    the model code under a rule that reads it)."""
    family, arch, task, last, code = found.key
    names = load_yaml("measurements")["families"]
    if arch == "serving":
        regime = _word(last, lang)
        return [names[family]["name"], _word("serving", lang), f"{_word('bits', lang).format(bits=task)}, {regime}"]
    shown = _word(task, lang) + (f", {_word('offload', lang)}" if last == "offload" else "")
    shown += f", {_word(code, lang)}" if code != ANY else ""
    return [names[family]["name"], _word(arch, lang), shown]


def calibration_table(raw: dict[str, str], lang: str) -> str:
    """``{{ table name=calibration }}``: every class with published runs (one machine, not
    excluded, mostly compute: ``vram.calibration.RULE``), its range of shares, how many runs and
    which sources."""
    Args(raw, {"name"})
    texts = _texts()
    where = "snippets/data/timing.yaml: calibration.columns"
    header = [label(texts.columns, c, lang, where) for c in ("family", "kind", "task", "share", "runs", "sources")]
    body = []
    for found in class_table(measured_data().calibration.points):
        low, high = math.floor(found.low * 100), math.ceil(found.high * 100)
        share = load_model("units").range[lang].format(low=format_number(low, lang, 0), high=percent(high / 100, lang))
        body.append(
            [
                *class_words(found, lang),
                share,
                format_number(found.runs, lang, 0),
                ", ".join(f"`{s}`" for s in found.sources),
            ]
        )
    return markdown_table(header, body)


def source_link(entry: dict[str, str], lang: str) -> str:
    """A source as a Markdown link: the repository, file and commit of its URL, or for a page
    outside git (``read``) the page's address and the day it was read."""
    url = entry["url"]
    found = GITHUB_BLOB.match(url)
    if found:
        repo, commit, path = found.groups()
        return f"[`{repo}` `{path}` @ `{commit[:7]}`]({url})"
    if not entry.get("read"):
        raise RenderError(f"snippets/data/measurements.yaml: source {url!r} is not a GitHub file at a commit")
    day = format_date(date.fromisoformat(str(entry["read"])), format="long", locale=lang)
    return f"[`{url.removeprefix('https://')}`]({url}), " + _word("read", lang).format(date=day)


def calibration_sources(raw: dict[str, str], lang: str) -> str:
    """``{{ calibration_sources }}``: a list of the sources (the link, then the key the table names)."""
    Args(raw, set())
    sources = load_yaml("measurements")["sources"]
    return "\n".join(f"- {source_link(entry, lang)} (`{key}`)" for key, entry in sources.items())


def calibration_plot(raw: dict[str, str], lang: str) -> str:
    """``{{ calibration_plot }}``: the plot as a Markdown image with its text alternative, a link
    to itself (at full size: on a phone the page shrinks it)
    (the runs, the training coverage and the median width, and where sources are held out how many
    of their runs lie inside, in ``lang``), then every point in
    words: a table in a collapsed ``<details>`` (run, card, what was measured, the range
    predicted without its source, whether it lies inside), the text a reader without the image
    reads."""
    from hooks.render.calibration_plot import plot_uri

    Args(raw, set())
    checks, figures = validation()
    training = figures["training"]
    runs = sum(f.runs for f in figures.values())
    plot = _texts().plot
    where = "snippets/data/timing.yaml: calibration.plot"
    alt = label(plot, "alt", lang, where).format(
        runs=format_number(runs, lang, 0),
        coverage=percent(training.coverage, lang),
        width=times(training.median_width, lang),
    )
    measured = measured_data()
    if "holdout" in figures:  # the plot's diamonds (hooks/render/calibration_plot.py)
        held = [c for c in checks if group_of(c, measured.measurements) == "holdout"]
        alt += " " + label(plot, "alt_holdout", lang, where).format(
            runs=format_number(len(held), lang, 0), inside=format_number(sum(c.covered for c in held), lang, 0)
        )
    header = [
        label(plot, key, lang, where) for key in ("col_run", "col_card", "col_measured", "col_predicted", "col_inside")
    ]
    units = load_model("units").range[lang]
    rows = []
    for check in checks:
        low, high = check.predicted.low, check.predicted.high
        decimals = 0 if low >= 100 else 1
        predicted = units.format(
            low=format_number(math.floor(low * 10**decimals) / 10**decimals, lang, decimals),
            high=format_number(math.ceil(high * 10**decimals) / 10**decimals, lang, decimals),
        )
        rows.append(
            [
                f"`{check.key}`",
                measured.cards[check.gpu].name,
                format_number(check.measured, lang, 1),
                predicted,
                label(plot, "inside" if check.covered else "outside", lang, where),
            ]
        )
    table = markdown_table(header, rows)
    summary = label(plot, "points", lang, where).format(runs=format_number(len(checks), lang, 0))
    return (
        f"[![{alt}]({plot_uri(lang)})]({plot_uri(lang)})\n\n<details class=\"calibration-points\" markdown=\"1\">\n"
        f"<summary>{summary}</summary>\n\n{table}\n\n</details>"
    )


CALIBRATION = {
    "calibration": calibration,
    "calibration_sources": calibration_sources,
    "calibration_plot": calibration_plot,
}
