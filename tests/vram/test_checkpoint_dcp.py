"""Checkpoint sizes per framework: what ``torch.distributed.checkpoint`` really writes, and
the formulas page naming which framework each figure is.

DeepSpeed saves bf16 weights and the fp32 master copy with two moments (2 + 12 B per
parameter); ``train_fsdp2.py`` saves with DCP the fp32 parameters FSDP2 updates and AdamW's
two moments (4 + 8 B). Oracle: ``dcp.save`` of a real model and optimizer after one step,
the bytes of the files it writes (each tensor adds a header of a few KB).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict

import vram
from hooks.render.markdown import render_markdown


def test_dcp_writes_4_plus_8_bytes_per_parameter(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(4, 512)).square().mean().backward()
    optimizer.step()
    params = sum(p.numel() for p in model.parameters())
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save(model_state, checkpoint_id=tmp_path / "model", no_dist=True)
    dcp.save(optim_state, checkpoint_id=tmp_path / "optim", no_dist=True)
    written = sum(f.stat().st_size for f in tmp_path.rglob("*.distcp"))
    expected = vram.checkpoint_bytes(params, "adamw-fp32").total_bytes
    assert expected == 12 * params
    assert expected <= written <= expected * 1.01  # a header of a few KB per tensor and moment


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_formulas_page_names_the_framework_of_each_checkpoint_figure(lang):
    source = vram.__file__.rsplit("/vram/", 1)[0] + f"/docs/memory-formulas.{lang}.md"
    text = Path(source).read_text(encoding="utf-8")
    sentence = next(line for line in text.splitlines() if "{{ checkpoint params=8e9 }}" in line)
    rendered = render_markdown(sentence, lang).replace("\u00a0", " ").replace("\u202f", " ")
    assert "DeepSpeed" in rendered and "train_fsdp2.py" in rendered
    unit = "GB" if lang == "it" else "Go"
    assert re.search(rf"\b112 {unit}\b", rendered) and re.search(rf"\b96 {unit}\b", rendered), rendered
