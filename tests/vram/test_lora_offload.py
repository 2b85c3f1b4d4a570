"""LoRA and QLoRA with host memory (``vram.lora_offload``), DeepSpeed ZeRO-3's offload against
DeepSpeed 0.19's own estimator, and the job: host RAM per machine checked against the
machine's RAM, offloads not modelled refused in one line, never ignored.

Oracle for DeepSpeed: ``estimate_zero3_model_states_mem_needs`` (``additional_buffer_factor=1``)
with the base's P and largest module from transformers on the meta device
(``transformers_oracle.built``) and the adapters' count from ``vram.lora_adapter_params`` (PEFT's
own count: tests/vram/test_lora_oracle.py). The trainable adapters are what the estimator
sizes; the frozen base holds only its bf16 partition (DeepSpeed builds fp32 partitions for
trainable parameters only: ``stage3.py``, ``_get_trainable_parameter_groups``), which is what
the estimator's two ``cpu_offload_params`` settings differ by. FSDP2's ``CPUOffloadPolicy``:
real ``fully_shard`` runs, tests/vram/test_qlora_fsdp2.py.

The published recipe: Answer.AI's FSDP-QLoRA trains Llama-2 70B on two 24 GB cards with CPU
offload, gradient checkpointing, batch 2 of 2,048 tokens, in "roughly 55GB of CPU RAM for
model loading and FSDP CPU offloading" (``AnswerDotAI/fsdp_qlora``, README.md at 02fe695).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

import vram
from tests.vram.transformers_oracle import built
from vram.job import JobError, answer_job, answer_json
from vram.lora import qlora_fsdp2_shape

CONFIGS = Path(__file__).resolve().parent / "configs"
LLAMA_2_7B = json.loads((CONFIGS / "llama-2-7b.json").read_text(encoding="utf-8"))
QWEN_05B = json.loads((CONFIGS / "qwen2.5-0.5b.json").read_text(encoding="utf-8"))  # tied embeddings
# measurements.yaml's copy (its source named there): the model of Answer.AI's recipe
LLAMA_2_70B = CONFIGS.parents[2] / "snippets" / "data" / "models" / "llama-2-70b.json"
CARDS = [{"key": "rtx-4090", "memory_mib": 24564}]  # nvidia-smi's total of a 24 GB RTX 4090 (gpus.yaml's source)
RESERVE_MIB = 2048  # CUDA context and NCCL buffers per card, as the finder's catalogue takes them


@pytest.fixture(scope="module")
def zero3():
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs

    return lambda params, largest, n, offload_params: estimate_zero3_model_states_mem_needs(
        params, largest, n, 1, True, offload_params, True, 1
    )


@pytest.mark.parametrize("config", [LLAMA_2_7B, QWEN_05B], ids=["llama-2-7b", "qwen2.5-0.5b"])
@pytest.mark.parametrize("base_dtype", ["bf16", "nf4"])
@pytest.mark.parametrize("offload_params", [False, True])
def test_deepspeed_zero3_offload_is_the_estimators(zero3, config, base_dtype, offload_params):
    meta = built(config)
    adapters = vram.lora_adapter_params(config, 16)
    # the frozen base in the elements ZeRO-3 partitions: bf16, or QLoRA's packed data in bf16 storage
    base = meta.total if base_dtype == "bf16" else qlora_fsdp2_shape(config).params
    constants = vram.qlora_base_bytes(config) - 2 * base if base_dtype == "nf4" else 0
    for n in (1, 2, 4, 8):
        memory = vram.lora_offload_memory(config, 16, n, "deepspeed", 3, offload_params, base_dtype=base_dtype)
        _cpu_adapters, gpu, largest = zero3(adapters + base, meta.largest_module, n, offload_params)
        assert largest == memory.working_bytes
        if n == 1 or (adapters % n == 0 and base % n == 0):  # the estimator truncates 2P/N, DeepSpeed pads
            assert memory.per_gpu_bytes - constants == gpu, n
        frozen_bf16 = zero3(base, meta.largest_module, n, True)[0] - zero3(base, meta.largest_module, n, False)[0]
        host = zero3(adapters, meta.largest_module, n, offload_params)[0] + (frozen_bf16 if offload_params else 0)
        assert memory.host_bytes == host, n


def test_the_job_reports_the_host_bytes_and_checks_the_machines_ram(zero3):
    """The verdict flips exactly at the host bytes, given in whole GB, as for a full training's offload."""
    job = {
        "kind": "lora",
        "config": LLAMA_2_7B,
        "cards": 4,
        "framework": "deepspeed",
        "zero_stage": 3,
        "offload": "optimizer+params",
        "base_dtype": "bf16",
        "gpus": CARDS,
        "reserve_mib": RESERVE_MIB,
    }
    answer = answer_job(job)
    memory = vram.lora_offload_memory(LLAMA_2_7B, 16, 4, "deepspeed", 3, True)
    assert answer["host_bytes"] == memory.host_bytes and answer["per_gpu_bytes"] == memory.per_gpu_bytes
    assert answer["accounting"] == "lora-zero3-offload"
    enough = math.ceil(memory.host_bytes / 10**9)
    for ram, holds in ((enough, True), (enough - 1, False)):
        found = answer_job({**job, "host_ram_gb": {"rtx-4090": ram}})
        assert [fit["host_ram"] for fit in found["fits"] + found["short"]] == [{"machine_gb": ram, "holds": holds}]


