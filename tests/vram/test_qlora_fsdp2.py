"""QLoRA under FSDP2 on 2 gloo ranks on CPU, against ``vram.lora_fsdp2_memory(base_dtype="nf4")``.

``qlora_fsdp2_worker.py`` builds fsdp2_worker's small Llama in bf16, replaces every decoder
``nn.Linear`` by bitsandbytes 0.50.2's ``Linear4bit`` quantised on the CPU to NF4 with double
quantisation and ``quant_storage=torch.bfloat16`` (what ``BitsAndBytesConfig(...,
bnb_4bit_quant_storage=torch.bfloat16)`` makes transformers load, the storage FSDP needs to
shard 4-bit weights), adds PEFT 0.21's LoRA (all-linear, fp32 adapters), applies ``fully_shard``
per decoder layer and on the root with ``MixedPrecisionPolicy(param_dtype=bf16,
reduce_dtype=fp32)`` and runs one step, measured as lora_fsdp2_worker.py measures LoRA: the
shards each rank holds, the bytes of the quantisation state (not a parameter: whole on each
rank), FSDP2's own buffers at their peak and the allocator's bytes during ``optimizer.step()``.
One forked run of 2 ranks for both ``reshard_after_forward`` settings, and once more with
``CPUOffloadPolicy`` (``vram.lora_offload``). The expected bytes are the measured ones; the
calculator's inputs come from the config.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import vram
from tests.snippets.launch import fork_ranks_cmd
from vram.job import answer_job
from vram.lora import NF4_TABLE_BYTES, nf4_packed_bf16_rows, qlora_fsdp2_shape
from vram.timing import host_traffic

HERE = Path(__file__).resolve().parent
WORKER = HERE / "qlora_fsdp2_worker.py"
WORLD_SIZE = 2
STAGES = {"reshard_foreach": 3, "keep_foreach": 2}

pytestmark = [pytest.mark.slow, pytest.mark.bitsandbytes]


@pytest.fixture(scope="module")
def reports(tmp_path_factory, zygote) -> list[dict]:
    out = tmp_path_factory.mktemp("qlora-fsdp2")
    env = {**os.environ, "OMP_NUM_THREADS": "1", **zygote}
    # fork_ranks.py forked from the session's zygote (tests/conftest.py: torch and transformers
    # imported once); it imports PEFT and bitsandbytes, then forks the ranks
    cmd = fork_ranks_cmd("--preload=transformers,peft,bitsandbytes", WORLD_SIZE, WORKER, out, zygote=zygote)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]


def _calc(report: dict, scenario: str) -> vram.LoraFsdp2Memory:
    data = report[scenario]
    return vram.lora_fsdp2_memory(
        report["config"], data["lora_rank"], WORLD_SIZE, STAGES[scenario], optimizer_impl=data["impl"], base_dtype="nf4"
    )


def _linear_weights(config: dict) -> list[int]:
    """Elements of every decoder nn.Linear weight, by hand from the config (q, k, v, o, gate, up, down)."""
    h, i, heads, kv = (
        config[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads")
    )
    d = h // heads
    per_layer = [h * heads * d, h * kv * d, h * kv * d, heads * d * h, h * i, h * i, i * h]
    return per_layer * config["num_hidden_layers"]


def test_the_packed_base_is_what_fsdp2_shards(reports):
    """Each NF4 weight is a (ceil(n/4), 1) bf16 tensor; the rest of the base stays bf16."""
    report = reports[0]
    config, data = report["config"], report["reshard_foreach"]
    weights = _linear_weights(config)
    assert data["quantised"] == len(weights) == 21
    assert data["packed_shapes"] == [[n // 4, 1] for n in weights] == [[nf4_packed_bf16_rows(n), 1] for n in weights]
    assert data["dtypes"] == {"base": ["torch.bfloat16"], "adapters": ["torch.float32"]}
    assert data["frozen_gradients"] == 0
    shape = qlora_fsdp2_shape(config)
    sizes = data["sizes"]
    assert (sizes["base"], sizes["block_base"], sizes["root"]) == (
        shape.params,
        shape.decoder_layer_params,
        shape.root_params,
    )
    assert sizes["adapters"] == vram.lora_adapter_params(config, data["lora_rank"])
    assert sizes["base"] == vram.count_params(vram.model_config_from_dict(config)).total - sum(weights) + sum(
        n // 4 for n in weights
    )


def test_the_quantisation_state_stays_whole_on_every_rank(reports):
    """absmax (1 B per 64 weights), the nested absmax (4 B per 256 blocks) and the tables
    (NF4 code 16 x fp32, offset, nested code 256 x fp32): not parameters, not sharded."""

    def state(n: int) -> int:
        blocks = -(-n // 64)
        return blocks + 4 * -(-blocks // 256) + NF4_TABLE_BYTES

    by_hand = sum(state(n) for n in _linear_weights(reports[0]["config"]))
    for report in reports:
        for scenario in STAGES:
            assert report[scenario]["quant_state_bytes"] == by_hand


@pytest.mark.parametrize("scenario", STAGES)
def test_persistent_shards(reports, scenario):
    """Rank 0: the packed base and bf16 rest sharded (2 B per FSDP2 element, dim-0 chunks) plus the
    whole quantisation state; fp32 adapter shards, gradient shards and AdamW states, 16A/N."""
    for report in reports[:1]:  # rank 0, as the calculator
        data, calc = report[scenario], _calc(report, scenario)
        assert (
            data["base_weights_bytes"] + data["quant_state_bytes"],
            data["adapter_weights_bytes"],
            data["gradients_bytes"],
            data["optimizer_bytes"],
        ) == (
            calc.base_weights_bytes,
            calc.adapter_weights_bytes,
            calc.adapter_gradients_bytes,
            calc.adapter_optimizer_bytes,
        )
        assert (
            calc.states_bytes
            == (2 * data["sizes"]["base"] + 16 * data["sizes"]["adapters"]) // WORLD_SIZE + data["quant_state_bytes"]
        )


@pytest.mark.parametrize("scenario", STAGES)
def test_fsdp2_buffers_at_their_peak(reports, scenario):
    for report in reports:
        assert report[scenario]["peak_fsdp_buffers_bytes"] == _calc(report, scenario).backward_working_bytes


def test_what_the_qlora_peaks_are_made_of(reports):
    """By hand, from the sizes counted on the model (FSDP2 elements: the packed data in bf16).
    Stage 3: the root, this block and the prefetched one gathered, this block's bf16 adapter
    gradients, the previous block's fp32 reduce-scatter input. Stage 2: every weight gathered
    plus the last block's all-gather buffer that forward keeps."""
    for report in reports:
        s = report["reshard_foreach"]["sizes"]
        block, a = s["block_base"] + s["block_adapters"], s["block_adapters"]
        assert report["reshard_foreach"]["peak_parts"] == {
            "params": 2 * s["root"] + 4 * block,
            "grads": 2 * a,
            "reduce_scatter": 4 * a,
            "in_flight": 0,
        }
        everything = s["base"] + s["adapters"]
        assert report["keep_foreach"]["peak_parts"] == {
            "params": 2 * everything + 2 * block,
            "grads": 0,
            "reduce_scatter": 0,
            "in_flight": 0,
        }
        assert report["keep_foreach"]["unsharded_after_forward_bytes"] == 2 * everything


