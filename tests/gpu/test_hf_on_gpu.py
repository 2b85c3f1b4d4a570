"""The Hugging Face path on GPUs (skipped without CUDA; a failure under REQUIRE_GPU=1): every
launch line of the guide that runs train_hf.py, the offload variants that the CPU rehearsal
leaves out, and zero_to_hf.py on the ZeRO-3 checkpoints they leave.

The lines and the checks are the CPU rehearsal's (tests/snippets/hf_checks.py), on NCCL
with one process per GPU (``n``, at least 2 and dividing the 8 samples of a step) instead of
2 gloo processes, and with record_hf.py itself as the worker (no zygote: a process that
touched CUDA must not fork). On GPUs accelerate switches to FSDP and DeepSpeed by itself, so
record_hf.py does not step in, and DDP says ``MULTI_GPU``. The offload lines
(``ds_zero2_offload.json``, ``ds_zero3_offload.json`` through the accelerate DeepSpeed
line) build DeepSpeed's CPU Adam on first use (g++, ninja, Python headers): the GPU job
has them; ``make test`` does not pay the build (about 138 CPU-seconds).
"""

from __future__ import annotations

import json
import sys

import pytest
import torch

from tests.snippets.hf_checks import (
    CHECKPOINTS,
    LAUNCH_HF,
    SAMPLES_PER_STEP,
    STEPS,
    Launches,
    check_distribution,
    check_lora,
    check_loss,
    check_world_size,
    check_zero_to_fp32_safe_serialization,
    check_zero_to_hf,
    guide_lines,
    offload_lines,
)
from tests.snippets.launch import run

pytestmark = pytest.mark.gpu

LINES = [*guide_lines(), *offload_lines()]


def processes() -> int:
    """One process per GPU, as the guide's lines start them."""
    n = torch.cuda.device_count()
    if n < 2 or SAMPLES_PER_STEP % n:
        pytest.fail(f"the HF rehearsal on GPUs needs 2, 4 or 8 GPUs, not {n}", pytrace=False)
    return n


@pytest.fixture(scope="module")
def launches(extracted, tmp_path_factory) -> tuple[Launches, dict[str, int], int]:
    n = processes()
    launches = Launches(extracted, tmp_path_factory.mktemp("hf-gpu"))
    launches.jobs({**guide_lines(), **offload_lines()}, n)
    env = {"HF_HOME": str(launches.root / "hf-home"), "TOKENIZERS_PARALLELISM": "false", "NCCL_CHECK_ALLOW_CPU": ""}
    done = run([sys.executable, str(LAUNCH_HF), str(launches.root / "jobs.json")], env, 1500, launches.root)
    assert done.returncode == 0, done.stderr[-3000:]
    return launches, json.loads(done.stdout.splitlines()[-1]), n


@pytest.fixture(params=LINES)
def line(request, launches):
    name = request.param
    found, status, n = launches
    for key in (name, f"{name}-reference"):
        assert status[key] == 0, f"{key}: {found.log(key)[-3000:]}"
    return name, found.records(name), found.records(f"{name}-reference")[0], found.log(name), n


def test_every_gpu_is_one_rank_of_one_world(line):
    _, ranks, _, log, n = line
    check_world_size(ranks, log, n)


def test_the_launch_distributes_as_the_guide_says_on_gpus(line):
    name, ranks, _, _, n = line
    check_distribution(name, ranks, n, ddp_type="MULTI_GPU")


def test_lora_trains_only_the_adapters_on_gpus(launches):
    found, status, _ = launches
    assert status["LORA"] == 0, found.log("LORA")[-3000:]
    check_lora(found.records("LORA"), found.records("DDP"))


def test_loss_matches_a_single_gpu_reference(line):
    name, ranks, reference, _, _ = line
    check_loss(name, ranks, reference)


@pytest.fixture(scope="module", params=list(CHECKPOINTS))
def checkpoint(request, launches):
    found, status, _ = launches
    assert status[request.param] == 0, found.log(request.param)[-3000:]
    return request.param, found.root / request.param / "out" / f"checkpoint-{STEPS}"


def test_zero3_checkpoint_from_gpus_becomes_a_folder_from_pretrained_loads(checkpoint, extracted, tmp_path):
    name, folder = checkpoint
    check_zero_to_hf(extracted, folder, CHECKPOINTS[name] == "tied", tmp_path)


def test_zero_to_fp32_with_safe_serialization_stops_on_a_tied_model_from_gpus(checkpoint, tmp_path):
    name, folder = checkpoint
    check_zero_to_fp32_safe_serialization(folder, CHECKPOINTS[name] == "tied", tmp_path)
