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
import math
import shutil
from contextlib import redirect_stderr, redirect_stdout
from decimal import Decimal

import pytest

from tests.card_sources import memory_mib
from tests.conftest import REPO_ROOT
from vram import timing
from vram.calibration import (
    ANY,
    COMPUTE_BOUND,
    COVERAGE_TARGET,
    FIRST_RULE,
    LOOP_RULE,
    RULE,
    SCRIPTS_MODEL_CODE,
    SECOND_RULE,
    WIDTH_TARGET,
    Check,
    Point,
    class_range,
    class_table,
    coverage,
    dispersion,
    job_class,
    leave_one_source_out,
    load_measured_data,
    median_width,
    meets_targets,
    serving_class,
    source_centre,
    validation_figures,
)
from vram.job import answer_job
from vram.measurements import ENGINES, IMPLAUSIBLE_SHARE, SERVER, is_moe, prefill_share
from vram.serving import serving_memory_per_gpu

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
    # decoding by the servers the finder's serving job stands for, and by local engines
    assert {"vllm", "tensorrt-llm", "lmdeploy", "llama.cpp"} <= {m.engine for m in serving}
    assert {"a100-80gb", "h100", "h200", "l40s"} <= {m.gpu for m in serving if ENGINES[m.engine] == SERVER}
    assert all(m.nodes > 1 for m in ms if m.count > 8)  # more than 8 GPUs: a scale check, on several machines


def test_every_entry_has_a_source_that_names_a_commit(measured):
    import yaml

    data = yaml.safe_load((DATA / "measurements.yaml").read_text(encoding="utf-8"))
    for key, source in data["sources"].items():
        if "read" in source:  # a page outside git (a CI run's page): the day it was read
            assert not source["url"].startswith("https://github.com/"), key
            continue
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
        elif derived and "samples_per_s" in derived:  # the Trainer's train_samples_per_second x the packed length
            assert m.per == "machine"
            assert m.tokens_per_s == pytest.approx(derived["samples_per_s"] * derived["seq_len"], abs=0.01), key
        elif derived:  # NeMo AutoModel: global batch x sequence / step time, over the run's GPUs
            rate = derived["global_batch"] * derived["seq_len"] / derived["step_s"] / m.count
            assert m.tokens_per_s == pytest.approx(rate, rel=5e-4), key
        if m.task != "serving":
            per_gpu = m.tokens_per_s / m.count if m.per == "machine" else m.tokens_per_s
            assert m.tokens_per_s_per_gpu == per_gpu, key
        elif m.per == "gpu":  # TensorRT-LLM's out tok/s/GPU: the machine decodes count times as many
            assert m.decoding_tokens_per_s == m.tokens_per_s * m.count and m.count == m.tensor_parallel, key
        else:
            assert m.decoding_tokens_per_s == m.tokens_per_s, key


def test_tensorrt_llm_rows_per_gpu_are_the_machines_rate_over_its_gpus(measured):
    """TensorRT-LLM v0.6.1, H100 FP8, Llama 2 70B, batch 480 over 4 GPUs (tensor parallel), 128
    tokens in, 2,048 out: 1,486 out tok/s/GPU, so the machine decodes 5,944 tokens/s, and its
    share is of the 4-GPU machine's roofline (each GPU reads a quarter of the weights)."""
    m = measured.measurements["trtllm-70b-fp8-b480-4xh100"]
    assert m.decoding_tokens_per_s == 5944
    bound = timing.decode_bound(measured.configs[m.model], 3350, 1152, 480, 4, "fp8", "fp8").tokens_per_second
    share = next(p.share for p in measured.points if p.key == m.key)
    assert share == pytest.approx(5944 / bound)


