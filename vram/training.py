"""Training memory per GPU: sharded model states, optionally with the optimizer states
offloaded to host (CPU) RAM.

Sharding: ``vram.sharding`` (ZeRO paper, arXiv:1910.02054, §5.1). Offload: ZeRO-Offload
(Ren et al. 2021, arXiv:2101.06840, §3-4) keeps the optimizer states (fp32 master copy
and moments) and the optimizer step on the CPU, the 16-bit weights and gradients on the
GPU; DeepSpeed's ``offload_optimizer`` works with ZeRO stages 1-3, each rank offloading
its own shard, so one machine's RAM holds the shards of all its GPUs (8B, AdamW, one
machine: 12 B x 8e9 = 96 GB). FSDP's CPU offload (``CPUOffload(offload_params=True)``,
FSDP2 ``CPUOffloadPolicy``) moves the sharded weights and gradients too, so for FSDP the
GPU figure here is an upper bound. Not counted: DeepSpeed's host-side fp32 gradient
partition and pinned staging buffers, activations, the CUDA context.

This is the ZeRO paper's accounting (``--framework zero-paper``). What DeepSpeed and FSDP2
really allocate, with those buffers and the host RAM offload pins, is
``vram.frameworks.framework_memory``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .sharding import ModelStates, check_world_size, model_states_per_gpu
from .states import BytesPerParam
from .validate import check_int


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes per GPU (model states left on the GPU) and host RAM per machine."""

    params: int
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int  # on the GPU: 0 when offloaded
    host_optimizer_bytes_per_machine: int  # 0 without offload

    @property
    def per_gpu_bytes(self) -> int:
        """Weights, gradients and optimizer states left on one GPU (bytes)."""
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes


def training_memory_per_gpu(
    params: int,
    world_size: int,
    zero_stage: int,
    optimizer: str | BytesPerParam = "adamw",
    offload_optimizer: bool = False,
    gpus_per_machine: int | None = None,
) -> TrainingMemory:
    """Model states on one GPU and, with ``offload_optimizer``, host RAM per machine.

    params: parameters (> 0); world_size: data-parallel ranks; zero_stage: 0-3 (offload
    needs 1-3); optimizer: a name of ``vram.states.OPTIMIZERS`` or ``BytesPerParam``;
    gpus_per_machine: GPUs sharing one host's RAM (default: all world_size on one
    machine; must divide world_size). Returns ``TrainingMemory`` in bytes.
    Raises ValueError for out-of-range input.
    """
    states: ModelStates = model_states_per_gpu(params, world_size, zero_stage, optimizer)
    check_world_size(world_size)
    gpus = world_size if gpus_per_machine is None else check_int(gpus_per_machine, "gpus_per_machine", 1)
    if world_size % gpus:
        raise ValueError(f"gpus_per_machine {gpus} must divide world_size {world_size}")
    if offload_optimizer and zero_stage == 0:
        raise ValueError("optimizer offload needs zero_stage 1, 2 or 3 (DeepSpeed offload_optimizer)")
    host = states.optimizer_bytes * gpus if offload_optimizer else 0
    return TrainingMemory(
        params=params,
        weights_bytes=states.weights_bytes,
        gradients_bytes=states.gradients_bytes,
        optimizer_bytes=0 if offload_optimizer else states.optimizer_bytes,
        host_optimizer_bytes_per_machine=host,
    )
