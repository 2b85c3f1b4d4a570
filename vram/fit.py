"""Does a per-GPU requirement fit a card? Building blocks for "find the GPU".

Capacities are in bytes: a card sold as 80 GB is ``gb_to_bytes(80)``. The comparison is
plain: no allowance for the CUDA context, the allocator or activations unless the caller
adds them to ``required_bytes`` or asks for free room with ``min_free_fraction``.
"""

from __future__ import annotations


def free_fraction(required_bytes: int | float, capacity_bytes: int | float) -> float:
    """Share of the card left free: (capacity - required) / capacity (negative: does not fit).

    Raises ValueError for a non-positive capacity or a negative requirement.
    """
    if capacity_bytes <= 0:
        raise ValueError(f"capacity_bytes must be positive, got {capacity_bytes!r}")
    if required_bytes < 0:
        raise ValueError(f"required_bytes must be >= 0, got {required_bytes!r}")
    return (capacity_bytes - required_bytes) / capacity_bytes


def fits(required_bytes: int | float, capacity_bytes: int | float, min_free_fraction: float = 0.0) -> bool:
    """True if ``required_bytes`` fits ``capacity_bytes`` leaving ``min_free_fraction`` (0-1) free.

    Raises ValueError as ``free_fraction`` does, or for min_free_fraction outside [0, 1).
    """
    if not 0.0 <= min_free_fraction < 1.0:
        raise ValueError(f"min_free_fraction must be in [0, 1), got {min_free_fraction!r}")
    return free_fraction(required_bytes, capacity_bytes) >= min_free_fraction
