"""FSDP2's gathered and reduce-scatter buffers when N does not divide a dim 0, against rank 0 of a fake process group.

PyTorch 2.13 pads every parameter to N x ceil(dim0 / N) rows in its all-gather output
(``torch/distributed/fsdp/_fully_shard/_fsdp_param.py``, ``init_all_gather_outputs``: the
padded shard's numel x world_size, of which the unsharded parameter is a view) and in its
reduce-scatter input (``_fsdp_collectives.py``, ``foreach_reduce``:
``_get_dim0_padded_size(grad.size(), world_size)``), while the unsharded gradients keep the
parameter's own shape. A fused expert tensor of E experts is therefore gathered and
reduce-scattered as N x ceil(E / N) experts: Mixtral's 8 on 6 GPUs as 12.

``fsdp2_padding_worker.py`` runs each scenario as rank 0 of N under the fake process group and
reports FSDP2's buffers at their peak (sampled as in the gloo runs of
test_fsdp2_torchrun.py); each moment of ``vram.fsdp2.working_moments`` is the largest in one
scenario. The calculator reads the same config dicts; the expected bytes are the measured ones.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import vram
from tests.snippets.launch import worker_report

WORKER = Path(__file__).resolve().parent / "fsdp2_padding_worker.py"


@pytest.fixture(scope="module")
def report(zygote, tmp_path_factory) -> dict:
    return worker_report(zygote, WORKER, tmp_path_factory.mktemp("fsdp2_padding") / "report.json")


SCENARIOS = ("e4_n3_stage3", "e4_n3_stage2", "e8_n6_stage3", "e4_n3_one_layer", "vocab_n3_root")


@pytest.mark.parametrize("name", SCENARIOS)
def test_fsdp2_buffers_at_their_peak_with_padded_parameters(report, name):
    data = report[name]
    n, stage = data["world_size"], data["zero_stage"]
    shape = vram.model_shape(vram.model_config_from_dict(data["config"]))
    sizes = data["sizes"]
    assert (shape.params, shape.decoder_layer_params, shape.root_params, shape.output_params) == (
        sizes["params"],
        sizes["block"],
        sizes["root"],
        sizes["output"],
    )
    memory = vram.fsdp2_memory(shape, n, stage)
    gathered_model = vram.fsdp2.gathered_sizes(shape, n)[0]
    unsharded = 2 * gathered_model if stage == 2 else 0  # stage 2's bf16 weights, all-gather outputs
    assert data["peak_fsdp_buffers_bytes"] == memory.backward_working_bytes + unsharded
    # counted unpadded, as before: short wherever a block's parameters are padded
    unpadded = vram.fsdp2_memory(dataclasses.replace(shape, layer_shapes=None), n, stage)
    short = data["peak_fsdp_buffers_bytes"] - unpadded.backward_working_bytes - 2 * shape.params * (stage == 2)
    if name == "vocab_n3_root":  # the embedding's and lm_head's 4,001 rows in the root's fp32 input as 4,002
        assert short == 2 * 4 * (4002 - 4001) * 48
    else:
        assert short > 0.2 * data["peak_fsdp_buffers_bytes"]


def test_what_padding_adds_by_hand(report):
    """Mixtral with E = 8 on N = 6, by hand: each layer's fused experts (gate_up_proj 8 x 192 x 48,
    down_proj 8 x 48 x 96) and router (8 x 48) gathered and reduce-scattered as 12 experts; the
    rest of the layer divides by 6. Stage 3, 3 layers: the root gathered (2R), this block and
    the prefetched one (4B'), their gradients unpadded (2O + 2B), the previous block's fp32
    reduce-scatter input (4B')."""
    data = report["e8_n6_stage3"]
    s = data["sizes"]
    padded_block = s["block"] + (12 - 8) * (192 * 48 + 48 * 96 + 48)
    assert (
        vram.fsdp2.gathered_sizes(vram.model_shape(vram.model_config_from_dict(data["config"])), 6)[2] == padded_block
    )
    assert data["peak_parts"] == {
        "params": 2 * s["root"] + 4 * padded_block,
        "grads": 2 * s["output"] + 2 * s["block"],
        "reduce_scatter": 4 * padded_block,
        "in_flight": 0,
    }


def test_mixtral_8x7b_on_6_gpus_gathers_12_experts(local_configs):
    """The issue's case: Mixtral 8x7B under FULL_SHARD on 6 GPUs. Its block as FSDP2 gathers it:
    the fused experts and the router with 12 experts' rows instead of 8; q, k, v, o_proj (4,096
    and 1,024 rows) and the two norms (4,096) padded to 4,098 and 1,026 rows."""
    shape = vram.model_shape(vram.load_model_config(local_configs / "mixtral-8x7b-v0.1.json"))
    _, _, gathered_block = vram.fsdp2.gathered_sizes(shape, 6)
    experts = (12 - 8) * (2 * 14336 * 4096 + 4096 * 14336 + 4096)
    attention = 4 * 2 * 4096  # two padding rows of 4,096 in each of q, k, v and o_proj
    assert gathered_block - shape.decoder_layer_params == experts + attention + 2 * 2
    memory = vram.fsdp2_memory(shape, 6, 3, moment="backward")
    assert any("N·ceil(E/N)" in note for note in memory.notes)
    assert vram.fsdp2.gathered_sizes(shape, 8)[2] == shape.decoder_layer_params  # 8 divides every dim 0
