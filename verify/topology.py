"""Classify the links between GPUs from ``nvidia-smi topo -m``.

The matrix's legend (nvidia-smi): ``NV#`` a bonded set of # NVLinks; ``PIX`` at most one
PCIe bridge; ``PXB`` several PCIe bridges without the host bridge; ``PHB`` through a PCIe
host bridge (the CPU); ``NODE`` across host bridges within a NUMA node; ``SYS`` (``SOC`` in
older drivers) across the SMP interconnect between CPU sockets. The guide groups them as
``nvlink``, ``pcie-switch`` (PIX, PXB), ``host-bridge`` (PHB) and ``cross-cpu`` (NODE, SYS).
Only the GPU-to-GPU part of the matrix is read; NIC rows and columns, affinities and the
legend are ignored.
"""

from __future__ import annotations

import re
from typing import Any

from verify.record import LINK_CLASSES

GPU_RE = re.compile(r"^GPU(\d+)$")
CODES = {
    "PIX": "pcie-switch",
    "PXB": "pcie-switch",
    "PHB": "host-bridge",
    "NODE": "cross-cpu",
    "SYS": "cross-cpu",
    "SOC": "cross-cpu",
}


class TopologyError(ValueError):
    """The text is not a complete ``nvidia-smi topo -m`` GPU matrix."""


def link_class(code: str) -> str:
    """The class of one matrix cell (``NV18`` -> ``nvlink``). Raises TopologyError."""
    if re.fullmatch(r"NV\d+", code):
        return "nvlink"
    if code in CODES:
        return CODES[code]
    raise TopologyError(f"unknown link code {code!r} in nvidia-smi topo -m")


def gpu_matrix(text: str) -> dict[int, list[str]]:
    """GPU index -> its row of cells, one per column of the header. Raises TopologyError."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    # The header names the columns (GPU0 GPU1 ... NIC0 ... CPU Affinity); a row starts
    # with its GPU and then, GPU0 being the first column, a cell (X on GPU0's row).
    header_at = next(
        (i for i, tokens in enumerate(lines) if len(tokens) > 1 and GPU_RE.match(tokens[0]) and tokens[1] != "X"), None
    )
    if header_at is None:
        raise TopologyError("no header row with GPU0, GPU1 ... found in nvidia-smi topo -m output")
    gpu_columns = [int(found.group(1)) for tok in lines[header_at] if (found := GPU_RE.match(tok))]
    rows: dict[int, list[str]] = {}
    for cells in lines[header_at + 1 :]:
        if cells[0].startswith("Legend"):
            break
        match = GPU_RE.match(cells[0])
        if match is None:
            continue
        if len(cells) - 1 < len(gpu_columns):
            raise TopologyError(
                f"row GPU{match.group(1)} has {len(cells) - 1} cells, fewer than the {len(gpu_columns)} GPU columns"
            )
        rows[int(match.group(1))] = cells[1 : 1 + len(gpu_columns)]
    missing = [g for g in gpu_columns if g not in rows]
    if missing:
        raise TopologyError(
            f"nvidia-smi topo -m output lacks the rows of GPU{', GPU'.join(map(str, missing))} (truncated?)"
        )
    if gpu_columns != list(range(len(gpu_columns))):
        raise TopologyError(f"GPU columns are not GPU0..GPU{len(gpu_columns) - 1}: {gpu_columns}")
    return {g: rows[g] for g in gpu_columns}


def classify_pairs(text: str) -> dict[str, str]:
    """``{"0-1": "nvlink", ...}`` for every pair of GPUs i < j. Raises TopologyError.

    The matrix must be symmetric and have ``X`` on its diagonal.
    """
    matrix = gpu_matrix(text)
    pairs = {}
    for i, row in matrix.items():
        if row[i] != "X":
            raise TopologyError(f"row GPU{i}: expected X on the diagonal, found {row[i]!r}")
        for j in range(i + 1, len(row)):
            if row[j] != matrix[j][i]:
                raise TopologyError(f"GPU{i}-GPU{j} is {row[j]!r} but GPU{j}-GPU{i} is {matrix[j][i]!r}")
            pairs[f"{i}-{j}"] = link_class(row[j])
    return pairs


def summarize(pairs: dict[str, str]) -> dict[str, Any]:
    """Classes present (fastest first) and the slowest pair's class.

    The slowest pair is not always what NCCL uses: on a DGX-1 its rings stay on NVLink
    even though some pairs cross the CPUs. The published note lists every class present.
    """
    classes = [c for c in LINK_CLASSES if c in pairs.values()]
    return {"pairs": pairs, "classes": classes, "slowest": classes[-1] if classes else None}
