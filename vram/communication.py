"""Bytes each GPU sends per training step, and the time at a given bus bandwidth.

Sources: nccl-tests doc/PERFORMANCE.md (all-reduce busbw = algbw * 2(n-1)/n; all-gather
and reduce-scatter busbw = algbw * (n-1)/n); ZeRO paper (arXiv:1910.02054) §7.2: DDP's
all-reduce moves 2*Psi per rank, ZeRO-1/2 the same (reduce-scatter + all-gather),
ZeRO-3 3*Psi (all-gather of weights in forward and backward + reduce-scatter), 1.5x DDP.
"""

from __future__ import annotations

from .sharding import check_world_size, check_zero_stage


def allreduce_busbw_factor(world_size: int) -> float:
    """nccl-tests bus-bandwidth factor of all-reduce, 2(n-1)/n (dimensionless)."""
    check_world_size(world_size)
    return 2 * (world_size - 1) / world_size


def busbw_from_algbw(algbw: float, world_size: int) -> float:
    """All-reduce bus bandwidth from algorithm bandwidth (same unit, e.g. GB/s)."""
    return algbw * allreduce_busbw_factor(world_size)


def gradient_bytes(params: int, grad_bytes_per_param: int = 2) -> int:
    """Bytes of one copy of the gradients (bf16: 2 B/param, fp32: 4 B/param).

    DDP all-reduces this much per step: 1B parameters in bf16 -> 2 GB.
    """
    return params * grad_bytes_per_param


def ring_allreduce_bytes_per_gpu(payload_bytes: int, world_size: int) -> float:
    """Bytes one rank sends in a ring all-reduce of ``payload_bytes``: 2(n-1)/n * S."""
    return allreduce_busbw_factor(world_size) * payload_bytes


def allgather_bytes_per_gpu(payload_bytes: int, world_size: int) -> float:
    """Bytes one rank sends in an all-gather of ``payload_bytes`` in all: (n-1)/n * S
    (nccl-tests doc/PERFORMANCE.md, all-gather busbw = algbw * (n-1)/n)."""
    check_world_size(world_size)
    return (world_size - 1) / world_size * payload_bytes


def bytes_per_gpu_per_step(
    params: int,
    world_size: int,
    zero_stage: int,
    grad_bytes_per_param: int = 2,
    weight_bytes_per_param: int = 2,
) -> float:
    """Bytes one GPU sends per optimizer step (ZeRO paper §7.2; nccl-tests volumes).

    Stages 0-2: one all-reduce of the gradients (or reduce-scatter + all-gather of the
    same volume). Stage 3: all-gather of the weights in forward and again in backward,
    plus a reduce-scatter of the gradients, each moving (n-1)/n of the full tensor.
    Returns bytes (float: the (n-1)/n factor). Raises ValueError for bad input.
    """
    check_world_size(world_size)
    check_zero_stage(zero_stage)
    share = (world_size - 1) / world_size
    grads = params * grad_bytes_per_param
    if zero_stage < 3:
        return 2 * share * grads
    weights = params * weight_bytes_per_param
    return share * weights * 2 + share * grads


def seconds_at_busbw(n_bytes: float, busbw_bytes_per_s: float) -> float:
    """Seconds to move ``n_bytes`` per GPU at a bus bandwidth in bytes/s.

    ``n_bytes`` is what one rank sends (``bytes_per_gpu_per_step``), which already holds
    the (n-1)/n or 2(n-1)/n factor; nccl-tests' busbw holds the same factor, so
    n_bytes / busbw = payload / algbw, the collective's time. Raises ValueError for a
    non-positive bandwidth.
    """
    if busbw_bytes_per_s <= 0:
        raise ValueError(f"bus bandwidth must be positive, got {busbw_bytes_per_s!r}")
    return n_bytes / busbw_bytes_per_s
