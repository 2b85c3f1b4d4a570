"""The build ratio counted in instructions: the same two builds as the timed ratio (the
strict build with our hooks and notebooks, the plain one of bench/plain.py), each run once
under Valgrind's callgrind, which counts the instructions every process executes, the
build's children (bash reading shell blocks, git) included.

Why a second measure of the same ratio: on a shared 2-core machine the time of one build
swings by a fifth from run to run while nothing else runs (2026-12-02, an idle machine,
about 1 % CPU steal: single pairs of builds from 1.04x to 1.76x, medians of 6 to 15 pairs
from 1.29x to 1.45x), so a timed ratio near its budget passes or fails by chance. An
instruction count does not depend on what the machine's neighbours do: the same binary,
inputs and environment give the same count, which is why rustc's weekly performance triage
reads instructions (``instructions:u``, the triage logs of https://github.com/rust-lang/rustc-perf). It
counts user-space instructions only: it misses the kernel's work (system calls, page faults)
and what instructions do not show (waiting on a disk, a larger memory footprint), so both
figures are printed; the budget applies to this one.

Needs ``valgrind`` (Debian's package); without it the measure is skipped and the timed
ratio carries the budget.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOTAL_RE = re.compile(r"^(?:summary|totals):\s+(\d+)", re.MULTILINE)  # callgrind's output format, first event (Ir)


def callgrind_total(folder: Path) -> int:
    """The instructions counted in every callgrind output file of ``folder`` (one per process).
    Raises ValueError for a file without its total (a process that did not finish)."""
    total = 0
    for path in sorted(folder.glob("callgrind.out.*")):
        match = TOTAL_RE.search(path.read_text(encoding="utf-8", errors="replace"))
        if match is None:
            raise ValueError(f"{path.name}: no 'summary:' or 'totals:' line (the process did not finish?)")
        total += int(match.group(1))
    if total == 0:
        raise ValueError(f"{folder}: no callgrind output")
    return total


def _counted(cmd: list[str], cwd: Path, env: dict[str, str], out: Path) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    # Valgrind's own messages go to files: on a child's stderr they would be the child's output
    # (bash reading a shell block reports a problem there)
    return subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--trace-children=yes",
            f"--log-file={out}/valgrind.%p.log",
            f"--callgrind-out-file={out}/callgrind.out.%p",
            *cmd,
        ],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def instruction_ratio(repo: Path, plain_config: Path, env: dict[str, str], timeout_s: float = 1800) -> dict:
    """``{"full_ir", "plain_ir", "ir_ratio"}`` of one strict build of ``repo`` and one plain
    build of ``plain_config``, run side by side (one process each; the count does not depend on
    it), or ``{}`` without valgrind. Each is built once without valgrind first, with ``env``,
    so that neither count includes what a warm checkout does not do again (executing the
    notebooks, compiling the checkout's bytecode). Raises SystemExit naming a build that failed."""
    if shutil.which("valgrind") is None:
        return {}
    with tempfile.TemporaryDirectory(prefix="bench-ir-") as tmp:
        work = Path(tmp)
        for cmd, cwd in (
            ([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(work / "warm-full")], repo),
            (
                [sys.executable, "-m", "mkdocs", "build", "-f", str(plain_config), "-d", str(work / "warm-plain")],
                plain_config.parent,
            ),
        ):
            warm = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
            if warm.returncode != 0:
                raise SystemExit(f"build failed ({' '.join(cmd)}):\n{warm.stderr[-3000:]}")
        builds = {
            "full": _counted(
                [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(work / "site-full")],
                repo,
                env,
                work / "full",
            ),
            "plain": _counted(
                [sys.executable, "-m", "mkdocs", "build", "-f", str(plain_config), "-d", str(work / "site-plain")],
                plain_config.parent,
                env,
                work / "plain",
            ),
        }
        for name, process in builds.items():
            _, err = process.communicate(timeout=timeout_s)
            if process.returncode != 0:
                raise SystemExit(f"the {name} build under callgrind failed:\n{err[-3000:]}")
        full, plain = callgrind_total(work / "full"), callgrind_total(work / "plain")
    return {"full_ir": full, "plain_ir": plain, "ir_ratio": full / plain}


if __name__ == "__main__":  # python -m bench.instructions: the two counts alone (about 2 minutes)
    from bench.common import ENV, REPO
    from bench.plain import make_plain_copy

    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        found = instruction_ratio(REPO, make_plain_copy(REPO, Path(tmp) / "plain-src"), ENV)
    if not found:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    print(
        f"full {found['full_ir'] / 1e9:.2f} G, plain {found['plain_ir'] / 1e9:.2f} G instructions: "
        f"ratio {found['ir_ratio']:.3f}x"
    )
