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

The ``llama_*`` scenarios run a small transformers Llama (3 layers, P = 776,064, every dim 0
even so nothing is padded on 2 ranks) the way the guide's FSDP2 script does:
``fully_shard`` on each decoder layer, then on the root, with
``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` and AdamW. Besides the
bytes above they report the unsharded working set at its peak: sampled every time autograd
saves or unpacks a tensor (``saved_tensors_hooks``), that is inside every op of forward
and backward, as the bytes of (a) each FSDP parameter's unsharded all-gather output,
(b) a group's pending (prefetched) all-gather buffer and (c) the unsharded gradients still
held before their reduce-scatter. These read FSDP2's internals (``_fsdp_param_group``,
``all_gather_outputs``, ``_all_gather_result``): PyTorch 2.13 offers no public counter on CPU.
``ddp_buckets`` reports DDP's gradient buckets (``_get_ddp_logging_data()['bucket_sizes']``)
and whether the gradients share their storage, with and without ``gradient_as_bucket_view``.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel

# P = 776,064: 2 x 1,588 x 128 (embedding, lm_head) + 128 (norm) + 3 x 123,136 per layer.
LLAMA = {"model_type": "llama", "vocab_size": 1588, "hidden_size": 128, "intermediate_size": 192,
         "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
         "tie_word_embeddings": False}


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


def llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = {k: v for k, v in LLAMA.items() if k != "model_type"}
    return LlamaForCausalLM(LlamaConfig(**cfg, attn_implementation="sdpa"))


def _groups(model: nn.Module) -> list:
    return [m._get_fsdp_state()._fsdp_param_group for m in model.modules() if isinstance(m, FSDPModule)]


def _unsharded_bytes(groups: list) -> tuple[int, int]:
    """(unsharded parameter bytes incl. pending all-gathers, unsharded gradient bytes) now."""
    params = grads = 0
    for group in groups:
        pending = group._all_gather_result
        if pending is not None:
            params += pending.all_gather_output.untyped_storage().nbytes()
        for fsdp_param in group.fsdp_params:
            params += sum(t.untyped_storage().nbytes() for t in fsdp_param.all_gather_outputs)
            unsharded = getattr(fsdp_param, "_unsharded_param", None)
            if unsharded is not None and unsharded.grad is not None:
                grads += unsharded.grad.untyped_storage().nbytes()
    return params, grads


def run_llama(layer_reshard: bool, root_reshard: bool | None) -> dict:
    model = llama()
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, reshard_after_forward=layer_reshard, mp_policy=mp_policy)
    fully_shard(model, reshard_after_forward=root_reshard, mp_policy=mp_policy)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    groups = _groups(model)
    peak = {"total": 0, "params": 0, "grads": 0}

    def sample(tensor: torch.Tensor) -> torch.Tensor:
        p, g = _unsharded_bytes(groups)
        if p + g > peak["total"]:
            peak.update(total=p + g, params=p, grads=g)
        return tensor

    tokens = torch.randint(0, LLAMA["vocab_size"], (2, 8))
    with torch.autograd.graph.saved_tensors_hooks(sample, sample):
        loss = model(input_ids=tokens, labels=tokens).loss
        after_forward, _ = _unsharded_bytes(groups)
        loss.backward()
    optimizer.step()
    grad_storages = {}
    for p in params:
        storage = _local(p.grad).untyped_storage()
        grad_storages[storage.data_ptr()] = storage.nbytes()
    return {
        "param_dtypes": sorted({str(_local(p).dtype) for p in params}),
        "weights_bytes": sum(_local(p).untyped_storage().nbytes() for p in params),
        "gradients_bytes": sum(grad_storages.values()),
        "optimizer_bytes": sum(
            _nbytes(_local(v)) for state in optimizer.state.values() for k, v in state.items()
            if k != "step" and torch.is_tensor(v)
        ),
        "unsharded_after_forward_bytes": after_forward,
        "peak_unsharded_bytes": peak["total"],
        "peak_unsharded_params_bytes": peak["params"],
        "peak_unsharded_grads_bytes": peak["grads"],
    }


def run_ddp_buckets(gradient_as_bucket_view: bool) -> dict:
    model = llama()
    ddp = DistributedDataParallel(model, gradient_as_bucket_view=gradient_as_bucket_view)
    tokens = torch.randint(0, LLAMA["vocab_size"], (2, 8))
    ddp(input_ids=tokens, labels=tokens).loss.backward()
    buckets = str(ddp._get_ddp_logging_data()["bucket_sizes"])
    storages = {p.grad.untyped_storage().data_ptr() for p in model.parameters()}
    return {
        "bucket_bytes": sum(int(size) for size in buckets.split(",")),
        "gradients_bytes": sum(_nbytes(p.grad) for p in model.parameters()),
        "gradient_storages": len(storages),
    }


LLAMA_SCENARIOS = {
    # name: (reshard_after_forward of each layer, of the root)
    "llama_reshard_false": (False, False),
    "llama_reshard_true": (True, None),
    "llama_reshard_true_root_true": (True, True),
}


def main() -> None:
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module")  # view outputs: harmless here
    out_dir = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    report = {"rank": rank, "world_size": world_size}
    for name, (make_model, optim_name, reshard) in SCENARIOS.items():
        report[name] = run(make_model, optim_name, reshard)
    for name, (layer_reshard, root_reshard) in LLAMA_SCENARIOS.items():
        report[name] = run_llama(layer_reshard, root_reshard)
    report["llama_config"] = LLAMA
    for view in (False, True):
        report[f"ddp_buckets_view_{str(view).lower()}"] = run_ddp_buckets(view)
    (out_dir / f"rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
