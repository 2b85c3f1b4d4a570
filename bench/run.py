"""Performance budget of the site (issue 6). Figures, not tests: printed as a table and
written to bench/results.md.

    python -m bench.run                  # everything (about 5 to 10 minutes on 2 cores)
    python -m bench.run --skip-tests     # without timing the test suite

1. Build: ``mkdocs build --strict`` of both languages (hooks, notebooks from their
   cache, warmed by one build first) against a plain build of the same Markdown without
   our hooks and notebooks (bench/plain.py), in turns; the timed ratio is the median of the
   eleven pairs' ratios. The same two builds counted in instructions under callgrind
   (bench/instructions.py: a figure the machine's neighbours do not move; timed pairs swing
   by a fifth on a shared machine). Target: ratio <= 1.3, in instructions where valgrind is
   installed, else timed.
2. Live edit: seconds from saving one page to ``mkdocs serve`` serving it (bench/serve.py).
   Target: < 2 s.
3. Guide page weight and requests in Chromium, gzip as served (bench/weight.py).
   Target: <= 300 KB and <= 15 requests. The notebook pages: <= 200 KB before images
   (their plots are image files, lazy below the first).
4. The test suite's wall time (``make test`` in a subprocess). Target: < 5 min on 2 cores.
6. How good the time estimates are (bench/calibration.py): leave-one-source-out coverage and
   median width against the published runs of snippets/data/measurements.yaml. Reported, not a
   gate (target: coverage >= 80 % with a median width <= 1.5x).
5. The finder (bench/finder.py): its pages before the first interaction (weighed as 3., no
   Python: <= 300 KB), the first answer the calculator computes in the browser after a cold
   start of Pyodide (<= 2 s on an idle machine) and the later ones (<= 200 ms), with the
   machine's load average; what its first use downloads up to that answer, as GitHub Pages serves
   it: gzip where it compresses, the packed .zst files as they are (<= 4 MB).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if str(Path(__file__).resolve().parent.parent) not in sys.path:  # python bench/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ENV, REPO, render
from bench.instructions import instruction_ratio
from bench.plain import make_plain_copy
from verify.languages import DEFAULT_LANGUAGE, LANGUAGES

BUDGET = {
    "build_ratio": 1.3,
    "rebuild_s": 2.0,
    "page_kb": 300,
    "requests": 15,
    "suite_s": 300,
    "finder_first_s": 2.0,
    "finder_later_ms": 200,
    "notebook_kb": 200,
    "finder_first_use_mb": 4.0,
}


def timed(cmd: list[str], cwd: Path, timeout: float = 1800) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout, check=False)
    return time.perf_counter() - start, result


def build_times(config: Path | None, dest: Path, repeat: int, strict: bool) -> list[float]:
    cmd = [sys.executable, "-m", "mkdocs", "build", "-d", str(dest)] + (["--strict"] if strict else [])
    if config is not None:
        cmd += ["-f", str(config)]
    times = []
    for _ in range(repeat):
        seconds, result = timed(cmd, config.parent if config else REPO)
        if result.returncode != 0:
            raise SystemExit(f"build failed ({' '.join(cmd)}):\n{result.stderr[-3000:]}")
        times.append(seconds)
    return times


def bench_build(work: Path, repeat: int, instructions: bool = True) -> dict:
    """Full and plain builds in turns, so that a slower spell of the machine weighs on both:
    the ratio is the median of the ratios of each full build to the plain build after it.
    With ``instructions``, the two builds counted under callgrind too (bench/instructions.py)."""
    plain_config = make_plain_copy(REPO, work / "plain-src")
    build_times(None, work / "full", 1, strict=True)  # warm-up: fills the notebook cache
    build_times(plain_config, work / "plain", 1, strict=False)
    full, plain = [], []
    for _ in range(repeat):
        full += build_times(None, work / "full", 1, strict=True)
        plain += build_times(plain_config, work / "plain", 1, strict=False)
    ratios = [f / p for f, p in zip(full, plain, strict=True)]
    figures = {
        "full_s": statistics.median(full),
        "plain_s": statistics.median(plain),
        "ratio": statistics.median(ratios),
        "ratio_range": (min(ratios), max(ratios)),
        "site": work / "full",
    }
    if instructions:
        print("counting the instructions of both builds (callgrind, about 2 minutes)...", flush=True)
        figures.update(instruction_ratio(REPO, plain_config, ENV))
    return figures


def bench_rebuild(work: Path, edits: int) -> dict:
    from bench.serve import rebuild_seconds

    times = rebuild_seconds(REPO, work, edits=edits)
    return {"rebuild_s": statistics.median(times), "rebuild_all": times}


ROOTS = ["" if lang == DEFAULT_LANGUAGE else f"{lang}/" for lang in LANGUAGES]  # each language's root
GUIDE_PAGES = [
    root + page for page in ("", "gpu-finder/") for root in ROOTS
]  # the finder's: before the first interaction
NOTEBOOK_PAGES = [root + "memory-notebook/" for root in ROOTS]  # budget: before images (plots are lazy files)
INFO_PAGES: list[str] = []


def bench_weight(site: Path) -> dict:
    from bench.finder import finder_timings
    from bench.weight import page_weights

    return {
        "weights": page_weights(site, GUIDE_PAGES + NOTEBOOK_PAGES + INFO_PAGES),
        **finder_timings(site),
        "load_average": os.getloadavg()[0],
    }


def bench_suite(pytest_args: list[str]) -> dict:
    """Wall time of the README's test command, ``make test`` (extra pytest arguments via PYTEST_ADDOPTS)."""
    env_args = " ".join(["-q", "-p", "no:cacheprovider", *pytest_args])
    seconds, result = timed(
        ["env", f"PYTEST_ADDOPTS={env_args}", "make", "--no-print-directory", "test"], REPO, timeout=3600
    )
    lines = result.stdout.strip().splitlines() or ["?"]
    failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    for line in failed:  # which test failed, on the console: a timed run is not rerun to find it
        print(line, file=sys.stderr)
    return {"suite_s": seconds, "suite_summary": lines[-1], "suite_rc": result.returncode}