def test_decoding_rows_measure_decoding_with_the_whole_batch_on_the_cards(measured):
    """The rows of a decoding table the file keeps (its header): the prompt no longer than the
    output, the prefills at the dense peak under a tenth of the measured run, and the batch's
    weights and KV cache at the last token within the cards' memory (nvidia-smi's total; the
    datasheet's for a card the catalogue lacks). LMDeploy's llama2-7b at batch 64 (128 + 2,048
    tokens) needs 1.007 times an A100's 80 GiB and is left out; its batch 32 is in."""
    import yaml

    cards = yaml.safe_load((DATA / "measurements.yaml").read_text(encoding="utf-8"))["cards"]
    known = 0
    for m in measured.measurements.values():
        if m.task != "serving" or not m.prompt:
            continue
        known += 1
        card, config = measured.cards[m.gpu], measured.configs[m.model]
        assert m.prompt <= m.output and prefill_share(m, card, config) < 0.1, m.key
        held = serving_memory_per_gpu(config, m.weights, m.prompt + m.output, m.batch, m.kv_dtype, m.tensor_parallel)
        memory = cards[m.gpu]["memory_gb"] * 10**9 if m.gpu in cards else memory_mib(m.gpu) * 2**20
        assert held.weights_bytes + held.kv_cache_bytes <= memory, m.key
    assert known >= 40
    seven = serving_memory_per_gpu(measured.configs["llama-2-7b"], "bf16", 128 + 2048, 64)
    assert (seven.weights_bytes + seven.kv_cache_bytes) / (memory_mib("a100-80gb") * 2**20) == pytest.approx(
        1.007, abs=0.001
    )


def test_answerai_rates_are_per_machine_as_their_text_confirms(measured):
    # the source's own sentence: 483 s for 1,024 x 2,048 tokens on two 4090 "2,200 tokens/second": per GPU
    assert pytest.approx(2200, rel=0.02) == 1024 * 2048 / 483 / 2
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
    assert moe and all(m.expert_parallel > 1 for m in moe)


@pytest.mark.parametrize("card, gathered_at", [("3090", 4e9), ("4090", 25e9)])
def test_fsdp_without_peer_to_peer_did_not_overlap_its_gathers(measured, card, gathered_at):
    """The no-overlap rule of vram.timing._step. Answer.AI's LoRA of Llama 2 7B on two GeForce
    cards without peer-to-peer, FSDP against DDP at the same tokens: FSDP lost about the time its
    gathers take over the host path (both bf16 halves of 13.5 GB gathered twice, at the path's
    low end, 4 GB/s, on the 3090s' old board and its high end, 25 GB/s, on the 4090s at full
    x16: interconnects.yaml), although the compute of a step would have hidden all of it had
    the two overlapped."""
    fsdp, ddp = (measured.measurements[f"answerai-7b-lora-{kind}-2x{card}"] for kind in ("fsdp", "ddp"))
    tokens = fsdp.micro_batch * fsdp.seq_len
    step, at_ddp_rate = tokens / fsdp.tokens_per_s_per_gpu, tokens / ddp.tokens_per_s_per_gpu
    weights = 2 * 6_738_415_616  # bf16, the Llama 2 7B of transformers (tests/vram/test_models_oracle.py)
    gathers_s = 2 * (weights / 2) / gathered_at  # two all-gathers per step, each GPU receiving the other half
    assert 0.9 * gathers_s <= step - at_ddp_rate <= 1.15 * gathers_s
    assert at_ddp_rate > 2.5 * gathers_s  # overlapped, the gathers would have cost next to nothing


def test_the_cpu_step_is_the_host_memory_roofline_of_adams_bytes():
    """28 bytes per parameter (DeepSpeed's Step_AVX: fp32 gradient, two moments and parameter
    loaded, parameter and moments stored) over 51.2 GB/s (two DDR4-3200 channels: 3.2e9
    transfers x 8 bytes each) to 614.4 GB/s (sixteen DDR5-4800 channels: 4.8e9 x 8 each)."""
    assert timing.ADAM_HOST_BYTES_PER_PARAM == 4 * 4 + 3 * 4
    span = timing.cpu_optimizer_seconds(10**9)
    assert span.low == pytest.approx(28e9 / (16 * 4.8e9 * 8)) and span.high == pytest.approx(28e9 / (2 * 3.2e9 * 8))
    with pytest.raises(ValueError):
        timing.cpu_optimizer_seconds(10**9, (0, 10))


