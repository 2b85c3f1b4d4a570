"""The link classifier on recorded ``nvidia-smi topo -m`` outputs (verification/fixtures/topo/).

Expected values were read off each matrix by hand, not computed by the classifier.
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT
from verify.topology import TopologyError, classify_pairs, summarize

TOPO = REPO_ROOT / "verification" / "fixtures" / "topo"


def pairs_of(name: str) -> dict[str, str]:
    return classify_pairs((TOPO / name).read_text())


def test_h100_sxm_all_pairs_nvlink():
    pairs = pairs_of("h100-sxm-8gpu.txt")
    assert len(pairs) == 28  # 8 GPUs: 8 * 7 / 2 pairs; the NIC rows and columns are ignored
    assert set(pairs.values()) == {"nvlink"}
    assert summarize(pairs)["classes"] == ["nvlink"]


def test_dgx1_hybrid_cube_mesh():
    pairs = pairs_of("dgx1-v100-8gpu.txt")
    assert pairs["0-1"] == pairs["0-3"] == pairs["0-4"] == pairs["3-7"] == "nvlink"  # NV2, NV1, NV1, NV2
    assert pairs["0-5"] == pairs["1-4"] == pairs["2-7"] == "cross-cpu"  # SYS
    assert list(pairs.values()).count("nvlink") == 16  # four NVLink peers per GPU
    summary = summarize(pairs)
    assert summary["classes"] == ["nvlink", "cross-cpu"] and summary["slowest"] == "cross-cpu"


def test_pcie_switches_with_the_old_soc_legend():
    pairs = pairs_of("p40-pcie-switch-8gpu.txt")
    assert pairs["0-1"] == "pcie-switch"  # PIX
    assert pairs["0-4"] == "pcie-switch"  # PXB
    assert set(pairs.values()) == {"pcie-switch"}


def test_two_cards_through_the_host_bridge():
    assert pairs_of("rtx5090-host-bridge-2gpu.txt") == {"0-1": "host-bridge"}


def test_two_sockets_sys_and_node():
    pairs = pairs_of("t4-cross-cpu-4gpu.txt")
    assert pairs["0-1"] == "cross-cpu"  # SYS
    assert pairs["1-2"] == "cross-cpu"  # NODE
    assert summarize(pairs)["classes"] == ["cross-cpu"]


def test_mixed_host_bridge_and_cross_cpu():
    pairs = pairs_of("mixed-5gpu.txt")
    assert {k for k, v in pairs.items() if v == "host-bridge"} == {"1-2", "3-4"}
    assert len(pairs) == 10 and list(pairs.values()).count("cross-cpu") == 8


def test_one_gpu_has_no_pairs():
    pairs = pairs_of("single-gpu-nics.txt")
    assert pairs == {}
    assert summarize(pairs) == {"pairs": {}, "classes": [], "slowest": None}


def test_truncated_output_is_refused_naming_the_missing_rows():
    with pytest.raises(TopologyError, match="lacks the rows of GPU5, GPU6, GPU7"):
        pairs_of("truncated-8gpu.txt")


def test_asymmetric_matrix_and_unknown_code_are_refused():
    text = (TOPO / "rtx5090-host-bridge-2gpu.txt").read_text()
    with pytest.raises(TopologyError, match="GPU0-GPU1 is 'PHB' but GPU1-GPU0 is 'SYS'"):
        classify_pairs(text.replace("GPU1\tPHB", "GPU1\tSYS"))
    with pytest.raises(TopologyError, match="unknown link code 'ABC'"):
        classify_pairs(text.replace("PHB", "ABC"))
    with pytest.raises(TopologyError, match="no header row"):
        classify_pairs("No devices were found\n")
