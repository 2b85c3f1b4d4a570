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

from collections.abc import Iterable, Sequence
from math import prod

from .breakdown import FrameworkMemory, ModelShape, Term
from .optimizer_step import DEFAULT_IMPL, check_optimizer_impl, step_temporary_coefficients
from .sharding import ModelStates, check_world_size, check_zero_stage
from .states import BytesPerParam, as_bytes_per_param, state_bytes_per_param
from .units import ceil_div
from .validate import check_int, lookup


def fsdp2_chunk_rows(dim0: int, world_size: int) -> int:
    """Rows of every rank's padded chunk: ceil(dim0 / world_size). Raises ValueError for a
    negative dim0 or a world_size below 1 (``_fsdp_param.py``, ``_init_sharded_param``)."""
    check_world_size(world_size)
    return ceil_div(check_int(dim0, "dim0", 0), world_size)


def fsdp2_local_rows(dim0: int, world_size: int, rank: int) -> int:
    """Rows rank ``rank`` really holds (``to_local().shape[0]``): 0 for ranks past the end.
    Raises ValueError for a rank outside 0..world_size - 1 or a bad dim0 or world_size."""
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
MOMENTS = {
    "block": "a decoder layer's backward",
    "root": "the root's reduce-scatter",
    "backward": "the moment of backward that holds the most",
    "step": "the optimizer step",
}
BACKWARD_MOMENTS = ("block", "root")
STEP_NOTE = (
    "The optimizer step holds the most ({impl} AdamW): {what}, beside the model states "
    "(vram/optimizer_step.py); the activations are gone by then."
)
SHARD_NOTE = (
    "P/N is rank 0's shard as FSDP2 cuts each parameter along its first dimension: "
    "{shard:,} elements, {extra:,} more than P/N ({why})."
)
GATHER_NOTE = (
    "FSDP2 gathers and reduce-scatters each parameter padded to N·ceil(dim0/N) rows: at N = {n} "
    "B stands for {block:,} elements in the gathered weights and the reduce-scatter inputs, "
    "{extra:,} more than one decoder layer ({why}); the gradients are not padded."
)
PEAK_NOTE = (
    "Of backward, FSDP2 holds the most at {moment} (the larger of a decoder layer's backward "
    "and the root's reduce-scatter; see vram/fsdp2.py, working_moments); the activations add to it."
)
ASKED_NOTE = "Working buffers at {moment}, as asked; FSDP2 holds more at {largest}."
ROOT_NOTE = (
    "The root module (embedding, final norm, lm_head) stays gathered from its forward to the "
    "end of backward: fully_shard(model) leaves reshard_after_forward=None, which FSDP2 turns "
    "into False for the root (torch/distributed/fsdp/_fully_shard/_fsdp_state.py, _lazy_init); "
    "with True it is gathered again as backward starts and held until its end."
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
    moment: str | None = None,
    optimizer_impl: str = DEFAULT_IMPL,
) -> FrameworkMemory:
    """Bytes per GPU and host RAM per machine when PyTorch 2.13 trains with FSDP2 or DDP.

    shape: the model's sizes (``vram.breakdown.model_shape(config)``); world_size: N;
    zero_stage: 3 = ``fully_shard(block, reshard_after_forward=True)`` on every decoder
    layer and ``fully_shard(model)`` on the root, 2 = the same with False, 0 = DDP under
    PyTorch AMP (``torch.autocast`` bf16 on fp32 weights); 1 has no FSDP2 equivalent and is
    refused. optimizer: one of ``vram.states.MASTER_COPY_OPTIMIZERS`` (its state tensors
    follow the fp32 parameters), or at zero_stage 0 only ``"adamw-bf16"``: DDP on a model
    loaded in bf16 with no fp32 master, as transformers 5's Trainer runs it (``_ddp_all_bf16``:
    2 + 2 + 4 B per parameter, bf16 buckets and step temporaries); offload: ``CPUOffloadPolicy`` (stages 2 and 3: sharded
    weights, gradients and optimizer states in host RAM, the step on the CPU);
    gpus_per_machine: GPUs sharing one host (default: all N); moment: ``None`` (the moment
    that holds the most) or one of ``MOMENTS`` to count that one (``block`` and ``root``:
    stages 2 and 3; ``backward``: the larger of those, or DDP's backward; ``step``: the
    optimizer step; the formulas page shows them); optimizer_impl: one of ``vram.optimizer_step.OPTIMIZER_IMPLS``,
    the AdamW implementation whose step is counted (default ``foreach``, what
    ``torch.optim.AdamW(params)`` runs on CUDA, as the guide's scripts build it; the
    Trainer's ``adamw_torch_fused`` is ``fused``).

    The optimizer step is a moment of its own (``"step"``): the model states, what the
    implementation allocates (``foreach``: 4 B per local parameter, ``forloop``: 8 B per
    element of the largest local parameter, ``fused``: nothing) and, under DDP, the
    buckets; the activations and FSDP2's gathered buffers are gone by then (stage 2's bf16
    unsharded weights too: they are resharded after backward). When it holds the most, the
    result's terms are the step's and ``backward_working_bytes`` keeps the working bytes of
    backward, which the activations add to (``FrameworkMemory.peak_bytes``). Measured with
    the fake process group and the profiler's allocator events:
    tests/vram/test_optimizer_step.py.

    Shards follow FSDP2's dim-0 rule when ``shape.param_shapes`` is known: rank 0 holds
    ceil(dim0 / N) rows of every parameter, so a fused expert tensor (E experts on dim 0)
    gives it ceil(E / N) experts' worth of weights, gradients and states
    (``fsdp2_model_states_per_rank``); the symbol P/N then stands for that shard.

    With ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` every rank keeps
    fp32 sharded parameters (4P/N), fp32 sharded gradients (4P/N) and the optimizer states
    (8P/N for AdamW): 16P/N. Stage 2 keeps the bf16 unsharded weights of the whole model
    from forward to each block's backward (2P). Working set: FSDP2's buffers at the moment
    of backward that holds the most (``working_moments``; measured on 2 gloo ranks,
    tests/vram/test_fsdp2_torchrun.py): gathered bf16 weights (the root; at stage 3 the
    current and the prefetched block), unsharded bf16 gradients (a block's and those of
    the root's output layer, ``output_params``), and the fp32 reduce-scatter inputs FSDP2
    fills and keeps (``reduce_dtype=fp32``: 4 B per parameter of a block, or of the root
    when its own reduce-scatter is the larger moment, as for Llama 3.1 8B). Activations are
    added on top by the caller: the root's reduce-scatter comes when they are gone, so the
    sum is an upper bound there. DDP under AMP: fp32 weights 4 + fp32 gradients 4 + AdamW 8 B
    per parameter, the bf16 copies autocast caches of every ``nn.Linear`` (2 B per Linear
    parameter, alive from forward to backward) and, on more than one GPU, DDP's buckets (4P
    unless ``gradient_as_bucket_view``).
    Shards are rounded up per rank (FSDP2 pads; exact per-parameter padding:
    ``fsdp2_model_states_per_rank``). Returns ``FrameworkMemory``. Raises ValueError.
    """
    n = check_world_size(world_size)
    check_zero_stage(zero_stage)
    if moment is not None:
        lookup(MOMENTS, moment, "FSDP2 moment")
    if zero_stage == 1:
        raise ValueError(
            "FSDP2 has no ZeRO-1: fully_shard shards gradients and optimizer states together; "
            "use zero_stage 2 (reshard_after_forward=False) or 0 (DDP)"
        )
    if optimizer == ALL_BF16:
        if zero_stage or offload:
            raise ValueError(
                "optimizer adamw-bf16 (all in bf16, no fp32 master) is modelled under DDP only "
                "(zero_stage 0, no offload); FSDP2 with a bf16 MixedPrecisionPolicy keeps fp32 shards"
            )
        return _ddp_all_bf16(shape, n, gradient_as_bucket_view, moment, optimizer_impl)
    states = state_bytes_per_param(optimizer)
    gpus = n if gpus_per_machine is None else check_int(gpus_per_machine, "gpus_per_machine", 1)
    if n % gpus:
        raise ValueError(f"gpus_per_machine {gpus} must divide world_size {n}")
    if offload and zero_stage == 0:
        raise ValueError("CPUOffloadPolicy is an FSDP2 option: it needs zero_stage 2 or 3, not DDP")
    check_optimizer_impl(optimizer_impl)
    if zero_stage == 0:
        shape = _need(shape, ("linear_params",), "under AMP copies every nn.Linear weight to bf16")
        p, linear = shape.params, shape.linear_params
        assert linear is not None  # _need
        terms = [
            Term("weights", "fp32_weights", FP32 * p, ((FP32, "P"),), "fp32 parameters"),
            Term("gradients", "fp32_gradients", FP32 * p, ((FP32, "P"),), "fp32 gradients"),
            Term(
                "optimizer", "optimizer_states", states * p, ((states, "P"),), "optimizer states on the fp32 parameters"
            ),
        ]
        notes = [BUCKET_NOTE] if n > 1 else []
        buckets = (
            [
                Term(
                    "working",
                    "ddp_buckets",
                    FP32 * p,
                    ((FP32, "P"),),
                    "DDP all-reduce buckets (gradient_as_bucket_view=False)",
                )
            ]
            if n > 1 and not gradient_as_bucket_view
            else []
        )
        backward = [
            Term(
                "working",
                "autocast_copies",
                BF16 * linear,
                ((BF16, "W"),),
                "bf16 copies of the nn.Linear weights cached by torch.autocast, forward to backward",
            ),
            *buckets,
        ]
        step = _step_terms(shape, 1, optimizer, optimizer_impl, "P") + buckets
        return _with_step(
            FrameworkMemory(FRAMEWORK, p, n, zero_stage, tuple(terms), tuple(notes)),
            backward,
            step,
            optimizer_impl,
            moment is None,
            force=moment == "step",
        )
    shape = _need(
        shape,
        ("decoder_layer_params", "num_layers", "root_params", "output_params"),
        "gathers one decoder layer at a time",
    )
    p = shape.params
    shard = rank0_shard_params(shape, n)  # whole elements on rank 0, FSDP2's dim-0 rule
    terms = []
    if not offload:
        terms += [
            Term("weights", "fp32_weight_shards", FP32 * shard, ((FP32, "P/N"),), "fp32 sharded parameters"),
            Term(
                "gradients",
                "fp32_gradient_shards",
                FP32 * shard,
                ((FP32, "P/N"),),
                "fp32 sharded gradients (reduce_dtype=fp32)",
            ),
            Term(
                "optimizer",
                "optimizer_state_shards",
                states * shard,
                ((states, "P/N"),),
                "optimizer states on the fp32 shards",
            ),
        ]
    gathered_p, _, gathered_b = gathered_sizes(shape, n)
    if zero_stage == 2:  # all-gather outputs, padded
        terms.append(
            Term(
                "weights",
                "bf16_unsharded_weights",
                BF16 * gathered_p,
                ((BF16, "P"),),
                "bf16 unsharded weights kept from forward to each block's backward",
            )
        )
    moments = working_moments(shape, zero_stage, n)
    largest = max(moments, key=lambda m: sum(t.bytes for t in moments[m]))  # the first of equals
    # CPUOffloadPolicy runs the step on the CPU: nothing of it on the GPU
    step = [] if offload else _step_terms(shape, n, optimizer, optimizer_impl, "P/N")
    if zero_stage == 2:
        step.insert(
            0,
            Term(
                "working",
                "resharded_weights",
                -BF16 * gathered_p,
                ((-BF16, "P"),),
                "the bf16 weights, resharded after backward",
            ),
        )
    asked = largest if moment in (None, "step", "backward") else moment
    backward = lookup(moments, asked, "FSDP2 moment")
    if offload:
        terms.append(
            Term(
                "host",
                "offloaded_shards",
                (FP32 + FP32 + states) * shard * gpus,
                ((FP32 + FP32 + states, "PM/N"),),
                "per machine: fp32 sharded parameters and gradients, optimizer states (CPUOffloadPolicy)",
            )
        )
    notes = [
        PEAK_NOTE.format(moment=MOMENTS[largest])
        if moment in (None, largest, "step", "backward")
        else ASKED_NOTE.format(moment=MOMENTS[moment], largest=MOMENTS[largest]),
        ROOT_NOTE,
    ]
    if shard > ceil_div(p, n):
        experts = any(len(dims) == 3 for dims, _ in shape.param_shapes or ())
        notes.append(
            SHARD_NOTE.format(
                shard=shard,
                extra=shard - ceil_div(p, n),
                why="fused expert tensors hold whole experts" if experts else "padding",
            )
        )
    block = shape.decoder_layer_params
    assert block is not None  # _need
    if gathered_b > block:
        experts = any(len(dims) == 3 for kind in shape.layer_shapes or () for dims in kind)
        notes.append(
            GATHER_NOTE.format(
                n=n,
                block=gathered_b,
                extra=gathered_b - block,
                why="a fused expert tensor of E experts holds N·ceil(E/N) of them" if experts else "padding",
            )
        )
    memory = FrameworkMemory(FRAMEWORK, p, n, zero_stage, tuple(terms), tuple(notes))
    if moment == "step":
        return _with_step(memory, backward, step, optimizer_impl, False, force=True)
    return _with_step(memory, backward, step, optimizer_impl, moment is None)


