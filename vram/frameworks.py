"""One entry point for training memory under a named framework.

- ``zero-paper``: the ZeRO paper's idealisation (Rajbhandari et al., arXiv:1910.02054, §5.1;
  ``vram.training``): 2 + 2 + 12 B per parameter sharded by stage, offload moves the 12 B
  of optimizer states to host RAM. Reproduces the paper and the guide's first table.
- ``deepspeed``: DeepSpeed 0.19's estimators (``vram.deepspeed_zero``).
- ``fsdp2``: PyTorch 2.13 ``fully_shard`` with a bf16 ``MixedPrecisionPolicy``, or DDP
  under AMP at stage 0, or DDP all in bf16 with ``optimizer="adamw-bf16"`` (a model loaded in
  bf16, no fp32 master, as transformers 5's Trainer runs it) (``vram.fsdp2.fsdp2_memory``).

``framework_memory`` returns ``vram.breakdown.FrameworkMemory`` for each; the CLI and the
site read the same object.
"""

from __future__ import annotations

from .breakdown import FrameworkMemory, ModelShape, Term
from .deepspeed_zero import deepspeed_memory
from .fsdp2 import RESHARD_AFTER_FORWARD, fsdp2_memory
from .optimizer_step import DEFAULT_IMPL, check_optimizer_impl
from .states import as_bytes_per_param
from .training import training_memory_per_gpu
from .validate import lookup

FRAMEWORKS = ("zero-paper", "deepspeed", "fsdp2")
# What a job offloads to host memory: nothing, the optimizer (DeepSpeed offload_optimizer), or the
# parameters too (DeepSpeed offload_param at ZeRO-3; FSDP2's CPUOffloadPolicy, always both).
OFFLOAD = ("none", "optimizer", "optimizer+params")

# How each framework names the stages, for labels: zero_stage -> name.
STAGE_NAMES = {
    "zero-paper": {0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"},
    "deepspeed": {0: "DeepSpeed without ZeRO", 1: "DeepSpeed ZeRO-1", 2: "DeepSpeed ZeRO-2", 3: "DeepSpeed ZeRO-3"},
    "fsdp2": {
        0: "DDP (PyTorch AMP)",
        **{s: f"FSDP2 fully_shard(reshard_after_forward={v})" for s, v in RESHARD_AFTER_FORWARD.items()},
    },
}
# The FSDP1 ShardingStrategy each FSDP2 setting replaces (PyTorch's FSDP1 -> FSDP2 notes).
FSDP1_NAMES = {0: "NO_SHARD", 2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}


def zero_paper_memory(
    params: int,
    world_size: int,
    zero_stage: int,
    optimizer: str = "adamw",
    offload_optimizer: bool = False,
    gpus_per_machine: int | None = None,
) -> FrameworkMemory:
    """``vram.training.training_memory_per_gpu`` as a ``FrameworkMemory`` (working = 0).

    Raises ValueError as ``training_memory_per_gpu`` does.
    """
    mem = training_memory_per_gpu(params, world_size, zero_stage, optimizer, offload_optimizer, gpus_per_machine)
    bpp = as_bytes_per_param(optimizer)

    def symbol(stage: int) -> str:
        return "P/N" if zero_stage >= stage else "P"

    terms = [
        Term("weights", "weights", mem.weights_bytes, ((bpp.weights, symbol(3)),), "16-bit weights (ZeRO §3.1)"),
        Term(
            "gradients", "gradients", mem.gradients_bytes, ((bpp.gradients, symbol(2)),), "16-bit gradients (ZeRO §3.1)"
        ),
    ]
    if offload_optimizer:
        terms.append(
            Term(
                "host",
                "offloaded_optimizer",
                mem.host_optimizer_bytes_per_machine,
                ((bpp.optimizer, "PM/N"),),
                "optimizer states offloaded per machine (ZeRO-Offload)",
            )
        )
    else:
        terms.append(
            Term(
                "optimizer",
                "optimizer",
                mem.optimizer_bytes,
                ((bpp.optimizer, symbol(1)),),
                "fp32 master copy and moments (ZeRO §3.1, K = 12)",
            )
        )
    return FrameworkMemory("zero-paper", params, world_size, zero_stage, tuple(terms))


def framework_memory(
    framework: str,
    shape: ModelShape,
    world_size: int,
    zero_stage: int,
    optimizer: str = "adamw",
    offload_optimizer: bool = False,
    offload_params: bool = False,
    gpus_per_machine: int | None = None,
    optimizer_impl: str = DEFAULT_IMPL,
) -> FrameworkMemory:
    """Training memory per GPU (and host RAM per machine) under ``framework``.

    framework: one of ``FRAMEWORKS``; shape: ``ModelShape`` (``params`` alone is enough
    for zero-paper and for DeepSpeed stages 0-2; DeepSpeed stage 3 needs
    ``largest_layer_params``, FSDP2 the layer sizes of ``model_shape(config)``);
    offload_optimizer / offload_params: DeepSpeed's ``offload_optimizer`` / ``offload_param``;
    under FSDP2 both together mean ``CPUOffloadPolicy``; optimizer_impl: the
    ``torch.optim.AdamW`` implementation whose step FSDP2 and DDP count
    (``vram.optimizer_step.OPTIMIZER_IMPLS``, default ``foreach`` as the guide's scripts
    run it; the zero-paper accounting has no step, DeepSpeed's estimators count DeepSpeed's
    own optimizers). Returns ``FrameworkMemory`` in bytes. Raises ValueError (one line) for an unknown framework or a combination the
    framework does not offer.
    """
    lookup({f: f for f in FRAMEWORKS}, framework, "framework")
    check_optimizer_impl(optimizer_impl)
    if framework == "zero-paper":
        if offload_params:
            raise ValueError("the zero-paper framework offloads optimizer states only; drop offload_params")
        return zero_paper_memory(shape.params, world_size, zero_stage, optimizer, offload_optimizer, gpus_per_machine)
    if framework == "deepspeed":
        return deepspeed_memory(
            shape.params,
            world_size,
            zero_stage,
            optimizer,
            offload_optimizer,
            offload_params,
            shape.largest_layer_params,
            gpus_per_machine,
        )
    if offload_optimizer != offload_params:
        raise ValueError(
            "FSDP2 offloads with CPUOffloadPolicy: parameters, gradients and optimizer states "
            "together; give offload_optimizer and offload_params both"
        )
    return fsdp2_memory(
        shape, world_size, zero_stage, optimizer, offload_optimizer, gpus_per_machine, optimizer_impl=optimizer_impl
    )
