"""Size of a training checkpoint: the weights plus, to resume training, the optimizer states.

A resumable mixed-precision checkpoint stores the 16-bit weights and the optimizer states
(fp32 master copy and moments; DeepSpeed's ``*_optim_states.pt`` files, torch.distributed
checkpoint's optimizer state dict). Gradients are not saved. 8B with AdamW:
2 B x 8e9 = 16 GB of bf16 weights + 12 B x 8e9 = 96 GB of optimizer states = 112 GB.
Bytes per parameter come from ``vram.states.OPTIMIZERS`` (ZeRO paper, arXiv:1910.02054, §3.1).
That is also what DeepSpeed saves (bf16 ``*_model_states.pt``, fp32 master and moments in
``*_optim_states.pt``: 2 + 12 B per parameter). FSDP2 with ``torch.distributed.checkpoint``
saves its fp32 sharded parameters and the moments instead (4 + 8 B for AdamW).
"""

from __future__ import annotations

from dataclasses import dataclass

from .states import BytesPerParam, as_bytes_per_param
from .validate import check_params


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes of a checkpoint (all ranks together, on disk or in RAM)."""

    weights_bytes: int
    optimizer_bytes: int

    @property
    def total_bytes(self) -> int:
        """Weights plus optimizer states (bytes)."""
        return self.weights_bytes + self.optimizer_bytes


def checkpoint_bytes(
    params: int, optimizer: str | BytesPerParam = "adamw", include_optimizer: bool = True
) -> CheckpointSize:
    """Checkpoint size of a model of ``params`` parameters (> 0) trained with ``optimizer``.

    ``include_optimizer=False`` gives a weights-only export. Returns ``CheckpointSize`` in
    bytes. Raises ValueError for a bad count or an unknown optimizer.
    """
    check_params(params)
    bpp = as_bytes_per_param(optimizer)
    return CheckpointSize(
        weights_bytes=params * bpp.weights,
        optimizer_bytes=params * bpp.optimizer if include_optimizer else 0,
    )