ALL_BF16 = "adamw-bf16"
ALL_BF16_BUCKET_NOTE = (
    "DDP's gradient buckets: with gradient_as_bucket_view=False (the default) the all-reduce "
    "buckets hold a second bf16 copy of the gradients; gradient_as_bucket_view=True makes the "
    "gradients views into the buckets and saves it."
)
ALL_BF16_NOTE = (
    "All in bf16, as transformers 5's Trainer runs a model loaded in bf16 (Accelerate's DDP, "
    "no fp32 master): bf16 weights, gradients and AdamW moments, 2 + 2 + 4 B per parameter; "
    "updates smaller than bf16's precision are lost. The Trainer's default optimizer "
    "adamw_torch_fused is optimizer_impl fused."
)


def _ddp_all_bf16(
    shape: ModelShape, n: int, gradient_as_bucket_view: bool, moment: str | None, optimizer_impl: str
) -> FrameworkMemory:
    """DDP on a bf16 model with ``torch.optim.AdamW`` (its moments follow the bf16 parameters,
    ``torch/optim/adamw.py``: ``zeros_like(param)``): 2P weights + 2P gradients + 4P moments,
    DDP's bf16 buckets (2P on more than one GPU, unless ``gradient_as_bucket_view``) from
    backward through the step, and the step's bf16 temporaries (``vram.optimizer_step``). No
    autocast copies: the weights already are bf16. Measured with the fake process group and
    the profiler's live bytes (tests/vram/test_ddp_bf16.py)."""
    p = shape.params
    terms = [
        Term("weights", "bf16_weights", BF16 * p, ((BF16, "P"),), "bf16 parameters"),
        Term("gradients", "bf16_gradients", BF16 * p, ((BF16, "P"),), "bf16 gradients"),
        Term("optimizer", "optimizer_states", 2 * BF16 * p, ((2 * BF16, "P"),), "AdamW's two moments, in bf16"),
    ]
    buckets = (
        [
            Term(
                "working",
                "ddp_buckets",
                BF16 * p,
                ((BF16, "P"),),
                "DDP all-reduce buckets (gradient_as_bucket_view=False)",
            )
        ]
        if n > 1 and not gradient_as_bucket_view
        else []
    )
    notes = (ALL_BF16_NOTE,) + ((ALL_BF16_BUCKET_NOTE,) if n > 1 else ())
    step = _step_terms(shape, 1, ALL_BF16, optimizer_impl, "P") + buckets
    return _with_step(
        FrameworkMemory(FRAMEWORK, p, n, 0, tuple(terms), notes),
        buckets,
        step,
        optimizer_impl,
        moment is None,
        force=moment == "step",
    )


