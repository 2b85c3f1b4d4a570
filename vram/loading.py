"""Host RAM (CPU memory) at load time: the spike before the weights are sharded.

Under ``torchrun`` or ``accelerate launch`` every rank runs the same script, so every rank
calls ``from_pretrained`` (or builds the model) on its own: each process holds a full
copy of the weights in host RAM before FSDP or ZeRO-3 shards them onto its GPU. At that
moment one machine with ``world_size`` processes needs::

    world_size * params * bytes per parameter   (bf16: 2 bytes)

Avoiding it, one copy per machine::

    params * bytes per parameter

- Accelerate, FSDP: ``fsdp_cpu_ram_efficient_loading: true`` (``FSDP_CPU_RAM_EFFICIENT_LOADING``):
  only rank 0 loads the weights, the other ranks build the model on the ``meta`` device
  and receive their shards from rank 0 (accelerate docs, "Fully Sharded Data Parallel",
  ``cpu_ram_efficient_loading``; ``FullyShardedDataParallelPlugin``).
- Plain PyTorch, FSDP2: build the model under ``torch.device("meta")``, ``fully_shard`` it,
  ``to_empty`` it, then load a full state dict read on rank 0 only with
  ``set_model_state_dict(..., options=StateDictOptions(full_state_dict=True,
  broadcast_from_rank0=True))`` (``torch.distributed.checkpoint.state_dict``).

Not counted: the page cache of the checkpoint files (safetensors are memory-mapped and
shared between the processes of one machine), Python and CUDA runtime overhead.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dtypes import tensor_bytes
from .sharding import check_world_size
from .validate import check_params


@dataclass(frozen=True)
class LoadHostRam:
    """Host RAM of one machine while its ranks load the model, in bytes."""

    per_process_bytes: int  # one full copy of the weights
    every_rank_loads_bytes: int  # world_size copies: the default
    rank0_loads_bytes: int  # one copy: cpu_ram_efficient_loading / meta-device init


def load_host_ram(params: int, world_size: int, dtype: str = "bf16") -> LoadHostRam:
    """Host RAM of one machine whose ``world_size`` ranks load a ``params`` model in ``dtype``.

    Inputs: ``params`` (a positive int, parameters of the model), ``world_size`` (ranks on
    the machine, an int >= 1), ``dtype`` (a key of ``vram.DTYPE_BITS`` or ``"nf4"``; the
    dtype the weights are loaded in). Output: bytes (10**9 bytes = 1 GB), see
    ``LoadHostRam``. Raises ValueError for a bad argument. Formula and sources: module
    docstring.
    """
    copy = tensor_bytes(check_params(params), dtype)
    return LoadHostRam(copy, check_world_size(world_size) * copy, copy)