def test_the_cpu_step_adds_to_an_offloaded_step_and_the_offload_run_agrees(measured):
    """The CPU's Adam step never overlaps: it adds to both ends of the step and shows in its
    offload part. torchtune's Llama 3.1 70B full fine-tune with FSDP CPU offload on 8 A100: its
    measured step, less its compute at the fastest share any one-machine A100 run published,
    leaves a time for the machine's 70.6 billion parameters that puts its host memory inside the
    cited range."""
    m = measured.measurements["torchtune-70b-full-offload-8xa100"]
    config, card = measured.configs[m.model], measured.cards[m.gpu]
    with_cpu = timing.training_step(
        config, card, m.count, 3, m.seq_len, m.micro_batch, m.recompute, True, utilisation=(0.5, 0.6)
    )
    without = timing.training_step(
        config, card, m.count, 3, m.seq_len, m.micro_batch, m.recompute, False, utilisation=(0.5, 0.6)
    )
    params = 70_553_706_496  # Llama 3.1 70B as transformers builds it (tests/vram/test_models_oracle.py)
    cpu = timing.cpu_optimizer_seconds(params)
    pcie = timing.offload_seconds(params, m.count, card.host)
    assert with_cpu.offload.low == pytest.approx(pcie.low + cpu.low)
    assert with_cpu.offload.high == pytest.approx(pcie.high + cpu.high)
    assert with_cpu.step.low == pytest.approx(max(without.step.low, pcie.low) + cpu.low)
    assert with_cpu.step.high == pytest.approx(without.step.high + pcie.high + cpu.high)
    best = max(p.share for p in measured.calibration.points if p.family == "a100" and p.task == "full")
    step = m.micro_batch * m.seq_len / m.tokens_per_s_per_gpu
    fastest_compute = timing.compute_seconds(
        timing.flops_per_token(config, m.seq_len) * m.micro_batch * m.seq_len,
        card.bf16_dense_tflops,
        m.recompute,
        (best, best),
    ).low
    implied_gb_per_s = timing.ADAM_HOST_BYTES_PER_PARAM * params / (step - fastest_compute) / 1e9
    assert timing.HOST_MEMORY_GB_PER_S[0] < implied_gb_per_s < timing.HOST_MEMORY_GB_PER_S[1]


# ------------------------------------------------------------------ the calibration
def test_each_class_range_holds_its_own_runs(measured):
    """R1 (the site): the sources' median of medians x/÷ the dispersion, widened to hold the
    class's own runs, capped at the fastest run; R0: exactly the lowest and highest share when
    several sources."""
    points = measured.calibration.points
    fastest = {kind: max(p.share for p in points if (p.arch == "serving") == kind) for kind in (False, True)}
    for found in class_table(points):
        own = [p for p in points if p.class_key == found.key]
        shares = [p.share for p in own]
        assert found.exact and found.runs == len(own)
        assert found.low <= min(shares) and max(shares) <= found.high
        serving = found.key[1] == "serving"
        centre, factor = source_centre(own), dispersion(points, serving)
        assert found.low == pytest.approx(min(centre / factor, *shares))
        assert found.high == pytest.approx(min(fastest[serving], max(centre * factor, *shares)))
    for found in class_table(points, FIRST_RULE):
        shares = [p.share for p in points if p.class_key == found.key]
        if len(found.sources) > 1:
            assert (found.low, found.high) == (min(shares), max(shares))


def _point(key, source, share, family="a100", task="full"):
    return Point(key, source, "a100-80gb", family, "dense", task, "none", share)


def test_the_dispersion_is_the_80th_percentile_of_each_run_against_the_other_sources():
    """By hand: class (a100, dense, full): source a at 0.5 and 0.6, b at 0.4, c at 0.8. Without a,
    the centre is median(0.4, 0.8) = 0.6: ratios 1.2 and 1.0; without b, median(0.55, 0.8) =
    0.675: 1.6875; without c, median(0.55, 0.4) = 0.475: 1.6842. Nearest rank 80 % of four
    ratios is the 4th: 1.6875. The class's centre: median(0.55, 0.4, 0.8) = 0.55."""
    points = (_point("a1", "a", 0.5), _point("a2", "a", 0.6), _point("b1", "b", 0.4), _point("c1", "c", 0.8))
    assert dispersion(points, serving=False) == pytest.approx(0.675 / 0.4)
    assert source_centre(points) == pytest.approx(0.55)
    found = class_range(points, ("a100", "dense", "full", "none"))
    assert found.low == pytest.approx(0.55 / (0.675 / 0.4))
    assert found.high == pytest.approx(0.8)  # the fastest run caps 0.55 x 1.6875
    assert dispersion(points[:2], serving=False) == 1.0  # one source: nothing to compare


