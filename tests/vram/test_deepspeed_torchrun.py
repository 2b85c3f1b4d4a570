"""DeepSpeed 0.19 itself, on 2 CPU ranks with gloo, against ``--framework deepspeed``.

DeepSpeed's estimators cover stages 2 and 3 (test_deepspeed_estimators.py); stages 0 and 1
are derived from the same buffers (vram/deepspeed_zero.py). ``deepspeed_worker.py`` runs
``deepspeed.initialize`` with bf16 and AdamW at stages 0, 1 and 2 on 2 gloo ranks (torchrun's environment) and
reports the bytes of each buffer a rank really holds (see its docstring): here each one
equals the calculator's term of the same name. P = 8,192, N = 2: nothing is padded.

It also shows what neither the estimators nor the calculator count: the gradient reduction
buckets DeepSpeed allocates at stages 1 and 2 (``reduce_bucket_size`` elements each; 5e8 by
default, 1 GB in bf16), which the calculator names in a note.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.snippets.launch import fork_ranks_cmd
from vram.deepspeed_zero import deepspeed_memory

WORKER = Path(__file__).resolve().parent / "deepspeed_worker.py"
WORLD_SIZE = 2

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stages(tmp_path_factory, zygote) -> list[dict[int, dict]]:
    out = tmp_path_factory.mktemp("deepspeed")
    env = {**os.environ, "OMP_NUM_THREADS": "1", **zygote}
    # the ranks forked after one import of torch, with torchrun's environment (the launcher is
    # not what this measures; tests/snippets/fork_ranks.py), fork_ranks.py itself forked from the
    # session's zygote (tests/conftest.py), which imported torch once
    cmd = fork_ranks_cmd(WORLD_SIZE, WORKER, out, zygote=zygote)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]
    return [{s["stage"]: s for s in report["stages"]} for report in reports]


def _terms(stage: int, params: int) -> dict[str, int]:
    return {t.key: t.bytes for t in deepspeed_memory(params, WORLD_SIZE, stage).terms}


def test_stage_0_is_20_bytes_per_parameter_all_alive_at_the_step(stages):
    """Without ZeRO, DeepSpeed's bf16 wrapper keeps bf16 weights and gradients, fp32 master
    weights and gradients and AdamW's moments: measured inside the optimizer's step."""
    for rank in stages:
        run = rank[0]
        assert run["weight_dtypes"] == ["torch.bfloat16"] and run["master_dtypes"] == ["torch.float32"]
        terms = _terms(0, run["params"])
        assert (
            run["bf16_weights"],
            run["bf16_gradients"],
            run["fp32_gradients"],
            run["fp32_master"],
            run["optimizer_states"],
        ) == (
            terms["bf16_weights"],
            terms["bf16_gradients"],
            terms["fp32_gradients"],
            terms["fp32_master"],
            terms["optimizer_states"],
        )
        assert sum(terms.values()) == 20 * run["params"]


def test_stage_1_keeps_the_bf16_gradients_whole_and_partitions_the_rest(stages):
    for rank in stages:
        run = rank[1]
        terms = _terms(1, run["params"])
        assert run["bf16_gradients"] == terms["bf16_gradients"] == 2 * run["params"]  # whole, before the reduce
        assert (run["bf16_weights"], run["fp32_gradients"], run["fp32_master"], run["optimizer_states"]) == (
            terms["bf16_weights"],
            terms["fp32_gradient_partition"],
            terms["fp32_master_partition"],
            terms["optimizer_state_partition"],
        )


def test_stage_2_partitions_are_the_estimators_split(stages):
    """stage_1_and_2.py's comment: 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit, per N."""
    for rank in stages:
        run = rank[2]
        terms = _terms(2, run["params"])
        assert (run["bf16_weights"], run["fp32_gradients"], run["fp32_master"], run["optimizer_states"]) == (
            terms["bf16_weights"],
            terms["fp32_gradient_partition"],
            terms["fp32_master_partition"],
            terms["optimizer_state_partition"],
        )


def test_the_reduction_buckets_are_named_not_counted(stages):
    for rank in stages:
        for stage in (1, 2):
            run = rank[stage]
            assert (
                run["reduction_buckets"] == 2 * run["reduce_bucket_size"] == 2 * 500_000_000
            )  # bf16, DeepSpeed's default
            assert any(
                "reduce_bucket_size" in note for note in deepspeed_memory(run["params"], WORLD_SIZE, stage).notes
            )
