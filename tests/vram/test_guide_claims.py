"""The guide's "which cards suffice" claims (shared/cases/memory.md), model states only.

Card capacities are the vendors' GB (10^9 bytes): H200 141 GB, a 192 GB card (B200 /
MI300X), 80 GB (A100/H100), 48 GB (L40S / RTX 6000 Ada), 24 GB (RTX 4090 / L4).
"""

from __future__ import annotations

import vram
from vram import gb_to_bytes

P8B, P13B = 8 * 10**9, 13 * 10**9


def _per_gpu(params, world_size, zero_stage, optimizer="adamw", offload=False) -> int:
    return vram.training_memory_per_gpu(params, world_size, zero_stage, optimizer, offload).per_gpu_bytes


def test_8b_adamw_fits_one_h200():
    need = _per_gpu(P8B, 1, 0)
    assert need == gb_to_bytes(128)
    assert vram.fits(need, gb_to_bytes(141))


def test_13b_adamw_does_not_fit_192_gb_but_8bit_optimizer_fits_141():
    need = _per_gpu(P13B, 1, 0)
    assert need == gb_to_bytes(208)
    assert not vram.fits(need, gb_to_bytes(192))
    assert vram.fits(_per_gpu(P13B, 1, 0, "adam8bit"), gb_to_bytes(141))


def test_8b_on_4_x_80_gb_with_zero2_or_zero3():
    for stage in (2, 3):
        assert vram.fits(_per_gpu(P8B, 4, stage), gb_to_bytes(80))
    assert not vram.fits(_per_gpu(P8B, 4, 0), gb_to_bytes(80))  # DDP: 128 GB


def test_8b_on_4_x_48_gb_with_zero3():
    assert vram.fits(_per_gpu(P8B, 4, 3), gb_to_bytes(48))  # 32 GB
    # ZeRO-2 (44 GB) leaves under 10% of a 48 GB card: not a comfortable fit.
    assert vram.free_fraction(_per_gpu(P8B, 4, 2), gb_to_bytes(48)) < 0.10
    assert not vram.fits(_per_gpu(P8B, 4, 2), gb_to_bytes(48), min_free_fraction=0.10)


def test_8b_on_24_gb_cards_only_with_8_of_them_or_with_offload():
    card = gb_to_bytes(24)
    assert _per_gpu(P8B, 8, 3) == gb_to_bytes(16)
    assert vram.fits(_per_gpu(P8B, 8, 3), card)
    assert not vram.fits(_per_gpu(P8B, 4, 3), card)  # 32 GB
    assert vram.fits(_per_gpu(P8B, 4, 3, offload=True), card)  # 8 GB left on the GPU
