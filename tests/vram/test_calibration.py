"""The published measurements (snippets/data/measurements.yaml), the calibration read from them
(vram.calibration) and its honest validation.

Oracles: each source's own figures (a throughput per GPU, per machine, or the figures it is
derived from: Answer.AI's 1,024 samples of 2,048 tokens over the seconds it printed, NeMo
AutoModel's global batch x sequence / step time), the MFU torchtitan quotes for its own runs in
the same FLOPs convention, the vendors' datasheets typed below (a frozen catalogue: no test
here reads today's gpus.yaml prices), and arithmetic on ranges a reader can redo.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from decimal import Decimal

import pytest

from tests.conftest import REPO_ROOT
from tests.card_sources import memory_mib
from vram import timing
from vram.calibration import (COVERAGE_TARGET, WIDTH_TARGET, Check, class_range, class_table, coverage,
                              load_measured_data, median_width, meets_targets, validation_figures)
from vram.catalogue import Bandwidth, Card
from vram.job import answer_job
from vram.measurements import IMPLAUSIBLE_SHARE, is_moe

DATA = REPO_ROOT / "snippets" / "data"


@pytest.fixture(scope="module")
def measured():
    return load_measured_data()


@pytest.fixture(scope="module")
def checks(measured):
    return measured.checks()


# ------------------------------------------------------------------ the dataset
def test_the_dataset_has_the_spread_the_issue_asks_for(measured):
    ms = measured.measurements.values()
    assert len(measured.measurements) >= 40
    cards = {m.gpu for m in ms}
    assert len(cards) >= 6 and {"rtx-3090", "rtx-4090", "a6000"} <= cards  # PCIe consumer and workstation cards
    assert {"a100-80gb", "h100"} <= cards
    configs = measured.configs
    assert any(is_moe(configs[m.model]) for m in ms) and any(not is_moe(configs[m.model]) for m in ms)
    assert {"full", "lora", "qlora", "serving"} <= {m.task for m in ms}
    one_machine = {m.count for m in ms if not m.scale_check}
    assert {1, 2, 4, 8} <= one_machine and max(one_machine) <= 8
    serving = [m for m in ms if m.task == "serving"]
    assert any(m.batch == 1 for m in serving) and any(m.batch > 1 for m in serving)
    assert all(m.nodes > 1 for m in ms if m.count > 8)  # more than 8 GPUs: a scale check, on several machines


def test_every_entry_has_a_source_that_names_a_commit(measured):
    import yaml

    data = yaml.safe_load((DATA / "measurements.yaml").read_text(encoding="utf-8"))
    for key, source in data["sources"].items():
        assert source["url"].startswith("https://github.com/"), key
        assert "/blob/" in source["url"] and len(source["url"].split("/blob/")[1].split("/")[0]) == 40, key
    assert {m.source for m in measured.measurements.values()} == set(data["sources"])


def test_every_throughput_is_re_derived_from_its_cited_unit(measured):
    import yaml

    raw = yaml.safe_load((DATA / "measurements.yaml").read_text(encoding="utf-8"))["measurements"]
    for key, m in measured.measurements.items():
        derived = raw[key].get("derived_from")
        if derived and "tokens" in derived:  # the run's tokens over its seconds: the whole machine's rate
            assert m.per == "machine"
            assert m.tokens_per_s == pytest.approx(derived["tokens"] / derived["seconds"], abs=0.01), key
        elif derived:  # NeMo AutoModel: global batch x sequence / step time, over the run's GPUs
            rate = derived["global_batch"] * derived["seq_len"] / derived["step_s"] / m.count
            assert m.tokens_per_s == pytest.approx(rate, rel=5e-4), key
        if m.task != "serving":
            per_gpu = m.tokens_per_s / m.count if m.per == "machine" else m.tokens_per_s
            assert m.tokens_per_s_per_gpu == per_gpu, key


def test_answerai_rates_are_per_machine_as_their_text_confirms(measured):
    # the source's own sentence: 483 s for 1,024 x 2,048 tokens on two 4090 "2,200 tokens/second": per GPU
    assert 1024 * 2048 / 483 / 2 == pytest.approx(2200, rel=0.02)
    m = measured.measurements["answerai-7b-qlora-fsdp-2x4090"]
    assert m.per == "machine" and m.tokens_per_s_per_gpu == pytest.approx(1024 * 2048 / 466 / 2)


def test_torchtitan_runs_reproduce_their_quoted_mfu(measured):
    """torchtitan counts FLOPs as vram.timing does and divides by the H100 SXM's 989 TFLOPS:
    5,762 and 6,667 tokens/s per GPU are its "33% to 39% MFU"."""
    for key in ("torchtitan-8b-fsdp-8xh100", "torchtitan-8b-fsdp-compile-8xh100"):
        point = next(p for p in measured.points if p.key == key)
        assert point.share == pytest.approx(measured.measurements[key].mfu_quoted, abs=0.01)  # whole percents


def test_implausible_entries_stay_excluded_with_their_reason(measured):
    for point in measured.points:
        if point.share >= IMPLAUSIBLE_SHARE:
            assert measured.measurements[point.key].excluded, point.key
    assert any(m.excluded for m in measured.measurements.values())


def test_moe_runs_all_split_their_experts_and_a_moe_job_says_so(measured):
    moe = [m for m in measured.measurements.values() if is_moe(measured.configs[m.model]) and m.task != "serving"]
    assert moe and all(m.expert_parallel > 1 or m.model == "gpt-oss-20b" for m in moe)
    assert any(m.expert_parallel > 1 for m in moe)


def test_fsdp_without_peer_to_peer_was_slower_than_ddp_by_more_than_the_gathers(measured):
    """The no-overlap rule of vram.timing._step: on two 3090 without peer-to-peer, LoRA under FSDP
    lost more time against DDP than Llama 2 7B's bf16 weights gathered twice take at 25 GB/s."""
    fsdp, ddp = (measured.measurements[k] for k in ("answerai-7b-lora-fsdp-2x3090", "answerai-7b-lora-ddp-2x3090"))
    tokens = fsdp.micro_batch * fsdp.seq_len
    step, at_ddp_rate = tokens / fsdp.tokens_per_s_per_gpu, tokens / ddp.tokens_per_s_per_gpu
    weights = 2 * 6_738_415_616  # bf16, the Llama 2 7B of transformers (tests/vram/test_models_oracle.py)
    assert step - at_ddp_rate > 2 * weights / 2 / 25e9


