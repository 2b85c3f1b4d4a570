"""Gradient accumulation in a job: the global batch and the optimizer steps, the run settled once
(``vram.job.settle_run``) for the finder and ``python -m vram time``, bad input in one line.

Oracles: transformers' Trainer logs the batch it trains with as "Total train batch size (w.
parallel, distributed & accumulation) = per_device_train_batch_size x gradient_accumulation_steps
x world_size" (``trainer.py``, ``_inner_training_loop``); the collectives each framework repeats
per micro-batch are measured in tests/vram/test_fsdp2_torchrun.py
(``test_gradient_accumulation_repeats_what_the_frameworks_repeat``).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO_ROOT
from tests.vram.test_timing_lora_serving import run_cli  # python -m vram in this process
from vram.calibration import load_measured_data
from vram.catalogue import card_speed, load_catalogue
from vram.job import JobError, answer_job, answer_json

QWEN_05B = REPO_ROOT / "tests" / "vram" / "configs" / "qwen2.5-0.5b.json"
# a card of made-up speeds: times are compared between answers, never with these
SPEED = {
    "bf16_dense_tflops": 100.0,
    "memory_bandwidth_gb_per_s": 1000.0,
    "peer_gb_per_s": [10.0, 20.0],
    "peer_to_peer": True,
    "host_gb_per_s": [5.0, 10.0],
}


def _job(**fields) -> dict:
    return {
        "kind": "training",
        "config": QWEN_05B.read_text(encoding="utf-8"),
        "cards": 4,
        "framework": "fsdp2",
        "zero_stage": 3,
        "seq_len": 1024,
        "micro_batch": 2,
        "reserve_mib": 2048,
        "gpus": [{"key": "h100", "memory_mib": 81559, "speed": SPEED}],
        **fields,
    }


@pytest.mark.parametrize("kind", ["training", "lora"])
def test_the_global_batch_is_the_trainers(kind):
    """4 cards x 2 sequences x 8 accumulated micro-batches of 1,024 tokens: 64 sequences, 65,536
    tokens per optimizer step; 10^9 tokens take 15,259 steps (the last one partial)."""
    answer = answer_job(_job(kind=kind, grad_accum=8, tokens=10**9))
    assert answer["batch"] == {
        "micro_batch": 2,
        "grad_accum": 8,
        "cards": 4,
        "global_batch": 2 * 8 * 4,
        "tokens_per_step": 2 * 8 * 4 * 1024,
        "optimizer_steps": -(-(10**9) // 65_536),
    }
    assert answer["batch"]["optimizer_steps"] == 15_259


def test_memory_per_micro_batch_does_not_change_with_accumulation():
    one, eight = answer_job(_job()), answer_job(_job(grad_accum=8))
    assert (one["parts"], one["activations"], one["fits"][0]["margin_bytes"]) == (
        eight["parts"],
        eight["activations"],
        eight["fits"][0]["margin_bytes"],
    )


def test_an_optimizer_step_of_n_micro_batches_takes_longer_and_trains_as_many_tokens():
    """The run's tokens take N times fewer optimizer steps, each at least N micro-batches' compute."""
    one, eight = (answer_job(_job(grad_accum=n))["fits"][0]["time"] for n in (1, 8))
    assert eight["compute_s"] == pytest.approx([8 * t for t in one["compute_s"]])
    assert eight["step_s"][0] >= 8 * one["compute_s"][0]
    assert eight["run_s"][0] <= one["run_s"][0] * 1.0000001  # the same tokens, no more communication per token


@pytest.mark.parametrize("value", [0, -1, 2**16 + 1, 1.5, "4", True])
def test_a_bad_accumulation_names_the_field(value):
    with pytest.raises(JobError) as refused:
        answer_job(_job(grad_accum=value))
    assert (refused.value.field, refused.value.code) == ("grad_accum", "integer")
    error = json.loads(answer_json(json.dumps({**_job(grad_accum=value), "gpus": []})))["error"]
    assert error["field"] == "grad_accum" and "\n" not in error["message"]


def test_the_command_line_says_it_in_one_line():
    code, out, err = run_cli("job", "--config", str(QWEN_05B), "--grad-accum", "0")
    assert code == 2 and out == "" and err.count("\n") == 1 and "grad_accum" in err
    code, out, err = run_cli(
        "time", "--config", str(QWEN_05B), "--gpu", "h100", "--gpus", "4", "--zero-stage", "3", "--grad-accum", "x"
    )
    assert code == 2 and err.count("\n") == 1 and "grad_accum" in err


@pytest.mark.parametrize(
    "flags, job",
    [
        (["--zero-stage", "0", "--framework", "fsdp2"], {"zero_stage": 0}),
        (["--zero-stage", "3", "--framework", "fsdp2"], {"zero_stage": 3}),
        (["--zero-stage", "2", "--framework", "deepspeed"], {"zero_stage": 2, "framework": "deepspeed"}),
        (
            [
                "--zero-stage",
                "3",
                "--framework",
                "fsdp2",
                "--task",
                "lora",
                "--base-dtype",
                "nf4",
                "--offload-optimizer",
                "--offload-params",
            ],
            {"zero_stage": 3, "kind": "lora", "base_dtype": "nf4", "offload": "optimizer+params"},
        ),
    ],
)
def test_vram_time_times_the_finders_run(flags, job):
    """``python -m vram time --grad-accum 4`` and the finder's answer for the same job: one run
    (``settle_run``), the same optimizer step and run, the same global batch."""
    h100 = load_catalogue()[0]["h100"]
    answer = answer_job(
        {
            **_job(grad_accum=4, tokens=10**9, seq_len=2048, micro_batch=1),
            **job,
            "reserve_mib": 2048,
            "gpus": [{"key": "h100", "memory_mib": 81559, "speed": card_speed(h100)}],
            "calibration": load_measured_data().calibration.as_job(),
        }
    )  # the published runs, as the CLI
    code, out, err = run_cli(
        "time",
        "--config",
        str(QWEN_05B),
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--grad-accum",
        "4",
        "--tokens",
        "1e9",
        "--json",
        *flags,
    )
    assert code == 0, err
    data = json.loads(out)
    time = answer["fits"][0]["time"]
    assert (data["step_s"], data["run_s"]) == (time["step_s"], time["run_s"])
    assert (data["global_batch"], data["tokens_per_step"], data["optimizer_steps"]) == tuple(
        answer["batch"][key] for key in ("global_batch", "tokens_per_step", "optimizer_steps")
    )
