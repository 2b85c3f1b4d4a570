"""The formulas page's plot: every published run's predicted range against its measured value.

One point per measurement of ``measurements.yaml`` that is not excluded: on the x axis what the
source measured, on the y axis the range ``vram.calibration.leave_one_source_out`` predicted
without that source (a vertical segment), log scales, a colour per card (named in the legend),
round markers for training on one machine, triangles for decoding, hollow squares for the
scale checks (several machines), diamonds for the runs of the sources held out of the
calibration (``vram.calibration.group_of``: ``holdout``), the diagonal where prediction = measurement. The page lists
the same points in words under the image (``hooks/render/calibration.py``).
Drawn with matplotlib (Agg) once per language; the PNG is kept in ``.cache/calibration`` under
the SHA-256 of what it is drawn from (the data folder, ``vram/``, this module, the language's
words and matplotlib's version), so a build whose data did not change reads the file instead
of importing matplotlib. A publication build draws it afresh (``store=None``).
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from hooks.cache import Memo, hash_files, package_versions, tree_digest, tree_stamp
from hooks.data import load as data_module
from hooks.data.load import load_model, load_yaml
from hooks.data.measurements import measured_data, validation

STORE_DIR = data_module.REPO_ROOT / ".cache" / "calibration"
PLOT_DIR = "assets/calibration"
_memo = Memo()


def plot_uri(lang: str) -> str:
    """The plot's path in the site, as the page links it (relative to ``docs/``)."""
    return f"{PLOT_DIR}/plot-{lang}.png"


def inputs_digest(lang: str) -> str:
    """SHA-256 (hex) of what the plot of ``lang`` is drawn from."""
    digest = hashlib.sha256(f"calibration plot\0{lang}\0".encode())
    for part in package_versions(("matplotlib", "numpy")):
        digest.update(part.encode() + b"\0")
    digest.update(tree_digest(data_module.DATA_DIR).encode() + b"\0")  # every data file
    root = data_module.REPO_ROOT
    hash_files(digest, [*(root / "vram").glob("*.py"), Path(__file__)], root)
    return digest.hexdigest()


def plot_png(lang: str, store: Path | None = STORE_DIR) -> bytes:
    """The plot of ``lang`` as PNG bytes, from ``store`` when an unchanged input drew it before."""
    return _memo.get((lang, store), tree_stamp(data_module.DATA_DIR), lambda: _stored_or_drawn(lang, store))


def _stored_or_drawn(lang: str, store: Path | None) -> bytes:
    stored = store / f"{inputs_digest(lang)}.png" if store is not None else None
    if stored is not None and stored.is_file():
        return stored.read_bytes()
    png = draw(lang)
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        for old in sorted(stored.parent.glob("*.png"), key=lambda p: p.stat().st_mtime)[:-7]:
            old.unlink(missing_ok=True)  # a few kept: both languages, and a branch switched back to
        stored.write_bytes(png)
    return png


CARD_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
)
# hollow for the scale checks; diamonds for the runs of the held-out sources (vram.calibration.group_of)
KIND_MARKERS = {"training": "o", "serving": "^", "serving_local": "v", "scale": "s", "holdout": "D"}


def card_order(checks: list, families: dict) -> list[str]:
    """The measured cards in the legend's order: by family (measurements.yaml), then by key."""
    family_of = {card: family for family, entry in families.items() for card in entry["cards"]}
    order = list(families)
    return sorted({c.gpu for c in checks}, key=lambda card: (order.index(family_of[card]), card))


def draw(lang: str) -> bytes:
    """Draw the plot of ``lang`` (module docstring) and return its PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vram.calibration import group_of

    texts = load_model("timing").calibration.plot
    families = load_yaml("measurements")["families"]
    measured = measured_data()
    checks, _ = validation()
    cards = card_order(checks, families)
    if len(cards) > len(CARD_COLOURS):
        raise ValueError(f"the plot has {len(CARD_COLOURS)} colours for {len(cards)} measured cards: add colours")
    colours = dict(zip(cards, CARD_COLOURS, strict=False))
    figure, axes = plt.subplots(figsize=(9.6, 5.6), dpi=100)
    for check in checks:
        colour, group = colours[check.gpu], group_of(check, measured.measurements)
        axes.plot(
            [check.measured, check.measured],
            [check.predicted.low, check.predicted.high],
            color=colour,
            linewidth=2,
            alpha=0.8,
        )
        axes.plot(
            [check.measured],
            [check.predicted.middle],
            marker=KIND_MARKERS[group],
            markersize=5,
            color=colour,
            markerfacecolor="white" if group == "scale" else colour,
            linestyle="none",
        )
    for card in cards:  # the legend: one filled marker per card, by its name
        axes.plot([], [], marker="o", color=colours[card], linestyle="none", label=measured.cards[card].name)
    values = [v for c in checks for v in (c.measured, c.predicted.low, c.predicted.high)]
    low, high = min(values) / 1.5, max(values) * 1.5
    axes.plot([low, high], [low, high], color="#444444", linewidth=1, linestyle="--", label=texts["same"][lang])
    axes.plot([], [], marker="^", color="#444444", linestyle="none", label=texts["serving"][lang])
    axes.plot([], [], marker="v", color="#444444", linestyle="none", label=texts["serving_local"][lang])
    axes.plot(
        [], [], marker="s", markerfacecolor="white", color="#444444", linestyle="none", label=texts["scale"][lang]
    )
    if any(group_of(c, measured.measurements) == "holdout" for c in checks):
        axes.plot([], [], marker="D", color="#444444", linestyle="none", label=texts["holdout"][lang])
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)
    axes.set_xlabel(texts["measured"][lang])
    axes.set_ylabel(texts["predicted"][lang])
    axes.grid(True, which="major", linewidth=0.4, alpha=0.5)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, borderaxespad=0)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", metadata={"Software": None})
    plt.close(figure)
    return out.getvalue()
