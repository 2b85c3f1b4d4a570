"""Run as a script: DDP on a model loaded in bf16 with torch.optim.AdamW (no fp32 master),
rank 0 of N under PyTorch's fake process group, one training step per scenario.

Usage: python ddp_bf16_worker.py OUT_JSON
What transformers 5's Trainer runs for a model loaded in bf16 under DDP: the parameters
are bf16, AdamW's moments follow them (``zeros_like(param)``), nothing is kept in fp32.
Like ``step_worker.py`` (whose model, no-op all-reduce and allocator-event reader it
uses): the live bytes of the profiler's allocator events while ``optimizer.step()`` runs,
the live bytes when it starts, and the tensors rank 0 holds. Nothing here reads ``vram``.
"""

import json
import sys
import warnings

import torch
import torch.distributed as dist
from step_worker import IMPLS, LLAMA, _build, _live_bytes, _no_op_allreduce
from torch.autograd.profiler import record_function
from torch.nn.parallel import DistributedDataParallel
from torch.testing._internal.distributed.fake_pg import FakeStore

# name: (world_size, AdamW implementation)
SCENARIOS = {
    "bf16_ddp1_foreach": (1, "foreach"),
    "bf16_ddp1_fused": (1, "fused"),
    "bf16_ddp1_forloop": (1, "forloop"),
    "bf16_ddp2_foreach": (2, "foreach"),
    "bf16_ddp2_fused": (2, "fused"),
}


def run(world_size: int, impl: str) -> dict:
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        torch.manual_seed(0)
        tokens = torch.randint(0, LLAMA["vocab_size"], (1, 32))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
            model = _build(LLAMA).to(torch.bfloat16)
            wrapped = model
            if world_size > 1:
                wrapped = DistributedDataParallel(model)
                wrapped.register_comm_hook(None, _no_op_allreduce)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, **IMPLS[impl])
            loss = wrapped(input_ids=tokens, labels=tokens).loss
            loss.backward()
            del loss
            with record_function("optimizer_step"):
                optimizer.step()
        before, peak = _live_bytes(prof, "optimizer_step")
        states = [
            v for state in optimizer.state.values() for k, v in state.items() if k != "step" and torch.is_tensor(v)
        ]
        return {
            "params": sum(p.numel() for p in model.parameters()),
            "dtypes": sorted({str(t.dtype) for t in [*model.parameters(), *states]}),
            "before_step_bytes": before,
            "step_peak_bytes": peak,
            "weights_bytes": sum(p.untyped_storage().nbytes() for p in model.parameters()),
            "gradients_bytes": sum(p.grad.untyped_storage().nbytes() for p in model.parameters()),
            "optimizer_bytes": sum(v.numel() * v.element_size() for v in states),
            "largest_tensor": max(p.numel() for p in model.parameters()),
        }
    finally:
        dist.destroy_process_group()


def main() -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    report = {"config": LLAMA}
    for name, (world_size, impl) in SCENARIOS.items():
        report[name] = run(world_size, impl)
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(report, out)


if __name__ == "__main__":
    main()