def test_a_held_out_source_never_shapes_its_own_prediction(measured):
    """Nested leave-one-source-out: the dispersion and the centres are read from the other
    sources only, so doubling every share of the source being predicted changes none of its
    predicted ranges."""
    held = "vectorlm-2024"
    before = {c.key: c.predicted for c in measured.checks() if c.source == held}
    doubled = [p if p.source != held else Point(*p.as_list()[:7], min(1.0, p.share * 2)) for p in measured.points]
    after = leave_one_source_out(
        doubled, measured.measurements, measured.cards, measured.configs, measured.link_shares, RULE
    )
    assert before and before == {c.key: c.predicted for c in after if c.source == held}


def test_a_class_without_runs_widens_and_says_so(measured):
    b200 = measured.calibration.backing("b200", ("dense", "full", "none"))  # its one run is held out: none is read
    assert not b200.range.exact and b200.on_card == 0 and b200.range.runs > 1
    h100 = measured.calibration.backing("h100", ("dense", "full", "none"))
    assert h100.range.exact and h100.on_card > 0
    assert b200.range.high - b200.range.low > h100.range.high - h100.range.low


def test_scale_checks_excluded_link_bound_and_local_engine_runs_are_not_calibrated_on(measured):
    keys = {p.key for p in measured.calibration.points}
    for m in measured.measurements.values():
        link_bound = measured.link_shares.get(m.key, 0.0) > COMPUTE_BOUND
        local = m.task == "serving" and ENGINES[m.engine] != SERVER  # R2 reads decoding by servers only
        read = not m.scale_check and not m.excluded and not link_bound and not local and m.holdout is None
        assert (m.key in keys) == read, m.key
    llamacpp = measured.measurements["llamacpp-8b-f16-4090"]
    assert SECOND_RULE.reads(llamacpp) and not RULE.reads(llamacpp)  # R1 read every engine
    # Answer.AI's batch-1 FSDP LoRA on two 3090 without peer-to-peer, 512 tokens: the bf16 weights
    # gathered twice per step over the host path take most of the step the source measured
    assert measured.link_shares["answerai-7b-lora-fsdp-b1-512-2x3090"] > 0.5


def test_tensor_parallel_decoding_is_a_regime_of_its_own_under_r2(measured):
    """R2 keys a decoding run split over GPUs "parallel", whatever its batch; R1 read it as one
    sequence or a batch. A finder job on N cards is served tensor parallel over N: on two H100
    it reads the parallel class, on one the batched one (8 sequences)."""
    serving = [p for p in measured.calibration.points if p.arch == "serving"]
    for p in serving:
        m = measured.measurements[p.key]
        regime = "parallel" if m.tensor_parallel > 1 else "single" if m.batch == 1 else "batched"
        assert p.offload == regime, p.key
    assert {"single", "batched", "parallel"} == {p.offload for p in serving}
    assert serving_class("hopper", "fp8", 8, 2, SECOND_RULE)[3] == "batched"
    for cards, regime in ((1, "batched"), (2, "parallel")):
        decode = answer_job(_serving_job(measured, cards=cards, concurrent=8))["fits"][0]["decode"]
        assert decode["backing"]["class"][1:4] == ["serving", "16", regime]


# ------------------------------------------------------------------ validation
def test_no_run_is_predicted_from_its_own_source(checks):
    assert checks and all(c.source not in c.backing.sources for c in checks)


def test_the_validation_figures_stay_above_a_floor(checks, measured):
    """The honest figures (bench/results.md) miss the issue's targets; the floor keeps the suite
    stable and fails if the calibration gets worse than this dataset allows."""
    figures = validation_figures(checks, measured.measurements)
    training = figures["training"]
    assert training.runs >= 45
    assert training.coverage >= 0.65 and training.median_width <= 2.0
    serving = figures["serving"]  # decoding by server engines: the finder's range (R2: 77 %, 2.85x)
    assert serving.runs >= 30 and serving.coverage >= 0.7 and serving.median_width <= 3.2
    assert figures["serving_local"].coverage >= 0.6  # llama.cpp, MLC, ExLlamaV2: predicted, never read
    assert figures["scale"].coverage >= 0.6


