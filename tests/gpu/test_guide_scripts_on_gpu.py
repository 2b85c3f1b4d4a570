"""The guide's claims that only a GPU can check (skipped without CUDA; a failure under
REQUIRE_GPU=1): what a NCCL timeout really does to the NCCL check, and the FSDP2 script
on every visible GPU with its peak-memory line. Both also pass on a single GPU."""

from __future__ import annotations

import json
import re

import pytest
import torch
from torch.distributed.checkpoint import FileSystemReader

from tests.snippets.hf_checks import check_dcp_to_hf
from tests.snippets.launch import INJECT_FAULT, torchrun
from vram import model_states_per_gpu

pytestmark = pytest.mark.gpu

ON_GPU = {"NCCL_CHECK_ALLOW_CPU": "", "NCCL_CHECK_MIB": "64"}


def gpus() -> int:
    return torch.cuda.device_count()


def test_a_nccl_timeout_is_the_watchdogs_abort_not_the_scripts_except(extracted):
    """docs/index.*.md, the NCCL check: with NCCL the watchdog logs 'Watchdog caught
    collective operation timeout' for the ALLREDUCE, the process is aborted (SIGABRT,
    exitcode -6 in torchrun's summary) and torchrun exits with status 1; the script's own
    'did not finish within' line (gloo only) never prints."""
    timeout_s = 10
    run = torchrun(
        INJECT_FAULT,
        "stall",
        extracted / "nccl_check.py",
        nproc=gpus(),
        timeout=300,
        env={**ON_GPU, "NCCL_CHECK_TIMEOUT": str(timeout_s)},
    )
    assert run.returncode == 1, run.stderr[-4000:]
    assert re.search(r"Watchdog caught collective operation timeout: WorkNCCL\(.*OpType=ALLREDUCE", run.stderr), (
        run.stderr[-4000:]
    )
    assert "To avoid data inconsistency, we are taking the entire process down" in run.stderr
    assert "ChildFailedError" in run.stderr and re.search(r"exitcode\s*:\s*-6\b", run.stderr)
    assert "did not finish within" not in run.stderr
    assert "correct" not in run.stdout


def test_fsdp2_script_on_every_gpu_reports_its_peak_and_resumes(extracted, tmp_path):
    """train_fsdp2.py (--tiny: the GPU runner downloads nothing) trains on every GPU, prints
    each rank's peak after the first step, resumes, and its last checkpoint becomes a folder
    from_pretrained loads through dcp_to_hf.py. The peak holds at least the model states the calculator gives for FSDP2 /
    ZeRO-3 with fp32 weights and AdamW (16 bytes per parameter, divided by the ranks),
    with the parameters counted from the DCP checkpoint the run wrote."""
    n = gpus()
    first = torchrun(
        extracted / "train_fsdp2.py",
        "--tiny",
        "--out",
        tmp_path / "ckpt",
        "--epochs",
        "1",
        nproc=n,
        env={"NCCL_CHECK_ALLOW_CPU": ""},
        timeout=600,
        cwd=tmp_path,
    )
    assert first.returncode == 0, first.stderr[-4000:]
    peaks = dict(re.findall(r"^rank (\d+): peak ([\d.]+) GB allocated$", first.stdout, re.MULTILINE))
    assert sorted(map(int, peaks)) == list(range(n))
    metadata = FileSystemReader(tmp_path / "ckpt" / "epoch-1" / "model").read_metadata().state_dict_metadata
    tied = json.loads((tmp_path / "ckpt" / "epoch-1" / "config.json").read_text(encoding="utf-8"))[
        "tie_word_embeddings"
    ]
    # a tied head is saved under both names, once in memory
    params = sum(tensor.size.numel() for key, tensor in metadata.items() if not (tied and key == "lm_head.weight"))
    states_gb = model_states_per_gpu(params, n, 3, "adamw-fp32").total_bytes / 1e9
    for rank, peak in peaks.items():
        assert float(peak) >= round(states_gb, 3), (rank, peak, states_gb)

    resumed = torchrun(
        extracted / "train_fsdp2.py",
        "--tiny",
        "--out",
        tmp_path / "ckpt",
        "--epochs",
        "2",
        nproc=n,
        env={"NCCL_CHECK_ALLOW_CPU": ""},
        timeout=600,
        cwd=tmp_path,
    )
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert "resumed from" in resumed.stdout and re.findall(r"^epoch (\d+):", resumed.stdout, re.MULTILINE) == ["1"]
    # the DCP checkpoint the GPUs wrote, through the guide's dcp_to_hf.py (the CPU rehearsal's checks)
    check_dcp_to_hf(extracted, tmp_path / "ckpt" / "epoch-2", tmp_path / "hf")


PROBE_SEGMENTS = (
    "import torch; x = torch.empty(64 * 2**20, device='cuda'); "
    "print(sorted({bool(s.get('is_expandable')) for s in torch.cuda.memory._snapshot()['segments']}))"
)


@pytest.mark.parametrize(
    "env, expandable", [({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, "[True]"), ({}, "[False]")]
)
def test_the_allocator_variable_the_guide_names_turns_on_expandable_segments(env, expandable):
    """docs: PYTORCH_ALLOC_CONF=expandable_segments:True (the PyTorch 2.13 name); the
    caching allocator's segments say whether they can grow."""
    import os
    import subprocess
    import sys

    clean = {
        key: value for key, value in os.environ.items() if key not in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
    }
    proc = subprocess.run(
        [sys.executable, "-c", PROBE_SEGMENTS],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **env},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == expandable
