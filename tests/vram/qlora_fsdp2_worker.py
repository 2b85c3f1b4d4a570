"""Run as N gloo ranks (torchrun's environment; tests/snippets/fork_ranks.py): QLoRA under FSDP2.

Usage: fork_ranks.py --preload=transformers,peft,bitsandbytes 2 qlora_fsdp2_worker.py OUT_DIR
Each rank writes OUT_DIR/rank{N}.json with one run per ``SCENARIOS`` entry, measured exactly as
lora_fsdp2_worker.py measures LoRA (its ``run``), on a 4-bit base built as transformers 5 +
bitsandbytes 0.50.2 load one for FSDP (``BitsAndBytesConfig(load_in_4bit=True,
bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_quant_storage=torch.bfloat16)``):
every ``nn.Linear`` of the decoder layers (what ``replace_with_bnb_linear`` converts; ``lm_head``
is skipped) becomes a ``bnb.nn.Linear4bit`` whose weight is quantised on the CPU to NF4 with
double quantisation, its packed data stored in bf16 (``quant_storage``) so that FSDP2 can shard it
like any bf16 parameter. Beside lora_fsdp2_worker's figures:

- ``quant_state_bytes``: the bytes of every quantised weight's ``QuantState`` (absmax, code,
  offset, the nested absmax and code), which are not parameters: FSDP2 leaves them whole on
  every rank;
- ``packed_shapes``: the shape of each quantised weight's packed data (rows x 1).
Nothing here reads ``vram``: it measures.
"""

from __future__ import annotations

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fsdp2_worker import llama
from lora_fsdp2_worker import main

# name: (reshard_after_forward, AdamW implementation, LoRA rank[, CPUOffloadPolicy])
SCENARIOS = {
    "reshard_foreach": (True, "foreach", 8),
    "keep_foreach": (False, "foreach", 8),
    "reshard_offload": (True, "foreach", 8, True),
}
MEASURED: dict = {}


def _quant_state_tensors(state) -> list[torch.Tensor]:
    tensors = [state.absmax, state.code]
    if state.nested:
        tensors += [state.offset, state.state2.absmax, state.state2.code]
    return [t for t in tensors if torch.is_tensor(t)]


def quantised_llama() -> nn.Module:
    """fsdp2_worker's small Llama in bf16, its decoder ``nn.Linear`` layers replaced by NF4
    ``Linear4bit`` with bf16 quant storage (module docstring)."""
    import bitsandbytes as bnb

    model = llama().to(torch.bfloat16)
    states, shapes = [], []
    for layer in model.model.layers:
        for parent in list(layer.modules()):
            for name, child in list(parent.named_children()):
                if type(child) is not nn.Linear:
                    continue
                linear = bnb.nn.Linear4bit(
                    child.in_features,
                    child.out_features,
                    bias=child.bias is not None,
                    compute_dtype=torch.bfloat16,
                    compress_statistics=True,
                    quant_type="nf4",
                    quant_storage=torch.bfloat16,
                )
                linear.weight = bnb.nn.Params4bit(
                    child.weight.data,
                    requires_grad=False,
                    compress_statistics=True,
                    quant_type="nf4",
                    quant_storage=torch.bfloat16,
                    module=linear,
                )._quantize("cpu")
                setattr(parent, name, linear)
                states.append(linear.weight.quant_state)
                shapes.append(list(linear.weight.shape))
    seen = {}
    for state in states:
        for t in _quant_state_tensors(state):
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    MEASURED.update(
        quant_state_bytes=sum(seen.values()),
        quantised=len(states),
        packed_shapes=shapes,
        packed_dtype=str(states and model.model.layers[0].self_attn.q_proj.weight.dtype),
    )
    return model


if __name__ == "__main__":
    main(quantised_llama, MEASURED, SCENARIOS)
