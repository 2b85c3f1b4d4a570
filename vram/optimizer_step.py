"""What the optimizer step allocates beyond the model states, by implementation.

``torch.optim.AdamW`` (PyTorch 2.13, ``torch/optim/adam.py``; AdamW is Adam with decoupled
weight decay) has three implementations, picked by its ``foreach`` / ``fused`` arguments:

- ``foreach`` (``_multi_tensor_adam``): the default when every parameter is on CUDA and
  neither argument is given (``torch/optim/optimizer.py``, ``_default_to_fused_or_foreach``),
  DTensor shards included. Its update ``exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)``
  builds a new fp32 tensor the size of every local parameter at once before
  ``_foreach_addcdiv_`` uses it: 4 B per local parameter (moments in fp32).
- ``forloop`` (``_single_tensor_adam``, ``foreach=False``): one parameter at a time,
  ``denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)``: the square root and the
  quotient coexist, two fp32 tensors of the largest local parameter: 8 B per element of it.
- ``fused`` (``_fused_adam``, ``fused=True``; the Hugging Face Trainer's default optimizer
  ``adamw_torch_fused``): one kernel updates in place, nothing more.

Oracle: the fake process group (one process plays rank 0 of N; FSDP2's and DDP's buffers are
real, collectives are no-ops) and the live bytes of the profiler's allocator events during
``optimizer.step()`` (tests/vram/test_optimizer_step.py): 20 B per local parameter at the
step under FSDP2 with ``foreach`` (4 + 4 + 8 of the model states, 4 of the temporary), 16
with ``fused``. All in bf16 (a bf16 model, ``torch.optim.AdamW`` on it: moments in bf16, no
fp32 copy), the same temporaries in bf16: 2 B per local parameter (``foreach``), 4 B per
element of the largest (``forloop``), measured the same way (tests/vram/test_ddp_bf16.py).
SGD with momentum and no weight decay (``_multi_tensor_sgd``) updates in place
in every implementation; bitsandbytes' 8-bit Adam runs its own kernel, in place: 0 for both.
"""

from __future__ import annotations

from .validate import lookup

OPTIMIZER_IMPLS = ("foreach", "fused", "forloop")
DEFAULT_IMPL = "foreach"  # torch.optim.AdamW(params) on CUDA: what the guide's train.py and train_fsdp2.py build
TRAINER_IMPL = "fused"  # transformers' TrainingArguments default optim "adamw_torch_fused"
# What each implementation adds at the step, for the optimizers that allocate anything:
# optimizer -> impl -> (bytes per local parameter, bytes per element of the largest local tensor)
_TEMPORARY = {
    "adamw": {"foreach": (4, 0), "forloop": (0, 8), "fused": (0, 0)},
    "adamw-bf16": {"foreach": (2, 0), "forloop": (0, 4), "fused": (0, 0)},  # moments in bf16: the same tensors, 2 B
}


def check_optimizer_impl(impl: str) -> str:
    """``impl`` if it is one of ``OPTIMIZER_IMPLS``; raises ValueError naming them otherwise."""
    return lookup({i: i for i in OPTIMIZER_IMPLS}, impl, "optimizer implementation")


def step_temporary_coefficients(optimizer: str, impl: str) -> tuple[int, int]:
    """(bytes per local parameter, bytes per element of the largest local parameter tensor)
    that ``optimizer`` under ``impl`` allocates during its step on top of its states
    (see the module docstring; (0, 0) for an optimizer that updates in place).
    Raises ValueError for an unknown implementation."""
    check_optimizer_impl(impl)
    return _TEMPORARY.get(optimizer, {}).get(impl, (0, 0))


def step_temporary_bytes(optimizer: str, impl: str, local_params: int, largest_local_tensor: int) -> int:
    """Bytes the step allocates on top of the model states: ``local_params`` elements of the
    parameters this GPU updates, ``largest_local_tensor`` elements of its largest one.
    Raises ValueError for an unknown implementation."""
    per_param, per_largest = step_temporary_coefficients(optimizer, impl)
    return per_param * local_params + per_largest * largest_local_tensor