def rank0_shard_params(shape: ModelShape, world_size: int) -> int:
    """Elements of every parameter that rank 0 holds under ``fully_shard``: the sum of
    ceil(dim0 / N) x (the other dimensions) over ``shape.param_shapes`` (``_fsdp_param.py``,
    ``_init_sharded_param``: ``torch.chunk`` on dim 0, so a fused expert tensor of E experts
    gives rank 0 ceil(E / N) whole experts); ceil(P / N) when the shapes are not known.
    Raises ValueError for a bad world_size."""
    n = check_world_size(world_size)
    if shape.param_shapes is None:
        return ceil_div(shape.params, n)
    return sum(count * fsdp2_chunk_rows(dims[0], n) * prod(dims[1:]) for dims, count in shape.param_shapes)


def largest_local_tensor(shape: ModelShape, world_size: int) -> int | None:
    """Elements of the largest parameter tensor rank 0 holds (ceil(dim0 / N) rows of it);
    None when ``shape.param_shapes`` is not known."""
    if shape.param_shapes is None:
        return None
    return max(fsdp2_chunk_rows(dims[0], world_size) * prod(dims[1:]) for dims, _ in shape.param_shapes)


def _step_terms(shape: ModelShape, n: int, optimizer: str, impl: str, symbol: str) -> list[Term]:
    per_param, per_largest = step_temporary_coefficients(optimizer, impl)
    terms = []
    if per_param:
        local = rank0_shard_params(shape, n)
        dtype = "bf16" if optimizer == ALL_BF16 else "fp32"
        terms.append(
            Term(
                "working",
                "optimizer_step_temporary",
                per_param * local,
                ((per_param, symbol),),
                f"{dtype} temporary of the {impl} AdamW step (torch._foreach_sqrt of exp_avg_sq)",
            )
        )
    if per_largest:
        largest = largest_local_tensor(shape, n)
        if largest is None:
            raise ValueError("the for-loop AdamW step works on the largest parameter tensor: give the model's config")
        terms.append(
            Term(
                "working",
                "optimizer_step_temporary",
                per_largest * largest,
                ((per_largest, "T"),),
                f"two {'bf16' if optimizer == ALL_BF16 else 'fp32'} temporaries of the largest parameter tensor in the {impl} AdamW step",
            )
        )
    return terms


