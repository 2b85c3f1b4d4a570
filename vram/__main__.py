"""Command line: ``python -m vram params|estimate|serve|lora ...``.

Bad input exits with status 2 and ONE line on stderr (``vram: error: ...``), never a
traceback. ``--json`` prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn, Sequence

from .dtypes import DTYPE_BITS, WEIGHT_DTYPES
from .lora import ALL_LINEAR, BASE_DTYPES, lora_memory_for_config
from .models import count_params, load_model_config
from .serving import serving_memory
from .states import OPTIMIZERS, bytes_per_param
from .training import training_memory_per_gpu
from .units import bytes_to_gb, bytes_to_gib, parse_params

EXIT_BAD_INPUT = 2


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (no usage block) and exits 2."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]  # "vram estimate" -> "estimate"
        _fail(f"{command}: {message}" if command else message)


def _fail(message: str) -> NoReturn:
    print(f"vram: error: {' '.join(str(message).split())}", file=sys.stderr)
    raise SystemExit(EXIT_BAD_INPUT)


def _size(n_bytes: int) -> str:
    """'32.00 GB (29.80 GiB)': both units, always labelled."""
    return f"{bytes_to_gb(n_bytes):.2f} GB ({bytes_to_gib(n_bytes):.2f} GiB)"


def _rows(rows: Sequence[tuple[str, int]]) -> list[str]:
    width = max(len(label) for label, _ in rows)
    return [f"  {label:<{width}}  {bytes_to_gb(b):10.2f} GB  {bytes_to_gib(b):10.2f} GiB" for label, b in rows]


def _emit(args: argparse.Namespace, data: dict, lines: list[str]) -> None:
    print(json.dumps(data, indent=2) if args.json else "\n".join(lines))


def _cmd_params(args: argparse.Namespace) -> None:
    count = count_params(load_model_config(args.config))
    lines = [f"params: {count.total:,}"]
    if count.active != count.total:
        lines.append(f"active params per token: {count.active:,}")
    _emit(args, {"params": count.total, "active_params": count.active}, lines)


def _cmd_estimate(args: argparse.Namespace) -> None:
    data: dict = {}
    if args.config is not None:
        count = count_params(load_model_config(args.config))
        params = count.total
        data["active_params"] = count.active
    else:
        params = parse_params(args.params)
    mem = training_memory_per_gpu(
        params, args.world_size, args.zero_stage, args.optimizer, args.offload_optimizer, args.gpus_per_machine
    )
    bpp = bytes_per_param(args.optimizer)
    data = {
        "params": params,
        **data,
        "world_size": args.world_size,
        "zero_stage": args.zero_stage,
        "optimizer": args.optimizer,
        "offload_optimizer": args.offload_optimizer,
        "weights_bytes": mem.weights_bytes,
        "gradients_bytes": mem.gradients_bytes,
        "optimizer_bytes": mem.optimizer_bytes,
        "per_gpu_bytes": mem.per_gpu_bytes,
        "per_gpu_gb": bytes_to_gb(mem.per_gpu_bytes),
        "per_gpu_gib": bytes_to_gib(mem.per_gpu_bytes),
        "host_optimizer_bytes_per_machine": mem.host_optimizer_bytes_per_machine,
    }
    lines = [f"params: {params:,}"]
    if data.get("active_params", params) != params:
        lines.append(f"active params per token: {data['active_params']:,} (all experts are held in memory)")
    lines += [
        f"ZeRO stage {args.zero_stage} on {args.world_size} GPU(s), optimizer {args.optimizer} "
        f"({bpp.weights} + {bpp.gradients} + {bpp.optimizer} bytes per parameter)",
        "model states per GPU (GB = 10^9 bytes, GiB = 2^30 bytes):",
        *_rows([
            ("weights", mem.weights_bytes),
            ("gradients", mem.gradients_bytes),
            ("optimizer", mem.optimizer_bytes),
            ("total", mem.per_gpu_bytes),
        ]),
    ]
    if args.offload_optimizer:
        lines.append(f"host RAM per machine for the offloaded optimizer states: {_size(mem.host_optimizer_bytes_per_machine)}")
    _emit(args, data, lines)


def _cmd_serve(args: argparse.Namespace) -> None:
    mem = serving_memory(load_model_config(args.config), args.weight_dtype, args.context, args.batch, args.kv_dtype)
    data = {
        "params": mem.params,
        "weight_dtype": args.weight_dtype,
        "kv_dtype": args.kv_dtype,
        "context_length": args.context,
        "batch": args.batch,
        "weights_bytes": mem.weights_bytes,
        "kv_cache_bytes": mem.kv_cache_bytes,
        "total_bytes": mem.total_bytes,
    }
    lines = [
        f"params: {mem.params:,}; weights in {args.weight_dtype}, KV cache in {args.kv_dtype}, "
        f"{args.batch} x {args.context:,} tokens (GB = 10^9 bytes, GiB = 2^30 bytes):",
        *_rows([("weights", mem.weights_bytes), ("KV cache", mem.kv_cache_bytes), ("total", mem.total_bytes)]),
    ]
    _emit(args, data, lines)


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
        f"adapter params: {mem.adapter_params:,} (rank {args.rank}; {targets if isinstance(targets, str) else ', '.join(targets)}); "
        f"base in {args.base_dtype} (GB = 10^9 bytes, GiB = 2^30 bytes):",
        *_rows([
            ("base weights", mem.base_weights_bytes),
            ("adapter weights", mem.adapter_weights_bytes),
            ("adapter gradients", mem.adapter_gradients_bytes),
            ("adapter optimizer", mem.adapter_optimizer_bytes),
            ("total", mem.total_bytes),
        ]),
    ]
    _emit(args, data, lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m vram`` argument parser (one-line errors, exit 2)."""
    parser = _OneLineParser(prog="vram", description="GPU memory calculator for multi-GPU training and serving.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{params,estimate,serve,lora}")
    optimizers = sorted(OPTIMIZERS)

    p = sub.add_parser("params", help="parameter count of a Hugging Face config.json")
    p.add_argument("config", help="path to config.json")
    p.set_defaults(func=_cmd_params)

    e = sub.add_parser("estimate", help="model states per GPU for training")
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--params", help="parameter count: 8e9, 8B, 350M")
    src.add_argument("--config", help="path to config.json")
    e.add_argument("--world-size", type=int, required=True, help="data-parallel GPUs (>= 1)")
    e.add_argument("--zero-stage", type=int, required=True, help="ZeRO stage 0-3 (FSDP: FULL_SHARD = 3)")
    e.add_argument("--optimizer", default="adamw", choices=optimizers, help="default: adamw (16 B/param)")
    e.add_argument("--offload-optimizer", action="store_true", help="optimizer states in host RAM")
    e.add_argument("--gpus-per-machine", type=int, help="GPUs sharing one host's RAM (default: all)")
    e.set_defaults(func=_cmd_estimate)

    s = sub.add_parser("serve", help="weights plus KV cache for serving")
    s.add_argument("config", help="path to config.json")
    s.add_argument("--context", type=int, required=True, help="tokens per sequence")
    s.add_argument("--batch", type=int, default=1, help="sequences (default 1)")
    s.add_argument("--weight-dtype", default="bf16", choices=WEIGHT_DTYPES)
    s.add_argument("--kv-dtype", default="bf16", choices=tuple(DTYPE_BITS))
    s.set_defaults(func=_cmd_serve)

    lo = sub.add_parser("lora", help="LoRA / QLoRA memory on one GPU")
    lo.add_argument("config", help="path to config.json")
    lo.add_argument("--rank", type=int, required=True, help="adapter rank")
    lo.add_argument("--targets", default=ALL_LINEAR,
                    help="comma-separated nn.Linear names, or all-linear (default: PEFT's every nn.Linear but lm_head)")
    lo.add_argument("--base-dtype", default="bf16", choices=BASE_DTYPES, help="nf4 = QLoRA")
    lo.add_argument("--optimizer", default="adamw-fp32", choices=optimizers)
    lo.set_defaults(func=_cmd_lora)

    for command in (p, e, s, lo):
        command.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns 0, or exits 2 with one line on stderr for bad input."""
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except ValueError as exc:  # includes ConfigError: bad numbers, files, keys
        _fail(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
