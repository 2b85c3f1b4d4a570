"""FSDP2 (``fully_shard``) on 2 CPU ranks with gloo, against the calculator.

``fsdp2_worker.py`` runs under torchrun and reports, per rank, the bytes of the sharded
weights, gradients and optimizer states it really holds after one optimizer step.

Padding: FSDP2 shards every parameter along dim 0 in chunks of ceil(dim0 / world_size)
rows; every rank allocates a padded chunk for the weights and for the gradients
(reduce-scatter output), while the optimizer states follow ``to_local()`` (unpadded).
With every dim 0 even, 2 ranks hold exactly half of everything: the calculator's
``model_states_per_gpu(n, 2, 3, ...)``. With odd dims 0 rank 0 holds more than half;
``vram.fsdp2_model_states_per_rank`` accounts for it exactly.

SHARD_GRAD_OP: FSDP2 spells it ``reshard_after_forward=False``. The parameters then stay
unsharded from forward until backward (ZeRO-2: each rank holds all the weights), and are
resharded after backward, so at the optimizer step the layout equals FULL_SHARD. The
test checks both moments: the unsharded weights right after forward equal ZeRO-2's
weights_bytes, and gradients and optimizer states after the step equal ZeRO-2's (which
are the same as ZeRO-3's). FSDP2 keeps its sharded fp32 copy during that window too:
1/world_size of the weights on top of what ZeRO-2 counts.

The models are fp32 without a MixedPrecisionPolicy, so the calculator's fp32 optimizers
("adamw-fp32": 4 + 4 + 8, "sgd-fp32": 4 + 4 + 4) describe them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vram

WORKER = Path(__file__).resolve().parent / "fsdp2_worker.py"
WORLD_SIZE = 2

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("fsdp2")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={WORLD_SIZE}", str(WORKER), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]


def _numel(shapes) -> int:
    total = 0
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def _measured(scenario: dict) -> vram.ModelStates:
    return vram.ModelStates(scenario["weights_bytes"], scenario["gradients_bytes"], scenario["optimizer_bytes"])


@pytest.mark.parametrize("scenario, optimizer", [("full_shard_adamw", "adamw-fp32"), ("full_shard_sgd", "sgd-fp32")])
def test_full_shard_equals_zero3_per_gpu(reports, scenario, optimizer):
    for report in reports:
        data = report[scenario]
        assert all(shape[0] % WORLD_SIZE == 0 for shape in data["shapes"])
        assert data["all_sharded_after_step"]
        assert data["unsharded_after_forward_bytes"] == 0
        expected = vram.model_states_per_gpu(_numel(data["shapes"]), WORLD_SIZE, 3, optimizer)
        assert _measured(data) == expected
        assert vram.fsdp_model_states_per_gpu(_numel(data["shapes"]), WORLD_SIZE, "FULL_SHARD", optimizer) == expected


def test_padding_is_accounted_for_exactly(reports):
    shapes = reports[0]["padded_full_shard_adamw"]["shapes"]
    n = _numel(shapes)
    for rank, report in enumerate(reports):
        data = report["padded_full_shard_adamw"]
        assert _measured(data) == vram.fsdp2_model_states_per_rank(shapes, WORLD_SIZE, rank, "adamw-fp32")
    # Without the padding the two ranks' local weights add up to the whole model ...
    assert sum(r["padded_full_shard_adamw"]["weights_local_bytes"] for r in reports) == 4 * n
    # ... while rank 0 holds more than the even split model_states_per_gpu assumes.
    even = vram.model_states_per_gpu(n, WORLD_SIZE, 3, "adamw-fp32")
    assert reports[0]["padded_full_shard_adamw"]["weights_bytes"] > even.weights_bytes


def test_shard_grad_op_holds_all_weights_between_forward_and_backward(reports):
    for report in reports:
        data = report["shard_grad_op_adamw"]
        zero2 = vram.model_states_per_gpu(_numel(data["shapes"]), WORLD_SIZE, 2, "adamw-fp32")
        assert data["unsharded_after_forward_bytes"] == zero2.weights_bytes
        assert data["gradients_bytes"] == zero2.gradients_bytes
        assert data["optimizer_bytes"] == zero2.optimizer_bytes
        # resharded after backward: at the step, the weights are FULL_SHARD's
        assert data["all_sharded_after_step"]
        assert data["weights_bytes"] == zero2.weights_bytes // WORLD_SIZE