def _with_step(
    memory: FrameworkMemory, backward: list[Term], step: list[Term], impl: str, largest: bool, force: bool = False
) -> FrameworkMemory:
    """``memory`` with the working terms of backward or of the step, whichever holds more
    (``force``: the step's), and the working bytes of backward kept for the activations."""
    backward_bytes = sum(t.bytes for t in backward)
    step_bytes = sum(t.bytes for t in step)
    use_step = force or (largest and step_bytes > backward_bytes)
    notes = memory.notes
    if use_step:
        what = ", ".join(t.what for t in step if t.key == "optimizer_step_temporary") or "no temporary"
        notes = (*notes, STEP_NOTE.format(impl=impl, what=what))
    return FrameworkMemory(
        memory.framework,
        memory.params,
        memory.world_size,
        memory.zero_stage,
        memory.terms + tuple(step if use_step else backward),
        notes,
        backward_working_bytes=backward_bytes,
    )


def gathered_sizes(shape: ModelShape, world_size: int = 1) -> tuple[int, int, int]:
    """Elements of (the whole model, the root, the largest decoder layer) in FSDP2's all-gather
    outputs and reduce-scatter inputs at ``world_size`` N: each parameter padded to
    N x ceil(dim0 / N) rows (``_fsdp_param.py``, ``init_all_gather_outputs``: the padded shard's
    numel x N; ``_fsdp_collectives.py``, ``foreach_reduce``: ``_get_dim0_padded_size(grad.size(),
    world_size)``), so a fused expert tensor of E experts holds N x ceil(E / N) of them. The
    unpadded sizes when N divides every dim 0 or the shapes are not known (``shape.layer_shapes``,
    ``shape.root_shapes``). The unsharded parameters are views of the padded all-gather output;
    their gradients are not padded. Raises ValueError for a bad world_size."""
    n = check_world_size(world_size)
    if shape.layer_shapes is None or shape.root_shapes is None or shape.param_shapes is None:
        assert shape.root_params is not None and shape.decoder_layer_params is not None  # the callers' _need
        return shape.params, shape.root_params, shape.decoder_layer_params
    return (
        sum(count * n * fsdp2_chunk_rows(dims[0], n) * prod(dims[1:]) for dims, count in shape.param_shapes),
        _gathered(shape.root_shapes, n),
        max(_gathered(kind, n) for kind in shape.layer_shapes),
    )


