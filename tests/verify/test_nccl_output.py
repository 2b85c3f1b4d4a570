"""Reading the check's per-rank lines."""

from __future__ import annotations

import pytest

from verify.nccl_output import OutputError, parse_rank_lines, slowest

LINE0 = (
    "rank 0/2 local_rank 0 cuda:0 gpu-a: 41.3 all-reduce/s of 1.07 GB, algbw 44.4 GB/s, busbw 44.4 GB/s, sum 3 correct"
)
LINE1 = (
    "rank 1/2 local_rank 1 cuda:1 gpu-a: 40.1 all-reduce/s of 1.07 GB, algbw 43.1 GB/s, busbw 43.1 GB/s, sum 3 correct"
)


def test_two_intact_lines_in_any_order():
    lines = parse_rank_lines(f"some log\n{LINE1}\n{LINE0}\n")
    assert [line.rank for line in lines] == [0, 1]
    assert lines[0].busbw_gb_per_s == 44.4 and lines[1].device == "cuda:1"
    assert slowest(lines).rank == 1


def test_interleaved_lines_are_refused():
    # what print() did under PYTHONUNBUFFERED=1 before the snippet wrote each line at once
    with pytest.raises(OutputError, match="not one intact rank line"):
        parse_rank_lines(f"{LINE1}{LINE0}\n\n")


@pytest.mark.parametrize(
    "stdout, message",
    [
        (LINE0, r"one line for each rank 0..1, got ranks \[0\]"),
        (f"{LINE0}\n{LINE0}", r"got ranks \[0, 0\]"),
        (f"{LINE0}\n{LINE1.replace('sum 3', 'sum 4')}", "sum other than 3"),
        ("", "no rank line"),
    ],
)
def test_missing_duplicated_or_wrong_lines_are_refused(stdout, message):
    with pytest.raises(OutputError, match=message):
        parse_rank_lines(stdout)


ONE_RANK = (
    "rank 0/1 local_rank 0 cuda:0 gpu-a: 1234.5 all-reduce/s of 1.07 GB, algbw 1325.5 GB/s, "
    "no busbw (1 rank: nothing crosses a link), sum 1 correct"
)


def test_a_one_rank_run_claims_no_busbw():
    (line,) = parse_rank_lines(ONE_RANK)
    assert (line.world, line.busbw_gb_per_s, line.algbw_gb_per_s, line.checked_sum) == (1, None, 1325.5, 1)


@pytest.mark.parametrize(
    "stdout, message",
    [
        (
            ONE_RANK.replace("no busbw (1 rank: nothing crosses a link)", "busbw 0.0 GB/s"),
            "one-rank run claims a busbw",
        ),
        (
            f"{LINE0}\n{LINE1.replace('busbw 43.1 GB/s', 'no busbw (1 rank: nothing crosses a link)')}",
            "a rank of 2 gives no busbw",
        ),
    ],
)
def test_busbw_only_when_a_link_was_crossed(stdout, message):
    with pytest.raises(OutputError, match=message):
        parse_rank_lines(stdout)


@pytest.mark.parametrize("number", ["1.2.3", ".", "4..1"])
def test_a_mangled_number_is_a_mangled_line(number):
    """``[\\d.]+`` matched these and float() raised a ValueError: verify.gpu_check ended in a traceback."""
    with pytest.raises(OutputError, match="not one intact rank line"):
        parse_rank_lines(f"{LINE0.replace('41.3', number)}\n{LINE1}\n")
