"""Model states per GPU under DeepSpeed ZeRO, as DeepSpeed 0.19 estimates them.

GPU side, stages 2 and 3: DeepSpeed's own estimators, with ``additional_buffer_factor=1``
(``deepspeed/runtime/zero/stage_1_and_2.py``, ``estimate_zero2_model_states_mem_needs``,
lines 4017-4034; ``deepspeed/runtime/zero/stage3.py``, ``estimate_zero3_model_states_mem_needs``,
lines 4016-4052), for P parameters on N GPUs with bf16 weights and AdamW (K = 12 B of
optimizer state per parameter: 4 fp32 master + 8 for the two fp32 moments):

- ZeRO-2: ``2P + int(18P/N)``. The source's comment: "18 = 2_grads_16bit + 4_grads_32bit +
  4_params_32bit + 8_optimizer_states_32bit": 2P of bf16 weights, whole on every GPU; per
  GPU a 1/N partition of the bf16 gradients (2) and of the fp32 gradients (4); the fp32
  master partition and the moments (12).
- ZeRO-3: ``4 * largest_layer + int(18P/N)``: the 1/N partitions of bf16 weights (2), fp32
  gradients (4) and optimizer (12), plus 4 B per parameter of the largest module, the
  layer gathered whole (its bf16 weights and bf16 gradients, 2 + 2).
- ZeRO-2 with ``offload_optimizer``: ``2P``: the gradients go to the CPU as well (ZeRO-Offload,
  Ren et al. 2021, arXiv:2101.06840, §4.1). ZeRO-3 with it: ``4 * largest + int(2P/N)``;
  with ``offload_param`` too: ``4 * largest``.

Every partition is whole elements: ceil(P/N) per GPU, as DeepSpeed allocates them (stage
1/2 pads the flat bf16 group to a multiple of 2N, ``stage_1_and_2.py``, ``align_dense_tensors``;
stage 3 pads each parameter to a multiple of N, ``partition_parameters.py``, ``_padding_size``),
so ceil(P/N) is what a GPU holds at least. The estimators truncate instead: ``int(18 * P / N)``,
in floating point. When N divides P (every model and GPU count the site shows) the two agree
to the byte; otherwise the figure here is 1 to 18 bytes above the estimator's
(18 * ceil(P/N) - floor(18P/N) = 18 - floor(18r/N), r = P mod N; with ``offload_optimizer``
at stage 3, 2 - floor(2r/N)), and once 18P passes 2^53 (P above 5 * 10^14) the
estimator's float division can add or drop one more byte. Tested against the estimators
with hypothesis (``tests/vram/test_deepspeed_estimators.py``).

Stages 0 and 1 have no estimator; they are derived from the same buffers, each measured on
a real DeepSpeed run (2 gloo ranks, ``tests/vram/test_deepspeed_torchrun.py``): stage 1 does
not partition gradients, so the bf16 gradients are whole (2P) when backward ends, beside the
1/N fp32 gradient and optimizer partitions (``stage_1_and_2.py`` with
``partition_gradients=False``); without ZeRO, DeepSpeed's bf16 wrapper
(``runtime/fp16/fused_optimizer.py`` with DeepSpeed's FusedAdam, ``unfused_optimizer.py``
with torch's AdamW, the one measured; ``engine.py``, ``_configure_fp16_optimizer``) keeps bf16 weights and gradients, fp32 gradients of the whole model, and an fp32 master copy
with the moments, all alive inside the step: 2 + 2 + 4 + 12 = 20 B per parameter. Like the
estimators, the figure adds the buffers up: at stage 1 the whole bf16 gradients are reduced
and freed before the fp32 gradient partition exists, so there the sum is above the peak by
up to 4P/N. Not counted, as in the estimators: the gradient reduction buckets
(``reduce_bucket_size``, a note says so).

Host RAM per machine with offload: what the offloaded partitions of its GPUs pin, 16 B
per parameter (fp32 master, two moments, fp32 gradients), 18 with ``offload_param`` (the
bf16 weights too). DeepSpeed's estimators multiply host RAM by ``additional_buffer_factor``
(1.5) and, at ZeRO-1/2, take ``max(4 * N, 16)`` B per parameter (4 * N: every process
loads an fp32 copy of the model at start-up): both are named in ``notes``, not applied.
Other optimizers with an fp32 master copy (``adam8bit``, ``sgd``) change K only.
"""

from __future__ import annotations

from .breakdown import FrameworkMemory, Term
from .sharding import check_world_size, check_zero_stage, shard_elements  # ceil(P / N): DeepSpeed pads
from .states import MASTER_COPY_BYTES, state_bytes_per_param
from .validate import check_int, check_params