# ------------------------------------------------------------------ the calibration
def test_each_class_range_holds_its_own_runs(measured):
    points = measured.calibration.points
    for found in class_table(points):
        own = [p.share for p in points if p.class_key == found.key]
        assert found.exact and found.runs == len(own)
        assert found.low <= min(own) and max(own) <= found.high
        if len(found.sources) > 1:  # several sources: exactly their lowest and highest share
            assert (found.low, found.high) == (min(own), max(own))


def test_a_class_without_runs_widens_and_says_so(measured):
    b200 = measured.calibration.backing("b200", ("dense", "full", "none"))  # no published B200 run
    assert not b200.range.exact and b200.on_card == 0 and b200.range.runs > 1
    h100 = measured.calibration.backing("h100", ("dense", "full", "none"))
    assert h100.range.exact and h100.on_card > 0
    assert b200.range.high - b200.range.low > h100.range.high - h100.range.low


def test_scale_checks_and_excluded_runs_are_not_calibrated_on(measured):
    keys = {p.key for p in measured.calibration.points}
    for m in measured.measurements.values():
        assert (m.key in keys) == (not m.scale_check and not m.excluded), m.key


# ------------------------------------------------------------------ validation
def test_no_run_is_predicted_from_its_own_source(checks):
    assert checks and all(c.source not in c.backing.sources for c in checks)


def test_the_validation_figures_stay_above_a_floor(checks, measured):
    """The honest figures (bench/results.md) miss the issue's targets; the floor keeps the suite
    stable and fails if the calibration gets worse than this dataset allows."""
    figures = validation_figures(checks, measured.measurements)
    training = figures["training"]
    assert training.runs >= 30
    assert training.coverage >= 0.5 and training.median_width <= 2.0
    assert figures["scale"].coverage >= 0.5


def test_a_trivially_wide_range_fails_the_width_target(checks):
    wide = [Check(c.key, c.source, c.gpu, c.measured, timing.Span(c.measured / 10**0.5, c.measured * 10**0.5),
                  c.backing, c.scale_check) for c in checks]
    assert coverage(wide) == 1.0 and median_width(wide) == pytest.approx(10)
    assert not meets_targets(coverage(wide), median_width(wide))
    assert meets_targets(COVERAGE_TARGET, WIDTH_TARGET)


