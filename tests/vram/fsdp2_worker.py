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
``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` and AdamW; the ``*_vocab`` and
``*_one_layer`` variants change the vocabulary or the depth, so that each moment of backward
that can hold the most is the largest in one of them. Besides the bytes above they report
FSDP2's own buffers at their peak: sampled every time autograd saves or unpacks a tensor
(``saved_tensors_hooks``, inside every op of forward and backward) and inside every
reduce-scatter, right after the gradients are copied into its input
(``_fsdp_collectives.foreach_reduce_scatter_copy_in``), as the bytes of (a) each FSDP
parameter's unsharded all-gather output, (b) a group's pending (prefetched) all-gather
buffer and the one forward keeps for overlap (``comm_ctx.all_gather_state``), (c) the
unsharded gradients still held before their reduce-scatter, (d) the fp32 reduce-scatter
inputs FSDP2 keeps until the next group's reduce-scatter (``comm_ctx.reduce_scatter_states``)
and (e) inside a reduce-scatter, its input and the gradients being copied into it. These read
FSDP2's internals (``_fsdp_param_group``, ``_fsdp_collectives``, ``all_gather_outputs``,
``_all_gather_result``, ``comm_ctx``): PyTorch 2.13 offers no public counter on CPU.
``ddp_buckets`` reports DDP's gradient buckets (``_get_ddp_logging_data()['bucket_sizes']``)
and whether the gradients share their storage, with and without ``gradient_as_bucket_view``.
``accumulation`` counts the collectives of two accumulated micro-batches and of the step under
FSDP2 and DDP (``run_accumulation``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp._fully_shard import _fsdp_collectives
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel

# P = 776,064: 2 x 1,588 x 128 (embedding, lm_head) + 128 (norm) + 3 x 123,136 per layer.
LLAMA = {
    "model_type": "llama",
    "vocab_size": 1588,
    "hidden_size": 128,
    "intermediate_size": 192,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}


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


def llama(config: dict = LLAMA) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = {k: v for k, v in config.items() if k != "model_type"}
    return LlamaForCausalLM(LlamaConfig(**cfg, attn_implementation="sdpa"))


def _groups(model: nn.Module) -> list:
    return [m._get_fsdp_state()._fsdp_param_group for m in model.modules() if isinstance(m, FSDPModule)]


def _storage(t: torch.Tensor | None) -> int:
    return 0 if t is None else t.untyped_storage().nbytes()


def _fsdp_buffers(groups: list) -> dict[str, int]:
    """Bytes of FSDP2's buffers now: unsharded parameters (with pending and kept all-gather
    buffers), unsharded gradients, kept reduce-scatter inputs (see the module docstring)."""
    params = grads = reduce_scatter = 0
    for group in groups:
        params += _storage(group._all_gather_result.all_gather_output) if group._all_gather_result else 0
        for fsdp_param in group.fsdp_params:
            params += sum(_storage(t) for t in fsdp_param.all_gather_outputs)
            unsharded = getattr(fsdp_param, "_unsharded_param", None)
            if unsharded is not None:
                grads += _storage(unsharded.grad)
    comm_ctx = groups[0].comm_ctx  # one context for all groups once the root is initialised
    kept = getattr(comm_ctx, "all_gather_state", None)
    params += _storage(kept.all_gather_result.all_gather_output) if kept else 0
    reduce_scatter += sum(
        _storage(state.reduce_scatter_input) for state in getattr(comm_ctx, "reduce_scatter_states", [])
    )
    return {"params": params, "grads": grads, "reduce_scatter": reduce_scatter}


@contextmanager
def fsdp_buffer_peak(groups: list, peak: dict):
    """While inside, FSDP2's buffers of ``groups`` (``_fsdp_buffers``) are sampled at every tensor
    autograd saves and right after each reduce-scatter's copy-in; ``peak`` keeps the largest
    total, its parts and the bytes in flight."""

    def sample(in_flight: int = 0) -> None:
        now = _fsdp_buffers(groups)
        total = sum(now.values()) + in_flight
        if total > peak["total"]:
            peak.update(now, total=total, in_flight=in_flight)

    def hook(tensor: torch.Tensor) -> torch.Tensor:
        sample()
        return tensor

    copy_in = _fsdp_collectives.foreach_reduce_scatter_copy_in

    def copy_in_and_sample(unsharded_grads, reduce_scatter_input, world_size):
        copy_in(unsharded_grads, reduce_scatter_input, world_size)
        # the gradients were taken off their parameters: only this list holds them now
        sample(_storage(reduce_scatter_input) + sum(_storage(g) for g in unsharded_grads))

    _fsdp_collectives.foreach_reduce_scatter_copy_in = copy_in_and_sample
    try:
        with torch.autograd.graph.saved_tensors_hooks(hook, hook):
            yield
    finally:
        _fsdp_collectives.foreach_reduce_scatter_copy_in = copy_in


def model_sizes(model: nn.Module) -> dict[str, int]:
    """Elements counted on the model itself: P, one block, lm_head + final norm, the root."""
    numel = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    sizes = {
        "params": numel(model),
        "block": numel(model.model.layers[0]),
        "output": numel(model.lm_head) + numel(model.model.norm),
    }
    sizes["root"] = sizes["params"] - len(model.model.layers) * sizes["block"]
    return sizes


def run_llama(layer_reshard: bool, root_reshard: bool | None, **overrides) -> dict:
    config = {**LLAMA, **overrides}
    model = llama(config)
    sizes = model_sizes(model)
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, reshard_after_forward=layer_reshard, mp_policy=mp_policy)
    fully_shard(model, reshard_after_forward=root_reshard, mp_policy=mp_policy)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    groups = _groups(model)
    peak = {"total": 0}
    tokens = torch.randint(0, config["vocab_size"], (2, 8))
    with fsdp_buffer_peak(groups, peak):
        loss = model(input_ids=tokens, labels=tokens).loss
        after_forward = _fsdp_buffers(groups)["params"]
        loss.backward()
    optimizer.step()
    grad_storages = {}
    for p in params:
        storage = _local(p.grad).untyped_storage()
        grad_storages[storage.data_ptr()] = storage.nbytes()
    return {
        "config": config,
        "sizes": sizes,  # elements, counted on the model itself: P, one block, lm_head + norm, root
        "param_dtypes": sorted({str(_local(p).dtype) for p in params}),
        "weights_bytes": sum(_local(p).untyped_storage().nbytes() for p in params),
        "gradients_bytes": sum(grad_storages.values()),
        "optimizer_bytes": sum(
            _nbytes(_local(v))
            for state in optimizer.state.values()
            for k, v in state.items()
            if k != "step" and torch.is_tensor(v)
        ),
        "unsharded_after_forward_bytes": after_forward,
        "peak_fsdp_buffers_bytes": peak["total"],
        "peak_parts": {k: v for k, v in peak.items() if k != "total"},
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


# Which moment of backward holds the most (vram.fsdp2.working_moments): a block's backward
# with the previous block's reduce-scatter input kept (LLAMA: 3 layers; 2 wide layers), the
# root's reduce-scatter (a vocabulary much larger than the layers), the one block's own
# reduce-scatter (one wide layer).
WIDE_VOCAB = {"vocab_size": 4096, "num_hidden_layers": 2}
ONE_LAYER = {"vocab_size": 64, "intermediate_size": 1024, "num_hidden_layers": 1}
TWO_LAYERS = {**ONE_LAYER, "num_hidden_layers": 2}
LLAMA_SCENARIOS = {
    # name: (reshard_after_forward of each layer, of the root, config overrides)
    "llama_reshard_false": (False, False, {}),
    "llama_reshard_true": (True, None, {}),
    "llama_reshard_true_root_true": (True, True, {}),
    "llama_reshard_true_wide_vocab": (True, None, WIDE_VOCAB),
    "llama_reshard_false_wide_vocab": (False, False, WIDE_VOCAB),
    "llama_reshard_true_one_layer": (True, None, ONE_LAYER),
    "llama_reshard_false_one_layer": (False, False, ONE_LAYER),
    "llama_reshard_true_two_layers": (True, None, TWO_LAYERS),
}


def run_accumulation(micro_batches: int = 2) -> dict:
    """Gradient accumulation as PyTorch runs it by default: ``micro_batches`` forward and backward
    passes, then one ``optimizer.step()``. FSDP2 (the small Llama, ``reshard_after_forward=True``,
    bf16 MixedPrecisionPolicy) syncs every micro-batch; DDP runs all but the last under
    ``no_sync()``. Counted per micro-batch and in the step: FSDP2's all-gathers (one
    ``_get_param_all_gather_inputs`` each) and reduce-scatters (one
    ``foreach_reduce_scatter_copy_in`` each), DDP's all-reduced buckets (a comm hook that counts
    and all-reduces as DDP does by default); per micro-batch FSDP2's buffers at their peak and
    the gradients' bytes after it."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    counts = {"all_gathers": 0, "reduce_scatters": 0, "buckets": 0}
    gather_inputs, copy_in = (
        _fsdp_collectives._get_param_all_gather_inputs,
        _fsdp_collectives.foreach_reduce_scatter_copy_in,
    )

    def counted(name, function):
        def call(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)

        return call

    def counted_hook(state, bucket):
        counts["buckets"] += 1
        return allreduce_hook(state, bucket)

    def taken() -> dict:
        now = dict(counts)
        counts.update(dict.fromkeys(counts, 0))
        return now

    _fsdp_collectives._get_param_all_gather_inputs = counted("all_gathers", gather_inputs)
    try:
        model = llama()
        mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, reshard_after_forward=True, mp_policy=mp_policy)
        fully_shard(model, mp_policy=mp_policy)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        groups = _groups(model)
        fsdp2: dict[str, Any] = {"micro_batches": []}
        for _ in range(micro_batches):
            peak = {"total": 0}
            tokens = torch.randint(0, LLAMA["vocab_size"], (2, 8))
            with fsdp_buffer_peak(groups, peak):
                # fsdp_buffer_peak wraps the reduce-scatter copy-in: count inside its wrapper
                sampled = _fsdp_collectives.foreach_reduce_scatter_copy_in
                _fsdp_collectives.foreach_reduce_scatter_copy_in = counted("reduce_scatters", sampled)
                model(input_ids=tokens, labels=tokens).loss.backward()
                _fsdp_collectives.foreach_reduce_scatter_copy_in = sampled
            grads = {
                _local(p.grad).untyped_storage().data_ptr(): _local(p.grad).untyped_storage().nbytes()
                for p in model.parameters()
            }
            fsdp2["micro_batches"].append(
                {**taken(), "peak_fsdp_buffers_bytes": peak["total"], "gradients_bytes": sum(grads.values())}
            )
        optimizer.step()
        fsdp2["step"] = taken()
    finally:
        _fsdp_collectives._get_param_all_gather_inputs = gather_inputs
        _fsdp_collectives.foreach_reduce_scatter_copy_in = copy_in
    model = llama()
    ddp = DistributedDataParallel(model)
    ddp.register_comm_hook(None, counted_hook)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ddp_report: dict[str, Any] = {"micro_batches": []}
    for index in range(micro_batches):
        tokens = torch.randint(0, LLAMA["vocab_size"], (2, 8))
        with ddp.no_sync() if index < micro_batches - 1 else contextlib.nullcontext():
            ddp(input_ids=tokens, labels=tokens).loss.backward()
        storages = {p.grad.untyped_storage().data_ptr(): p.grad.untyped_storage().nbytes() for p in model.parameters()}
        ddp_report["micro_batches"].append({**taken(), "gradients_bytes": sum(storages.values())})
    optimizer.step()
    ddp_report["step"] = taken()
    return {"fsdp2": fsdp2, "ddp": ddp_report, "layers": LLAMA["num_hidden_layers"]}


def main() -> None:
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module")  # view outputs: harmless here
    out_dir = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    report = {"rank": rank, "world_size": world_size}
    for name, (make_model, optim_name, reshard) in SCENARIOS.items():
        report[name] = run(make_model, optim_name, reshard)
    for name, (layer_reshard, root_reshard, overrides) in LLAMA_SCENARIOS.items():
        report[name] = run_llama(layer_reshard, root_reshard, **overrides)
    report["llama_config"] = LLAMA
    for view in (False, True):
        report[f"ddp_buckets_view_{str(view).lower()}"] = run_ddp_buckets(view)
    report["accumulation"] = run_accumulation()
    (out_dir / f"rank{rank}.json").write_text(json.dumps(report))
    # What FSDP2/DeepSpeed built holds the gloo group; freed at interpreter exit, its threads
    # abort the process now and then (PyTorch 2.13, see pytorch/pytorch#179291): free it now.
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
