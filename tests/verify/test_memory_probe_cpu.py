"""The GPU memory test's probe, rehearsed on CPU with gloo (no memory figures there), so a
broken probe shows in every CI run and not only on the GPU runner."""

from __future__ import annotations

import json

import pytest

from tests.gpu.test_on_gpu import PROBE
from tests.snippets.launch import fork_ranks_cmd, run as harness_run

pytestmark = pytest.mark.slow


def test_probe_trains_one_step_under_ddp_and_fsdp_on_cpu(tmp_path, zygote):
    # 32 layers of 64 x 64: small on CPU; 2 gloo ranks forked after one import of torch, with
    # torchrun's environment (tests/snippets/fork_ranks.py, itself forked from the session's zygote)
    run = harness_run(fork_ranks_cmd("2", PROBE, tmp_path, "64", zygote=zygote), zygote)
    assert run.returncode == 0, run.stderr[-3000:]
    for rank in (0, 1):
        result = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert result["world_size"] == 2
        assert result["ddp"] == result["fsdp"] == {"params": 32 * (64 * 64 + 64)}
