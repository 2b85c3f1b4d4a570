"""Checks that need CUDA GPUs: the published scripts on every visible GPU, and the
calculator against the memory PyTorch really allocates. Skipped without a GPU; with
REQUIRE_GPU=1 (``make gpu-check``) a skip is a failure. They use every visible GPU and
also pass on a single one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.snippets.launch import RECORD_TRAINING, torchrun
from verify.nccl_output import parse_rank_lines
from verify.record import BUSBW_PLAUSIBLE_MAX_GB_PER_S
from vram import model_states_per_gpu

pytestmark = pytest.mark.gpu

PROBE = Path(__file__).resolve().parent / "memory_probe.py"
ON_GPU = {"NCCL_CHECK_ALLOW_CPU": "", "NCCL_CHECK_MIB": "256"}  # no CPU opt-in: a GPU or a failure
MIB = 2**20


def gpus() -> int:
    return torch.cuda.device_count()


def test_nccl_check_on_every_gpu(extracted):
    n = gpus()
    run = torchrun(extracted / "nccl_check.py", nproc=n, env=ON_GPU, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    lines = parse_rank_lines(run.stdout)
    assert [line.device for line in lines] == [f"cuda:{line.local_rank}" for line in lines]
    for line in lines:
        assert line.checked_sum == n * (n + 1) // 2
        if n > 1:
            assert 1 < line.busbw_gb_per_s <= BUSBW_PLAUSIBLE_MAX_GB_PER_S  # any real interconnect moves > 1 GB/s
        else:
            assert line.busbw_gb_per_s is None  # one GPU: nothing crossed a link, no busbw claimed


def test_train_on_every_gpu_ends_with_identical_weights(extracted, tmp_path):
    run = torchrun(
        RECORD_TRAINING,
        tmp_path / "record",
        extracted / "train.py",
        "--out",
        tmp_path / "ckpt",
        "--epochs",
        "2",
        nproc=gpus(),
        env={"NCCL_CHECK_ALLOW_CPU": ""},
        timeout=600,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    ranks = [json.loads((tmp_path / "record" / f"rank{r}.json").read_text()) for r in range(gpus())]
    assert len({rank["weights_sha256"] for rank in ranks}) == 1
    seen = [set(rank["epochs"][0]) for rank in ranks]
    assert sum(map(len, seen)) == len(set().union(*seen)) == 4096


def test_calculator_matches_the_memory_of_one_ddp_and_one_fsdp_step(tmp_path):
    """``vram.model_states_per_gpu`` against ``torch.cuda`` memory for one real step.

    After the step, weights, gradients and AdamW's two moments are all alive (fp32: 16 B
    per parameter, sharded under FSDP = ZeRO stage 3): what is still allocated must match
    the calculator within 1 % (allocator rounding to 512 B blocks, AdamW's step counters
    live on the CPU). The peak over the step must be at least the prediction and at most
    64 MiB above it: the transients are the activations of a batch of 8 (about 1 MiB),
    AdamW's per-parameter temporaries (``foreach=False``: 4 MiB each) and, under FSDP, the
    unsharded weights and gradients of one or two layers at a time (4 MiB each).
    """
    n = gpus()
    run = torchrun(PROBE, tmp_path, nproc=n, env={"NCCL_CHECK_ALLOW_CPU": ""}, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    for rank in range(n):
        result = json.loads((tmp_path / f"rank{rank}.json").read_text())
        for mode, zero_stage in (("ddp", 0), ("fsdp", 3)):
            measured = result[mode]
            predicted = model_states_per_gpu(measured["params"], n, zero_stage, "adamw-fp32").total_bytes
            assert measured["states_after_step"] == pytest.approx(predicted, rel=0.01), (mode, rank)
            assert predicted <= measured["peak_over_baseline"] <= predicted + 64 * MIB, (mode, rank)


def test_adamw_default_on_cuda_is_the_foreach_step_the_calculator_counts():
    """``torch.optim.AdamW(params)`` on CUDA, as the guide's scripts build it, picks foreach:
    during its step the peak is 4 B per parameter above the model states (one fp32
    ``torch._foreach_sqrt`` temporary), which ``vram.optimizer_step`` counts; ``fused=True``
    adds nothing. One GPU, fp32 parameters (what AMP keeps): states 4 + 4 + 8 B."""
    from vram.optimizer_step import step_temporary_bytes

    torch.manual_seed(0)
    device = torch.device("cuda")
    peaks = {}
    for name, kwargs in (("default", {}), ("fused", {"fused": True})):
        model = torch.nn.Sequential(*(torch.nn.Linear(2048, 2048) for _ in range(4))).to(device)
        params = sum(p.numel() for p in model.parameters())
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, **kwargs)
        model(torch.randn(8, 2048, device=device)).square().mean().backward()
        optimizer.step()  # the moments exist from now on
        model(torch.randn(8, 2048, device=device)).square().mean().backward()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        optimizer.step()
        torch.cuda.synchronize()
        peaks[name] = torch.cuda.max_memory_allocated() - before
        del model, optimizer
        torch.cuda.empty_cache()
    expected = step_temporary_bytes("adamw", "foreach", params, 0)
    assert expected == 4 * params
    assert peaks["default"] == pytest.approx(expected, rel=0.01)  # the allocator rounds to 512 B blocks
    assert peaks["fused"] < 0.01 * expected