FRAMEWORK = "deepspeed"
BF16 = 2
FP32_GRADS = 4
LARGEST_LAYER_BYTES = 4  # bf16 weights + bf16 gradients of the gathered layer

ESTIMATOR_2 = "deepspeed/runtime/zero/stage_1_and_2.py:4030-4031 (estimate_zero2_model_states_mem_needs)"
ESTIMATOR_3 = "deepspeed/runtime/zero/stage3.py:4027-4052 (estimate_zero3_model_states_mem_needs)"
NOTE_BUFFER_FACTOR = (
    "DeepSpeed's estimators multiply host RAM by additional_buffer_factor=1.5 as a safety margin; not applied here."
)
NOTE_LOAD_TERM = (
    "estimate_zero2_model_states_mem_needs takes max(4*N, 16) B of host RAM per parameter: "
    "4*N is every process loading an fp32 copy of the model at start-up; not applied here "
    "(start-up, not training)."
)
NOTE_BUCKETS = (
    "Not counted, as in DeepSpeed's estimators: the gradient reduction buckets, reduce_bucket_size "
    "elements each in the gradients' dtype (DeepSpeed's default 5e8: 1 GB in bf16, two with "
    "overlap_comm); the Trainer and Accelerate set it to hidden_size^2 when the config says \"auto\"."
)
NOTE_WHOLE_ELEMENTS = (
    "{params:,} parameters are not a multiple of {world_size} GPUs: each partition is rounded up "
    "to {shard:,} whole elements, as DeepSpeed pads it; its estimators truncate int(18P/N) instead."
)
NOTE_DERIVED = (
    "DeepSpeed has no estimator for stage {stage}: derived from the buffers of its stage 2 "
    "estimator (see vram/deepspeed_zero.py)."
)


def _partitions(params: int, world_size: int, optimizer_k: int, last: str | None) -> list[Term]:
    """1/N partitions, whole elements each: fp32 master (4), optimizer states (K - 4), fp32
    gradients (4), then ``last``: "weights" or "gradients" for the 2 B bf16 partition (ZeRO-3
    weights, ZeRO-2 gradients), or None (stage 1)."""
    shard, k = shard_elements(params, world_size), optimizer_k
    terms = [
        Term(
            "optimizer",
            "fp32_master_partition",
            MASTER_COPY_BYTES * shard,
            ((MASTER_COPY_BYTES, "P/N"),),
            "fp32 master partition",
        ),
        Term(
            "optimizer",
            "optimizer_state_partition",
            (k - MASTER_COPY_BYTES) * shard,
            ((k - MASTER_COPY_BYTES, "P/N"),),
            "optimizer state partition (AdamW: two fp32 moments)",
        ),
        Term(
            "gradients",
            "fp32_gradient_partition",
            FP32_GRADS * shard,
            ((FP32_GRADS, "P/N"),),
            "fp32 gradient partition",
        ),
    ]
    if last is not None:
        key = "bf16_weight_partition" if last == "weights" else "bf16_gradient_partition"
        terms.append(Term(last, key, BF16 * shard, ((BF16, "P/N"),), key.replace("_", " ")))
    return terms


