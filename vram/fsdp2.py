"""Exact per-rank model-state bytes of FSDP2 (``torch.distributed.fsdp.fully_shard``).

``model_states_per_gpu`` divides the whole model by world_size. FSDP2 shards each
parameter on its own along dim 0 (``torch/distributed/fsdp/_fully_shard/_fsdp_param.py``,
``FSDPParam._init_sharded_param``): like ``torch.chunk``, every rank's chunk has
ceil(dim0 / world_size) rows, the last ranks hold fewer (or none), and each rank
allocates a padded chunk of the full ceil size. So, per rank and per parameter:

- sharded weights: the padded chunk (``to_local()`` is a view of it, without the padding);
- sharded gradients: the padded chunk (reduce-scatter output, one buffer per group);
- optimizer states: created by the optimizer from ``to_local()``, so unpadded.

When every dim 0 is a multiple of world_size there is no padding and the result equals
``model_states_per_gpu(sum of numel, world_size, 3, optimizer)``. Weights and gradients
are in the parameter dtype here (no ``MixedPrecisionPolicy``): pass an fp32 optimizer
such as ``"adamw-fp32"`` or ``"sgd-fp32"`` for an fp32 model.
"""

from __future__ import annotations

from math import prod
from typing import Iterable, Sequence

from .sharding import ModelStates, check_world_size
from .states import BytesPerParam, as_bytes_per_param
from .validate import check_int


def fsdp2_chunk_rows(dim0: int, world_size: int) -> int:
    """Rows of every rank's padded chunk: ceil(dim0 / world_size)."""
    check_world_size(world_size)
    return -(-check_int(dim0, "dim0", 0) // world_size)


def fsdp2_local_rows(dim0: int, world_size: int, rank: int) -> int:
    """Rows rank ``rank`` really holds (``to_local().shape[0]``): 0 for ranks past the end."""
    chunk = fsdp2_chunk_rows(dim0, world_size)
    if not 0 <= check_int(rank, "rank", 0) < world_size:
        raise ValueError(f"rank must be in 0..{world_size - 1}, got {rank!r}")
    return max(0, min(chunk, dim0 - rank * chunk))


def fsdp2_model_states_per_rank(
    shapes: Iterable[Sequence[int]],
    world_size: int,
    rank: int,
    optimizer: str | BytesPerParam = "adamw-fp32",
) -> ModelStates:
    """Model-state bytes held by ``rank`` for parameters of the given ``shapes``.

    Weights and gradients count the padded chunk, optimizer states the local rows (see
    the module docstring). Raises ValueError for a 0-dimensional shape, a bad
    world_size or rank.
    """
    bpp = as_bytes_per_param(optimizer)
    padded = local = 0
    for shape in shapes:
        if len(shape) == 0:
            raise ValueError("0-dimensional parameters are not covered; give them shape (1,)")
        rest = prod(shape[1:])
        padded += fsdp2_chunk_rows(shape[0], world_size) * rest
        local += fsdp2_local_rows(shape[0], world_size, rank) * rest
    return ModelStates(
        weights_bytes=padded * bpp.weights,
        gradients_bytes=padded * bpp.gradients,
        optimizer_bytes=local * bpp.optimizer,
    )
