"""What the calculator assumed for a job: the accounting behind its bytes, by name.

``job_accounting(job)`` names the formula ``vram.job.answer_job`` runs for a training or
LoRA job, so that a page can label the method with what the figures really assume (DDP
under PyTorch AMP keeps fp32 weights; DDP all in bf16 keeps none; LoRA under DDP keeps a bf16
base and fp32 adapters, without the framework's buffers). ``ACCOUNTINGS`` maps every name
to one line saying what it counts and which function counts it. Serving has one accounting
(weights and KV cache, ``vram.serving``) and no name here.

Pure: standard library and ``vram`` only (the browser's Pyodide runs it too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .job_input import JOB_FIELDS

ACCOUNTINGS: dict[str, str] = {
    "ddp-amp": "DDP under PyTorch AMP: fp32 weights, gradients and optimizer states whole on every GPU, the bf16 "
    "copies torch.autocast caches, DDP's buckets (vram.fsdp2.fsdp2_memory, zero_stage 0)",
    "ddp-bf16": "DDP all in bf16, as transformers 5's Trainer and Accelerate run a model loaded in bf16: bf16 "
    "weights, gradients and AdamW moments whole on every GPU, no fp32 master (vram.fsdp2, adamw-bf16)",
    "deepspeed-zero0": "DeepSpeed bf16 without ZeRO: bf16 weights and gradients, fp32 gradients, fp32 master and "
    "moments (vram.deepspeed_zero)",
    "deepspeed-zero1": "DeepSpeed ZeRO-1, bf16 with an fp32 master copy (vram.deepspeed_zero)",
    "deepspeed-zero2": "DeepSpeed ZeRO-2, DeepSpeed 0.19's estimator (vram.deepspeed_zero)",
    "deepspeed-zero3": "DeepSpeed ZeRO-3, DeepSpeed 0.19's estimator (vram.deepspeed_zero)",
    "fsdp2-keep": "FSDP2 fully_shard(reshard_after_forward=False), bf16 MixedPrecisionPolicy on fp32 shards "
    "(vram.fsdp2.fsdp2_memory, zero_stage 2)",
    "fsdp2-reshard": "FSDP2 fully_shard(reshard_after_forward=True), bf16 MixedPrecisionPolicy on fp32 shards "
    "(vram.fsdp2.fsdp2_memory, zero_stage 3)",
    "zero-paper-0": "the ZeRO paper's ideal accounting, one copy per GPU, no framework buffers (vram.training)",
    "zero-paper-1": "the ZeRO paper's ideal accounting, optimizer states sharded (vram.training)",
    "zero-paper-2": "the ZeRO paper's ideal accounting, optimizer states and gradients sharded (vram.training)",
    "zero-paper-3": "the ZeRO paper's ideal accounting, everything sharded (vram.training)",
    **{
        f"zero-paper-{stage}-bf16": f"the ZeRO paper's ideal accounting at stage {stage} with everything in bf16: "
        "bf16 weights, gradients and AdamW moments, no fp32 master (vram.training, adamw-bf16)"
        for stage in range(4)
    },
    "lora-ddp": "LoRA, one whole copy per GPU: the frozen base, fp32 adapters with their gradients and AdamW "
    "states; no framework buffers (vram.lora.lora_memory_per_gpu, zero_stage 0)",
    "lora-zero1": "LoRA under ZeRO-1 as the ZeRO paper shards it: the adapters' optimizer states split, the base "
    "whole; no framework buffers (vram.lora.lora_memory_per_gpu)",
    "lora-zero2": "LoRA under ZeRO-2 as the ZeRO paper shards it: the adapters' optimizer states and gradients "
    "split, the base whole; no framework buffers (vram.lora.lora_memory_per_gpu)",
    "lora-zero3": "LoRA under ZeRO-3 as the ZeRO paper shards it: the base and the adapters' weights, gradients "
    "and optimizer states split; no framework buffers (vram.lora.lora_memory_per_gpu)",
    "qlora-zero3": "QLoRA under ZeRO-3 as the ZeRO paper shards it, with bnb_4bit_quant_storage=torch.bfloat16 so "
    "the 4-bit data can be split (its quantisation constants stay whole); no framework buffers "
    "(vram.lora.lora_memory_per_gpu)",
    "lora-fsdp2-keep": "LoRA under FSDP2 fully_shard(reshard_after_forward=False): the bf16 base and the fp32 "
    "adapters sharded, with FSDP2's buffers (vram.lora.lora_fsdp2_memory, zero_stage 2)",
    "lora-fsdp2-reshard": "LoRA under FSDP2 fully_shard(reshard_after_forward=True): the bf16 base and the fp32 "
    "adapters sharded, with FSDP2's buffers (vram.lora.lora_fsdp2_memory, zero_stage 3)",
    "qlora-fsdp2-keep": "QLoRA under FSDP2 fully_shard(reshard_after_forward=False) with "
    "bnb_4bit_quant_storage=torch.bfloat16: the packed 4-bit base and the fp32 adapters sharded, "
    "the quantisation constants whole, with FSDP2's buffers (vram.lora.lora_fsdp2_memory, nf4)",
    "qlora-fsdp2-reshard": "QLoRA under FSDP2 fully_shard(reshard_after_forward=True) with "
    "bnb_4bit_quant_storage=torch.bfloat16: the packed 4-bit base and the fp32 adapters "
    "sharded, the quantisation constants whole, with FSDP2's buffers "
    "(vram.lora.lora_fsdp2_memory, nf4)",
    **{
        f"{prefix}-zero3-offload": f"{'QLoRA' if prefix == 'qlora' else 'LoRA'} under DeepSpeed ZeRO-3 with "
        "offload_optimizer (and offload_param): DeepSpeed 0.19's estimator over the adapters, the frozen base a bf16 "
        f"partition{' (4-bit data in bf16 storage, constants whole)' if prefix == 'qlora' else ''} on the GPU or, with "
        "offload_param, in host memory (vram.lora_offload)"
        for prefix in ("lora", "qlora")
    },
    **{
        f"{prefix}-fsdp2-{setting}-offload": f"{'QLoRA' if prefix == 'qlora' else 'LoRA'} under FSDP2 "
        f"fully_shard(reshard_after_forward={value}) with CPUOffloadPolicy: base and adapter shards, gradients and "
        "AdamW states in host memory, FSDP2's gathered buffers on the GPU (vram.lora_offload)"
        for prefix in ("lora", "qlora")
        for setting, value in (("keep", False), ("reshard", True))
    },
}

ALL_BF16 = "adamw-bf16"  # vram.fsdp2.ALL_BF16: the optimizer that keeps no fp32 master copy
NF4 = "nf4"  # vram.dtypes.NF4: QLoRA's 4-bit base


def accounting(
    kind: str,
    framework: str,
    zero_stage: int,
    optimizer: str = "adamw",
    base_dtype: str = "bf16",
    offload: str = "none",
) -> str | None:
    """The name (a key of ``ACCOUNTINGS``) of the formula ``answer_job`` runs for a training
    (``kind`` "training": ``framework``, ``zero_stage``, ``optimizer``) or LoRA job ("lora":
    ``framework``, ``zero_stage``, ``base_dtype``, ``offload``), or None where the calculator has
    none and refuses the job (LoRA in the ZeRO paper's accounting, at an FSDP2 stage other than 2
    or 3, or with a base other than bf16 and nf4 under FSDP2 or with offload; LoRA with offload
    outside DeepSpeed ZeRO-3 and FSDP2's CPUOffloadPolicy; all-bf16 training outside DDP and the
    paper's accounting; serving, which has one accounting). Never raises for a str or int input:
    the job's own checks name bad values."""
    if kind == "training":
        if framework == "zero-paper":
            suffix = "-bf16" if optimizer == ALL_BF16 else ""
            return f"zero-paper-{zero_stage}{suffix}" if zero_stage in (0, 1, 2, 3) else None
        if optimizer == ALL_BF16:
            return "ddp-bf16" if framework == "fsdp2" and zero_stage == 0 else None
        if framework == "deepspeed":
            return f"deepspeed-zero{zero_stage}" if zero_stage in (0, 1, 2, 3) else None
        if framework == "fsdp2":
            return {0: "ddp-amp", 2: "fsdp2-keep", 3: "fsdp2-reshard"}.get(zero_stage)
        return None
    if kind == "lora":
        if framework == "zero-paper":
            return None
        if offload != "none":
            prefix = "qlora" if base_dtype == NF4 else "lora" if base_dtype == "bf16" else None
            if prefix is None:
                return None
            if framework == "deepspeed":
                return f"{prefix}-zero3-offload" if zero_stage == 3 else None
            setting = {2: "keep", 3: "reshard"}.get(zero_stage)
            return f"{prefix}-fsdp2-{setting}-offload" if setting and offload == "optimizer+params" else None
        if framework == "fsdp2" and zero_stage != 0:
            if base_dtype not in ("bf16", NF4):
                return None
            prefix = "qlora" if base_dtype == NF4 else "lora"
            return {2: f"{prefix}-fsdp2-keep", 3: f"{prefix}-fsdp2-reshard"}.get(zero_stage)
        if framework in ("fsdp2", "deepspeed"):
            if zero_stage == 3 and base_dtype == NF4:
                return "qlora-zero3"
            return {0: "lora-ddp", 1: "lora-zero1", 2: "lora-zero2", 3: "lora-zero3"}.get(zero_stage)
    return None


def job_accounting(job: Mapping[str, Any]) -> str | None:
    """``accounting`` of a ``vram.job`` job (a mapping with its ``kind``, ``framework``,
    ``zero_stage``, ``optimizer`` and ``base_dtype``; missing keys take the defaults of
    ``vram.job_input.JOB_FIELDS``)."""
    given = {**JOB_FIELDS, **job}
    return accounting(
        given["kind"],
        given["framework"],
        given["zero_stage"],
        given["optimizer"],
        given["base_dtype"],
        given["offload"],
    )
