"""Run as a script: rank 0 of N under PyTorch's fake process group, one training step each.

Usage: python step_worker.py OUT_JSON
The fake process group (``torch.testing._internal.distributed.fake_pg``) lets one process
play rank 0 of N: every buffer FSDP2 and DDP allocate is real, collectives are no-ops. The
profiler's allocator events (``profile_memory=True``) give the live bytes over time, from
before the model is built; the report gives, per scenario, the most bytes alive while
``optimizer.step()`` runs and the bytes alive when it starts, with the tensor bytes rank 0
holds after the step (sharded weights' storages, gradients, optimizer states without the
``step`` scalars). Nothing here reads ``vram``: it measures.

Scenarios: a small transformers Llama (every dim 0 a multiple of 4 and 3's padding
negligible) under ``fully_shard`` with a bf16 ``MixedPrecisionPolicy`` and
``torch.optim.AdamW`` in each implementation, DDP under AMP on 1 and 4 ranks, and a
Mixtral with 8 experts at N = 3 (a fused expert tensor per layer, 8 rows on dim 0).
"""

import json
import sys
import warnings

import torch
import torch.distributed as dist
from torch._C._profiler import _EventType
from torch.autograd.profiler import record_function
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel
from torch.testing._internal.distributed.fake_pg import FakeStore

LLAMA = {
    "model_type": "llama",
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 224,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}
MIXTRAL = {
    "model_type": "mixtral",
    "vocab_size": 96,
    "hidden_size": 32,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "tie_word_embeddings": False,
}
IMPLS = {"foreach": {"foreach": True}, "fused": {"fused": True}, "forloop": {"foreach": False}}
# name: (config, world_size, "fsdp2" reshard_after_forward True/False or "ddp", AdamW implementation)
SCENARIOS = {
    "fsdp2_reshard_foreach": (LLAMA, 4, True, "foreach"),
    "fsdp2_reshard_fused": (LLAMA, 4, True, "fused"),
    "fsdp2_reshard_forloop": (LLAMA, 4, True, "forloop"),
    "fsdp2_keep_foreach": (LLAMA, 4, False, "foreach"),
    "ddp1_foreach": (LLAMA, 1, "ddp", "foreach"),
    "ddp4_foreach": (LLAMA, 4, "ddp", "foreach"),
    "ddp4_fused": (LLAMA, 4, "ddp", "fused"),
    "mixtral3_foreach": (MIXTRAL, 3, True, "foreach"),
}


def _build(config: dict):
    import transformers

    cfg = transformers.AutoConfig.for_model(**config)
    cfg._attn_implementation = "sdpa"
    return transformers.AutoModelForCausalLM.from_config(cfg)


def _no_op_allreduce(state, bucket) -> torch.futures.Future[torch.Tensor]:
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t


def _live_bytes(prof, window_name: str) -> tuple[int, int]:
    """(live bytes when the window starts, most live bytes inside it) from allocator events."""
    events, window = [], []

    def walk(nodes):
        for node in nodes:
            if node.tag == _EventType.Allocation:
                events.append((node.start_time_ns, node.extra_fields.alloc_size))
            if node.name == window_name:
                window.append((node.start_time_ns, node.end_time_ns))
            walk(node.children)

    walk(prof.profiler.kineto_results.experimental_event_tree())
    ((start, end),) = window
    live, peak = 0, 0
    before: int | None = None
    for time, size in sorted(events):
        if time >= start and before is None:
            before = live
        live += size
        if start <= time <= end:
            peak = max(peak, live)
    assert before is not None, f"no allocation after {window_name!r} started"
    return before, peak


def run(config: dict, world_size: int, mode, impl: str) -> dict:
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        torch.manual_seed(0)
        tokens = torch.randint(0, config["vocab_size"], (1, 32))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
            model = _build(config)
            params = sum(p.numel() for p in model.parameters())
            if mode == "ddp":
                wrapped = model
                if world_size > 1:
                    wrapped = DistributedDataParallel(model)
                    wrapped.register_comm_hook(None, _no_op_allreduce)  # the fake group's own gives None
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, **IMPLS[impl])
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = wrapped(input_ids=tokens, labels=tokens).loss
            else:
                policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
                for layer in model.model.layers:
                    fully_shard(layer, reshard_after_forward=mode, mp_policy=policy)
                fully_shard(model, mp_policy=policy)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, **IMPLS[impl])
                loss = model(input_ids=tokens, labels=tokens).loss
            loss.backward()
            del loss
            with record_function("optimizer_step"):
                optimizer.step()
        before, peak = _live_bytes(prof, "optimizer_step")
        local = [_local(p) for p in model.parameters()]
        grads = {}
        for p in model.parameters():
            storage = _local(p.grad).untyped_storage()
            grads[storage.data_ptr()] = storage.nbytes()
        return {
            "params": params,
            "before_step_bytes": before,
            "step_peak_bytes": peak,
            "weights_bytes": sum(t.untyped_storage().nbytes() for t in local),
            "gradients_bytes": sum(grads.values()),
            "optimizer_bytes": sum(
                _local(v).numel() * _local(v).element_size()
                for state in optimizer.state.values()
                for k, v in state.items()
                if k != "step" and torch.is_tensor(v)
            ),
        }
    finally:
        dist.destroy_process_group()


def main() -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    report = {"configs": {"llama": LLAMA, "mixtral": MIXTRAL}}
    for name, (config, world_size, mode, impl) in SCENARIOS.items():
        report[name] = run(config, world_size, mode, impl)
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(report, out)


if __name__ == "__main__":
    main()
