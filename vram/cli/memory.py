"""``python -m vram params|estimate|serve|lora``: a model's parameters and its memory per GPU.

``estimate --framework zero-paper|deepspeed|fsdp2`` (``vram.frameworks``): the JSON has
``framework``, ``params``, ``per_gpu_bytes`` (= ``weights_bytes + gradients_bytes +
optimizer_bytes + working_bytes + activation_bytes``), ``host_bytes`` (RAM per machine that
offload pins), ``terms`` (each buffer: part, bytes, formula, what) and ``notes``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..activations import ATTENTION, MAX_MICRO_BATCH, MAX_SEQ_LEN, RECOMPUTE, ActivationMemory, activation_memory
from ..breakdown import PARTS, SYMBOLS, ModelShape, model_shape
from ..dtypes import DTYPE_BITS, WEIGHT_DTYPES
from ..frameworks import FRAMEWORKS, STAGE_NAMES, framework_memory
from ..lora import ALL_LINEAR, BASE_DTYPES, lora_memory_for_config
from ..models import ModelConfig, count_params, load_model_config
from ..optimizer_step import DEFAULT_IMPL, OPTIMIZER_IMPLS
from ..serving import MAX_BATCHED_TOKENS, SERVERS, VLLM_MAX_NUM_BATCHED_TOKENS, serving_memory
from ..states import OPTIMIZERS
from ..units import bytes_to_gb, bytes_to_gib, parse_params, quote_text
from .common import emit, fail, param_count, size_rows, size_text, whole

MAX_WORLD_SIZE = 2**20  # more data-parallel GPUs than any cluster has
MAX_GPUS_PER_MACHINE = 2**10
MAX_LORA_RANK = 2**16  # wider than any hidden size in use
SYMBOL_NAMES = {
    "P": "params",
    "P/N": "params / GPUs",
    "PM/N": "params x GPUs per machine / GPUs",
    "L": "params of the largest module",
    "B": "params of one decoder layer",
    "R": "params of the root module (embedding, final norm, lm_head)",
    "O": "params of final norm + lm_head",
    "W": "params of every nn.Linear",
    "T": "elements of the largest parameter tensor one GPU updates",
}
SERVER_NAMES = {
    "vllm": "KV cache as vLLM reserves it (sliding windows plus a prefill chunk)",
    "transformers": "KV cache as transformers' DynamicCache holds it right after the prefill",
    "transformers-decoding": "KV cache as transformers' DynamicCache holds it while generating",
}


def _cmd_params(args: argparse.Namespace) -> None:
    count = count_params(load_model_config(args.config))
    lines = [f"params: {count.total:,}"]
    if count.active != count.total:
        lines.append(f"active params per token: {count.active:,}")
    emit(args, {"params": count.total, "active_params": count.active}, lines)


def _stage(text: str) -> int:
    if text.strip() not in ("0", "1", "2", "3"):
        raise argparse.ArgumentTypeError(f"zero_stage must be 0, 1, 2 or 3, got {quote_text(text)}")
    return int(text)


def _model(args: argparse.Namespace) -> tuple[ModelShape, ModelConfig | None, int]:
    """The model's sizes from --config or --params (and --largest-layer-params); active params."""
    if args.config is not None:
        if args.largest_layer_params is not None:
            fail("estimate: --largest-layer-params goes with --params; --config already gives the largest layer")
        config = load_model_config(args.config)
        return model_shape(config), config, count_params(config).active
    params = parse_params(args.params)
    return ModelShape(params, largest_layer_params=args.largest_layer_params), None, params


def _check_needs(args: argparse.Namespace, config: ModelConfig | None) -> None:
    """One line for each flag that needs another (before any arithmetic)."""
    if (args.framework, args.zero_stage) == ("fsdp2", 1):  # before asking for --config: no config helps
        fail(
            "estimate: FSDP2 has no ZeRO-1: fully_shard shards gradients and optimizer states together; "
            "use --zero-stage 2 (reshard_after_forward=False), 3 (True) or 0 (DDP)"
        )
    if config is None:
        if args.framework == "fsdp2":
            fail(
                "estimate: --framework fsdp2 needs --config: fully_shard gathers one decoder layer "
                "and the root module, whose sizes come from the config"
            )
        if args.framework == "deepspeed" and args.zero_stage == 3 and args.largest_layer_params is None:
            fail(
                "estimate: --framework deepspeed --zero-stage 3 needs --config or --largest-layer-params "
                "(DeepSpeed adds 4 B per parameter of the largest layer)"
            )
        if args.seq_len is not None:
            fail("estimate: --seq-len needs --config: activations depend on the layer's shapes")
    if args.largest_layer_params is not None and (args.framework, args.zero_stage) != ("deepspeed", 3):
        fail("estimate: --largest-layer-params applies to --framework deepspeed --zero-stage 3 only")
    if args.seq_len is None:
        given = [
            flag
            for flag, value in (
                ("--micro-batch", args.micro_batch),
                ("--attention", args.attention),
                ("--recompute", args.recompute),
            )
            if value is not None
        ]
        if given:
            fail(f"estimate: {given[0]} needs --seq-len (tokens per sequence)")


