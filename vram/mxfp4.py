"""Weights of a checkpoint that ships its experts in MXFP4 (gpt-oss), on one serving GPU.

MXFP4 (OCP Microscaling Formats v1.0, §5.3 and §6.3): blocks of 32 FP4 (E2M1) values, 4
bits each, sharing one 8-bit power-of-two scale (E8M0): 16 bytes of data and 1 byte of
scale per 32 elements of a row. gpt-oss stores every expert's ``gate_up_proj`` and
``down_proj`` that way (``*_blocks`` uint8 of shape ``(experts, out, in/32, 16)`` and
``*_scales`` uint8 ``(experts, out, in/32)`` in ``model.safetensors``; transformers'
``integrations/mxfp4.py``); everything else (attention, router, embeddings, norms, expert
biases, sinks) is bf16. vLLM serves those experts in MXFP4 as stored.

Under tensor parallel (``vram.serving`` layout) each GPU keeps ``gate_up_proj``'s rows
split by output, every input block of them, and ``down_proj``'s input split: its width
per GPU is rounded up to whole blocks of 32 (vLLM pads each expert's width to a block).
"""

from __future__ import annotations

from collections.abc import Iterable

from .models import ModelConfig, Module, layer_modules, root_modules
from .serving import _share, check_tensor_parallel
from .units import ceil_div

MXFP4 = "mxfp4"
BLOCK = 32  # elements sharing one scale
BLOCK_BYTES = BLOCK // 2 + 1  # 16 bytes of FP4 pairs + 1 byte of E8M0 scale
MXFP4_MODEL_TYPES = ("gpt_oss",)  # families whose published checkpoints keep MXFP4 experts
BF16 = 2


def ships_mxfp4(config: ModelConfig) -> bool:
    """True for a family whose published checkpoints store the experts in MXFP4 (gpt_oss)."""
    return config.model_type in MXFP4_MODEL_TYPES


def _blocks(width: int) -> int:
    return ceil_div(width, BLOCK)


def mxfp4_weights_bytes_per_gpu(config: ModelConfig, tensor_parallel: int = 1) -> int:
    """Bytes of the weights one of ``tensor_parallel`` GPUs holds when the experts' weight
    matrices are MXFP4 (17 bytes per block of 32 input elements of a row) and every other
    parameter bf16 (module docstring). Raises ValueError for a family that does not ship
    MXFP4 or a tensor_parallel ``check_tensor_parallel`` refuses."""
    if not ships_mxfp4(config):
        raise ValueError(
            f"{config.model_type} checkpoints do not ship MXFP4 experts; known: {', '.join(MXFP4_MODEL_TYPES)}"
        )
    tp = check_tensor_parallel(config, tensor_parallel)

    def held(modules: Iterable[Module]) -> int:
        total = 0
        for module in modules:
            if module.tied:
                continue
            for name, shape in module.shapes:
                if module.kind == "experts" and name == "gate_up_proj":  # (E, in=h, out=2I): output split
                    experts, width, out = shape
                    total += experts * (out // tp) * _blocks(width) * BLOCK_BYTES
                elif module.kind == "experts" and name == "down_proj":  # (E, in=I, out=h): input split
                    experts, width, out = shape
                    total += experts * out * _blocks(width // tp) * BLOCK_BYTES
                else:
                    total += BF16 * _share(config, module, name, shape, tp)
        return total

    per_kind: dict[bool, int] = {}
    for index, moe in enumerate(config.moe_layers):
        if moe not in per_kind:
            per_kind[moe] = held(layer_modules(config, index))
    return held(root_modules(config)) + sum(per_kind[moe] for moe in config.moe_layers)
