"""Bytes per parameter of the model states: weights, gradients, optimizer states.

Source: Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", arXiv:1910.02054, §3.1: mixed-precision Adam keeps fp16/bf16
weights (2 B) and gradients (2 B) plus an fp32 master copy, momentum and variance
(4 + 4 + 4 = 12 B, "K = 12"): 16 B per parameter. Adam's two moments: Loshchilov and
Hutter, arXiv:1711.05101 (AdamW); SGD with momentum keeps one buffer per parameter
(``torch.optim.SGD`` ``momentum_buffer``). The names and their sums are in ``OPTIMIZERS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .validate import lookup


@dataclass(frozen=True)
class BytesPerParam:
    """Bytes per parameter (ints) of each part of the model states."""

    weights: int
    gradients: int
    optimizer: int

    @property
    def total(self) -> int:
        """Bytes per parameter of weights, gradients and optimizer states together."""
        return self.weights + self.gradients + self.optimizer


# optimizer name -> bytes per parameter.
#   adamw            : bf16 weights + bf16 grads + fp32 master, m, v: 2 + 2 + 12   (ZeRO §3.1)
#   adamw-fp32-grads : as adamw, gradients accumulated in fp32: 2 + 4 + 12 = 18
#   adamw-fp32       : pure fp32 training: fp32 weights, grads, m, v (no master copy): 4 + 4 + 8
#   adamw-bf16       : pure bf16: torch.optim.AdamW on bf16 parameters keeps m and v in
#                      bf16 (torch/optim/adamw.py: zeros_like(param)), no master: 2 + 2 + 4
#   adam8bit         : bitsandbytes 8-bit Adam (Dettmers et al. 2021, arXiv:2110.02861):
#                      m and v in 1 B each, fp32 master kept: 2 + 2 + (4 + 1 + 1) = 10.
#                      Not counted: one fp32 absmax per block of 2048 values per state
#                      (0.004 B/param), and bitsandbytes keeps tensors under 4096
#                      elements in 32-bit (min_8bit_size), a negligible share of an LLM.
#   sgd              : SGD with momentum in mixed precision: fp32 master + momentum: 2 + 2 + 8
#   sgd-fp32         : SGD with momentum in pure fp32: fp32 weights, grads, momentum: 4 + 4 + 4
OPTIMIZERS: dict[str, BytesPerParam] = {
    "adamw": BytesPerParam(weights=2, gradients=2, optimizer=12),
    "adamw-fp32-grads": BytesPerParam(weights=2, gradients=4, optimizer=12),
    "adamw-fp32": BytesPerParam(weights=4, gradients=4, optimizer=8),
    "adamw-bf16": BytesPerParam(weights=2, gradients=2, optimizer=4),
    "adam8bit": BytesPerParam(weights=2, gradients=2, optimizer=6),
    "sgd": BytesPerParam(weights=2, gradients=2, optimizer=8),
    "sgd-fp32": BytesPerParam(weights=4, gradients=4, optimizer=4),
}


def bytes_per_param(optimizer: str = "adamw") -> BytesPerParam:
    """Bytes per parameter for ``optimizer`` (a key of ``OPTIMIZERS``).

    Raises ValueError naming the known optimizers for an unknown name.
    """
    return lookup(OPTIMIZERS, optimizer, "optimizer")


# Optimizers that keep an fp32 copy of the weights (4 B) beside their state tensors: the ones
# DeepSpeed ZeRO and FSDP2 with a bf16 MixedPrecisionPolicy run, where the fp32 copy is the
# sharded parameter itself (FSDP2) or DeepSpeed's fp32 partition.
MASTER_COPY_BYTES = 4
MASTER_COPY_OPTIMIZERS = ("adamw", "adam8bit", "sgd")


def state_bytes_per_param(optimizer: str) -> int:
    """Bytes per parameter of the optimizer's state tensors alone, without the fp32 copy.

    adamw 8 (two fp32 moments), adam8bit 2 (two 8-bit moments), sgd 4 (fp32 momentum):
    ``OPTIMIZERS[name].optimizer - MASTER_COPY_BYTES``. Raises ValueError for an optimizer
    without an fp32 master copy (the frameworks' bf16 training always keeps one).
    """
    if optimizer not in MASTER_COPY_OPTIMIZERS:
        raise ValueError(
            f"optimizer {optimizer!r} does not apply here: DeepSpeed and FSDP2 keep fp32 weights "
            f"beside bf16 compute; use one of {', '.join(MASTER_COPY_OPTIMIZERS)}"
        )
    return bytes_per_param(optimizer).optimizer - MASTER_COPY_BYTES


def as_bytes_per_param(optimizer: str | BytesPerParam) -> BytesPerParam:
    """A ``BytesPerParam`` as given, or looked up by name (``bytes_per_param``)."""
    return optimizer if isinstance(optimizer, BytesPerParam) else bytes_per_param(optimizer)
