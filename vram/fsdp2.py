"""FSDP2 (``torch.distributed.fsdp.fully_shard``): exact per-rank shards, and ``fsdp2_memory``,
what one GPU holds per training step under a bf16 ``MixedPrecisionPolicy`` (or DDP + AMP).

``model_states_per_gpu`` divides the whole model by world_size. FSDP2 shards each
parameter on its own along dim 0 (``torch/distributed/fsdp/_fully_shard/_fsdp_param.py``,
``FSDPParam._init_sharded_param``): like ``torch.chunk``, every rank's chunk has
ceil(dim0 / world_size) rows, the last ranks hold fewer (or none), and each rank
allocates a padded chunk of the full ceil size. So, per rank and per parameter:

- sharded weights: the padded chunk (``to_local()`` is a view of it, without the padding);
- sharded gradients: the padded chunk (reduce-scatter output, one buffer per group);
- optimizer states: created by the optimizer from ``to_local()``, so unpadded.

When every dim 0 is a multiple of world_size there is no padding and the result equals
``model_states_per_gpu(sum of numel, world_size, 3, optimizer)``. Weights and gradients
are in the parameter dtype here (no ``MixedPrecisionPolicy``): pass an fp32 optimizer
such as ``"adamw-fp32"`` or ``"sgd-fp32"`` for an fp32 model.
"""

from __future__ import annotations

from math import prod
from typing import Iterable, Sequence

from .breakdown import FrameworkMemory, ModelShape, Term
from .sharding import ModelStates, check_world_size, check_zero_stage
from .states import BytesPerParam, as_bytes_per_param, state_bytes_per_param
from .validate import check_int


