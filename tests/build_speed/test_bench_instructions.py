"""The build ratio in instructions (bench/instructions.py): every process of a build counted,
and the budget judged on that count where there is one."""

from __future__ import annotations

import shutil

import pytest

from bench.instructions import _counted, callgrind_total
from bench.run import BUDGET, table


def test_the_total_adds_every_process_of_the_build(tmp_path):
    # callgrind's output format ends each file with its total: "summary:" (older) or "totals:"
    (tmp_path / "callgrind.out.101").write_text("events: Ir\nfl=a\nfn=main\n1 5\nsummary: 7000\n")
    (tmp_path / "callgrind.out.102").write_text("events: Ir\nfl=b\nfn=main\n1 5\ntotals: 500\n")
    (tmp_path / "valgrind.101.log").write_text("==101== I   refs:      7,000\n")  # not an output file
    assert callgrind_total(tmp_path) == 7500
    (tmp_path / "callgrind.out.103").write_text("events: Ir\nfl=c\n")  # a process that did not finish
    with pytest.raises(ValueError, match=r"callgrind\.out\.103"):
        callgrind_total(tmp_path)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_children_are_counted_and_valgrind_keeps_off_their_stderr(tmp_path):
    """A build's children (bash reading shell blocks) are counted, and valgrind's messages go to
    log files: on a child's stderr they would be that child's output, which bash's reader
    takes for a parse error."""
    # sh, and a child sh that writes to stderr (a program: sh would run a builtin in-process)
    process = _counted(
        ["sh", "-c", "sh -c 'echo err >&2'; echo out"], tmp_path, {"PATH": "/usr/bin:/bin"}, tmp_path / "out"
    )
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0 and err.strip() == "err"
    outputs = sorted((tmp_path / "out").glob("callgrind.out.*"))
    assert len(outputs) >= 2  # the shell and its child, each its own file
    assert callgrind_total(tmp_path / "out") > 0


def _figures(ratio: float, ir_ratio: float | None) -> dict:
    figures = {"full_s": 2.0, "plain_s": 1.5, "ratio": ratio, "ratio_range": (ratio - 0.2, ratio + 0.2)}
    if ir_ratio is not None:
        figures |= {"full_ir": int(9e9), "plain_ir": int(9e9 / ir_ratio), "ir_ratio": ir_ratio}
    return figures


def test_the_budget_goes_to_the_instruction_count_where_there_is_one():
    over, under = BUDGET["build_ratio"] + 0.2, BUDGET["build_ratio"] - 0.1
    rows = {row[0].split(" (")[0]: row for row in table(_figures(over, under))}
    assert rows["Build ratio, timed"][2:] == ("", "")  # shown, not judged
    assert rows["Build ratio in instructions, callgrind, children included"][2:] == (
        f"<= {BUDGET['build_ratio']}x",
        "ok",
    )
    rows = {row[0].split(" (")[0]: row for row in table(_figures(under, over))}
    assert rows["Build ratio in instructions, callgrind, children included"][3] == "OVER"
    rows = {row[0].split(" (")[0]: row for row in table(_figures(over, None))}  # no valgrind: the timed ratio is judged
    assert rows["Build ratio, timed"][3] == "OVER" and not any("instructions" in name for name in rows)
