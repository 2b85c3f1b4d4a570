"""Read the lines ``nccl_check.py`` prints, one per rank, and check they are complete.

A line (one write per rank, see the snippet) looks like::

    rank 0/2 local_rank 0 cuda:0 host: 41.3 all-reduce/s of 1.07 GB, algbw 44.4 GB/s, busbw 44.4 GB/s, sum 3 correct
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LINE_RE = re.compile(
    r"rank (?P<rank>\d+)/(?P<world>\d+) local_rank (?P<local_rank>\d+) (?P<device>\S+) (?P<host>\S+): "
    r"(?P<rate>[\d.]+) all-reduce/s of (?P<gb>[\d.]+) GB, algbw (?P<algbw>[\d.]+) GB/s, "
    r"busbw (?P<busbw>[\d.]+) GB/s, sum (?P<sum>\d+) correct")


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
    busbw_gb_per_s: float
    checked_sum: int


def parse_rank_lines(stdout: str) -> list[RankLine]:
    """The ranks' lines, sorted by rank. Raises OutputError.

    Every line mentioning ``all-reduce/s`` must be exactly one rank's line (an
    interleaved or cut line fails), every rank 0..n-1 must appear once, and the checked
    sum must be n(n+1)/2.
    """
    lines = []
    for text in stdout.splitlines():
        if "all-reduce/s" not in text and not text.startswith("rank "):
            continue
        match = LINE_RE.fullmatch(text.strip())
        if match is None:
            raise OutputError(f"not one intact rank line: {text!r}")
        g = match.groupdict()
        lines.append(RankLine(int(g["rank"]), int(g["world"]), int(g["local_rank"]), g["device"], g["host"],
                              float(g["rate"]), float(g["algbw"]), float(g["busbw"]), int(g["sum"])))
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
    return sorted(lines, key=lambda line: line.rank)


def slowest(lines: list[RankLine]) -> RankLine:
    """The rank with the fewest all-reduces per second (what a training step waits for)."""
    return min(lines, key=lambda line: line.allreduce_per_s)
