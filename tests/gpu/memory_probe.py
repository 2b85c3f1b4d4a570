"""One training step of an MLP under DDP and under FSDP2, measuring model-state memory (tests only).

Usage: torchrun --nproc_per_node=N memory_probe.py OUT_DIR [WIDTH]. Writes
OUT_DIR/rank<R>.json with, per mode, the parameter count and, on CUDA, the bytes still
allocated after the step (``torch.cuda.memory_allocated()``, less what was allocated before
the model was built and less the input batch) and the peak over the step
(``torch.cuda.max_memory_allocated()``, less the same baseline). On CPU (gloo) the same code
runs without memory figures, so the probe itself is rehearsed in every CI run.

Model: LAYERS x Linear(WIDTH, WIDTH) (WIDTH 1024: 33.6 M parameters), fp32, every dim 0 a multiple of 8 (no FSDP2
padding for up to 8 ranks). Optimizer: AdamW in fp32 (16 B per parameter: weights 4,
gradients 4, exp_avg 4, exp_avg_sq 4; ``vram`` calls it ``adamw-fp32``), ``foreach=False``
so its temporaries are one parameter's size, not the whole model's. DDP uses
``gradient_as_bucket_view=True``: by default DDP keeps its all-reduce buckets as a second
copy of the gradients, which the calculator does not count.
"""

import gc
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel

LAYERS, BATCH = 32, 8


def ddp(model, local_rank, cuda):
    return DistributedDataParallel(model, device_ids=[local_rank] if cuda else None, gradient_as_bucket_view=True)


def fsdp(model, local_rank, cuda):
    for layer in model:
        fully_shard(layer)
    return fully_shard(model)


def one_step(wrap, width: int, local_rank: int, device: torch.device) -> dict:
    """Build, wrap and train one step; memory relative to what was allocated before."""
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        baseline = torch.cuda.memory_allocated()
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(LAYERS)]).to(device)
    params = sum(p.numel() for p in model.parameters())
    model = wrap(model, local_rank, cuda)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    inputs = torch.randn(BATCH, width, device=device)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    model(inputs).square().mean().backward()
    optimizer.step()
    result = {"params": params}
    if cuda:
        torch.cuda.synchronize()
        input_bytes = inputs.numel() * inputs.element_size()
        result["states_after_step"] = torch.cuda.memory_allocated() - baseline - input_bytes
        result["peak_over_baseline"] = torch.cuda.max_memory_allocated() - baseline
    return result


def main() -> None:
    out, width = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    local_rank = int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")
    results = {
        "world_size": dist.get_world_size(),
        "ddp": one_step(ddp, width, local_rank, device),
        "fsdp": one_step(fsdp, width, local_rank, device),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(results))
    gc.collect()  # FSDP2's modules hold the gloo group: freed at exit it can abort (tests/vram/fsdp2_worker.py)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
