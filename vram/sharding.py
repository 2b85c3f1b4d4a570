"""Per-GPU model-state memory under ZeRO stages 0-3 and the FSDP sharding strategies.

Source: Rajbhandari et al., arXiv:1910.02054, §5.1 and Figure 1: with N_d data-parallel
ranks, stage 1 (P_os) shards the optimizer states, stage 2 (P_os+g) also the gradients,
stage 3 (P_os+g+p) also the weights; each rank keeps 1/N_d of a sharded part.
FSDP (Zhao et al. 2023, arXiv:2304.11277, §3.2; ``torch.distributed.fsdp.ShardingStrategy``):
NO_SHARD = stage 0 (DDP), SHARD_GRAD_OP = stage 2, FULL_SHARD = stage 3, HYBRID_SHARD =
FULL_SHARD inside a shard group and replicated across groups, _HYBRID_SHARD_ZERO2 the
same with SHARD_GRAD_OP inside the group.
"""

from __future__ import annotations

from dataclasses import dataclass

from .states import BytesPerParam, as_bytes_per_param
from .units import ceil_div
from .validate import check_int, check_params, lookup

ZERO_STAGES = (0, 1, 2, 3)
FSDP_TO_ZERO_STAGE = {
    "NO_SHARD": 0,
    "SHARD_GRAD_OP": 2,
    "FULL_SHARD": 3,
    "HYBRID_SHARD": 3,
    "_HYBRID_SHARD_ZERO2": 2,
}
HYBRID_STRATEGIES = ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2")


@dataclass(frozen=True)
class ModelStates:
    """Bytes of model states held by one GPU."""

    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int

    @property
    def total_bytes(self) -> int:
        """Weights, gradients and optimizer states together (bytes)."""
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes


def shard_elements(params: int, world_size: int) -> int:
    """Elements of one rank's partition: ceil(P / N). A rank holds whole elements of every state
    (FSDP and DeepSpeed pad the flat parameter to a multiple of world_size): 1 parameter on 4
    GPUs is 2 B of bf16 each, not 1."""
    return ceil_div(params, world_size)


def check_world_size(world_size: int) -> int:
    """Return ``world_size`` if it is an int >= 1, else raise ValueError."""
    return check_int(world_size, "world_size", 1)


def check_zero_stage(zero_stage: int) -> int:
    """Return ``zero_stage`` if it is 0, 1, 2 or 3, else raise ValueError."""
    if zero_stage not in ZERO_STAGES or isinstance(zero_stage, bool):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    return zero_stage


def model_states_per_gpu(
    params: int,
    world_size: int,
    zero_stage: int,
    optimizer: str | BytesPerParam = "adamw",
) -> ModelStates:
    """Model-state bytes on one GPU (ZeRO paper §5.1).

    params: number of parameters (> 0); world_size: data-parallel ranks (>= 1);
    zero_stage: 0 (DDP), 1, 2 or 3; optimizer: a name of ``vram.states.OPTIMIZERS``
    or a ``BytesPerParam``. Returns ``ModelStates`` in bytes (ints; a sharded part is
    ceil(params / world_size) whole elements per rank). Raises ValueError for out-of-range input.
    """
    check_params(params)
    check_world_size(world_size)
    check_zero_stage(zero_stage)
    bpp = as_bytes_per_param(optimizer)
    shard = shard_elements(params, world_size)
    return ModelStates(
        weights_bytes=(shard if zero_stage >= 3 else params) * bpp.weights,
        gradients_bytes=(shard if zero_stage >= 2 else params) * bpp.gradients,
        optimizer_bytes=(shard if zero_stage >= 1 else params) * bpp.optimizer,
    )


def fsdp_zero_stage(sharding_strategy: str) -> int:
    """ZeRO stage equivalent to an FSDP ``ShardingStrategy`` name. Raises ValueError."""
    return lookup(FSDP_TO_ZERO_STAGE, sharding_strategy, "FSDP sharding strategy")


def fsdp_model_states_per_gpu(
    params: int,
    world_size: int,
    sharding_strategy: str,
    optimizer: str | BytesPerParam = "adamw",
    shard_group_size: int | None = None,
) -> ModelStates:
    """Model-state bytes on one GPU under an FSDP ``ShardingStrategy`` name.

    The hybrid strategies shard over ``shard_group_size`` ranks (FSDP's default: the
    GPUs of one machine) and replicate across the world_size / shard_group_size groups;
    ``shard_group_size`` is required for them and must divide world_size, and must be
    omitted for the others. Returns ``ModelStates`` in bytes. Raises ValueError.
    """
    zero_stage = fsdp_zero_stage(sharding_strategy)
    check_world_size(world_size)
    if sharding_strategy not in HYBRID_STRATEGIES:
        if shard_group_size is not None:
            raise ValueError(f"shard_group_size applies only to {' and '.join(HYBRID_STRATEGIES)}")
        return model_states_per_gpu(params, world_size, zero_stage, optimizer)
    if shard_group_size is None:
        raise ValueError(f"{sharding_strategy} needs shard_group_size (GPUs per shard group)")
    check_int(shard_group_size, "shard_group_size", 1)
    if world_size % shard_group_size:
        raise ValueError(f"shard_group_size {shard_group_size} must divide world_size {world_size}")
    return model_states_per_gpu(params, shard_group_size, zero_stage, optimizer)