@pytest.mark.parametrize(
    "framework, stage, offload",
    [
        ("fsdp2", 3, "optimizer"),  # CPUOffloadPolicy offloads everything together
        ("fsdp2", 0, "optimizer+params"),  # DDP has no offload
        ("deepspeed", 2, "optimizer"),  # modelled at ZeRO-3 only
        ("deepspeed", 1, "optimizer+params"),
    ],
)
def test_an_offload_not_modelled_is_refused_in_one_line(framework, stage, offload):
    job = {
        "kind": "lora",
        "config": LLAMA_2_7B,
        "cards": 2,
        "framework": framework,
        "zero_stage": stage,
        "offload": offload,
        "gpus": CARDS,
        "reserve_mib": RESERVE_MIB,
    }
    with pytest.raises(JobError) as refused:
        answer_job(job)
    assert (refused.value.field, refused.value.code) == ("offload", "not_offered")
    error = json.loads(answer_json(json.dumps(job)))["error"]
    assert error["field"] == "offload" and "\n" not in error["message"]


def states_on_gpu(answer: dict) -> int:
    """The model states one GPU keeps (the base and the adapters), without the working buffers:
    LoRA under DeepSpeed without offload is the ZeRO paper's accounting, which counts none."""
    return sum(size for part, size, _ in answer["parts"] if part != "working")


def test_a_lora_offload_is_never_ignored():
    """Every offload the job accepts changes where the bytes are: fewer states on the GPU, some on the host."""
    for framework, stage, offload in (
        ("fsdp2", 3, "optimizer+params"),
        ("fsdp2", 2, "optimizer+params"),
        ("deepspeed", 3, "optimizer"),
        ("deepspeed", 3, "optimizer+params"),
    ):
        job = {
            "kind": "lora",
            "config": LLAMA_2_7B,
            "cards": 2,
            "framework": framework,
            "zero_stage": stage,
            "base_dtype": "nf4",
            "gpus": CARDS,
            "reserve_mib": RESERVE_MIB,
        }
        kept, offloaded = answer_job(job), answer_job({**job, "offload": offload})
        assert offloaded["host_bytes"] > 0 == kept["host_bytes"], (framework, stage, offload)
        assert states_on_gpu(offloaded) < states_on_gpu(kept), (framework, stage, offload)


def test_the_command_line_refuses_what_it_cannot_count(cli):
    proc = cli(
        "job",
        "--config",
        str(CONFIGS / "llama-2-7b.json"),
        "--kind",
        "lora",
        "--framework",
        "fsdp2",
        "--zero-stage",
        "3",
        "--offload",
        "optimizer",
        "--cards",
        "2",
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "offload" in proc.stderr


def test_answer_ais_recipe_fits_two_24_gb_cards():
    """Llama-2 70B, QLoRA, FSDP with CPU offload, batch 2 x 2,048 tokens, gradient checkpointing on
    two 24 GB cards: what the recipe runs, the calculator must hold (with full recomputation), and
    within the host memory the recipe states for loading and offloading together; without the
    offload it does not hold."""
    job = {
        "kind": "lora",
        "config": LLAMA_2_70B.read_text(encoding="utf-8"),
        "cards": 2,
        "framework": "fsdp2",
        "zero_stage": 3,
        "base_dtype": "nf4",
        "rank": 64,
        "seq_len": 2048,
        "micro_batch": 2,
        "recompute": "full",
        "offload": "optimizer+params",
        "gpus": CARDS,
        "reserve_mib": RESERVE_MIB,
        "host_ram_gb": {"rtx-4090": 55},
    }
    answer = answer_job(job)
    assert [fit["gpu"] for fit in answer["fits"]] == ["rtx-4090"]
    assert answer["fits"][0]["host_ram"] == {"machine_gb": 55, "holds": True}
    assert answer["accounting"] == "qlora-fsdp2-reshard-offload"
    without = answer_job({**job, "offload": "none"})
    assert not without["fits"]
