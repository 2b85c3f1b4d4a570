"""FSDP2 on a fused-expert model at N = 3, on 3 real gloo ranks, against ``vram.fsdp2_memory``.

``fsdp2_experts_worker.py`` builds a tiny transformers Mixtral (4 fused experts per layer,
``experts.gate_up_proj`` [4, 96, 32] and ``experts.down_proj`` [4, 32, 48]), shards it as the
guide's FSDP2 script does and reports the bytes each rank's tensors hold: parameters, gradients
after a backward, AdamW states after a step. FSDP2 chunks every parameter along dim 0 (the expert
axis of a fused tensor), so rank 0 holds ceil(4 / 3) = 2 whole experts, half of the experts'
weights rather than a third: the even split 16·ceil(P/N) is short of what rank 0 holds.
The ranks are forked after one import of torch and transformers (tests/snippets/fork_ranks.py).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

import vram
from tests.snippets.launch import fork_ranks_cmd

HERE = Path(__file__).resolve().parent
WORKER = HERE / "fsdp2_experts_worker.py"
WORLD_SIZE = 3
EXPERTS = 4
MIXTRAL = {
    "model_type": "mixtral",
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_local_experts": EXPERTS,
    "num_experts_per_tok": 2,
    "tie_word_embeddings": False,
}
# fork_ranks.py imports torch before forking (the session zygote's import); transformers' Mixtral there too
PRELOAD_MIXTRAL = "--preload=transformers,transformers.models.mixtral.modeling_mixtral"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reports(tmp_path_factory, zygote) -> list[dict]:
    out = tmp_path_factory.mktemp("fsdp2_experts")
    env = {**os.environ, "OMP_NUM_THREADS": "1", **zygote}
    # fork_ranks.py forked from the session's zygote (tests/conftest.py), which imported torch once
    cmd = fork_ranks_cmd(PRELOAD_MIXTRAL, WORLD_SIZE, WORKER, out, json.dumps(MIXTRAL), zygote=zygote)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]


@pytest.fixture(scope="module")
def shape() -> vram.ModelShape:
    return vram.model_shape(vram.model_config_from_dict(MIXTRAL))


def test_three_ranks_shard_every_parameter(reports, shape):
    for rank, report in enumerate(reports):
        assert (report["rank"], report["world_size"], report["all_sharded"]) == (rank, WORLD_SIZE, True)
    # the calculator counts the model transformers built
    assert shape.params == sum(math.prod(dims) for dims in reports[0]["shapes"])
    experts = [i for i, dims in enumerate(reports[0]["shapes"]) if len(dims) == 3]
    assert experts and all(reports[0]["shapes"][i][0] == EXPERTS for i in experts)
    # torch.chunk on dim 0: 2, 2 and 0 experts on ranks 0, 1, 2
    assert [[r["local_rows"][i] for i in experts] for r in reports] == [
        [2] * len(experts),
        [2] * len(experts),
        [0] * len(experts),
    ]


def test_rank0_holds_ceil_e_over_n_experts_as_the_calculator_says(reports, shape):
    calc = vram.fsdp2_memory(shape, WORLD_SIZE, 3)
    rank0 = reports[0]
    measured = (rank0["weights_bytes"], rank0["gradients_bytes"], rank0["optimizer_bytes"])
    assert measured == (calc.weights_bytes, calc.gradients_bytes, calc.optimizer_bytes)
    # fp32 shards, fp32 gradients (reduce_dtype), AdamW's two fp32 states: 4 + 4 + 8 B per local element
    assert sum(measured) == 16 * vram.fsdp2.rank0_shard_params(shape, WORLD_SIZE)
    # the even split P/N (what the calculator used to count) is short of what rank 0 holds
    even = 16 * -(-shape.params // WORLD_SIZE)
    assert sum(measured) > even
    # and the optimizer states of the three ranks add up to the whole model's
    assert sum(r["optimizer_bytes"] for r in reports) == 8 * shape.params
