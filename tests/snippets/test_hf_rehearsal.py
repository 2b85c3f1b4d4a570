"""train_hf.py, extracted from the built site, run by every accelerate / Trainer launch line of
the guide (snippets/launch/accelerate.sh, snippets/launch/configs.sh), really distributed on
CPU: 2 processes over gloo, a tiny Qwen3 built from a config (``--tiny``, no download).

Each line runs unchanged but for the number of processes (2, not 4), a free port, the
tiny model's arguments and the worker wrapper ``record_hf.py`` (what the Trainer did, per
rank). What distribution means is asserted, not an exit status: the world size the script
sees is 2 on both ranks; under FSDP2 every parameter is a DTensor sharded (``Shard(0)``) over
a mesh of 2 with half of its elements on each rank; under ZeRO-3 every parameter's local
partition is half of it; under ZeRO-2 the fp32 optimizer partition is half of the model; under
DDP and LoRA the model is wrapped in DistributedDataParallel. And the loss after each of
``STEPS`` optimizer steps equals the loss of a single-process reference (the same line with
one process and twice the micro-batch: the same samples per step) within ``TOLERANCE``
(the checks and constants are tests/snippets/hf_checks.py, shared with the GPU job's
tests/gpu/test_hf_on_gpu.py).

Cost: each worker the launchers start (``script_zygote.py worker record_hf.py ...``,
standard library only) is forked from the session's zygote (``zygote`` in tests/conftest.py,
``script_zygote.py serve``), which imported torch, transformers, accelerate, DeepSpeed and PEFT
once, so 18 workers do not pay about 6 CPU-seconds of imports each; the launchers still start
one worker process per rank with their own environment.

Two copies that each train alone (the fallback a launch on CPU gives without a process group)
see world size 1 and fail. On CPU accelerate itself turns FSDP and DeepSpeed into DDP
(``record_hf.py`` says how the rehearsal lets them run): README, "The Hugging Face path".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.snippets.hf_checks import (
    CHECKPOINTS,
    LAUNCH_HF,
    RECORD_HF,
    SNIPPETS,
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
from tests.snippets.launch import SCRIPT_ZYGOTE, run

pytestmark = pytest.mark.slow

PROCESSES = 2
LINES = list(guide_lines())


@pytest.fixture(scope="module")
def launches(extracted, tmp_path_factory, zygote) -> tuple[Launches, dict[str, int]]:
    """Every line on 2 processes and each reference on 1, from one launcher process; it and
    every worker forked from the session's zygote (what record_hf.py and train_hf.py import:
    ``launch.WORKER_IMPORTS``)."""
    launches = Launches(extracted, tmp_path_factory.mktemp("hf"), worker=(SCRIPT_ZYGOTE, "worker", RECORD_HF))
    launches.jobs(guide_lines(), PROCESSES)
    env = {"HF_HOME": str(launches.root / "hf-home"), "TOKENIZERS_PARALLELISM": "false"}
    # the launcher process (accelerate's CLI, torchrun's agent) forked from the zygote too
    done = run(
        [sys.executable, str(SCRIPT_ZYGOTE), "worker", str(LAUNCH_HF), str(launches.root / "jobs.json")],
        {**env, **zygote},
        1200,
        launches.root,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return launches, json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(params=LINES)
def line(request, launches):
    name = request.param
    found, status = launches
    for key in (name, f"{name}-reference"):
        assert status[key] == 0, f"{key}: {found.log(key)[-3000:]}"
    return name, found.records(name), found.records(f"{name}-reference")[0], found.log(name)


def test_two_processes_see_world_size_two(line):
    _, ranks, _, log = line
    check_world_size(ranks, log, PROCESSES)


def test_the_launch_distributes_as_the_guide_says(line):
    name, ranks, _, _ = line
    check_distribution(name, ranks, PROCESSES, ddp_type="MULTI_CPU")


def test_deepspeed_compiles_no_cpu_collective(launches):
    """record_hf.py keeps DeepSpeed from JIT-compiling its shared-memory CPU collective (used
    by ``inference_all_reduce`` only; about a minute of a C++ compiler on 2 cores, again after
    each change of virtual environment): DeepSpeed prints a line when it builds or loads it."""
    found, status = launches
    for name in status:
        assert "deepspeed_shm_comm" not in found.log(name), name


def test_lora_trains_only_the_adapters(launches):
    found, status = launches
    assert status["LORA"] == 0, found.log("LORA")[-3000:]
    check_lora(found.records("LORA"), found.records("DDP"))


def test_loss_matches_a_single_process_reference(line):
    name, ranks, reference, _ = line
    check_loss(name, ranks, reference)


@pytest.fixture(scope="module", params=list(CHECKPOINTS))
def checkpoint(request, launches) -> tuple[str, Path]:
    found, status = launches
    assert status[request.param] == 0, found.log(request.param)[-3000:]
    return request.param, found.root / request.param / "out" / f"checkpoint-{STEPS}"


def test_zero3_checkpoint_becomes_a_folder_from_pretrained_loads(checkpoint, extracted, tmp_path):
    """A real ZeRO-3 checkpoint (2 gloo ranks) of a tied and of an untied model, through the
    guide's zero_to_hf.py (hf_checks.check_zero_to_hf)."""
    name, folder = checkpoint
    check_zero_to_hf(extracted, folder, CHECKPOINTS[name] == "tied", tmp_path)


