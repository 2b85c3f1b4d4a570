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

The ``llama_*`` scenarios (a transformers Llama, P = 776,064, bf16 MixedPrecisionPolicy)
check ``vram.fsdp2_memory`` part by part, the unsharded working set at its measured peak
included; ``ddp_buckets_*`` check the DDP term of ``--framework fsdp2 --zero-stage 0``.
The calculator's inputs come from the config through ``vram.model_shape``; the expected
bytes are the measured ones (and oracles.md's 7,760,640).
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


# --- a transformers Llama under MixedPrecisionPolicy(bf16, fp32): vram.fsdp2_memory -------

LLAMA_P = 776_064  # shared/cases/oracles.md


@pytest.fixture(scope="module")
def llama_shape(reports) -> vram.ModelShape:
    shape = vram.model_shape(vram.model_config_from_dict(reports[0]["llama_config"]))
    assert shape.params == LLAMA_P
    return shape


def test_shard_grad_op_mixed_precision_is_2p_plus_16p_over_n_per_rank(reports, llama_shape):
    """oracles.md: 2P (bf16 unsharded weights kept) + 16P/N = 7,760,640 bytes per rank."""
    calc = vram.fsdp2_memory(llama_shape, WORLD_SIZE, 2)
    for report in reports:
        data = report["llama_reshard_false"]
        assert data["param_dtypes"] == ["torch.float32"]  # the sharded parameters stay fp32
        measured = (data["weights_bytes"] + data["unsharded_after_forward_bytes"], data["gradients_bytes"],
                    data["optimizer_bytes"])
        assert measured == (calc.weights_bytes, calc.gradients_bytes, calc.optimizer_bytes)
        assert sum(measured) == calc.model_states_bytes == 7_760_640
        # the unsharded bf16 gradients of one block and of the output layer, at the peak
        assert data["peak_unsharded_grads_bytes"] == calc.working_bytes
    assert vram.model_states_per_gpu(LLAMA_P, WORLD_SIZE, 2).total_bytes == 6_984_576  # the paper mapping


def test_full_shard_working_set_at_its_peak(reports, llama_shape):
    """reshard_after_forward=True: 16P/N persistent; at the peak of backward the root, the
    current and the prefetched block gathered, and the gradients of a block and of lm_head."""
    calc = vram.fsdp2_memory(llama_shape, WORLD_SIZE, 3)
    for report in reports:
        data = report["llama_reshard_true"]
        measured = (data["weights_bytes"], data["gradients_bytes"], data["optimizer_bytes"])
        assert measured == (calc.weights_bytes, calc.gradients_bytes, calc.optimizer_bytes)
        assert sum(measured) == 16 * LLAMA_P // WORLD_SIZE
        assert data["peak_unsharded_bytes"] == calc.working_bytes
        # the root (default reshard_after_forward=None) stays gathered after forward ...
        assert data["unsharded_after_forward_bytes"] == 2 * llama_shape.root_params
        # ... and resharding it too (True) frees it after forward but not at the peak
        root_true = report["llama_reshard_true_root_true"]
        assert root_true["unsharded_after_forward_bytes"] == 0
        assert root_true["peak_unsharded_bytes"] == data["peak_unsharded_bytes"]


def test_ddp_buckets_are_a_second_copy_of_the_gradients_unless_viewed(reports, llama_shape):
    calc = vram.fsdp2_memory(llama_shape, WORLD_SIZE, 0)
    viewed = vram.fsdp2_memory(llama_shape, WORLD_SIZE, 0, gradient_as_bucket_view=True)
    autocast_copies = 2 * llama_shape.linear_params
    for report in reports:
        plain, view = report["ddp_buckets_view_false"], report["ddp_buckets_view_true"]
        assert plain["bucket_bytes"] == view["bucket_bytes"] == calc.gradients_bytes
        assert plain["gradient_storages"] > 1  # gradients apart from the buckets: two copies
        assert view["gradient_storages"] == 1  # gradients are views into the one bucket
        assert calc.working_bytes - autocast_copies == plain["bucket_bytes"]
        assert viewed.working_bytes == autocast_copies