def verdict(ok: bool) -> str:
    return "ok" if ok else "OVER"


def table(figures: dict) -> list[tuple[str, str, str, str]]:
    rows = []
    if "ratio" in figures:
        rows.append(("Build, strict, both languages (median)", f"{figures['full_s']:.1f} s", "", ""))
        rows.append(("Plain build, same Markdown, no hooks/notebooks", f"{figures['plain_s']:.1f} s", "", ""))
        low, high = figures["ratio_range"]
        counted = "ir_ratio" in figures  # the budget goes to the instruction count where there is one
        rows.append(
            (
                f"Build ratio, timed (median of the pairs' ratios, {low:.2f}x to {high:.2f}x)",
                f"{figures['ratio']:.2f}x",
                "" if counted else f"<= {BUDGET['build_ratio']}x",
                "" if counted else verdict(figures["ratio"] <= BUDGET["build_ratio"]),
            )
        )
        if counted:
            rows.append(
                (
                    (
                        f"Build ratio in instructions, callgrind, children included ({figures['full_ir'] / 1e9:.2f} G "
                        f"/ {figures['plain_ir'] / 1e9:.2f} G)"
                    ),
                    f"{figures['ir_ratio']:.2f}x",
                    f"<= {BUDGET['build_ratio']}x",
                    verdict(figures["ir_ratio"] <= BUDGET["build_ratio"]),
                )
            )
    if "rebuild_s" in figures:
        each = ", ".join(f"{t:.1f}" for t in figures["rebuild_all"])
        rows.append(
            (
                f"Rebuild after one edit, mkdocs serve (median of {each} s)",
                f"{figures['rebuild_s']:.1f} s",
                f"< {BUDGET['rebuild_s']:.0f} s",
                verdict(figures["rebuild_s"] < BUDGET["rebuild_s"]),
            )
        )
    for weight in figures.get("weights", []):
        name = f"/{weight.page}" if weight.page else "/"
        parts = ", ".join(f"{kind} {size / 1000:.0f}" for kind, size in sorted(weight.bytes_by_kind.items()))
        guide = weight.page in GUIDE_PAGES
        if weight.page in NOTEBOOK_PAGES:
            before_images = weight.total - weight.bytes_by_kind.get("images", 0)
            rows.append(
                (
                    f"Notebook page {name}: weight before images, gzip ({parts} KB)",
                    f"{before_images / 1000:.0f} KB",
                    f"<= {BUDGET['notebook_kb']} KB",
                    verdict(before_images / 1000 <= BUDGET["notebook_kb"]),
                )
            )
            rows.append(
                (f"Notebook page {name}: requests", str(weight.requests), "", "" if not weight.outside else "OVER")
            )
            continue
        label = "Guide page" if guide else "Page (no budget)"
        rows.append(
            (
                f"{label} {name}: weight, gzip ({parts} KB)",
                f"{weight.total / 1000:.0f} KB",
                f"<= {BUDGET['page_kb']} KB" if guide else "",
                verdict(weight.total / 1000 <= BUDGET["page_kb"]) if guide else "",
            )
        )
        outside = f" ({len(weight.outside)} outside the site!)" if weight.outside else ""
        rows.append(
            (
                f"{label} {name}: requests{outside}",
                str(weight.requests),
                f"<= {BUDGET['requests']}" if guide else "",
                verdict(weight.requests <= BUDGET["requests"] and not weight.outside)
                if guide
                else ("" if not weight.outside else "OVER"),
            )
        )
    if "finder_first_s" in figures:
        load = f"load average {figures['load_average']:.1f} on {os.cpu_count()} CPUs"
        rows.append(
            (
                f"Finder: first answer computed in the browser, Pyodide cold ({load})",
                f"{figures['finder_first_s']:.1f} s",
                f"<= {BUDGET['finder_first_s']:.0f} s",
                verdict(figures["finder_first_s"] <= BUDGET["finder_first_s"]),
            )
        )
        boot = figures.get("finder_boot_ms") or {}
        if boot:  # what the cold start spends its time on, cumulative from the worker's start
            rows.append(
                (
                    "Finder: the worker's cold start, of which Pyodide / + vram.zip.zst unpacked / + vram.job imported",
                    (
                        f"{boot['pyodide_ms'] / 1000:.1f} / {boot['archive_ms'] / 1000:.1f} / "
                        f"{boot['import_ms'] / 1000:.1f} s"
                    ),
                    "",
                    "",
                )
            )
        first_use = figures.get("finder_first_use") or {}
        if first_use:  # the page, its form's data and the calculator, up to the first answer it computes
            total = sum(first_use.values()) / 1e6
            runtime = sum(size for path, size in first_use.items() if path.startswith("assets/pyodide/")) / 1e6
            largest = ", ".join(
                f"{path.rsplit('/', 1)[-1]} {size / 1e6:.2f}"
                for path, size in sorted(first_use.items(), key=lambda item: -item[1])[:5]
            )
            rows.append(
                (
                    (
                        f"Finder: first use as served (gzip, .zst as is), up to the first computed answer ({len(first_use)} files; "
                        f"Pyodide's runtime alone {runtime:.2f} MB; largest: {largest} MB)"
                    ),
                    f"{total:.2f} MB",
                    f"<= {BUDGET['finder_first_use_mb']:.0f} MB",
                    verdict(total <= BUDGET["finder_first_use_mb"]),
                )
            )
        rows.append(
            (
                (
                    "Finder: first answer for a reader typing a length (worker started on entering the field; "
                    "from the last key)"
                ),
                f"{figures['finder_typed_s']:.1f} s",
                f"<= {BUDGET['finder_first_s']:.0f} s",
                verdict(figures["finder_typed_s"] <= BUDGET["finder_first_s"]),
            )
        )
        each = ", ".join(f"{t:.0f}" for t in figures["finder_later_all"])
        rows.append(
            (
                f"Finder: later answers (median of {each} ms)",
                f"{figures['finder_later_ms']:.0f} ms",
                f"<= {BUDGET['finder_later_ms']} ms",
                verdict(figures["finder_later_ms"] <= BUDGET["finder_later_ms"]),
            )
        )
    if "suite_s" in figures:
        rows.append(
            (
                f"Test suite, pytest ({figures['suite_summary']})",
                f"{figures['suite_s'] / 60:.1f} min",
                f"< {BUDGET['suite_s'] / 60:.0f} min",
                verdict(figures["suite_s"] < BUDGET["suite_s"] and figures["suite_rc"] == 0),
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=11, help="pairs of full and plain builds timed (median of their ratios)"
    )
    parser.add_argument("--skip-instructions", action="store_true", help="without counting instructions (valgrind)")
    parser.add_argument("--edits", type=int, default=3, help="page edits timed under mkdocs serve")
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--skip-weight", action="store_true", help="without Chromium")
    parser.add_argument("--skip-tests", action="store_true", help="do not time the test suite")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments for the timed make test")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results.md")
    args = parser.parse_args(argv)

    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        work = Path(tmp)
        print("building (warm-up, then full and plain builds)...", flush=True)
        figures.update(bench_build(work, args.repeat, instructions=not args.skip_instructions))
        if not args.skip_weight:
            print("weighing the guide page in Chromium...", flush=True)
            figures.update(bench_weight(figures["site"]))
        if not args.skip_serve:
            print("timing rebuilds under mkdocs serve...", flush=True)
            figures.update(bench_rebuild(work, args.edits))
    if not args.skip_tests:
        print("timing the test suite...", flush=True)
        figures.update(bench_suite(args.pytest_args.split()))

    rows = table(figures)
    from bench.calibration import rows as calibration_rows  # figures of the estimates, not of speed

    accuracy = calibration_rows()
    print()
    print(render(rows + accuracy, markdown=False))
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    args.output.write_text(
        f"# Performance budget\n\nMeasured {datetime.datetime.now(datetime.UTC).date().isoformat()} on {machine} by "
        f"`python -m bench.run` (bench/run.py).\n\n{render(rows, markdown=True)}\n",
        encoding="utf-8",
    )
    from bench.calibration import write_section

    write_section(args.output, render(accuracy, markdown=True))
    print(f"\nwritten to {args.output.relative_to(REPO) if args.output.is_relative_to(REPO) else args.output}")
    return 0 if all(row[3] in ("", "ok") for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
