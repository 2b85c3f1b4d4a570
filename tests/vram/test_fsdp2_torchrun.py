"""FSDP2 (``fully_shard``) on 2 CPU ranks with gloo, against the calculator.

``fsdp2_worker.py`` runs on 2 gloo ranks (torchrun's environment) and reports, per rank, the bytes of the sharded
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

The ``llama_*`` scenarios (a transformers Llama, P = 776,064, bf16 MixedPrecisionPolicy, and
variants with a wide vocabulary or one wide layer) check ``vram.fsdp2_memory`` part by part,
FSDP2's buffers at their measured peak included (gathered weights, unsharded gradients, the
fp32 reduce-scatter inputs FSDP2 keeps and fills); ``ddp_buckets_*`` check the DDP term of
``--framework fsdp2 --zero-stage 0``.
The calculator's inputs come from the config through ``vram.model_shape``; the expected
bytes are the measured ones (and oracles.md's 7,760,640).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import vram
from tests.snippets.launch import fork_ranks_cmd

WORKER = Path(__file__).resolve().parent / "fsdp2_worker.py"
WORLD_SIZE = 2

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reports(tmp_path_factory, zygote) -> list[dict]:
    out = tmp_path_factory.mktemp("fsdp2")
    env = {**os.environ, "OMP_NUM_THREADS": "1", **zygote}
    # the ranks forked after one import of torch, with torchrun's environment (the launcher is
    # not what this measures; tests/snippets/fork_ranks.py), fork_ranks.py itself forked from the
    # session's zygote (tests/conftest.py), which imported torch once
    cmd = fork_ranks_cmd(WORLD_SIZE, WORKER, out, zygote=zygote)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, check=False)
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
        measured = (
            data["weights_bytes"] + data["unsharded_after_forward_bytes"],
            data["gradients_bytes"],
            data["optimizer_bytes"],
        )
        assert measured == (calc.weights_bytes, calc.gradients_bytes, calc.optimizer_bytes)
        assert sum(measured) == calc.model_states_bytes == 7_760_640
    assert vram.model_states_per_gpu(LLAMA_P, WORLD_SIZE, 2).total_bytes == 6_984_576  # the paper mapping


def test_full_shard_persistent_states_and_the_root_after_forward(reports, llama_shape):
    """reshard_after_forward=True: 16P/N persistent; the root (default None) stays gathered
    after forward, and resharding it too (True) frees it then."""
    calc = vram.fsdp2_memory(llama_shape, WORLD_SIZE, 3)
    for report in reports:
        data = report["llama_reshard_true"]
        measured = (data["weights_bytes"], data["gradients_bytes"], data["optimizer_bytes"])
        assert measured == (calc.weights_bytes, calc.gradients_bytes, calc.optimizer_bytes)
        assert sum(measured) == 16 * LLAMA_P // WORLD_SIZE
        assert data["unsharded_after_forward_bytes"] == 2 * llama_shape.root_params
        root_true = report["llama_reshard_true_root_true"]
        assert root_true["unsharded_after_forward_bytes"] == 0
        assert root_true["peak_fsdp_buffers_bytes"] == data["peak_fsdp_buffers_bytes"]


# scenario -> zero_stage; each moment of vram.fsdp2.working_moments (and each
# form of the block's) is the largest in at least one of them (what the peak is made of is asserted below, by hand).
PEAK_SCENARIOS = {
    "llama_reshard_true": 3,
    "llama_reshard_true_root_true": 3,
    "llama_reshard_false": 2,
    "llama_reshard_true_wide_vocab": 3,
    "llama_reshard_false_wide_vocab": 2,
    "llama_reshard_true_one_layer": 3,
    "llama_reshard_false_one_layer": 2,
    "llama_reshard_true_two_layers": 3,
}


@pytest.mark.parametrize("scenario", PEAK_SCENARIOS)
def test_fsdp2_buffers_at_their_peak_are_the_working_set(reports, scenario):
    """Every FSDP2 buffer (gathered weights, pending and kept all-gathers, unsharded
    gradients, kept and in-flight reduce-scatter inputs) at its measured peak equals the
    calculator's working terms (plus, at stage 2, its 2P of bf16 weights)."""
    stage = PEAK_SCENARIOS[scenario]
    shape = vram.model_shape(vram.model_config_from_dict(reports[0][scenario]["config"]))
    calc = vram.fsdp2_memory(shape, WORLD_SIZE, stage)
    sizes = reports[0][scenario]["sizes"]
    assert (shape.params, shape.decoder_layer_params, shape.root_params, shape.output_params) == (
        sizes["params"],
        sizes["block"],
        sizes["root"],
        sizes["output"],
    )
    unsharded_weights = 2 * sizes["params"] if stage == 2 else 0
    for report in reports:
        assert report[scenario]["peak_fsdp_buffers_bytes"] == calc.backward_working_bytes + unsharded_weights


