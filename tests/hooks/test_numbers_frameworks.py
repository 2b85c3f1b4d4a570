"""The framework placeholders of hooks/render/numbers.py against independent values.

Oracles: DeepSpeed 0.19's estimator functions (imported), the multipliers DeepSpeed's source
comment and shared/cases/oracles.md state (typed here), and the ZeRO paper's table.
"""

from __future__ import annotations

import logging

import pytest

from hooks.errors import RenderError
from hooks.render.markdown import render_markdown

GB = 10**9


def render(text: str, lang: str = "it") -> str:
    """The rendered text with no-break spaces as plain spaces."""
    return render_markdown(text, lang).strip().replace("\u202f", " ").replace("\xa0", " ")


@pytest.fixture(scope="module")
def zero3():
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs

    return estimate_zero3_model_states_mem_needs


def test_train_memory_of_70b_on_8_gpus_is_deepspeeds_estimate(zero3):
    # Llama 3.1 70B: P and the largest module (the 128,256 x 8,192 embedding) as published.
    params, largest = 70_553_706_496, 128_256 * 8_192
    _, gpu, _ = zero3(params, largest, 8, 1, False, False, True, 1)
    expected = f"{gpu / GB:.0f}"
    text = "{{ train_memory framework=deepspeed model=llama-3.1-70b world_size=8 zero_stage=3 }}"
    assert render(text, "it") == f"{expected} GB"
    assert render(text, "fr") == f"{expected} Go"


@pytest.mark.parametrize(
    "args, formula",
    [
        # stage_1_and_2.py: 2 (16-bit params) + "18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit"
        ("framework=deepspeed zero_stage=2", "2P + 18P/N"),
        ("framework=deepspeed zero_stage=2 part=gradients", "6P/N"),
        ("framework=deepspeed zero_stage=2 part=optimizer", "12P/N"),
        # stage3.py: largest_layer_memory = 4 * largest_layer_params; int(18 * P / N)
        ("framework=deepspeed zero_stage=3", "18P/N + 4L"),
        ("framework=deepspeed zero_stage=3 part=working", "4L"),
        ("framework=deepspeed zero_stage=2 offload=optimizer", "2P"),  # cpu_offload: gpu_mem = 2 * total_params
        ("framework=deepspeed zero_stage=3 offload=optimizer", "2P/N + 4L"),
        ("framework=deepspeed zero_stage=3 offload=all", "4L"),
        # oracles.md: host RAM really pinned, 16P (fp32 master, two moments, fp32 gradients)
        ("framework=deepspeed zero_stage=2 offload=optimizer part=host", "16P·M/N"),
        # oracles.md, FSDP2: 2P + 16P/N with reshard_after_forward=False; 4 + 4 + 8 under AMP
        ("framework=fsdp2 zero_stage=2 part=states", "2P + 16P/N"),
        ("framework=fsdp2 zero_stage=3 part=states", "16P/N"),
        ("framework=fsdp2 zero_stage=0 world_size=1 part=states", "16P"),
        ("framework=fsdp2 zero_stage=0 world_size=1 part=weights", "4P"),
        ("framework=fsdp2 zero_stage=0 world_size=1 part=optimizer", "8P"),
        # FSDP2's working buffers at each moment of backward, by hand from PyTorch 2.13's
        # _fsdp_param_group.py and measured in tests/vram/test_fsdp2_torchrun.py: a block's backward
        # (root 2R, this and the prefetched block 4B, gradients 2B + 2O, the previous block's fp32
        # reduce-scatter input 4B); the root's reduce-scatter (its bf16 gradients 2R in its fp32 input 4R)
        ("framework=fsdp2 zero_stage=3 part=working moment=block", "10B + 2R + 2O"),
        ("framework=fsdp2 zero_stage=3 part=working moment=root", "6R"),
        ("framework=fsdp2 zero_stage=2 part=working moment=block", "4B + 2O"),
        ("framework=fsdp2 zero_stage=2 moment=block", "2P + 16P/N + 4B + 2O"),
        ("framework=fsdp2 zero_stage=2 moment=root", "16P/N + 6R"),  # every weight resharded by then
        # the ZeRO paper, §5.1
        ("zero_stage=2", "2P + 14P/N"),
        ("zero_stage=3", "16P/N"),
    ],
)
def test_framework_formula(args, formula):
    assert render(f"{{{{ framework_formula {args} }}}}") == formula