@pytest.mark.parametrize("scenario", STAGES)
def test_the_step_allocates_the_states_and_the_temporary(reports, scenario):
    """As for LoRA (test_lora_fsdp2.py): AdamW's states and the foreach temporary over the local
    adapters, plus the 0-dim ``step`` tensors (4 B per adapter tensor) and a few scalars."""
    for report in reports:
        data, calc = report[scenario], _calc(report, scenario)
        tensors = data["adapter_tensors"]
        assert tensors == 3 * 7 * 2
        grown = data["step_peak_bytes"] - data["before_step_bytes"]
        assert grown - calc.adapter_optimizer_bytes - calc.step_working_bytes in range(4 * tensors, 4 * tensors + 17)


@pytest.mark.parametrize("scenario", STAGES)
def test_the_job_offers_it_and_names_the_storage(reports, scenario):
    """The finder, the CLI and the browser answer QLoRA under FSDP2 from lora_fsdp2_memory, with
    the constraint (bnb_4bit_quant_storage) in the notes and the accounting's name."""
    report = reports[0]
    calc = _calc(report, scenario)
    answer = answer_job(
        {
            "kind": "lora",
            "config": report["config"],
            "cards": WORLD_SIZE,
            "framework": "fsdp2",
            "zero_stage": STAGES[scenario],
            "rank": 8,
            "base_dtype": "nf4",
        }
    )
    assert answer["per_gpu_bytes"] == calc.per_gpu_bytes and answer["backward_bytes"] == calc.backward_bytes
    assert {k: v for k, v, _ in answer["parts"]} == {
        "base": calc.base_weights_bytes,
        "working": calc.per_gpu_bytes - calc.states_bytes,
        "adapters": calc.adapter_weights_bytes + calc.adapter_gradients_bytes + calc.adapter_optimizer_bytes,
    }
    assert any("bnb_4bit_quant_storage=torch.bfloat16" in note for note in answer["notes"])
    assert answer["accounting"] == {3: "qlora-fsdp2-reshard", 2: "qlora-fsdp2-keep"}[STAGES[scenario]]