def _activations(args: argparse.Namespace, config: ModelConfig | None) -> ActivationMemory | None:
    if args.seq_len is None or config is None:
        return None
    return activation_memory(
        config, args.seq_len, args.micro_batch or 1, args.attention or "sdpa", args.recompute or "none"
    )


def _cmd_estimate(args: argparse.Namespace) -> None:
    shape, config, active = _model(args)
    _check_needs(args, config)
    mem = framework_memory(
        args.framework,
        shape,
        args.world_size,
        args.zero_stage,
        args.optimizer,
        args.offload_optimizer,
        args.offload_params,
        args.gpus_per_machine,
        optimizer_impl=args.optimizer_impl,
    )
    act = _activations(args, config)
    activation = act.peak_bytes if act else 0  # the loss's backward included
    if activation and mem.backward_bytes + activation >= mem.per_gpu_bytes:
        # backward with its activations holds the most: count its working buffers (a fused
        # step allocates nothing, so its terms are backward's: vram/fsdp2.py, _with_step)
        mem = (
            framework_memory(
                args.framework,
                shape,
                args.world_size,
                args.zero_stage,
                args.optimizer,
                args.offload_optimizer,
                args.offload_params,
                args.gpus_per_machine,
                optimizer_impl="fused",
            )
            if mem.backward_working_bytes is not None
            else mem
        )
    elif activation:
        activation = 0  # the optimizer step holds the most, and the activations are gone by then
    stage_name = STAGE_NAMES[args.framework][args.zero_stage]
    if args.framework == "fsdp2" and args.optimizer == "adamw-bf16":  # a bf16 model: no autocast
        stage_name = "DDP (all in bf16)"
    data: dict[str, Any] = {
        "framework": args.framework,
        "stage_name": stage_name,
        "params": shape.params,
        "active_params": active,
        "world_size": args.world_size,
        "zero_stage": args.zero_stage,
        "optimizer": args.optimizer,
        "optimizer_impl": args.optimizer_impl,
        "offload_optimizer": args.offload_optimizer,
        "offload_params": args.offload_params,
        "weights_bytes": mem.weights_bytes,
        "gradients_bytes": mem.gradients_bytes,
        "optimizer_bytes": mem.optimizer_bytes,
        "working_bytes": mem.working_bytes,
        "activation_bytes": activation,
        "model_states_bytes": mem.model_states_bytes,
        "per_gpu_bytes": mem.per_gpu_bytes + activation,
        "per_gpu_gb": bytes_to_gb(mem.per_gpu_bytes + activation),
        "per_gpu_gib": bytes_to_gib(mem.per_gpu_bytes + activation),
        "host_bytes": mem.host_bytes,
        "terms": [{"part": t.part, "bytes": t.bytes, "formula": t.formula, "what": t.what} for t in mem.terms],
        "notes": list(mem.notes),
    }
    if shape.largest_layer_params is not None:
        data["largest_layer_params"] = shape.largest_layer_params
    if act is not None:
        data["activations"] = {
            "seq_len": args.seq_len,
            "micro_batch": args.micro_batch or 1,
            "attention": act.attention,
            "recompute": act.recompute,
            "per_layer_bytes": act.per_layer_bytes,
            "layers_bytes": act.layers_bytes,
            "head_bytes": act.head_bytes,
            "logits_bytes": act.logits_bytes,
            "total_bytes": act.total_bytes,
            "loss_backward_bytes": act.loss_backward_bytes,
            "attention_backward_bytes": act.attention_backward_bytes,
            "peak_bytes": act.peak_bytes,
            "counted": bool(activation),  # False: the optimizer step, without activations, holds more
        }
    lines = [f"params: {shape.params:,}"]
    if active != shape.params:
        lines.append(f"active params per token: {active:,} (all experts are held in memory)")
    lines.append(f"{args.framework}: {stage_name} on {args.world_size} GPU(s), optimizer {args.optimizer}")
    rows = [("weights", mem.weights_bytes), ("gradients", mem.gradients_bytes), ("optimizer", mem.optimizer_bytes)]
    if args.framework != "zero-paper":
        rows.append(("working", mem.working_bytes))
    if act is not None:
        rows.append(
            (
                (
                    f"activations ({act.attention}, recompute {act.recompute}, "
                    f"{args.micro_batch or 1} x {args.seq_len:,} tokens)"
                ),
                activation,
            )
        )
    rows.append(("total", mem.per_gpu_bytes + activation))
    used = {symbol for t in mem.terms for _, symbol in t.coefficients}
    legend = ", ".join(f"{s} = {SYMBOL_NAMES[s]}" for s in SYMBOLS if s in used)
    lines += ["per GPU (GB = 10^9 bytes, GiB = 2^30 bytes):", *size_rows(rows), f"where it comes from ({legend}):"]
    width = max(len(t.formula) for t in mem.terms)
    ordered = sorted(mem.terms, key=lambda t: PARTS.index(t.part))
    lines += [f"  {t.part:<9}  {t.formula:<{width}}  {bytes_to_gb(t.bytes):10.2f} GB  {t.what}" for t in ordered]
    if mem.host_bytes:
        lines.append(f"host RAM per machine for offload: {size_text(mem.host_bytes)}")
    lines += [f"note: {note}" for note in mem.notes]
    emit(args, data, lines)


