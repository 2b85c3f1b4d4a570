"""The GPU memory test's probe, rehearsed on CPU with gloo (no memory figures there), so a
broken probe shows in every CI run and not only on the GPU runner."""

from __future__ import annotations

import json

import pytest

from tests.gpu.test_on_gpu import PROBE
from tests.snippets.launch import torchrun

pytestmark = pytest.mark.slow


def test_probe_trains_one_step_under_ddp_and_fsdp_on_cpu(tmp_path):
    run = torchrun(PROBE, tmp_path, "64")  # 32 layers of 64 x 64: small on CPU
    assert run.returncode == 0, run.stderr[-3000:]
    for rank in (0, 1):
        result = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert result["world_size"] == 2
        assert result["ddp"] == result["fsdp"] == {"params": 32 * (64 * 64 + 64)}
