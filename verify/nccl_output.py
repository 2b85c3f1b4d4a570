"""Read the lines ``nccl_check.py`` prints, one per rank, and check they are complete.

A line (one write per rank, see the snippet) looks like::

    rank 0/2 local_rank 0 cuda:0 host: 41.3 all-reduce/s of 1.07 GB, algbw 44.4 GB/s, busbw 44.4 GB/s, sum 3 correct

With one rank nothing crosses a link, so no bus bandwidth is claimed (nccl-tests'
factor 2(n-1)/n is 0)::

    rank 0/1 local_rank 0 cuda:0 host: 1234.5 all-reduce/s of 1.07 GB, algbw 1325.5 GB/s, no busbw (1 rank: nothing crosses a link), sum 1 correct

``RankLine.busbw_gb_per_s`` is then None. Units: GB = 10**9 bytes; ``algbw`` is the
tensor's bytes / time, ``busbw`` = algbw * 2(n-1)/n (nccl-tests, doc/PERFORMANCE.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NO_BUSBW = "no busbw (1 rank: nothing crosses a link)"
NUMBER = r"\d+(?:\.\d+)?"  # as the snippet prints it: float() reads every match
LINE_RE = re.compile(
    r"rank (?P<rank>\d+)/(?P<world>\d+) local_rank (?P<local_rank>\d+) (?P<device>\S+) (?P<host>\S+): "
    rf"(?P<rate>{NUMBER}) all-reduce/s of (?P<gb>{NUMBER}) GB, algbw (?P<algbw>{NUMBER}) GB/s, "
    rf"(?:busbw (?P<busbw>{NUMBER}) GB/s|(?P<no_busbw>{re.escape(NO_BUSBW)})), sum (?P<sum>\d+) correct"
)


class OutputError(ValueError):
    """A rank's line is missing, duplicated or mangled."""


@dataclass(frozen=True)
class RankLine:
    rank: int
    world: int
    local_rank: int
    device: str
    host: str
    allreduce_per_s: float
    algbw_gb_per_s: float
    busbw_gb_per_s: float | None  # None for a one-rank run
    checked_sum: int


def parse_rank_lines(stdout: str) -> list[RankLine]:
    """The ranks' lines, sorted by rank. Raises OutputError.

    Every line mentioning ``all-reduce/s`` must be exactly one rank's line (an
    interleaved or cut line fails), every rank 0..n-1 must appear once, the checked
    sum must be n(n+1)/2, and a busbw must be given exactly when n > 1.
    """
    lines = []
    for text in stdout.splitlines():
        if "all-reduce/s" not in text and not text.startswith("rank "):
            continue
        match = LINE_RE.fullmatch(text.strip())
        if match is None:
            raise OutputError(f"not one intact rank line: {text!r}")
        g = match.groupdict()
        busbw = None if g["busbw"] is None else float(g["busbw"])
        lines.append(
            RankLine(
                int(g["rank"]),
                int(g["world"]),
                int(g["local_rank"]),
                g["device"],
                g["host"],
                float(g["rate"]),
                float(g["algbw"]),
                busbw,
                int(g["sum"]),
            )
        )
    if not lines:
        raise OutputError("no rank line in the output")
    worlds = {line.world for line in lines}
    if len(worlds) != 1:
        raise OutputError(f"ranks disagree on the world size: {sorted(worlds)}")
    world = worlds.pop()
    ranks = sorted(line.rank for line in lines)
    if ranks != list(range(world)):
        raise OutputError(f"expected one line for each rank 0..{world - 1}, got ranks {ranks}")
    if any(line.checked_sum != world * (world + 1) // 2 for line in lines):
        raise OutputError(f"a rank reports a sum other than {world * (world + 1) // 2}")
    if world == 1 and lines[0].busbw_gb_per_s is not None:
        raise OutputError("a one-rank run claims a busbw: nothing crossed a link")
    if world > 1 and any(line.busbw_gb_per_s is None for line in lines):
        raise OutputError(f"a rank of {world} gives no busbw")
    return sorted(lines, key=lambda line: line.rank)


def slowest(lines: list[RankLine]) -> RankLine:
    """The rank with the fewest all-reduces per second (what a training step waits for)."""
    return min(lines, key=lambda line: line.allreduce_per_s)
