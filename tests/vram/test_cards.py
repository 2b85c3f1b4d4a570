"""Cards as nvidia-smi reports them, and what fits on them (vram.fit).

Expected values typed from ../shared/cases/oracles.md ("Cards"), each checked against a
public nvidia-smi output named in snippets/data/gpus.yaml; the unit conversions from the
definitions (MiB = 2^20 bytes, GB = 10^9 bytes), and Modal's table of nvidia-smi totals
(thundergolfer.com/blog/nvidia-gpu-memory-capacity: H100 81,559 MiB = 85.52 GB, A100 80GB
81,920 MiB = 85.89 GB, H200 143,771 MiB = 150.75 GB).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import yaml
from inline_snapshot import snapshot

import vram
from vram.fit import MIB, mib_to_bytes, usable_bytes

from tests.conftest import REPO_ROOT

@dataclass(frozen=True)
class Sources:
    """One card's figures as its sources print them: nvidia-smi's ``memory.total`` (MiB) and
    the vendor datasheet's dense BF16 peak (TFLOPS, half the 2:4-sparse figure vendors print
    first) and memory bandwidth (GB/s)."""

    memory_mib: int
    bf16_dense_tflops: float
    memory_bandwidth_gb_per_s: float
    datasheet: str  # what the vendor document prints


# Every card of snippets/data/gpus.yaml, from its sources, kept here once: the memory from
# ../shared/cases/oracles.md ("Cards"), each checked against the public nvidia-smi output the
# card's ``source`` names; the speeds as the vendor documents print them.
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
CATALOGUE = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "gpus.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def catalogue() -> dict:
    return CATALOGUE


@pytest.mark.parametrize("key", list(CATALOGUE["gpus"]))
def test_each_card_is_what_its_sources_print(key):
    card = CATALOGUE["gpus"][key]
    if key not in CARD_SOURCES:
        pytest.fail(f"snippets/data/gpus.yaml: card {key!r} has no oracle: add to CARD_SOURCES in "
                    f"tests/vram/test_cards.py the memory.total that {card.get('source')} shows (MiB) and the dense "
                    f"BF16 TFLOPS and GB/s of {card.get('datasheet')}, as those documents print them")
    sources = CARD_SOURCES[key]
    assert card["memory_mib"] == sources.memory_mib, f"{key}: nvidia-smi reports {sources.memory_mib:,} MiB"
    assert (card["bf16_dense_tflops"], card["memory_bandwidth_gb_per_s"]) == (
        sources.bf16_dense_tflops, sources.memory_bandwidth_gb_per_s), f"{key}: {sources.datasheet}"
    assert card["source"].startswith("https://github.com/") and "nvidia-smi" in card["source"]
    assert card["datasheet"].startswith("https://")


@pytest.mark.parametrize("mib, gb", [(81_559, 85.52), (81_920, 85.89), (143_771, 150.75)])
def test_mib_to_gb_as_modals_table(mib, gb):
    # the table truncates to two decimals (85,899,345,920 B: "85.89 GB")
    assert math.floor(vram.bytes_to_gb(mib_to_bytes(mib)) * 100) / 100 == gb


def test_the_reserve_is_stated_and_taken_from_every_card(catalogue):
    reserve = catalogue["reserve_mib"]
    # today's reserve, a snapshot (`pytest --inline-snapshot=fix` rewrites it; the diff shows it):
    # the CUDA context and NCCL buffers, gpus.yaml says why
    assert reserve == snapshot(2048)
    assert usable_bytes(81_559, reserve) == (81_559 - reserve) * 2**20


def test_a_tie_fits_and_one_byte_more_does_not():
    capacity = usable_bytes(81_559, 2048)
    assert vram.fits(capacity, capacity)
    assert not vram.fits(capacity + 1, capacity)
    assert vram.free_fraction(capacity, capacity) == 0.0


def test_8b_with_8bit_adam_fits_one_h100_after_the_reserve():
    # oracles.md: 8,030,261,248 parameters x (2 + 2 + 6) B = 80.3 GB of model states.
    need = vram.training_memory_per_gpu(8_030_261_248, 1, 0, "adam8bit").per_gpu_bytes
    assert need == 80_302_612_480
    assert vram.fits(need, usable_bytes(81_559, 2048))
    assert usable_bytes(81_559, 2048) - need == 3_070_713_856  # 3.07 GB of margin


@pytest.mark.parametrize("call, match", [
    (lambda: usable_bytes(1000, 1000), "reserve_mib 1000 must be less than memory_mib 1000"),
    (lambda: usable_bytes(0, 0), "memory_mib"),
    (lambda: usable_bytes(1000, -1), "reserve_mib"),
    (lambda: mib_to_bytes(1.5), "mib"),
])
def test_bad_capacities_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_mib_is_2_to_the_20():
    assert MIB == 1_048_576


@pytest.mark.parametrize("required, capacity", [
    (float("nan"), 100), (50, float("nan")), (float("inf"), 100), (50, float("inf")),
    (True, 100), (50, True), ("50", 100), (50, None),
])
def test_fits_refuses_what_is_not_a_finite_number_of_bytes(required, capacity):
    # NaN compared False everywhere (a NaN need "did not fit" silently); a string raised TypeError
    with pytest.raises(ValueError, match="must be a finite number of bytes"):
        vram.fits(required, capacity)
    with pytest.raises(ValueError, match="must be a finite number of bytes"):
        vram.free_fraction(required, capacity)


def test_fits_compares_integers_beyond_float_exactly():
    assert vram.fits(10**400, 10**400) and not vram.fits(10**400 + 1, 10**400)