def test_cpu_offload_policy_keeps_the_shards_in_host_memory(reports):
    """QLoRA under ``fully_shard(..., offload_policy=CPUOffloadPolicy(pin_memory=False))``
    (scenario ``reshard_offload``), against ``vram.lora_offload_memory``: every rank keeps in host
    memory its base shards, its fp32 adapter shards, their gradients and AdamW's states; the GPU
    keeps FSDP2's buffers, the same as without offload at their peak, the all-gather inputs of the
    largest group copied from the host and the quantisation state. Per micro-batch each shard is
    copied to the GPU for each all-gather (the root once, every decoder layer twice), the fp32
    gradient shards back."""
    for report in reports:
        data, config = report["reshard_offload"], report["config"]
        assert data["offload_to_cpu"] and data["host_devices"] == ["cpu"]
        calc = vram.lora_offload_memory(
            config, data["lora_rank"], WORLD_SIZE, "fsdp2", 3, True, base_dtype="nf4", gpus_per_machine=1
        )
        assert calc.host_bytes == (
            data["base_weights_bytes"]
            + data["adapter_weights_bytes"]
            + data["gradients_bytes"]
            + data["optimizer_bytes"]
        )
        assert data["peak_fsdp_buffers_bytes"] == report["reshard_foreach"]["peak_fsdp_buffers_bytes"]
        inputs = max(gather["input_bytes"] for gather in data["all_gathers"])
        assert calc.working_bytes == data["peak_fsdp_buffers_bytes"] + inputs
        assert calc.base_weights_bytes == data["quant_state_bytes"] and calc.adapter_weights_bytes == 0
        layers = data["sizes"]["layers"]
        gathers = data["all_gathers"]
        assert len(gathers) == 1 + 2 * layers  # the root in forward, each layer in forward and backward
        shape = qlora_fsdp2_shape(config)
        traffic = host_traffic("fsdp2", 3, WORLD_SIZE, data["sizes"]["adapters"], True, 2 * shape.params)
        assert traffic.to_gpu_per_micro == sum(g["copied_bytes"] for g in gathers) + gathers[0]["copied_bytes"]
        assert traffic.to_host_per_micro == data["gradients_bytes"]