def _gathered(shapes: Iterable[Sequence[int]], n: int) -> int:
    return sum(n * fsdp2_chunk_rows(dims[0], n) * prod(dims[1:]) for dims in shapes)


def working_moments(shape: ModelShape, zero_stage: int, world_size: int = 1) -> dict[str, list[Term]]:
    """FSDP2's buffers beyond the persistent shards (and, at stage 2, beyond the 2P of bf16
    weights) at each moment of backward that can hold the most: ``MOMENTS`` key -> terms
    ("block" is absent without decoder layers). ``fsdp2_memory`` takes the larger.

    PyTorch 2.13, ``torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py``: a block's
    ``pre_backward`` gathers it and prefetches the next (``_backward_prefetch``); its
    ``post_backward`` reshards it, then ``foreach_reduce`` (``_fsdp_collectives.py``) copies
    its bf16 gradients into an fp32 reduce-scatter input (``reduce_dtype=fp32``) that
    ``comm_ctx.reduce_scatter_states`` keeps until the next group's reduce-scatter. R the
    root, O its lm_head and final norm, B one block, L blocks, P everything. Two moments
    compete:
    - a decoder layer: the root stays gathered (2R) and lm_head's gradients exist (2O);
      at stage 3 the most is held during the second block's backward from 3 layers on (this
      block and the prefetched one gathered, 4B; this block's gradients, 2B; the previous
      block's kept input, 4B: 10B), at the first block's reduce-scatter with 1 or 2 layers
      (its gradients in its input, 2B + 4B, and with 2 layers the prefetched block, 2B). At stage 2
      every weight is gathered (2P) until its block's reduce-scatter, where the block's
      weights are resharded (-2B) and its gradients sit in its input (2B + 4B): 2P + 2O + 4B;
    - the root's reduce-scatter: its bf16 gradients (2R) in its fp32 input (4R), every
      weight resharded.
    A third moment, the root's last ops (root gathered, all its gradients, the last block's
    input kept: 4R + 4B), never holds more than both, because lm_head is at least as large
    as the input embedding (O >= R - O). Measured on 2 gloo ranks, each case the largest in
    one model: tests/vram/test_fsdp2_torchrun.py. ``world_size`` N: the gathered weights, stage
    2's unsharded weights and the reduce-scatter inputs hold every parameter padded to
    N x ceil(dim0 / N) rows (``gathered_sizes``; the gradients are not padded), so the bytes of
    those terms count B, R and P as FSDP2 pads them while their formulas keep the symbols;
    measured as rank 0 of a fake process group: tests/vram/test_fsdp2_padding.py.
    """
    p, r, o = shape.params, shape.root_params, shape.output_params
    b, layers = shape.decoder_layer_params, shape.num_layers
    assert r is not None and o is not None and b is not None and layers is not None  # fsdp2_memory's _need
    # all-gather outputs and reduce-scatter inputs: every parameter padded to N * ceil(dim0 / N) rows
    gp, gr, gb = gathered_sizes(shape, world_size)

    def term(key: str, coefficients: tuple[tuple[int, str], ...], what: str, bytes_: int | None = None) -> Term:
        sizes = {"P": p, "R": r, "O": o, "B": b}
        exact = sum(c * sizes[symbol] for c, symbol in coefficients) if bytes_ is None else bytes_
        return Term("working", key, exact, coefficients, what)

    moments: dict[str, list[Term | None]] = {}
    if zero_stage == 3 and layers >= 3:
        moments["block"] = [
            term(
                "gathered_weights",
                ((BF16, "R"), (2 * BF16, "B")),
                "bf16 gathered weights: the root, the current block and the prefetched one",
                BF16 * gr + 2 * BF16 * gb,
            ),
            term(
                "unsharded_gradients",
                ((BF16, "O"), (BF16, "B")),
                "bf16 unsharded gradients of the current block and of lm_head/final norm",
            ),
            term(
                "reduce_scatter_input",
                ((FP32, "B"),),
                "fp32 reduce-scatter input of the previous block, kept until the next one's",
                FP32 * gb,
            ),
        ]
    elif layers:
        prefetched = zero_stage == 3 and layers == 2  # the other block, gathered for its backward
        moments["block"] = [
            term(
                "gathered_weights",
                ((BF16, "R"), *(((BF16, "B"),) if prefetched else ())),
                "bf16 gathered weights of the root" + (" and of the prefetched block" if prefetched else ""),
                BF16 * gr + (BF16 * gb if prefetched else 0),
            )
            if zero_stage == 3
            else None,
            term("unsharded_gradients", ((BF16, "O"),), "bf16 unsharded gradients of lm_head/final norm"),
            term(
                "block_reduce_scatter",
                ((FP32 + BF16 if zero_stage == 3 else FP32, "B"),),
                "a block's bf16 gradients (2B) in its fp32 reduce-scatter input (4B)"
                + (", its bf16 weights (2B) resharded just before" if zero_stage == 2 else ""),
                BF16 * b + FP32 * gb - (BF16 * gb if zero_stage == 2 else 0),
            ),
        ]
    moments["root"] = [
        term("resharded_weights", ((-BF16, "P"),), "the bf16 weights, all resharded by then", -BF16 * gp)
        if zero_stage == 2
        else None,
        term("unsharded_gradients", ((BF16, "R"),), "bf16 gradients of the root, being copied"),
        term("reduce_scatter_input", ((FP32, "R"),), "fp32 reduce-scatter input of the root", FP32 * gr),
    ]
    return {m: [t for t in ts if t] for m, ts in moments.items()}
