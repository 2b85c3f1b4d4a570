"""The interconnect table (snippets/data/interconnects.yaml) against vendors' figures and
against the NCCL check's plausibility rule ("above 1,000 GB/s the measurement is wrong").

Oracles typed here: NVIDIA quotes NVLink per GPU as the total of both directions (A100
SXM 600 GB/s, H100/H200 SXM 900 GB/s, B200 1.8 TB/s, the RTX 3090 bridge 112.5 GB/s);
PCI-SIG gives a x16 link 31.5 GB/s (4.0) and 63 GB/s (5.0) per direction before protocol
overhead. The table states every row per direction, the figure nccl-tests' busbw is
compared with (nccl-tests doc/PERFORMANCE.md).
"""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.site.pages import soup
from verify.record import BUSBW_PLAUSIBLE_MAX_GB_PER_S

ROWS = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "interconnects.yaml").read_text(encoding="utf-8"))["rows"]
NVLINK_TOTAL_BOTH_DIRECTIONS_GB_PER_S = {"RTX 3090": 112.5, "A100": 600, "H100": 900, "B200": 1800}
PCIE_X16_PER_DIRECTION_GB_PER_S = {"PCIe 4.0": 31.5, "PCIe 5.0": 63}


def row_named(fragment: str) -> dict:
    (row,) = [row for row in ROWS if fragment in row["link"]["it"]]
    return row


def test_one_convention_per_direction_on_every_row():
    assert all(row.get("per_direction") is True for row in ROWS)


@pytest.mark.parametrize("card,total", NVLINK_TOTAL_BOTH_DIRECTIONS_GB_PER_S.items())
def test_nvlink_rows_are_half_the_vendors_two_direction_total(card, total):
    low, high = row_named(card)["bandwidth_gb_per_s"]
    assert low == high == pytest.approx(total / 2, abs=0.5)


@pytest.mark.parametrize("link,peak", PCIE_X16_PER_DIRECTION_GB_PER_S.items())
def test_pcie_rows_stay_below_the_link_rate(link, peak):
    low, high = row_named(link)["bandwidth_gb_per_s"]
    assert 0 < low < high <= peak + 1


def test_the_b200_the_guide_names_is_in_the_table():
    assert row_named("B200")["class"] == "nvlink"


def test_no_link_reaches_the_plausibility_limit():
    """The guide's rule, and verify.record's check, call a busbw above the limit a missing
    synchronize: it holds only if every link of the table is below it."""
    fastest = max(row["bandwidth_gb_per_s"][1] for row in ROWS)
    assert fastest < BUSBW_PLAUSIBLE_MAX_GB_PER_S


@pytest.mark.parametrize("page,limit", [("index.html", "1.000 GB/s"), ("fr/index.html", "1 000 Go/s")])
def test_the_page_states_the_same_limit_as_the_record_check(built_site, page, limit):
    text = re.sub(r"[\u00a0\u202f]", " ", soup(built_site / page).get_text(" "))
    number = limit.rsplit(" ", 1)[0]
    assert int(re.sub(r"\D", "", number)) == BUSBW_PLAUSIBLE_MAX_GB_PER_S
    assert limit in text
