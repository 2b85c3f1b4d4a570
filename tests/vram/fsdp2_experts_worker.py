"""Run under torchrun (gloo, CPU, 3 ranks): FSDP2 on a transformers Mixtral with fused experts.

Usage: python -m torch.distributed.run --standalone --nproc_per_node=3 fsdp2_experts_worker.py OUT_DIR CONFIG_JSON
Builds ``MixtralForCausalLM`` from the config (transformers fuses each layer's experts into
``experts.gate_up_proj`` [E, 2I, H] and ``experts.down_proj`` [E, H, I]), shards it the way the
guide's FSDP2 script does (``fully_shard`` on each decoder layer, then on the root,
``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``), runs one forward and backward
of the causal-LM loss and one ``torch.optim.AdamW`` step, and writes OUT_DIR/rank{N}.json with
the bytes this rank holds, read from the tensors themselves:

- shapes: every parameter's global shape, and local_rows: the rows of dim 0 this rank holds;
- weights_bytes: storage of each sharded parameter's local tensor (padding included);
- gradients_bytes (after backward, before the step): distinct storages behind the sharded
  gradients' local tensors;
- optimizer_bytes (after the step): the local shards of AdamW's state tensors, 'step' scalars left out.
"""

from __future__ import annotations

import gc
import json
import sys
import warnings
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t


def main() -> None:
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module")
    out_dir, config = Path(sys.argv[1]), json.loads(sys.argv[2])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    cfg = {k: v for k, v in config.items() if k != "model_type"}
    model = MixtralForCausalLM(MixtralConfig(**cfg, attn_implementation="sdpa"))
    shapes = [list(p.shape) for p in model.parameters()]
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, mp_policy=mp_policy)
    fully_shard(model, mp_policy=mp_policy)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    tokens = torch.randint(0, config["vocab_size"], (2, 8))
    model(input_ids=tokens, labels=tokens).loss.backward()
    grad_storages = {}
    for p in params:
        storage = _local(p.grad).untyped_storage()
        grad_storages[storage.data_ptr()] = storage.nbytes()
    optimizer.step()
    report = {
        "rank": rank,
        "world_size": dist.get_world_size(),
        "shapes": shapes,
        "local_rows": [_local(p).shape[0] for p in params],
        "all_sharded": all(isinstance(p, DTensor) for p in params),
        "weights_bytes": sum(_local(p).untyped_storage().nbytes() for p in params),
        "gradients_bytes": sum(grad_storages.values()),
        "optimizer_bytes": sum(
            _local(v).numel() * _local(v).element_size()
            for state in optimizer.state.values()
            for k, v in state.items()
            if k != "step" and torch.is_tensor(v)
        ),
    }
    (out_dir / f"rank{rank}.json").write_text(json.dumps(report))
    del model, optimizer, params  # free what holds the gloo group before destroying it (see fsdp2_worker.py)
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
