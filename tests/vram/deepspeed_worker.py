"""Run under torchrun (gloo, CPU): DeepSpeed 0.19 with bf16 and AdamW at ZeRO stages 0, 1, 2.

Usage: python -m torch.distributed.run --standalone --nproc_per_node=2 deepspeed_worker.py OUT_DIR
Each rank writes OUT_DIR/rank{N}.json: per stage, the parameter count and the bytes of each
buffer this rank really holds, measured from the tensors (distinct storages, meta tensors
left out), at the moment it is largest:

- bf16_weights: the module's parameters (stages 1-2: views into DeepSpeed's flat bf16 group);
- bf16_gradients: the module's ``.grad`` and the optimizer's ``averaged_gradients`` and
  ``grads_in_partition``, when backward has ended and before DeepSpeed reduces them
  (``engine.allreduce_gradients``), leaving out the gradient reduction buckets, reported
  apart as reduction_buckets (``ipg_buckets``: ``reduce_bucket_size`` elements each);
- fp32_master, fp32_gradients, optimizer_states: the tensors the wrapped torch optimizer
  steps (the fp32 master copy or partition), their ``.grad`` and AdamW's ``exp_avg`` and
  ``exp_avg_sq``, right after its ``step``.

The model is two bias-free 64 x 64 Linear layers: P = 8,192, so on 2 ranks each partition is
exactly one weight and nothing is padded. DeepSpeed has estimators for stages 2 and 3 only
(tests/vram/test_deepspeed_estimators.py): this run is the oracle for stages 0 and 1.
"""

from __future__ import annotations

import gc
import json
import logging
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

STAGES = (0, 1, 2)


def _storages(tensors) -> dict[int, int]:
    return {
        t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
        for t in tensors
        if torch.is_tensor(t) and t.device.type != "meta" and t.untyped_storage().nbytes()
    }


def _bytes(tensors, leave_out: dict[int, int] | None = None) -> int:
    return sum(n for ptr, n in _storages(tensors).items() if ptr not in (leave_out or {}))


def _flat(value) -> list:
    if torch.is_tensor(value):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat(v)]
    return []


def run(stage: int) -> dict:
    import deepspeed
    import deepspeed.comm.torch

    # DeepSpeed would JIT-compile its shared-memory CPU collective (about a minute on 2 cores,
    # a C++ compiler needed): gloo does the same work here, and no buffer measured depends on
    # it. (The attribute deepspeed.comm.torch is PyTorch itself: go through sys.modules.)
    deepspeed.comm.torch.build_shm_op = lambda: None
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64, bias=False), nn.Linear(64, 64, bias=False))
    config = {
        "train_micro_batch_size_per_gpu": 2,
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": stage},
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    }
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    report = {
        "stage": stage,
        "params": sum(p.numel() for p in model.parameters()),
        "optimizer": type(optimizer).__name__,
    }
    reduce = engine.allreduce_gradients

    def allreduce_gradients(*args, **kwargs):
        buckets = _storages(t for bucket in getattr(optimizer, "ipg_buckets", {}).values() for t in bucket.buffer)
        grads = (
            [p.grad for p in engine.module.parameters()]
            + _flat(getattr(optimizer, "averaged_gradients", None))
            + _flat(getattr(optimizer, "grads_in_partition", None))
        )
        report["bf16_gradients"] = _bytes(grads, leave_out=buckets)
        report["reduction_buckets"] = sum(buckets.values())
        report["reduce_bucket_size"] = getattr(optimizer, "reduce_bucket_size", None)
        return reduce(*args, **kwargs)

    inner = optimizer.optimizer
    step = inner.step

    def inner_step(*args, **kwargs):
        result = step(*args, **kwargs)
        masters = [p for group in inner.param_groups for p in group["params"]]
        report["fp32_master"] = _bytes(masters)
        report["fp32_gradients"] = _bytes(p.grad for p in masters)
        report["optimizer_states"] = _bytes(v for s in inner.state.values() for k, v in s.items() if k != "step")
        report["master_dtypes"] = sorted({str(p.dtype) for p in masters})
        return result

    engine.allreduce_gradients = allreduce_gradients
    inner.step = inner_step
    loss = engine(torch.randn(2, 64, dtype=torch.bfloat16)).float().sum()
    engine.backward(loss)
    engine.step()
    report["bf16_weights"] = _bytes(engine.module.parameters())
    report["weight_dtypes"] = sorted({str(p.dtype) for p in engine.module.parameters()})
    return report


def main() -> None:
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    out_dir = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    report = {"rank": rank, "world_size": dist.get_world_size(), "stages": [run(stage) for stage in STAGES]}
    (out_dir / f"rank{rank}.json").write_text(json.dumps(report))
    # What FSDP2/DeepSpeed built holds the gloo group; freed at interpreter exit, its threads
    # abort the process now and then (PyTorch 2.13, see pytorch/pytorch#179291): free it now.
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
