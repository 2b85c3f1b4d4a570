"""All-bf16 training under DDP (transformers 5's Trainer on a model loaded in bf16): the
calculator against the allocator.

``ddp_bf16_worker.py`` runs a small transformers Llama in bf16 with ``torch.optim.AdamW``
as rank 0 of N under PyTorch's fake process group (DDP's buckets are real, collectives
no-ops) and reports the live bytes of the profiler's allocator events while
``optimizer.step()`` runs. The calculator's figure (``framework_memory("fsdp2", ...,
zero_stage=0, optimizer="adamw-bf16")``) must equal them: 2 + 2 + 4 B per parameter of
states, the step's bf16 temporaries (``foreach`` 2 B per parameter, ``forloop`` 4 B per
element of the largest tensor, ``fused`` none) and, on more than one GPU, DDP's bf16 buckets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vram
from tests.card_sources import memory_mib
from tests.snippets.launch import worker_report
from vram.job import answer_job

WORKER = Path(__file__).resolve().parent / "ddp_bf16_worker.py"
TOL = 0.001  # the live bytes also hold the rotary buffers and the token ids (0.03 %)
SCENARIOS = {
    "bf16_ddp1_foreach": (1, "foreach"),
    "bf16_ddp1_fused": (1, "fused"),
    "bf16_ddp1_forloop": (1, "forloop"),
    "bf16_ddp2_foreach": (2, "foreach"),
    "bf16_ddp2_fused": (2, "fused"),
}


@pytest.fixture(scope="module")
def report(zygote, tmp_path_factory) -> dict:
    return worker_report(zygote, WORKER, tmp_path_factory.mktemp("ddp_bf16") / "report.json")


@pytest.fixture(scope="module")
def shape(report) -> vram.ModelShape:
    return vram.model_shape(vram.model_config_from_dict(report["config"]))


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_step_peak_matches_the_allocator(report, shape, name):
    n, impl = SCENARIOS[name]
    measured = report[name]
    assert measured["dtypes"] == ["torch.bfloat16"]  # nothing in fp32: no master copy, bf16 moments
    assert shape.params == measured["params"]
    memory = vram.framework_memory("fsdp2", shape, n, 0, "adamw-bf16", optimizer_impl=impl)
    assert memory.model_states_bytes == sum(
        measured[k] for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes")
    )
    assert measured["step_peak_bytes"] == pytest.approx(memory.per_gpu_bytes, rel=TOL)
    # when the step starts (AdamW creates its moments in its first step): weights, gradients and
    # backward's working bytes (DDP's buckets)
    assert measured["before_step_bytes"] == pytest.approx(
        memory.weights_bytes + memory.gradients_bytes + memory.backward_working_bytes, rel=TOL
    )


def test_the_step_temporaries_are_vram_optimizer_steps(report, shape):
    """What each implementation adds at the step, measured as the difference with ``fused``."""
    from vram.optimizer_step import step_temporary_bytes

    fused = report["bf16_ddp1_fused"]["step_peak_bytes"]
    largest = report["bf16_ddp1_forloop"]["largest_tensor"]
    for impl in ("foreach", "forloop"):
        extra = report[f"bf16_ddp1_{impl}"]["step_peak_bytes"] - fused  # a few bytes of scalars aside
        assert extra == pytest.approx(step_temporary_bytes("adamw-bf16", impl, shape.params, largest), rel=TOL), impl
    assert report["bf16_ddp2_fused"]["step_peak_bytes"] - fused == pytest.approx(2 * shape.params, rel=TOL)  # buckets


def test_the_finder_job_offers_it_under_ddp_only(shared_configs):
    config = (shared_configs / "llama-3.1-8b.json").read_text(encoding="utf-8")
    cards = [{"key": "h100", "memory_mib": memory_mib("h100")}]
    job = {
        "kind": "training",
        "config": config,
        "framework": "fsdp2",
        "zero_stage": 0,
        "optimizer": "adamw-bf16",
        "seq_len": 2048,
        "gpus": cards,
        "reserve_mib": 2048,
    }
    answer = answer_job(job)
    params = answer["params"]
    assert answer["per_gpu_bytes"] == 10 * params  # 2 + 2 + 4, and foreach's bf16 temporary at the step
    assert [f["gpu"] for f in answer["fits"]] == ["h100"]  # 80.3 GB at the step, 32.1 GB + activations in backward
    assert answer_job(job | {"optimizer_impl": "fused"})["per_gpu_bytes"] == 8 * params  # the Trainer's default
    for stage in (2, 3):
        with pytest.raises(vram.JobError) as refused:
            answer_job(job | {"zero_stage": stage})
        assert (refused.value.field, refused.value.code) == ("optimizer", "not_offered")


def test_the_command_line_estimates_it(cli, shared_configs):
    proc = cli(
        "estimate",
        "--config",
        str(shared_configs / "llama-3.1-8b.json"),
        "--framework",
        "fsdp2",
        "--optimizer",
        "adamw-bf16",
        "--world-size",
        "2",
        "--zero-stage",
        "0",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["stage_name"] == "DDP (all in bf16)"  # no autocast: the model itself is bf16
    assert found["per_gpu_bytes"] == 12 * found["params"]  # 2 + 2 + 4, foreach's 2 and the buckets' 2 at the step