def _cmd_serve(args: argparse.Namespace) -> None:
    mem = serving_memory(
        load_model_config(args.config),
        args.weight_dtype,
        args.context,
        args.batch,
        args.kv_dtype,
        server=args.server,
        max_num_batched_tokens=args.max_num_batched_tokens,
    )
    data = {
        "params": mem.params,
        "server": args.server,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "weight_dtype": args.weight_dtype,
        "kv_dtype": args.kv_dtype,
        "context_length": args.context,
        "batch": args.batch,
        "weights_bytes": mem.weights_bytes,
        "kv_cache_bytes": mem.kv_cache_bytes,
        "total_bytes": mem.total_bytes,
    }
    lines = [
        (
            f"params: {mem.params:,}; weights in {args.weight_dtype}, KV cache in {args.kv_dtype}, "
            f"{args.batch} x {args.context:,} tokens, {SERVER_NAMES[args.server]} (GB = 10^9 bytes, GiB = 2^30 bytes):"
        ),
        *size_rows([("weights", mem.weights_bytes), ("KV cache", mem.kv_cache_bytes), ("total", mem.total_bytes)]),
    ]
    emit(args, data, lines)


def _cmd_lora(args: argparse.Namespace) -> None:
    targets = ALL_LINEAR if args.targets == ALL_LINEAR else tuple(t for t in args.targets.split(",") if t)
    mem = lora_memory_for_config(load_model_config(args.config), args.rank, targets, args.base_dtype, args.optimizer)
    data = {
        "adapter_params": mem.adapter_params,
        "base_dtype": args.base_dtype,
        "base_weights_bytes": mem.base_weights_bytes,
        "adapter_weights_bytes": mem.adapter_weights_bytes,
        "adapter_gradients_bytes": mem.adapter_gradients_bytes,
        "adapter_optimizer_bytes": mem.adapter_optimizer_bytes,
        "total_bytes": mem.total_bytes,
    }
    lines = [
        (
            f"adapter params: {mem.adapter_params:,} (rank {args.rank}; {targets if isinstance(targets, str) else ', '.join(targets)}); "
            f"base in {args.base_dtype} (GB = 10^9 bytes, GiB = 2^30 bytes):"
        ),
        *size_rows(
            [
                ("base weights", mem.base_weights_bytes),
                ("adapter weights", mem.adapter_weights_bytes),
                ("adapter gradients", mem.adapter_gradients_bytes),
                ("adapter optimizer", mem.adapter_optimizer_bytes),
                ("total", mem.total_bytes),
            ]
        ),
    ]
    emit(args, data, lines)