def test_a_trivially_wide_range_fails_the_width_target(checks):
    wide = [
        Check(
            c.key,
            c.source,
            c.gpu,
            c.measured,
            timing.Span(c.measured / 10**0.5, c.measured * 10**0.5),
            c.backing,
            c.scale_check,
        )
        for c in checks
    ]
    assert coverage(wide) == 1.0 and median_width(wide) == pytest.approx(10)
    assert not meets_targets(coverage(wide), median_width(wide))
    assert meets_targets(COVERAGE_TARGET, WIDTH_TARGET)


# ------------------------------------------------------------------ the ranking the measurements change
# A frozen catalogue: datasheet figures (NVIDIA A100 and H100 SXM datasheets: 312 and 989.5 TFLOPS
# dense BF16; NVLink 3 and 4 per direction, 300 and 450 GB/s), nvidia-smi totals, and the typed prices.
SPEEDS = {
    "a100-80gb": {
        "bf16_dense_tflops": 312,
        "memory_bandwidth_gb_per_s": 2039,
        "peer_gb_per_s": [300, 300],
        "peer_to_peer": True,
        "host_gb_per_s": [25, 32],
    },
    "h100": {
        "bf16_dense_tflops": 989.5,
        "memory_bandwidth_gb_per_s": 3350,
        "peer_gb_per_s": [450, 450],
        "peer_to_peer": True,
        "host_gb_per_s": [50, 64],
    },
}
MEMORY_MIB = {key: memory_mib(key) for key in SPEEDS}
RESERVE_MIB = 2048  # this catalogue's CUDA context and NCCL buffers (a job with cards states its reserve)


def _job(calibration_field):
    return {
        "kind": "training",
        "config": (DATA / "models" / "llama-3.1-8b.json").read_text(encoding="utf-8"),
        "cards": 8,
        "framework": "fsdp2",
        "zero_stage": 3,
        "seq_len": 8192,
        "micro_batch": 2,
        "gpus": [{"key": k, "memory_mib": MEMORY_MIB[k], "speed": SPEEDS[k]} for k in SPEEDS],
        "prices": {"a100-80gb": "10", "h100": "31.20"},
        "tokens": 10**9,
        "calibration": calibration_field,
        "reserve_mib": RESERVE_MIB,
    }


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


def test_each_job_reads_its_own_calibration_not_the_last_one(measured):
    """A calibration is read once per object handed in: a job with another calibration (the same
    runs, every share halved) gets that calibration's range, exactly half the first's."""
    first = measured.calibration.as_job()
    halved = first | {"points": [[*row[:7], row[7] / 2, *row[8:]] for row in first["points"]]}
    shares = []
    for calibration in (first, halved, first):
        fits = answer_job(_job(calibration))["fits"]
        shares.append({fit["gpu"]: fit["time"]["backing"]["share"] for fit in fits})
    assert shares[0] == shares[2]
    for gpu, (low, high) in shares[0].items():
        assert shares[1][gpu] == pytest.approx([low / 2, high / 2], rel=1e-12)


def test_a_moe_run_warns_of_expert_parallelism(measured):
    job = _job(measured.calibration.as_job())
    job["config"] = (DATA / "models" / "qwen3-30b-a3b.json").read_text(encoding="utf-8")
    job["seq_len"], job["micro_batch"] = 2048, 1
    assert "expert_parallel" in answer_job(job)["run"]["warnings"]


def _serving_job(measured, **extra):
    """Llama 3.1 8B decoding 1,024-token contexts on this catalogue's H100, with the calibration."""
    return {
        "kind": "serving",
        "config": (DATA / "models" / "llama-3.1-8b.json").read_text(encoding="utf-8"),
        "cards": 1,
        "context": 1024,
        "gpus": [{"key": "h100", "memory_mib": MEMORY_MIB["h100"], "speed": SPEEDS["h100"]}],
        "reserve_mib": RESERVE_MIB,
        "calibration": measured.calibration.as_job(),
        **extra,
    }