def deepspeed_memory(
    params: int,
    world_size: int,
    zero_stage: int,
    optimizer: str = "adamw",
    offload_optimizer: bool = False,
    offload_params: bool = False,
    largest_layer_params: int | None = None,
    gpus_per_machine: int | None = None,
) -> FrameworkMemory:
    """Bytes per GPU and host RAM per machine under DeepSpeed ZeRO ``zero_stage`` (0-3).

    params: parameters (> 0); world_size: data-parallel GPUs N (>= 1); optimizer: one of
    ``vram.states.MASTER_COPY_OPTIMIZERS`` (AdamW is what the estimators assume);
    offload_optimizer: ``zero_optimization.offload_optimizer`` (stages 1-3);
    offload_params: ``offload_param`` (stage 3, with offload_optimizer);
    largest_layer_params: the largest module's parameters (required at stage 3);
    gpus_per_machine: GPUs sharing one host's RAM (default: all N; must divide N).
    Returns ``FrameworkMemory`` (bytes, partitions in whole elements; the GPU side equals
    DeepSpeed's estimator at stages 2 and 3 with additional_buffer_factor=1 when N divides
    P, and is 1 to 18 B above it otherwise: see the module docstring). Raises ValueError
    for bad input.
    """
    check_params(params)
    n = check_world_size(world_size)
    check_zero_stage(zero_stage)
    k = MASTER_COPY_BYTES + state_bytes_per_param(optimizer)
    gpus = n if gpus_per_machine is None else check_int(gpus_per_machine, "gpus_per_machine", 1)
    if n % gpus:
        raise ValueError(f"gpus_per_machine {gpus} must divide world_size {n}")
    if offload_optimizer and zero_stage == 0:
        raise ValueError("DeepSpeed offload_optimizer needs ZeRO stage 1, 2 or 3")
    if offload_params and (zero_stage != 3 or not offload_optimizer):
        raise ValueError("DeepSpeed offload_param needs ZeRO stage 3 with offload_optimizer as well")
    p = params
    notes: list[str] = []
    if zero_stage:
        notes.append(NOTE_BUCKETS)
    if p % n and not (offload_optimizer and zero_stage < 3):  # those keep no 1/N partition on the GPU
        notes.append(NOTE_WHOLE_ELEMENTS.format(params=p, world_size=n, shard=shard_elements(p, n)))
    if zero_stage == 3:
        if largest_layer_params is None:
            raise ValueError(
                "DeepSpeed ZeRO-3 adds 4 B per parameter of the largest layer: give the model's "
                "config or its largest_layer_params"
            )
        largest = check_int(largest_layer_params, "largest_layer_params", 1)
        if largest > p:
            raise ValueError(f"largest_layer_params {largest:,} exceeds params {p:,}")
        terms = [
            Term(
                "working",
                "largest_layer",
                LARGEST_LAYER_BYTES * largest,
                ((LARGEST_LAYER_BYTES, "L"),),
                f"largest module gathered whole: bf16 weights + bf16 gradients (2 + 2); {ESTIMATOR_3}",
            )
        ]
        if offload_optimizer and not offload_params:
            terms.append(
                Term(
                    "weights",
                    "bf16_weight_partition",
                    BF16 * shard_elements(p, n),
                    ((BF16, "P/N"),),
                    f"bf16 weight partition; {ESTIMATOR_3}",
                )
            )
        elif not offload_optimizer:
            terms += [
                Term(t.part, t.key, t.bytes, t.coefficients, f"{t.what}; {ESTIMATOR_3}")
                for t in _partitions(p, n, k, "weights")
            ]
    else:
        terms = [Term("weights", "bf16_weights", BF16 * p, ((BF16, "P"),), "bf16 weights, whole on every GPU")]
        if zero_stage == 0:
            notes.append(NOTE_DERIVED.format(stage=0))
            terms += [
                Term("gradients", "bf16_gradients", BF16 * p, ((BF16, "P"),), "bf16 gradients"),
                Term(
                    "gradients",
                    "fp32_gradients",
                    FP32_GRADS * p,
                    ((FP32_GRADS, "P"),),
                    "fp32 gradients flattened for the step (runtime/fp16/fused_optimizer.py)",
                ),
                Term(
                    "optimizer", "fp32_master", MASTER_COPY_BYTES * p, ((MASTER_COPY_BYTES, "P"),), "fp32 master copy"
                ),
                Term(
                    "optimizer",
                    "optimizer_states",
                    (k - MASTER_COPY_BYTES) * p,
                    ((k - MASTER_COPY_BYTES, "P"),),
                    "optimizer states (AdamW: two fp32 moments)",
                ),
            ]
        elif zero_stage == 1:
            notes.append(NOTE_DERIVED.format(stage=1))
            terms.append(
                Term(
                    "gradients",
                    "bf16_gradients",
                    BF16 * p,
                    ((BF16, "P"),),
                    "bf16 gradients, whole: stage 1 does not partition them",
                )
            )
            if not offload_optimizer:
                terms += _partitions(p, n, k, None)
        elif not offload_optimizer:
            terms += [
                Term(t.part, t.key, t.bytes, t.coefficients, f"{t.what}; {ESTIMATOR_2}")
                for t in _partitions(p, n, k, "gradients")
            ]
    if offload_optimizer:
        host_bytes_per_param = FP32_GRADS + k + (BF16 if offload_params else 0)
        what = f"per machine: fp32 master + optimizer states ({k}) and fp32 gradients (4)"
        if offload_params:
            what += " and bf16 weights (2)"
        terms.append(
            Term(
                "host",
                "offloaded_partitions",
                host_bytes_per_param * shard_elements(p, n) * gpus,
                ((host_bytes_per_param, "PM/N"),),
                what,
            )
        )
        notes.append(NOTE_BUFFER_FACTOR)
        if zero_stage in (1, 2):
            notes.append(NOTE_LOAD_TERM)
    return FrameworkMemory(FRAMEWORK, p, n, zero_stage, tuple(terms), tuple(notes))