# ------------------------------------------------------------------ the ranking the measurements change
# A frozen catalogue: datasheet figures (NVIDIA A100 and H100 SXM datasheets: 312 and 989.5 TFLOPS
# dense BF16; NVLink 3 and 4 per direction, 300 and 450 GB/s), nvidia-smi totals, and the typed prices.
SPEEDS = {
    "a100-80gb": {"bf16_dense_tflops": 312, "memory_bandwidth_gb_per_s": 2039, "peer_gb_per_s": [300, 300],
                  "peer_to_peer": True, "host_gb_per_s": [25, 32]},
    "h100": {"bf16_dense_tflops": 989.5, "memory_bandwidth_gb_per_s": 3350, "peer_gb_per_s": [450, 450],
             "peer_to_peer": True, "host_gb_per_s": [50, 64]},
}
MEMORY_MIB = {key: memory_mib(key) for key in SPEEDS}
RESERVE_MIB = 2048  # this catalogue's CUDA context and NCCL buffers (a job with cards states its reserve)


def _job(calibration_field):
    return {"kind": "training", "config": (DATA / "models" / "llama-3.1-8b.json").read_text(encoding="utf-8"),
            "cards": 8, "framework": "fsdp2", "zero_stage": 3, "seq_len": 8192, "micro_batch": 2,
            "gpus": [{"key": k, "memory_mib": MEMORY_MIB[k], "speed": SPEEDS[k]} for k in SPEEDS],
            "prices": {"a100-80gb": "10", "h100": "31.20"}, "tokens": 10**9, "calibration": calibration_field,
            "reserve_mib": RESERVE_MIB}


def test_published_runs_make_the_a100_machine_the_cheaper_8b_full_fine_tune(measured):
    """torchtitan's 8B FSDP run (seq 8,192, local batch 2) on 8 H100 at 31.20 EUR/h against an 8 x
    A100 machine typed at 10 EUR/h: one H100 utilisation stretched over both cards ranked the H100s
    first (989.5 / 312 = 3.17 times the peak for 3.12 times the price); the published A100 runs
    reach a larger share of a smaller peak, and the A100 machine is the cheaper run."""
    before = answer_job(_job(None))["run"]
    after = answer_job(_job(measured.calibration.as_job()))
    assert before["ranked_by"] == after["run"]["ranked_by"] == "cost"
    assert before["order"] == ["h100", "a100-80gb"]
    assert after["run"]["order"] == ["a100-80gb", "h100"]
    backing = {fit["gpu"]: fit["time"]["backing"] for fit in after["fits"]}
    assert backing["a100-80gb"]["family"] == "A100" and backing["a100-80gb"]["on_card"] > 0
    assert backing["h100"]["family"] == "H100/H200"
    cost = {fit["gpu"]: [Decimal(c) for c in fit["time"]["cost_eur"]] for fit in after["fits"]}
    assert sum(cost["a100-80gb"]) < sum(cost["h100"])


def test_a_moe_run_warns_of_expert_parallelism(measured):
    job = _job(measured.calibration.as_job())
    job["config"] = (DATA / "models" / "qwen3-30b-a3b.json").read_text(encoding="utf-8")
    job["seq_len"], job["micro_batch"] = 2048, 1
    assert "expert_parallel" in answer_job(job)["run"]["warnings"]


def test_the_serving_answer_adds_the_published_share_of_the_roofline(measured):
    job = {"kind": "serving", "config": (DATA / "models" / "llama-3.1-8b.json").read_text(encoding="utf-8"),
           "cards": 1, "context": 1024, "gpus": [{"key": "h100", "memory_mib": MEMORY_MIB["h100"], "speed": SPEEDS["h100"]}],
           "reserve_mib": RESERVE_MIB, "calibration": measured.calibration.as_job()}
    decode = answer_job(job)["fits"][0]["decode"]
    low, high = decode["tokens_per_s_per_sequence"]
    assert low < high <= decode["tokens_per_s_per_sequence_at_most"]  # the roofline stays the upper bound
    share = class_range(measured.calibration.points, ("hopper", "serving", "16", "single"))
    assert low <= decode["tokens_per_s_per_sequence_at_most"] * share.low


def test_cli_job_accepts_tokens_as_time_does(tmp_path):
    from vram.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["job", "--config", str(DATA / "models" / "llama-3.2-1b.json"), "--gpu", f"h100={MEMORY_MIB['h100']}",
                     "--tokens", "1e8", "--json"])
    assert code in (0, None), err.getvalue()
    answer = json.loads(out.getvalue())
    assert answer["run"]["tokens"] == 10**8
    assert answer["fits"][0]["time"]["backing"]["family"] == "H100/H200"
