"""Run as N gloo ranks (torchrun's environment; tests/snippets/fork_ranks.py): LoRA under FSDP2.

Usage: fork_ranks.py --preload=transformers,peft 2 lora_fsdp2_worker.py OUT_DIR
Each rank writes OUT_DIR/rank{N}.json with one run per ``SCENARIOS`` entry
(``reshard_after_forward`` of every decoder layer, AdamW implementation).

The model: fsdp2_worker's small transformers Llama (3 layers, every dim 0 even) loaded in bf16,
PEFT 0.21's LoRA (rank 8, "all-linear": adapters in fp32 as PEFT makes them,
``autocast_adapter_dtype=True``), ``fully_shard`` on each decoder layer (``reshard_after_forward``
as asked) and on the root (default), ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``
as snippets/train_fsdp2.py builds it, ``torch.optim.AdamW`` over the adapters only. Measured,
per rank, from the tensors and from FSDP2's own buffers (fsdp2_worker's ``_fsdp_buffers``,
sampled inside every op of forward and backward and inside every reduce-scatter), and the
profiler's allocator events around ``optimizer.step()`` (step_worker's ``_live_bytes``):

- sizes (elements): base and adapter parameters of the model, of one block, of the root;
- base_weights_bytes / adapter_weights_bytes: storages of the sharded parameters;
- gradients_bytes, optimizer_bytes: as fsdp2_worker (adapters only have gradients);
- unsharded_after_forward_bytes, peak_fsdp_buffers_bytes, peak_parts: as fsdp2_worker;
- before_step_bytes / step_peak_bytes: live bytes when the step starts and at most during it;
- with ``CPUOffloadPolicy(pin_memory=False)`` (a scenario's fourth entry): ``offload_to_cpu`` (every
  FSDP parameter says so), ``host_devices`` (where the shards, their gradients and AdamW's states
  are), and for every all-gather of the step (``_fsdp_collectives._get_param_all_gather_inputs``)
  ``copied_bytes``, the sharded data each parameter's ``all_gather_inputs`` copies to the device
  (``_sharded_param_data``, its dtype as stored), and ``input_bytes``, the all-gather inputs it
  returns (after the cast to ``param_dtype``). On CPU the copy to "the device" is the tensor
  itself: the sizes are what a GPU would receive.
Nothing here reads ``vram``: it measures.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.distributed as dist
from torch.autograd.profiler import record_function
from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp._fully_shard import _fsdp_collectives

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fsdp2_worker import LLAMA, _fsdp_buffers, _groups, _local, _nbytes, fsdp_buffer_peak, llama
from step_worker import IMPLS, _live_bytes

# name: (reshard_after_forward, AdamW implementation, LoRA rank); rank 160 makes a block's
# adapters (297k) more than twice its base (123k): then a block's reduce-scatter holds the most.
SCENARIOS = {
    "reshard_foreach": (True, "foreach", 8),
    "keep_fused": (False, "fused", 8),
    "keep_wide_rank": (False, "foreach", 160),
}


def run(reshard: bool, impl: str, rank: int, base=None, offload: bool = False) -> dict:
    """One step as the module docstring says; ``base``: a function building the model PEFT adapts
    (default: the small Llama in bf16; qlora_fsdp2_worker.py passes its 4-bit one); ``offload``:
    every ``fully_shard`` with ``CPUOffloadPolicy(pin_memory=False)``."""
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(
        base() if base else llama().to(torch.bfloat16), LoraConfig(r=rank, target_modules="all-linear")
    )
    layers = model.base_model.model.model.layers

    def numel(module, trainable):
        return sum(p.numel() for p in module.parameters() if p.requires_grad == trainable)

    sizes = {
        "base": numel(model, False),
        "adapters": numel(model, True),
        "block_base": numel(layers[0], False),
        "block_adapters": numel(layers[0], True),
        "layers": len(layers),
    }
    sizes["root"] = sizes["base"] - len(layers) * sizes["block_base"]
    dtypes = {
        "base": sorted({str(p.dtype) for p in model.parameters() if not p.requires_grad}),
        "adapters": sorted({str(p.dtype) for p in model.parameters() if p.requires_grad}),
    }
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    offloaded = {"offload_policy": CPUOffloadPolicy(pin_memory=False)} if offload else {}
    for layer in layers:
        fully_shard(layer, reshard_after_forward=reshard, mp_policy=policy, **offloaded)
    fully_shard(model, mp_policy=policy, **offloaded)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-3, **IMPLS[impl])
    groups = _groups(model)
    peak = {"total": 0}
    tokens = torch.randint(0, LLAMA["vocab_size"], (2, 8))
    gathers: list[dict] = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        with fsdp_buffer_peak(groups, peak), all_gather_inputs(gathers):
            loss = model(input_ids=tokens, labels=tokens).loss
            after_forward = _fsdp_buffers(groups)["params"]
            loss.backward()
        del loss
        with record_function("optimizer_step"):
            optimizer.step()
    before, step_peak = _live_bytes(prof, "optimizer_step")
    grads = {}
    for p in trainable:
        storage = _local(p.grad).untyped_storage()
        grads[storage.data_ptr()] = storage.nbytes()
    largest = max(_local(p).numel() for p in trainable)
    offloaded = {}
    if offload:
        fsdp_params = [p for group in groups for p in group.fsdp_params]
        states = [_local(v) for state in optimizer.state.values() for k, v in state.items() if torch.is_tensor(v)]
        offloaded = {
            "offload_to_cpu": all(p.offload_to_cpu for p in fsdp_params),
            "host_devices": sorted(
                {
                    t.device.type
                    for t in [_local(p) for p in model.parameters()] + [_local(p.grad) for p in trainable] + states
                }
            ),
            "all_gathers": gathers,
        }
    return {
        **offloaded,
        "adapter_tensors": len(trainable),
        "sizes": sizes,
        "dtypes": dtypes,
        "largest_local_adapter": largest,
        "base_weights_bytes": sum(
            _local(p).untyped_storage().nbytes() for p in model.parameters() if not p.requires_grad
        ),
        "adapter_weights_bytes": sum(_local(p).untyped_storage().nbytes() for p in trainable),
        "gradients_bytes": sum(grads.values()),
        "frozen_gradients": sum(p.grad is not None for p in model.parameters() if not p.requires_grad),
        "optimizer_bytes": sum(
            _nbytes(_local(v))
            for state in optimizer.state.values()
            for k, v in state.items()
            if k != "step" and torch.is_tensor(v)
        ),
        "unsharded_after_forward_bytes": after_forward,
        "peak_fsdp_buffers_bytes": peak["total"],
        "peak_parts": {k: v for k, v in peak.items() if k != "total"},
        "before_step_bytes": before,
        "step_peak_bytes": step_peak,
    }


@contextmanager
def all_gather_inputs(gathers: list):
    """While inside, each all-gather's inputs (module docstring) are appended to ``gathers``:
    ``{"copied_bytes", "input_bytes"}``."""
    original = _fsdp_collectives._get_param_all_gather_inputs

    def recorded(fsdp_params):
        inputs = original(fsdp_params)
        gathers.append(
            {
                "copied_bytes": sum(_nbytes(p._sharded_param_data) for p in fsdp_params),
                "input_bytes": sum(_nbytes(t) for ts in inputs for t in ts),
            }
        )
        return inputs

    _fsdp_collectives._get_param_all_gather_inputs = recorded
    try:
        yield
    finally:
        _fsdp_collectives._get_param_all_gather_inputs = original


def main(base=None, measured: dict | None = None, scenarios: dict | None = None) -> None:
    """Every scenario (``SCENARIOS`` unless given) on ``base`` (``run``'s; None: the bf16 Llama),
    each report with what ``base`` put in ``measured`` while building it."""
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    out_dir = Path(sys.argv[1])
    dist.init_process_group("gloo")
    report = {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "config": LLAMA}
    measured = {} if measured is None else measured
    for name, (reshard, impl, rank, *offload) in (scenarios or SCENARIOS).items():
        measured.clear()
        report[name] = {
            "lora_rank": rank,
            "impl": impl,
            "offload": bool(offload and offload[0]),
            **run(reshard, impl, rank, base, bool(offload and offload[0])),
            **measured,
        }
    (out_dir / f"rank{dist.get_rank()}.json").write_text(json.dumps(report))
    gc.collect()  # see fsdp2_worker.main
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