def fsdp2_chunk_rows(dim0: int, world_size: int) -> int:
    """Rows of every rank's padded chunk: ceil(dim0 / world_size)."""
    check_world_size(world_size)
    return -(-check_int(dim0, "dim0", 0) // world_size)


def fsdp2_local_rows(dim0: int, world_size: int, rank: int) -> int:
    """Rows rank ``rank`` really holds (``to_local().shape[0]``): 0 for ranks past the end."""
    chunk = fsdp2_chunk_rows(dim0, world_size)
    if not 0 <= check_int(rank, "rank", 0) < world_size:
        raise ValueError(f"rank must be in 0..{world_size - 1}, got {rank!r}")
    return max(0, min(chunk, dim0 - rank * chunk))


def fsdp2_model_states_per_rank(
    shapes: Iterable[Sequence[int]],
    world_size: int,
    rank: int,
    optimizer: str | BytesPerParam = "adamw-fp32",
) -> ModelStates:
    """Model-state bytes held by ``rank`` for parameters of the given ``shapes``.

    Weights and gradients count the padded chunk, optimizer states the local rows (see
    the module docstring). Raises ValueError for a 0-dimensional shape, a bad
    world_size or rank.
    """
    bpp = as_bytes_per_param(optimizer)
    padded = local = 0
    for shape in shapes:
        if len(shape) == 0:
            raise ValueError("0-dimensional parameters are not covered; give them shape (1,)")
        rest = prod(shape[1:])
        padded += fsdp2_chunk_rows(shape[0], world_size) * rest
        local += fsdp2_local_rows(shape[0], world_size, rank) * rest
    return ModelStates(
        weights_bytes=padded * bpp.weights,
        gradients_bytes=padded * bpp.gradients,
        optimizer_bytes=local * bpp.optimizer,
    )


# --- FSDP2 training, bf16 MixedPrecisionPolicy: what one GPU holds per step ---------------

FRAMEWORK = "fsdp2"
FP32 = 4
BF16 = 2
RESHARD_AFTER_FORWARD = {2: False, 3: True}  # --zero-stage -> fully_shard(reshard_after_forward=...)
ROOT_NOTE = (
    "The root module (embedding, final norm, lm_head) stays gathered from its forward to the "
    "end of backward: fully_shard(model) leaves reshard_after_forward=None, which FSDP2 turns "
    "into False for the root (torch/distributed/fsdp/_fully_shard/_fsdp_state.py, _lazy_init); "
    "with True it is gathered again as backward starts and held until its end."
)
REDUCE_NOTE = (
    "Not counted: the fp32 copy of one block's gradients made for the reduce-scatter "
    "(reduce_dtype=fp32, 4 B per parameter of the block), alive for a moment."
)
BUCKET_NOTE = (
    "DDP's gradient buckets: with gradient_as_bucket_view=False (the default) the all-reduce "
    "buckets hold a second fp32 copy of the gradients; gradient_as_bucket_view=True makes the "
    "gradients views into the buckets and saves it."
)


def _need(shape: ModelShape | None, fields: tuple[str, ...], why: str) -> ModelShape:
    if shape is None or any(getattr(shape, f) is None for f in fields):
        raise ValueError(f"FSDP2 {why}: give the model's config")
    return shape


def fsdp2_memory(
    shape: ModelShape,
    world_size: int,
    zero_stage: int,
    optimizer: str = "adamw",
    offload: bool = False,
    gpus_per_machine: int | None = None,
    gradient_as_bucket_view: bool = False,
) -> FrameworkMemory:
    """Bytes per GPU and host RAM per machine when PyTorch 2.13 trains with FSDP2 or DDP.

    shape: the model's sizes (``vram.breakdown.model_shape(config)``); world_size: N;
    zero_stage: 3 = ``fully_shard(block, reshard_after_forward=True)`` on every decoder
    layer and ``fully_shard(model)`` on the root, 2 = the same with False, 0 = DDP under
    PyTorch AMP (``torch.autocast`` bf16 on fp32 weights); 1 has no FSDP2 equivalent and is
    refused. optimizer: one of ``vram.states.MASTER_COPY_OPTIMIZERS`` (its state tensors
    follow the fp32 parameters); offload: ``CPUOffloadPolicy`` (stages 2 and 3: sharded
    weights, gradients and optimizer states in host RAM, the step on the CPU);
    gpus_per_machine: GPUs sharing one host (default: all N).

    With ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` every rank keeps
    fp32 sharded parameters (4P/N), fp32 sharded gradients (4P/N) and the optimizer states
    (8P/N for AdamW): 16P/N. Stage 2 keeps the bf16 unsharded weights of the whole model
    from forward to backward (2P). Working set at the peak of backward (measured on 2 gloo
    ranks, tests/vram/test_fsdp2_torchrun.py): the gathered bf16 weights of the root and,
    at stage 3, of the current and the prefetched block (``_backward_prefetch`` in
    ``_fsdp_param_group.py``), and the unsharded bf16 gradients of the current block and of
    the root's output layer (``output_params``). DDP under AMP: fp32 weights 4 + fp32
    gradients 4 + AdamW 8 B per parameter, the bf16 copies autocast caches of every
    ``nn.Linear`` (2 B per Linear parameter, alive from forward to backward) and, on more
    than one GPU, DDP's buckets (4P unless ``gradient_as_bucket_view``).
    Shards are rounded up per rank (FSDP2 pads; exact per-parameter padding:
    ``fsdp2_model_states_per_rank``). Returns ``FrameworkMemory``. Raises ValueError.
    """
    n = check_world_size(world_size)
    check_zero_stage(zero_stage)
    if zero_stage == 1:
        raise ValueError(
            "FSDP2 has no ZeRO-1: fully_shard shards gradients and optimizer states together; "
            "use zero_stage 2 (reshard_after_forward=False) or 0 (DDP)"
        )
    states = state_bytes_per_param(optimizer)
    gpus = n if gpus_per_machine is None else check_int(gpus_per_machine, "gpus_per_machine", 1)
    if n % gpus:
        raise ValueError(f"gpus_per_machine {gpus} must divide world_size {n}")
    if offload and zero_stage == 0:
        raise ValueError("CPUOffloadPolicy is an FSDP2 option: it needs zero_stage 2 or 3, not DDP")
    if zero_stage == 0:
        shape = _need(shape, ("linear_params",), "under AMP copies every nn.Linear weight to bf16")
        p = shape.params
        terms = [
            Term("weights", "fp32_weights", FP32 * p, ((FP32, "P"),), "fp32 parameters"),
            Term("gradients", "fp32_gradients", FP32 * p, ((FP32, "P"),), "fp32 gradients"),
            Term("optimizer", "optimizer_states", states * p, ((states, "P"),), "optimizer states on the fp32 parameters"),
            Term("working", "autocast_copies", BF16 * shape.linear_params, ((BF16, "W"),),
                 "bf16 copies of the nn.Linear weights cached by torch.autocast, forward to backward"),
        ]
        notes = [BUCKET_NOTE] if n > 1 else []
        if n > 1 and not gradient_as_bucket_view:
            terms.append(Term("working", "ddp_buckets", FP32 * p, ((FP32, "P"),),
                              "DDP all-reduce buckets (gradient_as_bucket_view=False)"))
        return FrameworkMemory(FRAMEWORK, p, n, zero_stage, tuple(terms), tuple(notes))
    shape = _need(shape, ("decoder_layer_params", "num_layers", "root_params", "output_params"),
                  "gathers one decoder layer at a time")
    p, block = shape.params, shape.decoder_layer_params
    gathered_blocks = min(2, shape.num_layers) if zero_stage == 3 else 0
    shard = _ceil(p, n)  # whole elements per rank
    terms = []
    if not offload:
        terms += [
            Term("weights", "fp32_weight_shards", FP32 * shard, ((FP32, "P/N"),), "fp32 sharded parameters"),
            Term("gradients", "fp32_gradient_shards", FP32 * shard, ((FP32, "P/N"),), "fp32 sharded gradients (reduce_dtype=fp32)"),
            Term("optimizer", "optimizer_state_shards", states * shard, ((states, "P/N"),), "optimizer states on the fp32 shards"),
        ]
    if zero_stage == 2:
        terms.append(Term("weights", "bf16_unsharded_weights", BF16 * p, ((BF16, "P"),),
                          "bf16 unsharded weights kept from forward to backward"))
    else:
        terms.append(Term("working", "gathered_weights", BF16 * (shape.root_params + gathered_blocks * block),
                          ((BF16, "R"), (BF16 * gathered_blocks, "B")),
                          "bf16 gathered weights: the root, the current and the prefetched block"))
    terms.append(Term("working", "unsharded_gradients", BF16 * (shape.output_params + block), ((BF16, "O"), (BF16, "B")),
                      "bf16 unsharded gradients of the current block and of lm_head/final norm"))
    if offload:
        terms.append(Term("host", "offloaded_shards", (FP32 + FP32 + states) * shard * gpus, ((FP32 + FP32 + states, "PM/N"),),
                          "per machine: fp32 sharded parameters and gradients, optimizer states (CPUOffloadPolicy)"))
    notes = [ROOT_NOTE, REDUCE_NOTE]
    return FrameworkMemory(FRAMEWORK, p, n, zero_stage, tuple(terms), tuple(notes))


def _ceil(numerator: int, world_size: int) -> int:
    return -(-numerator // world_size)
