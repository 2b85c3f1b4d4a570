"""Run under torchrun (gloo, CPU): FSDP2 ``fully_shard`` on small models, one step each.

Usage: python -m torch.distributed.run --standalone --nproc_per_node=2 fsdp2_worker.py OUT_DIR
Each rank writes OUT_DIR/rank{N}.json: for each scenario, the global parameter shapes and
the bytes this rank holds, measured from the tensors themselves:

- weights_bytes: storage of each sharded parameter (``to_local()`` is a view into a
  padded chunk: the storage holds the padding too);
- weights_local_bytes: ``to_local()`` elements only;
- gradients_bytes: distinct storages behind the sharded gradients (one padded
  reduce-scatter output per FSDP group);
- optimizer_bytes: the optimizer's state tensors' local shards, without 'step' scalars;
- unsharded_after_forward_bytes: parameters registered unsharded (plain tensors, not
  DTensor) right after forward, before backward.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def divisible_model() -> nn.Module:
    """Every dim 0 is even: no padding on 2 ranks."""
    return nn.Sequential(
        nn.Embedding(50, 16),
        nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0, batch_first=True),
        nn.LayerNorm(16),
        nn.Linear(16, 50),
    )


def padded_model() -> nn.Module:
    """Odd dims 0 (7, 5, 3): rank 0 holds ceil(d/2) rows, rank 1 the rest, both allocate ceil."""
    return nn.Sequential(nn.Embedding(7, 6), nn.Linear(6, 5), nn.LayerNorm(5), nn.Linear(5, 3))


SCENARIOS = {
    # name: (model, optimizer, reshard_after_forward)
    "full_shard_adamw": (divisible_model, "adamw", True),
    "full_shard_sgd": (divisible_model, "sgd", True),
    "shard_grad_op_adamw": (divisible_model, "adamw", False),
    "padded_full_shard_adamw": (padded_model, "adamw", True),
}


def run(make_model, optim_name: str, reshard_after_forward: bool) -> dict:
    torch.manual_seed(0)  # same initial weights on every rank
    model = make_model()
    shapes = [list(p.shape) for p in model.parameters()]
    for layer in model:
        if any(True for _ in layer.parameters()):
            fully_shard(layer, reshard_after_forward=reshard_after_forward)
    fully_shard(model, reshard_after_forward=reshard_after_forward)
    params = list(model.parameters())
    if optim_name == "adamw":
        optimizer = torch.optim.AdamW(params, lr=1e-3)
    else:
        optimizer = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    vocab = model[0].num_embeddings
    out = model(torch.randint(0, vocab, (2, 3)))
    unsharded = sum(_nbytes(p) for p in model.parameters() if not isinstance(p, DTensor))
    out.float().sum().backward()
    optimizer.step()
    grad_storages = {}
    for p in params:
        storage = _local(p.grad).untyped_storage()
        grad_storages[storage.data_ptr()] = storage.nbytes()
    return {
        "shapes": shapes,
        "all_sharded_after_step": all(isinstance(p, DTensor) for p in params),
        "unsharded_after_forward_bytes": unsharded,
        "weights_bytes": sum(_local(p).untyped_storage().nbytes() for p in params),
        "weights_local_bytes": sum(_nbytes(_local(p)) for p in params),
        "gradients_bytes": sum(grad_storages.values()),
        "optimizer_bytes": sum(
            _nbytes(_local(v))
            for state in optimizer.state.values()
            for k, v in state.items()
            if k != "step" and torch.is_tensor(v)
        ),
    }


def main() -> None:
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module")  # view outputs: harmless here
    out_dir = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    report = {"rank": rank, "world_size": world_size}
    for name, (make_model, optim_name, reshard) in SCENARIOS.items():
        report[name] = run(make_model, optim_name, reshard)
    (out_dir / f"rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