def test_the_serving_answer_adds_the_published_share_of_the_roofline(measured):
    decode = answer_job(_serving_job(measured))["fits"][0]["decode"]
    low, high = decode["tokens_per_s_per_sequence"]
    assert low < high <= decode["tokens_per_s_per_sequence_at_most"]  # the roofline stays the upper bound
    share = class_range(measured.calibration.points, ("hopper", "serving", "16", "single", ANY))
    assert low <= decode["tokens_per_s_per_sequence_at_most"] * share.low


def test_cli_job_accepts_tokens_as_time_does(tmp_path):
    from vram.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(
            [
                "job",
                "--config",
                str(DATA / "models" / "llama-3.2-1b.json"),
                "--gpu",
                f"h100={MEMORY_MIB['h100']}",
                "--tokens",
                "1e8",
                "--json",
            ]
        )
    assert code in (0, None), err.getvalue()
    answer = json.loads(out.getvalue())
    assert answer["run"]["tokens"] == 10**8
    assert answer["fits"][0]["time"]["backing"]["family"] == "H100/H200"


def test_cli_job_says_what_server_engines_reached_beside_the_roofline(measured):
    """`vram job --kind serving` on two H100: the roofline, then the share of it that published
    decoding runs of server engines reached in the job's class (H100/H200, 16 bits, tensor
    parallel), per sequence, rounded outwards."""
    from vram.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        main(
            [
                "job",
                "--config",
                str(DATA / "models" / "llama-3.1-8b.json"),
                "--kind",
                "serving",
                "--cards",
                "2",
                "--concurrent",
                "8",
                "--context",
                "1024",
                "--gpu",
                f"h100={MEMORY_MIB['h100']}",
            ]
        )
    line = next(line for line in out.getvalue().splitlines() if line.startswith("decoding on h100"))
    bound = timing.decode_bound(measured.configs["llama-3.1-8b"], 3350, 1024, 8, 2).tokens_per_second_per_sequence
    share = class_range(measured.calibration.points, ("hopper", "serving", "16", "parallel", ANY))
    low, high = math.floor(bound * share.low), math.ceil(bound * share.high)
    assert f"server engines like vLLM reached {low:,}-{high:,} per sequence in published runs" in line


# ------------------------------------------------------------------ what one machine's FSDP/ZeRO does not describe
RTX_4090 = {
    "bf16_dense_tflops": 165.2,
    "memory_bandwidth_gb_per_s": 1008,
    "peer_gb_per_s": [4, 25],
    "peer_to_peer": False,
    "host_gb_per_s": [25, 32],
}  # Ada whitepaper; interconnects.yaml's host path
RTX_4090_MIB = 24564  # nvidia-smi memory.total of an RTX 4090


def _training(config, gpus, cards, seq_len, measured, **extra):
    return {
        "kind": "training",
        "config": (DATA / "models" / f"{config}.json").read_text(encoding="utf-8"),
        "cards": cards,
        "framework": "fsdp2",
        "zero_stage": 3,
        "seq_len": seq_len,
        "micro_batch": 1,
        "reserve_mib": 2048,
        "gpus": gpus,
        "tokens": 10**8,
        "calibration": measured.calibration.as_job(),
        **extra,
    }


def test_a_job_no_machine_holds_warns_of_several_machines(measured):
    """Mixed-precision Adam keeps 16 bytes per parameter (ZeRO paper: 2 + 2 + 12). Llama 3.1 70B:
    70.6e9 x 16 / 8 = 141 GB per GPU even sharded over 8 cards, beyond a 24 GB RTX 4090: no
    machine of them holds it. Llama 3.1 8B on one H100: 8.03e9 x 16 = 128 GB does not fit 80 GB,
    but 16 GB per GPU over 8 does: one machine holds it, no warning."""
    big = answer_job(
        _training(
            "llama-3.1-70b", [{"key": "rtx-4090", "memory_mib": RTX_4090_MIB, "speed": RTX_4090}], 1, 2048, measured
        )
    )
    assert not big["fits"] and big["warnings"] == ["several_machines"]
    one = answer_job(
        _training(
            "llama-3.1-8b",
            [{"key": "h100", "memory_mib": MEMORY_MIB["h100"], "speed": SPEEDS["h100"]}],
            1,
            2048,
            measured,
        )
    )
    assert not one["fits"] and "warnings" not in one


