"""Cards as nvidia-smi reports them, and what fits on them (vram.fit).

Expected values typed from ../shared/cases/oracles.md ("Cards"), each checked against a
public nvidia-smi output named in snippets/data/gpus.yaml; the unit conversions from the
definitions (MiB = 2^20 bytes, GB = 10^9 bytes), and Modal's table of nvidia-smi totals
(thundergolfer.com/blog/nvidia-gpu-memory-capacity: H100 81,559 MiB = 85.52 GB, A100 80GB
81,920 MiB = 85.89 GB, H200 143,771 MiB = 150.75 GB).
"""

from __future__ import annotations

import math

import pytest
import yaml
from inline_snapshot import snapshot

import vram
from tests.card_sources import CARD_SOURCES
from tests.conftest import REPO_ROOT
from vram.fit import MIB, mib_to_bytes, usable_bytes

CATALOGUE = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "gpus.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def catalogue() -> dict:
    return CATALOGUE


@pytest.mark.parametrize("key", list(CATALOGUE["gpus"]))
def test_each_card_is_what_its_sources_print(key):
    card = CATALOGUE["gpus"][key]
    if key not in CARD_SOURCES:
        pytest.fail(
            f"snippets/data/gpus.yaml: card {key!r} has no oracle: add to CARD_SOURCES in "
            f"tests/card_sources.py the memory.total that {card.get('source')} shows (MiB) and the dense "
            f"BF16 TFLOPS and GB/s of {card.get('datasheet')}, as those documents print them"
        )
    sources = CARD_SOURCES[key]
    assert card["memory_mib"] == sources.memory_mib, f"{key}: nvidia-smi reports {sources.memory_mib:,} MiB"
    assert (card["bf16_dense_tflops"], card["memory_bandwidth_gb_per_s"]) == (
        sources.bf16_dense_tflops,
        sources.memory_bandwidth_gb_per_s,
    ), f"{key}: {sources.datasheet}"
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


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: usable_bytes(1000, 1000), "reserve_mib 1000 must be less than memory_mib 1000"),
        (lambda: usable_bytes(0, 0), "memory_mib"),
        (lambda: usable_bytes(1000, -1), "reserve_mib"),
        (lambda: mib_to_bytes(1.5), "mib"),  # type: ignore[arg-type]  # the wrong type is the case
    ],
)
def test_bad_capacities_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_mib_is_2_to_the_20():
    assert MIB == 1_048_576


@pytest.mark.parametrize(
    "required, capacity",
    [
        (float("nan"), 100),
        (50, float("nan")),
        (float("inf"), 100),
        (50, float("inf")),
        (True, 100),
        (50, True),
        ("50", 100),
        (50, None),
    ],
)
def test_fits_refuses_what_is_not_a_finite_number_of_bytes(required, capacity):
    # NaN compared False everywhere (a NaN need "did not fit" silently); a string raised TypeError
    with pytest.raises(ValueError, match="must be a finite number of bytes"):
        vram.fits(required, capacity)
    with pytest.raises(ValueError, match="must be a finite number of bytes"):
        vram.free_fraction(required, capacity)


def test_fits_compares_integers_beyond_float_exactly():
    assert vram.fits(10**400, 10**400) and not vram.fits(10**400 + 1, 10**400)
