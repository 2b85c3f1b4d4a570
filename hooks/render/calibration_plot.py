"""The formulas page's plot: every published run's predicted range against its measured value.

One point per measurement of ``measurements.yaml`` that is not excluded: on the x axis what the
source measured, on the y axis the range ``vram.calibration.leave_one_source_out`` predicted
without that source (a vertical segment), log scales, a colour per card family, hollow
markers for the scale checks (several machines), the diagonal where prediction = measurement.
Drawn with matplotlib (Agg) once per language; the PNG is kept in ``.cache/calibration`` under
the SHA-256 of what it is drawn from (the data folder, ``vram/``, this module, the language's
words and matplotlib's version), so a build whose data did not change reads the file instead
of importing matplotlib. A publication build draws it afresh (``store=None``).
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from hooks.cache import Memo, hash_files, package_versions, tree_stamp
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
    folder = data_module.DATA_DIR
    hash_files(digest, folder.rglob("*"), folder)
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


def draw(lang: str) -> bytes:
    """Draw the plot of ``lang`` (module docstring) and return its PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    texts = load_model("timing").calibration.plot
    families = load_yaml("measurements")["families"]
    measured = measured_data()
    checks, _ = validation()
    colours = dict(zip(families, ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02")))
    figure, axes = plt.subplots(figsize=(7.2, 5.4), dpi=100)
    shown_families = []
    for check in checks:
        family = measured.calibration.families[check.gpu]
        colour = colours[family]
        axes.plot([check.measured, check.measured], [check.predicted.low, check.predicted.high], color=colour,
                  linewidth=2, alpha=0.8)
        axes.plot([check.measured], [check.predicted.middle], marker="o", markersize=4,
                  color=colour, markerfacecolor="white" if check.scale_check else colour, linestyle="none")
        if family not in shown_families:
            shown_families.append(family)
    for family in shown_families:  # the legend: one filled marker per family
        axes.plot([], [], marker="o", color=colours[family], linestyle="none", label=families[family]["name"])
    values = [v for c in checks for v in (c.measured, c.predicted.low, c.predicted.high)]
    low, high = min(values) / 1.5, max(values) * 1.5
    axes.plot([low, high], [low, high], color="#444444", linewidth=1, linestyle="--", label=texts["same"][lang])
    axes.plot([], [], marker="o", markerfacecolor="white", color="#444444", linestyle="none", label=texts["scale"][lang])
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)
    axes.set_xlabel(texts["measured"][lang])
    axes.set_ylabel(texts["predicted"][lang])
    axes.grid(True, which="major", linewidth=0.4, alpha=0.5)
    axes.legend(loc="upper left", fontsize=8, frameon=False)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", metadata={"Software": None})
    plt.close(figure)
    return out.getvalue()