def test_a_link_bound_job_warns_that_published_runs_add_tensor_parallelism(measured):
    """ZeRO-3 moves 3 x (n - 1) / n x 2P bytes per GPU and step (ZeRO paper section 7.2): for
    Llama 3.1 8B on 8 GPUs 42 GB, at least 1.7 s over the RTX 4090's host path (25 GB/s at its
    fastest), while 512 tokens of compute take well under a second even at a quarter of the
    card's peak; over 8 H100 (450 GB/s NVLink) the same bytes take 0.09 s against seconds of
    compute for 2 x 8,192 tokens."""
    gpus = [{"key": "rtx-4090", "memory_mib": RTX_4090_MIB, "speed": RTX_4090}]
    slow = answer_job(_training("llama-3.1-8b", gpus, 8, 512, measured))
    assert slow["fits"] and "communication_bound" in slow["run"]["warnings"]
    assert slow["fits"][0]["time"]["communication_s"][0] >= 3 * 7 / 8 * 2 * 8.03e9 / 25e9 * 0.99
    fast = answer_job(_job(measured.calibration.as_job()))
    assert "communication_bound" not in fast["run"].get("warnings", [])


def _coded(key, source, share, code, family="a100"):
    return Point(key, source, "a100-80gb", family, "dense", "full", "none", share, code)


def test_r3_reads_a_class_of_its_model_code_and_r2_every_code():
    """By hand: on A100, two transformers-code sources at 0.2 and 0.3, two own-code sources at 0.6
    and 0.7. R3 keys each run by its code: a transformers-code job's centre is median(0.2, 0.3) =
    0.25 and an own-code job's median(0.6, 0.7) = 0.65; R2 reads all four: median = 0.45, whatever
    the job's code. The range holds the class's own runs (rule 4)."""
    runs = (
        _coded("t1", "t", 0.2, "transformers"),
        _coded("u1", "u", 0.3, "transformers"),
        _coded("o1", "o", 0.6, "own"),
        _coded("p1", "p", 0.7, "own"),
    )
    for rule, code, centre in (
        (LOOP_RULE, "transformers", 0.25),
        (LOOP_RULE, "own", 0.65),
        (RULE, "transformers", 0.45),
        (RULE, "own", 0.45),
    ):
        points = tuple(rule.keyed(p) for p in runs)
        found = class_range(points, ("a100", "dense", "full", "none", code), rule)
        mine = [p.share for p in runs if rule is RULE or p.code == code]
        assert found.runs == len(mine) and found.exact
        assert source_centre([p for p in points if rule is RULE or p.code == code]) == pytest.approx(centre)
        assert found.low <= min(mine) and max(mine) <= found.high


def test_r3_keeps_the_model_code_when_it_widens_a_class_until_the_last_step():
    """A transformers-code job on A100 with transformers-code runs only on H100 and own-code runs
    only on A100: R3 reads the H100 runs (every family, the same code: the third widening step),
    not the A100 runs of the other code; R2 reads the A100 runs (its own class)."""
    runs = (_coded("h1", "h", 0.3, "transformers", family="hopper"), _coded("o1", "o", 0.7, "own"))
    found = class_range(
        tuple(LOOP_RULE.keyed(p) for p in runs), ("a100", "dense", "full", "none", "transformers"), LOOP_RULE
    )
    assert found.used == (ANY, "dense", "full", "none", "transformers") and found.sources == ("h",)
    found = class_range(tuple(RULE.keyed(p) for p in runs), ("a100", "dense", "full", "none", "transformers"), RULE)
    assert found.used[0] == "a100" and found.sources == ("o",)
    only_own = (_coded("o1", "o", 0.7, "own"),)  # no run of the job's code anywhere: the last step, every run
    found = class_range(
        tuple(LOOP_RULE.keyed(p) for p in only_own), ("a100", "dense", "full", "none", "transformers"), LOOP_RULE
    )
    assert found.used == (ANY,) * 5 and found.level == 5