def test_zero_to_fp32_with_safe_serialization_stops_on_a_tied_model(checkpoint, tmp_path):
    name, folder = checkpoint
    check_zero_to_fp32_safe_serialization(folder, CHECKPOINTS[name] == "tied", tmp_path)


def test_the_gpu_jobs_offload_check_needs_deepspeeds_cpu_adam(launches):
    """The GPU job's check of the offload lines (tests/gpu/test_hf_on_gpu.py, through
    hf_checks.check_distribution) refuses a ZeRO run whose optimizer is not DeepSpeedCPUAdam:
    these CPU ZeRO-2/3 runs (torch's AdamW) pass as themselves, fail as offload runs, and
    pass as offload runs once their record names DeepSpeedCPUAdam."""
    found, _ = launches
    for name, offload in (("ZERO2", "ZERO2_OFFLOAD"), ("ZERO3", "ZERO3_OFFLOAD")):
        ranks = found.records(name)
        check_distribution(name, ranks, PROCESSES, ddp_type="MULTI_CPU")
        assert {rank["zero"]["base_optimizer"] for rank in ranks} == {"AdamW"}
        with pytest.raises(AssertionError):
            check_distribution(offload, ranks, PROCESSES, ddp_type="MULTI_CPU")
        forged = [{**rank, "zero": {**rank["zero"], "base_optimizer": "DeepSpeedCPUAdam"}} for rank in ranks]
        check_distribution(offload, forged, PROCESSES, ddp_type="MULTI_CPU")


def test_the_gpu_job_runs_every_line_and_the_offload_variants():
    """tests/gpu/test_hf_on_gpu.py rehearses the CPU rehearsal's lines and the accelerate
    DeepSpeed line with each offload JSON of the guide (files that exist in snippets/)."""
    from tests.gpu import test_hf_on_gpu

    assert test_hf_on_gpu.LINES == [*LINES, "ZERO2_OFFLOAD", "ZERO3_OFFLOAD"]
    for name, words in offload_lines().items():
        (config,) = [word for word in words if word.endswith(".json")]
        assert "offload" in config and (SNIPPETS / "configs" / config).is_file()
        assert (
            json.loads((SNIPPETS / "configs" / config).read_text(encoding="utf-8"))["zero_optimization"][
                "offload_optimizer"
            ]["device"]
            == "cpu"
        )
        assert words[words.index(config) + 1 :] == ["train_hf.py"] and words[:2] == ["accelerate", "launch"]