def test_what_the_peaks_are_made_of(reports):
    """By hand, from the sizes counted on each model (elements; bf16 2 B, fp32 4 B):
    FULL_SHARD, 3 layers: root, current and prefetched block gathered, bf16 gradients of the
    block and of lm_head/norm, the previous block's fp32 reduce-scatter input kept; 2 layers:
    the first block's reduce-scatter, the other block prefetched. A wide vocabulary: the root's reduce-scatter, its
    bf16 gradients inside its fp32 input, no weight gathered. One wide layer: its own
    reduce-scatter, the root gathered. SHARD_GRAD_OP: the whole model gathered but the block
    being reduced."""

    def parts(scenario):
        data = reports[0][scenario]
        return data["sizes"], data["peak_parts"]

    s, peak = parts("llama_reshard_true")
    assert peak == {
        "params": 2 * s["root"] + 4 * s["block"],
        "grads": 2 * s["output"] + 2 * s["block"],
        "reduce_scatter": 4 * s["block"],
        "in_flight": 0,
    }
    s, peak = parts("llama_reshard_true_wide_vocab")
    assert peak == {"params": 0, "grads": 0, "reduce_scatter": 0, "in_flight": 2 * s["root"] + 4 * s["root"]}
    s, peak = parts("llama_reshard_true_two_layers")
    assert peak == {
        "params": 2 * s["root"] + 2 * s["block"],
        "grads": 2 * s["output"],
        "reduce_scatter": 0,
        "in_flight": 2 * s["block"] + 4 * s["block"],
    }
    s, peak = parts("llama_reshard_true_one_layer")
    assert peak == {
        "params": 2 * s["root"],
        "grads": 2 * s["output"],
        "reduce_scatter": 0,
        "in_flight": 2 * s["block"] + 4 * s["block"],
    }
    s, peak = parts("llama_reshard_false")
    assert peak == {
        "params": 2 * (s["params"] - s["block"]),
        "grads": 2 * s["output"],
        "reduce_scatter": 0,
        "in_flight": 2 * s["block"] + 4 * s["block"],
    }


def test_ddp_buckets_are_a_second_copy_of_the_gradients_unless_viewed(reports, llama_shape):
    calc = vram.fsdp2_memory(llama_shape, WORLD_SIZE, 0)
    viewed = vram.fsdp2_memory(llama_shape, WORLD_SIZE, 0, gradient_as_bucket_view=True)
    autocast_copies = 2 * llama_shape.linear_params
    for report in reports:
        plain, view = report["ddp_buckets_view_false"], report["ddp_buckets_view_true"]
        assert plain["bucket_bytes"] == view["bucket_bytes"] == calc.gradients_bytes
        assert plain["gradient_storages"] > 1  # gradients apart from the buckets: two copies
        assert view["gradient_storages"] == 1  # gradients are views into the one bucket
        assert calc.backward_working_bytes - autocast_copies == plain["bucket_bytes"]
        assert viewed.backward_working_bytes == autocast_copies


def test_gradient_accumulation_repeats_what_the_frameworks_repeat(reports):
    """Two accumulated micro-batches, then one step (``run_accumulation``): FSDP2 gathers and
    reduce-scatters on every micro-batch (the root once, each layer twice; each group once) and
    holds the same buffers and gradient shards in both; DDP under ``no_sync`` reduces nothing until
    the last micro-batch, and accumulates into the gradients it holds. ``vram.timing`` counts the
    same: a step of N micro-batches is N x the collectives of one under FSDP2 (``micro_share`` 1),
    once under DDP (0), with N x the compute either way."""
    card = vram.catalogue.Card(
        "card",
        "card",
        100.0,
        1000.0,
        vram.catalogue.Bandwidth("peer", 10.0, 20.0),
        vram.catalogue.Bandwidth("host", 5.0, 10.0),
    )
    config = vram.model_config_from_dict(reports[0]["llama_config"])
    for report in reports:
        accumulation = report["accumulation"]
        layers = accumulation["layers"]
        for framework, stage, runs in (("fsdp2", 3, accumulation["fsdp2"]), ("fsdp2", 0, accumulation["ddp"])):
            micro = runs["micro_batches"]
            assert not any(runs["step"].values())  # the step itself communicates nothing
            assert len({m["gradients_bytes"] for m in micro}) == 1  # accumulated in place
            reducing = [sum(m[k] for k in ("all_gathers", "reduce_scatters", "buckets")) > 0 for m in micro]
            share = vram.timing.micro_share(framework, stage)
            assert reducing == ([True] * len(micro) if share == 1 else [False] * (len(micro) - 1) + [True])
            one = vram.timing.training_step(config, card, WORLD_SIZE, stage, framework=framework)
            accumulated = vram.timing.training_step(
                config, card, WORLD_SIZE, stage, grad_accum=len(micro), framework=framework
            )
            assert accumulated.communication.as_list() == pytest.approx(
                [sum(reducing) * t for t in one.communication.as_list()]
            )
            assert accumulated.compute.as_list() == pytest.approx([len(micro) * t for t in one.compute.as_list()])
            assert accumulated.tokens_per_gpu == len(micro) * one.tokens_per_gpu
        first, last = accumulation["fsdp2"]["micro_batches"]
        assert (first["all_gathers"], first["reduce_scatters"]) == (1 + 2 * layers, 1 + layers)
        assert first == last  # the same collectives, buffers and gradient shards on every micro-batch
        assert first["peak_fsdp_buffers_bytes"] == report["llama_reshard_true"]["peak_fsdp_buffers_bytes"]
        assert first["gradients_bytes"] == report["llama_reshard_true"]["gradients_bytes"]
        assert next(m["buckets"] for m in accumulation["ddp"]["micro_batches"]) == 0
