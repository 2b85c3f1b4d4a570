"""vram.loading: host RAM while every rank loads the model, against published checkpoints.

Oracle: the ``total_size`` that Hugging Face's ``model.safetensors.index.json`` of
meta-llama/Llama-3.1-8B gives for its bf16 weights, 16,060,522,496 bytes (8,030,261,248
parameters, the count transformers gets on the meta device): one copy per process.
"""

from __future__ import annotations

import pytest

from hooks.render.markdown import render_markdown
from vram.loading import load_host_ram

LLAMA_31_8B_PARAMS = 8_030_261_248
LLAMA_31_8B_SAFETENSORS_BYTES = 16_060_522_496


def test_every_rank_holds_one_full_copy():
    ram = load_host_ram(LLAMA_31_8B_PARAMS, 8)
    assert ram.per_process_bytes == LLAMA_31_8B_SAFETENSORS_BYTES
    assert ram.every_rank_loads_bytes == 8 * LLAMA_31_8B_SAFETENSORS_BYTES
    assert ram.rank0_loads_bytes == LLAMA_31_8B_SAFETENSORS_BYTES


def test_fp32_doubles_it():
    assert load_host_ram(LLAMA_31_8B_PARAMS, 1, "fp32").per_process_bytes == 2 * LLAMA_31_8B_SAFETENSORS_BYTES


@pytest.mark.parametrize(
    "params, world_size, dtype", [(0, 8, "bf16"), (8, 0, "bf16"), (8, 8, "bf17"), (True, 8, "bf16")]
)
def test_bad_arguments(params, world_size, dtype):
    with pytest.raises(ValueError):
        load_host_ram(params, world_size, dtype)


@pytest.mark.parametrize("lang, every_rank, rank0", [("it", "128 GB", "16 GB"), ("fr", "128 Go", "16 Go")])
def test_placeholder_as_the_guide_writes_it(lang, every_rank, rank0):
    text = render_markdown(
        "{{ load_host_ram params=8e9 world_size=8 }} {{ load_host_ram params=8e9 world_size=8 rank0_only=1 }}", lang
    )
    assert text.replace("\u202f", " ").replace("\u00a0", " ") == f"{every_rank} {rank0}"