def add_memory_commands(sub: Any) -> list[argparse.ArgumentParser]:
    """Register ``params``, ``estimate``, ``serve`` and ``lora`` on the subparsers ``sub``."""
    optimizers = sorted(OPTIMIZERS)

    p = sub.add_parser("params", help="parameter count of a Hugging Face config.json")
    p.add_argument("config", help="path to config.json")
    p.set_defaults(func=_cmd_params)

    e = sub.add_parser("estimate", help="memory per GPU for training, under a framework")
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--params", help="parameter count: 8e9, 8B, 350M")
    src.add_argument("--config", help="path to config.json")
    e.add_argument(
        "--world-size", type=whole("world_size", 1, MAX_WORLD_SIZE), required=True, help="data-parallel GPUs (>= 1)"
    )
    e.add_argument(
        "--zero-stage",
        type=_stage,
        required=True,
        help="ZeRO stage 0-3; fsdp2: 3 = reshard_after_forward=True, 2 = False, 0 = DDP",
    )
    e.add_argument(
        "--framework",
        default="zero-paper",
        choices=FRAMEWORKS,
        help="zero-paper (default: the ZeRO paper's 2+2+12), deepspeed (the estimators of the "
        "DeepSpeed constraints.txt pins), fsdp2 (fully_shard of the pinned PyTorch, bf16 "
        "MixedPrecisionPolicy)",
    )
    e.add_argument("--optimizer", default="adamw", choices=optimizers, help="default: adamw (16 B/param)")
    e.add_argument(
        "--optimizer-impl",
        default=DEFAULT_IMPL,
        choices=OPTIMIZER_IMPLS,
        help="torch.optim.AdamW's step under fsdp2/DDP: foreach (default: torch.optim.AdamW(params) "
        "on CUDA, as the guide's train.py and train_fsdp2.py build it; 4 B per local parameter "
        "more at the step), fused (fused=True, the Trainer's adamw_torch_fused), forloop",
    )
    e.add_argument("--offload-optimizer", action="store_true", help="optimizer states in host RAM")
    e.add_argument(
        "--offload-params",
        action="store_true",
        help="deepspeed stage 3: offload_param; fsdp2: with --offload-optimizer, CPUOffloadPolicy",
    )
    e.add_argument(
        "--largest-layer-params",
        type=param_count,
        help="deepspeed stage 3 with --params: parameters of the largest module",
    )
    e.add_argument(
        "--gpus-per-machine",
        type=whole("gpus_per_machine", 1, MAX_GPUS_PER_MACHINE),
        help="GPUs sharing one host's RAM (default: all)",
    )
    e.add_argument(
        "--seq-len",
        type=whole("seq_len", 1, MAX_SEQ_LEN),
        help="tokens per sequence: adds activations (needs --config)",
    )
    e.add_argument("--micro-batch", type=whole("micro_batch", 1, MAX_MICRO_BATCH), help="sequences per GPU (default 1)")
    e.add_argument("--attention", choices=ATTENTION, help="sdpa (default) or eager")
    e.add_argument("--recompute", choices=RECOMPUTE, help="none (default), selective or full")
    e.set_defaults(func=_cmd_estimate)

    s = sub.add_parser("serve", help="weights plus KV cache for serving")
    s.add_argument("config", help="path to config.json")
    s.add_argument("--context", type=whole("context", 1, MAX_SEQ_LEN), required=True, help="tokens per sequence")
    s.add_argument("--batch", type=whole("batch", 1, MAX_MICRO_BATCH), default=1, help="sequences (default 1)")
    s.add_argument("--weight-dtype", default="bf16", choices=WEIGHT_DTYPES)
    s.add_argument("--kv-dtype", default="bf16", choices=tuple(DTYPE_BITS))
    s.add_argument(
        "--server",
        default="vllm",
        choices=SERVERS,
        help="whose KV cache: vllm (default: what its KV-cache manager reserves, sliding-window layers "
        "their window plus a prefill chunk), transformers (DynamicCache: every layer holds the whole "
        "prompt right after the prefill) or transformers-decoding (the same cache while generating)",
    )
    s.add_argument(
        "--max-num-batched-tokens",
        type=whole("max_num_batched_tokens", 1, MAX_BATCHED_TOKENS),
        default=VLLM_MAX_NUM_BATCHED_TOKENS,
        help=f"vllm: its prefill chunk (default {VLLM_MAX_NUM_BATCHED_TOKENS:,}, vLLM's; `vllm serve` on "
        "cards of 70 GiB or more but A100s takes 8192)",
    )
    s.set_defaults(func=_cmd_serve)

    lo = sub.add_parser("lora", help="LoRA / QLoRA memory on one GPU")
    lo.add_argument("config", help="path to config.json")
    lo.add_argument("--rank", type=whole("rank", 1, MAX_LORA_RANK), required=True, help="adapter rank")
    lo.add_argument(
        "--targets",
        default=ALL_LINEAR,
        help="comma-separated nn.Linear names, or all-linear (default: PEFT's every nn.Linear but lm_head)",
    )
    lo.add_argument("--base-dtype", default="bf16", choices=BASE_DTYPES, help="nf4 = QLoRA")
    lo.add_argument("--optimizer", default="adamw-fp32", choices=optimizers)
    lo.set_defaults(func=_cmd_lora)

    return [p, e, s, lo]