def test_the_guides_scripts_build_transformers_models():
    """The guide's model code (what a finder job is under R3) read from its scripts' syntax trees:
    each builds its model with transformers' AutoModelForCausalLM."""
    import ast

    for name in ("train_hf.py", "train_fsdp2.py"):
        tree = ast.parse((REPO_ROOT / "snippets" / name).read_text(encoding="utf-8"))
        imported = {
            (node.module, alias.name)
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        built = {
            node.func.value.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        }
        assert ("transformers", "AutoModelForCausalLM") in imported and "AutoModelForCausalLM" in built, name
    assert SCRIPTS_MODEL_CODE == "transformers" and job_class("a100", False, "full", False)[4] == SCRIPTS_MODEL_CODE


@pytest.mark.parametrize(
    "row",
    [
        # a share JSON writes as a 400-digit integer: Python's json reads an int that float()
        # cannot hold (OverflowError); the page's JavaScript would have sent null (an error line)
        ["k", "s", "a100-80gb", "a100", "dense", "full", "none", 10**400, "*"],
        [["k"], "s", "a100-80gb", "a100", "dense", "full", "none", 0.5, "*"],  # a key that is no string
        "kxgadfn1*",  # nine characters, not nine values (family "a" is a name)
        ["k", "s", "a100-80gb", "a100", "dense", "full", "none", 0.5, "onw"],  # no model code of MODEL_CODES
    ],
    ids=["huge share", "list key", "string row", "unknown model code"],
)
def test_a_malformed_calibration_row_is_one_error_not_a_traceback(measured, row):
    """``answer_json`` (what the page's worker calls; the command line prints the same text)
    answers bad input with ``{"error": ...}`` naming the field: a calibration row that is not
    eight strings and a share in (0, 1] is such input, whatever JSON value stands in it."""
    from vram.job import answer_json

    calibration = measured.calibration.as_job() | {"names": {"a100": "A100", "a": "A"}, "points": [row]}
    answer = json.loads(answer_json(json.dumps(_job(calibration))))
    assert answer.get("error", {}).get("field") == "calibration", answer


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "    collected_after: R2\n",
            "    collected_after: R9\n",
            r"^sources\.[a-z0-9-]+\.collected_after: 'R9' is not one of R0, R1, R2, R3$",
        ),
        (
            "    model_code: own\n",
            "    model_code: onw\n",
            r"^measurements\.[a-z0-9.-]+\.model_code: 'onw' is not one of transformers, own$",
        ),
        ("    model_code: own\n", "", r"^measurements\.[a-z0-9.-]+\.model_code: '' is not one of transformers, own$"),
    ],
    ids=["rule no one froze", "model code typo", "no model code"],
)
def test_the_command_lines_data_names_a_bad_rule_or_model_code(tmp_path, old, new, message):
    """The command line reads measurements.yaml without the site's schema: a ``collected_after``
    no rule has (once ``'R9' is not in list``) or a training run's model code R3 would read as a
    class of its own (once silently) is one line naming the entry and key."""
    folder = tmp_path / "data"
    shutil.copytree(DATA, folder)
    path = folder / "measurements.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_measured_data(folder)


def test_a_calibration_comes_back_from_its_json_with_each_runs_model_code(measured):
    """``Calibration.as_job`` -> JSON text -> ``calibration_from_job`` gives the same points,
    model code included, for the site's calibration (R2: every code ANY) and for one keyed as R3
    reads it (each training run's own code), which the page's worker would read the same way."""
    from vram.calibration import Calibration, calibration_from_job, calibration_points

    site = measured.calibration
    loop = Calibration(
        tuple(calibration_points(measured.points, measured.measurements, measured.link_shares, LOOP_RULE)),
        site.families,
        site.names,
    )
    assert {p.code for p in loop.points if p.arch != "serving"} == {"transformers", "own"}
    for calibration in (site, loop):
        back = calibration_from_job(json.loads(json.dumps(calibration.as_job())))
        assert back.points == calibration.points and back == calibration
