"""LoRA (bf16 base) under FSDP2 on 2 gloo ranks on CPU, against ``vram.lora_fsdp2_memory``.

``lora_fsdp2_worker.py`` builds fsdp2_worker's small Llama in bf16, adds PEFT 0.21's LoRA
(all-linear, fp32 adapters), applies ``fully_shard`` per decoder layer and on the root
with ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` (``reshard_after_forward``
True with the foreach AdamW at rank 8, False with the fused one at rank 8 and with the foreach
one at rank 160, where a block's adapters outweigh twice its base) and runs one step; each rank reports
the shards it holds, FSDP2's own buffers at their peak (sampled as tests/vram/fsdp2_worker.py
does) and the allocator's live bytes during ``optimizer.step()``. One forked run of 2 ranks
for both configurations (tests/snippets/fork_ranks.py). The expected bytes are the measured
ones; the calculator's inputs come from the config.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import vram
from tests.snippets.launch import fork_ranks_cmd
from vram.job import JobError, answer_job

HERE = Path(__file__).resolve().parent
WORKER = HERE / "lora_fsdp2_worker.py"
WORLD_SIZE = 2
STAGES = {"reshard_foreach": (3, "foreach"), "keep_fused": (2, "fused"), "keep_wide_rank": (2, "foreach")}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reports(tmp_path_factory, zygote) -> list[dict]:
    out = tmp_path_factory.mktemp("lora-fsdp2")
    env = {**os.environ, "OMP_NUM_THREADS": "1", **zygote}
    # fork_ranks.py forked from the session's zygote (tests/conftest.py: torch and transformers
    # imported once); it imports PEFT, then forks the ranks
    cmd = fork_ranks_cmd("--preload=transformers,peft", WORLD_SIZE, WORKER, out, zygote=zygote)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]


def _calc(report: dict, scenario: str) -> vram.LoraFsdp2Memory:
    stage, impl = STAGES[scenario]
    data = report[scenario]
    assert data["impl"] == impl
    return vram.lora_fsdp2_memory(report["config"], data["lora_rank"], WORLD_SIZE, stage, optimizer_impl=impl)


@pytest.mark.parametrize("scenario", STAGES)
def test_sizes_and_dtypes_are_peft_s(reports, scenario):
    data, config = reports[0][scenario], reports[0]["config"]
    assert data["sizes"]["adapters"] == vram.lora_adapter_params(config, data["lora_rank"])
    assert data["sizes"]["base"] == vram.count_params(vram.model_config_from_dict(config)).total
    assert data["dtypes"] == {"base": ["torch.bfloat16"], "adapters": ["torch.float32"]}
    assert data["frozen_gradients"] == 0


@pytest.mark.parametrize("scenario", STAGES)
def test_persistent_shards(reports, scenario):
    """bf16 base shards 2Pb/N; fp32 adapter shards, fp32 gradient shards, AdamW states: 16A/N."""
    for report in reports:
        data, calc = report[scenario], _calc(report, scenario)
        assert (
            data["base_weights_bytes"],
            data["adapter_weights_bytes"],
            data["gradients_bytes"],
            data["optimizer_bytes"],
        ) == (
            calc.base_weights_bytes,
            calc.adapter_weights_bytes,
            calc.adapter_gradients_bytes,
            calc.adapter_optimizer_bytes,
        )
        assert calc.states_bytes == (2 * data["sizes"]["base"] + 16 * data["sizes"]["adapters"]) // WORLD_SIZE


@pytest.mark.parametrize("scenario", STAGES)
def test_fsdp2_buffers_at_their_peak(reports, scenario):
    for report in reports:
        assert report[scenario]["peak_fsdp_buffers_bytes"] == _calc(report, scenario).backward_working_bytes


def test_what_the_lora_peaks_are_made_of(reports):
    """By hand, from the sizes counted on the model (elements; bf16 2 B, fp32 4 B). Stage 3:
    the root, this block and the prefetched one gathered (adapters cast to bf16 with them),
    this block's bf16 adapter gradients, the previous block's fp32 reduce-scatter input; no
    gradient of the frozen root or base. Stage 2: every weight gathered, plus the last block's
    all-gather buffer that forward keeps; the root stays gathered after forward (stage 3)."""
    for report in reports:
        s = report["reshard_foreach"]["sizes"]
        block, a = s["block_base"] + s["block_adapters"], s["block_adapters"]
        assert report["reshard_foreach"]["peak_parts"] == {
            "params": 2 * s["root"] + 4 * block,
            "grads": 2 * a,
            "reduce_scatter": 4 * a,
            "in_flight": 0,
        }
        assert report["reshard_foreach"]["unsharded_after_forward_bytes"] == 2 * s["root"]
        everything = s["base"] + s["adapters"]
        assert report["keep_fused"]["peak_parts"] == {
            "params": 2 * everything + 2 * block,
            "grads": 0,
            "reduce_scatter": 0,
            "in_flight": 0,
        }
        assert report["keep_fused"]["unsharded_after_forward_bytes"] == 2 * everything
        # adapters over twice the base of a block: its reduce-scatter holds the most (the block
        # resharded, its bf16 gradients copied into its fp32 input), as for a full model
        s = report["keep_wide_rank"]["sizes"]
        block, a, everything = s["block_base"] + s["block_adapters"], s["block_adapters"], s["base"] + s["adapters"]
        assert a > 2 * s["block_base"]
        assert report["keep_wide_rank"]["peak_parts"] == {
            "params": 2 * everything - 2 * block,
            "grads": 0,
            "reduce_scatter": 0,
            "in_flight": 2 * a + 4 * a,
        }


@pytest.mark.parametrize("scenario", STAGES)
def test_the_step_allocates_the_states_and_the_temporary(reports, scenario):
    """During ``optimizer.step()`` the allocator adds AdamW's states (created at the first step)
    and the implementation's temporary (foreach: 4 B per local adapter element; fused: none),
    plus AdamW's 0-dim ``step`` tensors (4 B per adapter tensor, not modelled) and 12 B of
    other scalars, measured the same with one parameter alone."""
    for report in reports:
        data, calc = report[scenario], _calc(report, scenario)
        tensors = data["adapter_tensors"]
        assert tensors == 3 * 7 * 2  # 3 layers x 7 projections x (lora_A, lora_B)
        grown = data["step_peak_bytes"] - data["before_step_bytes"]
        assert grown - calc.adapter_optimizer_bytes - calc.step_working_bytes in range(4 * tensors, 4 * tensors + 17)
    fused, foreach = _calc(reports[0], "keep_fused"), _calc(reports[0], "reshard_foreach")
    assert (fused.step_working_bytes, foreach.step_working_bytes) == (0, foreach.adapter_weights_bytes)  # 0, 4A/N


def _job(config: dict, stage: int, **extra) -> dict:  # rank 8, as the worker's first two runs
    return {
        "kind": "lora",
        "config": config,
        "cards": WORLD_SIZE,
        "framework": "fsdp2",
        "zero_stage": stage,
        "rank": 8,
        **extra,
    }


@pytest.mark.parametrize("scenario", ["reshard_foreach", "keep_fused"])
def test_the_job_offers_it(reports, scenario):
    """The finder, the CLI and the browser answer LoRA under FSDP2 from lora_fsdp2_memory."""
    stage, impl = STAGES[scenario]
    calc = _calc(reports[0], scenario)
    answer = answer_job(_job(reports[0]["config"], stage, optimizer_impl=impl))
    assert answer["per_gpu_bytes"] == calc.per_gpu_bytes
    assert answer["backward_bytes"] == calc.backward_bytes
    assert {k: v for k, v, _ in answer["parts"]} == {
        "base": calc.base_weights_bytes,
        "working": calc.per_gpu_bytes - calc.states_bytes,
        "adapters": calc.adapter_weights_bytes + calc.adapter_gradients_bytes + calc.adapter_optimizer_bytes,
    }


def test_what_is_not_modelled_is_refused(reports):
    config = reports[0]["config"]
    with pytest.raises(JobError, match="bf16 or nf4") as exc:  # QLoRA is modelled (test_qlora_fsdp2.py), fp16 not
        answer_job(_job(config, 3, base_dtype="fp16"))
    assert (exc.value.field, exc.value.code) == ("framework", "not_offered")
    with pytest.raises(JobError, match="ZeRO-1"):
        answer_job(_job(config, 1))
    with pytest.raises(JobError, match="decoder layers"):
        answer_job(_job({**config, "num_hidden_layers": 2}, 3))
    mixtral = {
        "model_type": "mixtral",
        "vocab_size": 96,
        "hidden_size": 32,
        "intermediate_size": 96,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    }
    with pytest.raises(JobError, match="expert"):
        answer_job(_job(mixtral, 3))
    assert answer_job(_job(mixtral, 3, targets="q_proj,v_proj"))["per_gpu_bytes"] > 0
