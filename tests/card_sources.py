"""Every card's figures as its sources print them, kept once: the memory ``nvidia-smi`` reports
(``memory.total``, MiB = 2^20 bytes), from ../shared/cases/oracles.md ("Cards"), each checked
against the public nvidia-smi output the card's ``source`` in snippets/data/gpus.yaml names, and
the vendor datasheet's dense BF16 peak and memory bandwidth. ``tests/vram/test_cards.py`` holds
the real catalogue to them; other tests take a card's size from here, never typing it again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sources:
    """One card's figures as its sources print them: nvidia-smi's ``memory.total`` (MiB) and
    the vendor datasheet's dense BF16 peak (TFLOPS, half the 2:4-sparse figure vendors print
    first) and memory bandwidth (GB/s)."""

    memory_mib: int
    bf16_dense_tflops: float
    memory_bandwidth_gb_per_s: float
    datasheet: str  # what the vendor document prints


CARD_SOURCES = {
    "b200": Sources(183_359, 4500 / 2, 8000, "HGX B200: 36 PFLOPS sparse for 8 GPUs, 64 TB/s"),
    "h200": Sources(143_771, 1979 / 2, 4800, "H200 SXM: 1,979 TFLOPS sparse, 4.8 TB/s"),
    "rtx-pro-6000": Sources(97_887, 503.8, 1792, "RTX Blackwell architecture: 503.8 TFLOPS dense, 1,792 GB/s"),
    "h100": Sources(81_559, 1979 / 2, 3350, "H100 SXM: 1,979 TFLOPS sparse, 3.35 TB/s"),
    "a100-80gb": Sources(81_920, 312, 2039, "A100 80GB SXM: 312 TFLOPS dense, 2,039 GB/s"),
    "a6000": Sources(49_140, 154.8, 768, "GA102 whitepaper, RTX A6000: 154.8 TFLOPS dense, 768 GB/s"),
    "rtx-5090": Sources(32_607, 209.5, 1792, "RTX Blackwell architecture: 209.5 TFLOPS dense, 1,792 GB/s"),
    "rtx-4090": Sources(24_564, 165.2, 1008, "Ada Lovelace architecture: 165.2 TFLOPS dense, 1,008 GB/s"),
    "rtx-3090": Sources(24_576, 71, 936, "GA102 whitepaper, RTX 3090: 71 TFLOPS dense, 936 GB/s"),
}


def memory_mib(key: str) -> int:
    """nvidia-smi's ``memory.total`` of card ``key``, in MiB."""
    return CARD_SOURCES[key].memory_mib