def test_fsdp2_on_llama_8b_peaks_at_the_roots_reduce_scatter():
    """The formulas page: for Llama 3.1 8B the root's reduce-scatter is the larger moment, 6R,
    R = 2 x 128,256 x 4,096 + 4,096 (untied embedding and lm_head, final norm: the published config)."""
    root = 2 * 128_256 * 4_096 + 4_096
    text = "{{ train_memory framework=fsdp2 model=llama-3.1-8b world_size=8 zero_stage=3 part=working decimals=2 }}"
    number, unit = render(text).split()
    assert (float(number.replace(",", ".")), unit) == (round(6 * root / GB, 2), "GB")


def test_a_negative_coefficient_is_subtracted():
    import vram

    assert vram.breakdown.format_formula(((6, "R"), (-2, "P"))) == "6R − 2P"
    assert vram.breakdown.format_formula(((-2, "P"), (16, "PM/N"))) == "−2P + 16P·M/N"


def test_offload_host_ram_names_its_framework():
    assert render("{{ offload_host_ram params=8e9 }}") == "96 GB"  # the paper: 12 B/param (memory.md)
    assert render("{{ offload_host_ram params=8e9 framework=deepspeed }}") == "128 GB"  # 16 B/param (oracles.md)


def test_activation_memory_of_8b_under_sdpa_is_about_13_gb_in_the_layers():
    # oracles.md: 49 s*b*h x 32 layers = 13.2 GB, plus logits; not Korthikanti's eager 30.6 GB
    assert render("{{ activation_memory model=llama-3.1-8b seq_len=2048 part=layers }}") == "13 GB"
    total = render("{{ activation_memory model=llama-3.1-8b seq_len=2048 decimals=1 }}")
    assert 13.2 < float(total.split()[0].replace(",", ".")) < 30.6 / 2


@pytest.mark.parametrize(
    "text, needle",
    [
        ("{{ train_memory framework=fsdp2 params=8e9 world_size=8 zero_stage=3 }}", "config"),
        ("{{ train_memory framework=deepspeed params=8e9 world_size=8 zero_stage=3 }}", "largest"),
        ("{{ train_memory framework=fsdp2 model=llama-3.1-8b world_size=8 zero_stage=1 }}", "ZeRO-1"),
        ("{{ train_memory framework=megatron params=8e9 }}", "framework"),
        ("{{ train_memory model=nope params=8e9 }}", "not both"),
        ("{{ train_memory model=nope }}", "nope"),
        ("{{ framework_formula framework=deepspeed zero_stage=2 part=host }}", "empty"),
        ("{{ framework_formula framework=deepspeed zero_stage=3 moment=root }}", "moment="),
        ("{{ framework_formula framework=fsdp2 zero_stage=3 moment=middle }}", "middle"),
        # a formula of FSDP2's working buffers names its moment: which one is larger depends on the model
        ("{{ framework_formula framework=fsdp2 zero_stage=3 }}", "moment=block or moment=root"),
        ("{{ framework_formula framework=fsdp2 zero_stage=2 part=working }}", "moment=block or moment=root"),
        ("{{ activation_memory model=llama-3.1-8b seq_len=2048 recompute=some }}", "recompute"),
    ],
)
def test_bad_arguments_are_one_render_error(text, needle):
    with pytest.raises(RenderError, match=needle):
        render(text)


def test_frameworks_table_deepspeed_rows_are_oracles_md():
    """oracles.md: Llama 3.1 8B under DeepSpeed, 4 and 8 GPUs: ZeRO-2 52.2 / 34.1 GB, ZeRO-3 38.2 / 20.2 GB."""
    from tests.hooks.markdown_tables import parse_tables

    (table,) = parse_tables(render("{{ table name=frameworks model=llama-3.1-8b world_sizes=4,8 }}"))
    rows = {row[0]: row[1:] for row in table[1:]}
    assert rows["DeepSpeed ZeRO-2"] == ["52,2 GB", "34,1 GB"]
    assert rows["DeepSpeed ZeRO-3"] == ["38,2 GB", "20,2 GB"]
    assert any(name.startswith("FSDP2, reshard_after_forward=True") for name in rows)
    assert not any("paper" in name for name in rows)  # the paper's accounting is the sharding table
