"""The guide's "which cards suffice" claims (shared/cases/memory.md), model states only.

First in the ZeRO paper's accounting on the vendors' GB (10^9 bytes: H200 141 GB, a 192 GB
card, 80 GB, 48 GB, 24 GB), as memory.md states them; then as the pages now state them:
under DeepSpeed and FSDP2, on the cards as nvidia-smi reports them less the stated reserve.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

import vram
import vram.fit
from tests.card_sources import memory_mib
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


# --- the same claims under the frameworks, on the cards as nvidia-smi reports them ---------
# Cards: nvidia-smi's memory.total in MiB (shared/cases/oracles.md), less gpus.yaml's stated
# reserve for the CUDA context and NCCL buffers. DeepSpeed's figures: its own estimator.

REPO = Path(__file__).resolve().parents[2]
NVIDIA_SMI_MIB = {card: memory_mib(card) for card in ("h100", "a6000", "rtx-4090", "h200", "b200")}


@pytest.fixture(scope="module")
def usable() -> dict[str, int]:
    reserve = yaml.safe_load((REPO / "snippets" / "data" / "gpus.yaml").read_text(encoding="utf-8"))["reserve_mib"]
    return {card: vram.fit.usable_bytes(mib, reserve) for card, mib in NVIDIA_SMI_MIB.items()}


@pytest.fixture(scope="module")
def zero3():
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs

    return lambda params, largest, n: estimate_zero3_model_states_mem_needs(
        params, largest, n, 1, False, False, True, 1
    )[1]


def _shape(name: str) -> vram.ModelShape:
    return vram.model_shape(REPO / "snippets" / "data" / "models" / name)


def test_8b_card_claims_hold_under_deepspeed_and_fsdp2(usable):
    """index: 4 x H100 with ZeRO-2 or ZeRO-3, 4 x A6000 with ZeRO-3, RTX 4090 only with 8 or offload."""
    shape = _shape("llama-3.1-8b.json")

    def need(framework, n, stage, offload=False):
        return vram.framework_memory(framework, shape, n, stage, offload_optimizer=offload).per_gpu_bytes

    for framework in ("deepspeed", "fsdp2"):
        for stage in (2, 3):
            assert vram.fits(need(framework, 4, stage), usable["h100"]), (framework, stage)
        assert vram.fits(need(framework, 4, 3), usable["a6000"]), framework
        assert not vram.fits(need(framework, 4, 2), usable["a6000"]), framework
        assert vram.fits(need(framework, 8, 3), usable["rtx-4090"]), framework
        for stage in (0, 2, 3):
            assert not vram.fits(need(framework, 4, stage), usable["rtx-4090"]), (framework, stage)
    assert vram.fits(need("deepspeed", 4, 3, offload=True), usable["rtx-4090"])


def test_needs_table_30_to_70b_on_8_cards(usable, zero3):
    """needs.yaml: Qwen3 32B on 8 H100 (FSDP2 and DeepSpeed ZeRO-3); Llama 3.1 70B only on 8 B200."""
    for name, fits, not_fits in (("qwen3-32b.json", "h100", None), ("llama-3.1-70b.json", "b200", "h200")):
        shape = _shape(name)
        deepspeed = zero3(shape.params, shape.largest_layer_params, 8)  # the estimator, not our formula
        assert vram.framework_memory("deepspeed", shape, 8, 3).per_gpu_bytes == deepspeed
        fsdp2 = vram.framework_memory("fsdp2", shape, 8, 3).per_gpu_bytes
        assert vram.fits(deepspeed, usable[fits]) and vram.fits(fsdp2, usable[fits]), name
        if not_fits:
            assert not vram.fits(deepspeed, usable[not_fits]) and not vram.fits(fsdp2, usable[not_fits]), name


def test_needs_table_13b_on_one_h200_only_with_8bit_adam_in_the_papers_accounting(usable):
    assert not vram.fits(_per_gpu(P13B, 1, 0), usable["b200"])  # 208 GB
    assert vram.fits(_per_gpu(P13B, 1, 0, "adam8bit"), usable["h200"])  # 130 GB


def test_llama_70b_config_is_the_published_model():
    raw = json.loads((REPO / "snippets" / "data" / "models" / "llama-3.1-70b.json").read_text(encoding="utf-8"))
    assert (raw["hidden_size"], raw["num_hidden_layers"], raw["vocab_size"]) == (8192, 80, 128256)
