"""Does a per-GPU requirement fit a card? Building blocks for "find the GPU".

A card's capacity is what nvidia-smi reports (``memory.total``, in MiB = 2^20 bytes:
``snippets/data/gpus.yaml``), not the vendor's round "GB": an H100 sold as 80 GB reports
81,559 MiB = 85,520,809,984 bytes = 85.5 GB. From it a process loses a fixed reserve
(the CUDA context and NCCL's buffers: ``reserve_mib`` in gpus.yaml); what remains is
``usable_bytes``. A requirement fits when it is at most the usable bytes, a tie included.
Activations and the allocator's fragmentation are not part of the reserve: the caller
adds them to ``required_bytes`` or asks for free room with ``min_free_fraction``.

"Tight" has one meaning for every kind of job (training, LoRA, serving), the page and the
command line: ``is_tight``, less than ``TIGHT_FREE_FRACTION`` of the card's capacity left
free at the job's peak, everything the calculator counts included (a training step's
activations, with the recomputation the card runs with; a server's weights and KV cache).
"""

from __future__ import annotations

import math

from .validate import check_int

MIB = 2**20
# The share of a card's capacity that must stay free at the job's peak for a fit not to be
# "tight": 10 %, the headroom vLLM leaves outside its own budget by default
# (gpu_memory_utilization=0.9, vllm/engine/arg_utils.py EngineArgs; the fraction of each GPU's
# memory the engine may use). A convention the guide states, not a measurement: fragmentation
# and allocator overhead vary by job; a tight fit is one to measure before renting for long.
TIGHT_FREE_FRACTION = 0.1


def mib_to_bytes(mib: int) -> int:
    """MiB (2^20 bytes, nvidia-smi's unit) -> bytes. Raises ValueError for a negative or non-int value."""
    return check_int(mib, "mib", 0) * MIB


def usable_bytes(memory_mib: int, reserve_mib: int) -> int:
    """Bytes of a card a process can give to tensors: (memory_mib - reserve_mib) x 2^20.

    memory_mib: nvidia-smi's ``memory.total`` (> 0); reserve_mib: the CUDA context and
    NCCL buffers (>= 0, less than memory_mib). Raises ValueError otherwise.
    """
    check_int(memory_mib, "memory_mib", 1)
    check_int(reserve_mib, "reserve_mib", 0)
    if reserve_mib >= memory_mib:
        raise ValueError(f"reserve_mib {reserve_mib} must be less than memory_mib {memory_mib}")
    return (memory_mib - reserve_mib) * MIB


def free_fraction(required_bytes: float, capacity_bytes: float) -> float:
    """Share of the capacity left free: (capacity - required) / capacity (negative: does not fit).

    Raises ValueError for a value that is not a finite int or float (bools, NaN, infinities,
    text), a non-positive capacity or a negative requirement.
    """
    for name, value in (("required_bytes", required_bytes), ("capacity_bytes", capacity_bytes)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            raise ValueError(f"{name} must be a finite number of bytes, got {value!r}")
    if capacity_bytes <= 0:
        raise ValueError(f"capacity_bytes must be positive, got {capacity_bytes!r}")
    if required_bytes < 0:
        raise ValueError(f"required_bytes must be >= 0, got {required_bytes!r}")
    return (capacity_bytes - required_bytes) / capacity_bytes


def fits(required_bytes: float, capacity_bytes: float, min_free_fraction: float = 0.0) -> bool:
    """True if ``required_bytes`` fits ``capacity_bytes`` (e.g. ``usable_bytes``) leaving
    ``min_free_fraction`` (0-1) free; a requirement equal to the capacity fits.

    Raises ValueError as ``free_fraction`` does, or for min_free_fraction outside [0, 1).
    """
    if not 0.0 <= min_free_fraction < 1.0:
        raise ValueError(f"min_free_fraction must be in [0, 1), got {min_free_fraction!r}")
    if min_free_fraction == 0.0:
        free_fraction(required_bytes, capacity_bytes)  # the same checks
        return required_bytes <= capacity_bytes  # exact for ints: a tie fits
    return free_fraction(required_bytes, capacity_bytes) >= min_free_fraction


def training_verdict(
    per_gpu_bytes: int, backward_bytes: int, activations_none: int, activations_full: int, capacity_bytes: int
) -> str | None:
    """Does a training step fit a card, and with what recomputation? ``"none"``: it fits with
    the activations of no recomputation; ``"full"``: only with full recomputation; None: not
    even then.

    per_gpu_bytes: the most the framework holds without activations (``FrameworkMemory.
    per_gpu_bytes``, the optimizer step's moment included); backward_bytes: what it holds at
    backward, which the activations come on top of (``FrameworkMemory.backward_bytes``; the
    same as per_gpu_bytes where no other moment is counted, as for LoRA);
    activations_none / activations_full: ``ActivationMemory.peak_bytes`` without and with
    full recomputation; capacity_bytes: ``usable_bytes`` of the card. The step fits when
    ``max(per_gpu_bytes, backward_bytes + activations) <= capacity_bytes`` (a tie fits).
    Raises ValueError for a negative or non-integer size.
    """
    for name, value in (
        ("per_gpu_bytes", per_gpu_bytes),
        ("backward_bytes", backward_bytes),
        ("activations_none", activations_none),
        ("activations_full", activations_full),
        ("capacity_bytes", capacity_bytes),
    ):
        check_int(value, name, 0)
    if backward_bytes > per_gpu_bytes:
        raise ValueError(f"backward_bytes {backward_bytes:,} exceeds per_gpu_bytes {per_gpu_bytes:,}")
    for mode, activations in (("none", activations_none), ("full", activations_full)):
        if max(per_gpu_bytes, backward_bytes + activations) <= capacity_bytes:
            return mode
    return None


def peak_bytes(per_gpu_bytes: int, backward_bytes: int, activations_bytes: int) -> int:
    """The most a training step holds: the larger of the optimizer step (``per_gpu_bytes``, no
    activations by then) and backward with its activations at their peak (``backward_bytes +
    activations_bytes``), as ``training_verdict`` compares them with a card. Raises ValueError
    for a negative or non-integer size."""
    for name, value in (
        ("per_gpu_bytes", per_gpu_bytes),
        ("backward_bytes", backward_bytes),
        ("activations_bytes", activations_bytes),
    ):
        check_int(value, name, 0)
    return max(per_gpu_bytes, backward_bytes + activations_bytes)


def is_tight(peak: float, capacity_bytes: float, min_free_fraction: float = TIGHT_FREE_FRACTION) -> bool:
    """True when a job whose peak (``peak_bytes`` for training and LoRA, weights and KV cache
    for serving) fits ``capacity_bytes`` leaves less than ``min_free_fraction`` of it free: the
    one definition of "tight" (module docstring). A job that does not fit is not tight (it does
    not fit). Raises ValueError as ``fits`` does."""
    return fits(peak, capacity_bytes) and not fits(peak, capacity_bytes, min_free_fraction)
