"""Command line: ``python -m vram params|estimate|serve|lora|job ...``.

Bad input exits with status 2 and ONE line on stderr (``vram: error: ...``) quoting what
the user typed, never a traceback: numbers are read exactly (no float), a fraction, an
out-of-range or absurd value is refused. ``--json`` prints one JSON object on stdout.

``estimate --framework zero-paper|deepspeed|fsdp2`` (``vram.frameworks``): the JSON has
``framework``, ``params``, ``per_gpu_bytes`` (= ``weights_bytes + gradients_bytes +
optimizer_bytes + working_bytes + activation_bytes``), ``host_bytes`` (RAM per machine that
offload pins), ``terms`` (each buffer: part, bytes, formula, what) and ``notes``.

``job`` answers one "find the GPU" job with ``vram.job.answer_job`` (the function the
site's finder runs, in Python at build time and in the browser under Pyodide); its
``--json`` is ``vram.job.dumps`` of the answer, the same text the page's worker returns.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import NoReturn, Sequence

from .accounting import ACCOUNTINGS
from .activations import ATTENTION, MAX_MICRO_BATCH, MAX_SEQ_LEN, RECOMPUTE, ActivationMemory, activation_memory
from .breakdown import PARTS, SYMBOLS, ModelShape, model_shape
from .catalogue import card_speed, load_catalogue
from .dtypes import DTYPE_BITS, WEIGHT_DTYPES
from .frameworks import FRAMEWORKS, STAGE_NAMES, framework_memory
from .optimizer_step import DEFAULT_IMPL, OPTIMIZER_IMPLS
from .serving import SERVERS
from .job import JOB_FIELDS, KINDS, KV_DTYPES, OFFLOAD, SERVING_WEIGHTS, TRAINING_OPTIMIZERS, answer_job, dumps
from .lora import ALL_LINEAR, BASE_DTYPES, lora_memory_for_config
from .models import ModelConfig, count_params, load_model_config
from .serving import serving_memory
from .states import OPTIMIZERS
from .time_cli import add_time_command
from .units import quote_text, bytes_to_gb, bytes_to_gib, parse_params

EXIT_BAD_INPUT = 2
MAX_WORLD_SIZE = 2**20  # more data-parallel GPUs than any cluster has
MAX_GPUS_PER_MACHINE = 2**10
MAX_LORA_RANK = 2**16  # wider than any hidden size in use
SYMBOL_NAMES = {
    "P": "params", "P/N": "params / GPUs", "PM/N": "params x GPUs per machine / GPUs",
    "L": "params of the largest module", "B": "params of one decoder layer",
    "R": "params of the root module (embedding, final norm, lm_head)", "O": "params of final norm + lm_head",
    "W": "params of every nn.Linear", "T": "elements of the largest parameter tensor one GPU updates",
}


SERVER_NAMES = {"vllm": "KV cache as vLLM holds it (sliding windows capped)",
                "transformers": "KV cache of transformers' DynamicCache right after the prefill (no window cap)"}


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


def _whole(name: str, minimum: int, maximum: int):
    """argparse type: an integer written in ASCII digits, ``minimum..maximum``, else one line
    quoting the user's text (no float, no fraction, no '1e3', no '1_000')."""

    def parse(text: str) -> int:
        stripped = text.strip()
        if not (stripped.isascii() and stripped.isdigit()) or len(stripped) > 20 or not minimum <= int(stripped) <= maximum:
            raise argparse.ArgumentTypeError(
                f"{name} must be an integer from {minimum:,} to {maximum:,}, got {quote_text(text)}"
            )
        return int(stripped)

    return parse


def _stage(text: str) -> int:
    if text.strip() not in ("0", "1", "2", "3"):
        raise argparse.ArgumentTypeError(f"zero_stage must be 0, 1, 2 or 3, got {quote_text(text)}")
    return int(text)


def _count(text: str) -> int:
    try:
        return parse_params(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _model(args: argparse.Namespace) -> tuple[ModelShape, ModelConfig | None, int]:
    """The model's sizes from --config or --params (and --largest-layer-params); active params."""
    if args.config is not None:
        if args.largest_layer_params is not None:
            _fail("estimate: --largest-layer-params goes with --params; --config already gives the largest layer")
        config = load_model_config(args.config)
        return model_shape(config), config, count_params(config).active
    params = parse_params(args.params)
    return ModelShape(params, largest_layer_params=args.largest_layer_params), None, params


def _check_needs(args: argparse.Namespace, config: ModelConfig | None) -> None:
    """One line for each flag that needs another (before any arithmetic)."""
    if (args.framework, args.zero_stage) == ("fsdp2", 1):  # before asking for --config: no config helps
        _fail("estimate: FSDP2 has no ZeRO-1: fully_shard shards gradients and optimizer states together; "
              "use --zero-stage 2 (reshard_after_forward=False), 3 (True) or 0 (DDP)")
    if config is None:
        if args.framework == "fsdp2":
            _fail("estimate: --framework fsdp2 needs --config: fully_shard gathers one decoder layer "
                  "and the root module, whose sizes come from the config")
        if args.framework == "deepspeed" and args.zero_stage == 3 and args.largest_layer_params is None:
            _fail("estimate: --framework deepspeed --zero-stage 3 needs --config or --largest-layer-params "
                  "(DeepSpeed adds 4 B per parameter of the largest layer)")
        if args.seq_len is not None:
            _fail("estimate: --seq-len needs --config: activations depend on the layer's shapes")
    if args.largest_layer_params is not None and (args.framework, args.zero_stage) != ("deepspeed", 3):
        _fail("estimate: --largest-layer-params applies to --framework deepspeed --zero-stage 3 only")
    if args.seq_len is None:
        given = [flag for flag, value in (("--micro-batch", args.micro_batch), ("--attention", args.attention),
                                          ("--recompute", args.recompute)) if value is not None]
        if given:
            _fail(f"estimate: {given[0]} needs --seq-len (tokens per sequence)")


def _activations(args: argparse.Namespace, config: ModelConfig | None) -> ActivationMemory | None:
    if args.seq_len is None or config is None:
        return None
    return activation_memory(config, args.seq_len, args.micro_batch or 1, args.attention or "sdpa",
                             args.recompute or "none")


def _cmd_estimate(args: argparse.Namespace) -> None:
    shape, config, active = _model(args)
    _check_needs(args, config)
    mem = framework_memory(args.framework, shape, args.world_size, args.zero_stage, args.optimizer,
                           args.offload_optimizer, args.offload_params, args.gpus_per_machine,
                           optimizer_impl=args.optimizer_impl)
    act = _activations(args, config)
    activation = act.peak_bytes if act else 0  # the loss's backward included
    if activation and mem.backward_bytes + activation >= mem.per_gpu_bytes:
        # backward with its activations holds the most: count its working buffers (a fused
        # step allocates nothing, so its terms are backward's: vram/fsdp2.py, _with_step)
        mem = framework_memory(args.framework, shape, args.world_size, args.zero_stage, args.optimizer,
                               args.offload_optimizer, args.offload_params, args.gpus_per_machine,
                               optimizer_impl="fused") if mem.backward_working_bytes is not None else mem
    elif activation:
        activation = 0  # the optimizer step holds the most, and the activations are gone by then
    stage_name = STAGE_NAMES[args.framework][args.zero_stage]
    if args.framework == "fsdp2" and args.optimizer == "adamw-bf16":  # a bf16 model: no autocast
        stage_name = "DDP (all in bf16)"
    data: dict = {
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
            "seq_len": args.seq_len, "micro_batch": args.micro_batch or 1, "attention": act.attention,
            "recompute": act.recompute, "per_layer_bytes": act.per_layer_bytes, "layers_bytes": act.layers_bytes,
            "head_bytes": act.head_bytes, "logits_bytes": act.logits_bytes, "total_bytes": act.total_bytes,
            "loss_backward_bytes": act.loss_backward_bytes, "peak_bytes": act.peak_bytes,
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
        rows.append((f"activations ({act.attention}, recompute {act.recompute}, "
                     f"{args.micro_batch or 1} x {args.seq_len:,} tokens)", activation))
    rows.append(("total", mem.per_gpu_bytes + activation))
    used = {symbol for t in mem.terms for _, symbol in t.coefficients}
    legend = ", ".join(f"{s} = {SYMBOL_NAMES[s]}" for s in SYMBOLS if s in used)
    lines += ["per GPU (GB = 10^9 bytes, GiB = 2^30 bytes):", *_rows(rows), f"where it comes from ({legend}):"]
    width = max(len(t.formula) for t in mem.terms)
    ordered = sorted(mem.terms, key=lambda t: PARTS.index(t.part))
    lines += [f"  {t.part:<9}  {t.formula:<{width}}  {bytes_to_gb(t.bytes):10.2f} GB  {t.what}" for t in ordered]
    if mem.host_bytes:
        lines.append(f"host RAM per machine for offload: {_size(mem.host_bytes)}")
    lines += [f"note: {note}" for note in mem.notes]
    _emit(args, data, lines)


def _cmd_serve(args: argparse.Namespace) -> None:
    mem = serving_memory(load_model_config(args.config), args.weight_dtype, args.context, args.batch, args.kv_dtype,
                         server=args.server)
    data = {
        "params": mem.params,
        "server": args.server,
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
        f"{args.batch} x {args.context:,} tokens, {SERVER_NAMES[args.server]} (GB = 10^9 bytes, GiB = 2^30 bytes):",
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


def _integer_text(name: str):
    """argparse type: ASCII digits (any size; ``answer_job`` checks the range and says it)."""

    def parse(text: str) -> int:
        stripped = text.strip()
        if not (stripped.isascii() and stripped.isdigit()) or len(stripped) > 20:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {quote_text(text)}")
        return int(stripped)

    return parse


def _decimal_text(name: str):
    """argparse type: a plain decimal such as 0.9 (no exponent, no nan/inf)."""

    def parse(text: str) -> float:
        stripped = text.strip()
        whole, _, fraction = stripped.partition(".")
        if not stripped.isascii() or not (whole or fraction) or not (whole + fraction).isdigit() or len(stripped) > 20:
            raise argparse.ArgumentTypeError(f"{name} must be a decimal number such as 0.9, got {quote_text(text)}")
        return float(stripped)

    return parse


def _card(text: str) -> dict:
    key, sep, mib = text.partition("=")
    if not sep or not key.strip() or not (mib.strip().isascii() and mib.strip().isdigit()) or len(mib) > 20:
        raise argparse.ArgumentTypeError(f"--gpu must be KEY=MEMORY_MIB (nvidia-smi's total), got {quote_text(text)}")
    return {"key": key.strip(), "memory_mib": int(mib)}


JOB_FLAGS = ("kind", "cards", "framework", "zero_stage", "optimizer", "optimizer_impl", "offload", "seq_len", "micro_batch", "recompute",
             "attention", "rank", "targets", "base_dtype", "weights", "kv_dtype", "context", "concurrent",
             "gpu_memory_utilization", "reserve_mib", "tight_free_fraction", "tokens")


def _machine_price(text: str) -> tuple[str, str]:
    key, sep, price = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--price must be KEY=EUR_PER_HOUR (the machine of --cards such cards), got {quote_text(text)}")
    return key.strip(), price.strip()  # answer_job checks the price and names it


def _machine_ram(text: str) -> tuple[str, int | str]:
    key, sep, ram = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--host-ram must be KEY=GB (the RAM of the machine of --cards such cards), "
                                         f"got {quote_text(text)}")
    ram = ram.strip()
    return key.strip(), int(ram) if ram.isascii() and ram.isdigit() and len(ram) <= 20 else ram  # answer_job checks it


def job_from_args(args: argparse.Namespace) -> dict:
    """The job ``answer_job`` reads, from ``python -m vram job`` flags (unset ones left to its defaults)."""
    job = {name: getattr(args, name) for name in JOB_FLAGS if getattr(args, name) is not None}
    load_model_config(args.config)  # the file's own checks (a regular file, its size, UTF-8), naming it
    with open(args.config, encoding="utf-8") as file:
        job["config"] = file.read()  # read as the page's worker reads it: messages say "config.json"
    cards, _ = load_catalogue()  # the cited speeds of the guide's cards: time and cost of a training run
    job["gpus"] = [card | {"speed": card_speed(cards[card["key"]])} if card["key"] in cards else card
                   for card in args.gpu or []]
    if args.price:
        job["prices"] = dict(args.price)
    if args.host_ram:
        job["host_ram_gb"] = dict(args.host_ram)
    return job


def _ram_verdict(fit: dict) -> str:
    ram = fit.get("host_ram")
    if ram is None:
        return ""
    if ram["holds"] is None:
        return "; its machine's RAM: not given (--host-ram KEY=GB)"
    return f"; its machine's {ram['machine_gb']:,} GB of RAM {'hold' if ram['holds'] else 'do not hold'} the offload"


def _cmd_job(args: argparse.Namespace) -> None:
    answer = answer_job(job_from_args(args))
    if args.json:
        print(dumps(answer))
        return
    lines = [f"params: {answer['params']:,}; {answer['kind']} on {answer['cards']} card(s) "
             "(GB = 10^9 bytes, GiB = 2^30 bytes):",
             *_rows([(part, size) for part, size, _ in answer["parts"]] + [("total", answer["per_gpu_bytes"])])]
    if "accounting" in answer:  # what the bytes assume, by name (vram.accounting)
        lines.append(f"accounting: {answer['accounting']}: {ACCOUNTINGS[answer['accounting']]}")
    if "activations" in answer:
        act = answer["activations"]
        lines.append(f"activations ({act['attention']}, recompute {act['recompute']}, {act['micro_batch']} x "
                     f"{act['seq_len']:,} tokens): {_size(act['bytes'])}; with full recomputation {_size(act['full_bytes'])}")
    else:
        lines.append(f"KV cache per sequence: {_size(answer['kv_per_sequence_bytes'])}")
    if answer["host_bytes"]:
        lines.append(f"host RAM per machine for offload: {_size(answer['host_bytes'])}")
    for fit in answer["fits"]:
        extra = (f", recompute {fit['recompute']}" if "recompute" in fit else f", {fit['max_concurrent']} sequences at most")
        lines.append(f"fits {fit['gpu']}: margin {_size(fit['margin_bytes'])}{extra}, {fit['free_fraction']:.0%} free at the "
                     f"peak{' (tight)' if fit['tight'] else ''}"
                     f"{_ram_verdict(fit)}")
    lines += [f"short {fit['gpu']}: margin {_size(fit['margin_bytes'])} holds the states, not the activations"
              for fit in answer["short"]]
    if "run" in answer:
        run = answer["run"]
        lines.append(f"run of {run['tokens']:,} tokens, ranked by {run['ranked_by']}: {', '.join(run['order'])}")
        for fit in answer["fits"]:
            t = fit["time"]
            cost = f", {t['cost_eur'][0]}-{t['cost_eur'][1]} EUR at {t['price_eur_per_hour']} EUR/h" if t["cost_eur"] else ""
            lines.append(f"  {fit['gpu']}: step {t['step_s'][0]:.3g}-{t['step_s'][1]:.3g} s ({t['bound']}-bound), "
                         f"run {t['run_s'][0] / 3600:.3g}-{t['run_s'][1] / 3600:.3g} h{cost}")
    lines += [f"decoding on {fit['gpu']}: at most {fit['decode']['tokens_per_s_per_sequence_at_most']:,} tokens/s per "
              f"sequence, {fit['decode']['tokens_per_s_at_most']:,} in all (memory-bandwidth roofline, an upper bound)"
              for fit in answer["fits"] if "decode" in fit]
    lines += [f"note: {note}" for note in answer["notes"]]
    _emit(args, answer, lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m vram`` argument parser (one-line errors, exit 2)."""
    parser = _OneLineParser(prog="vram", description="GPU memory calculator for multi-GPU training and serving.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{params,estimate,serve,lora,job}")
    optimizers = sorted(OPTIMIZERS)

    p = sub.add_parser("params", help="parameter count of a Hugging Face config.json")
    p.add_argument("config", help="path to config.json")
    p.set_defaults(func=_cmd_params)

    e = sub.add_parser("estimate", help="memory per GPU for training, under a framework")
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--params", help="parameter count: 8e9, 8B, 350M")
    src.add_argument("--config", help="path to config.json")
    e.add_argument("--world-size", type=_whole("world_size", 1, MAX_WORLD_SIZE), required=True,
                   help="data-parallel GPUs (>= 1)")
    e.add_argument("--zero-stage", type=_stage, required=True,
                   help="ZeRO stage 0-3; fsdp2: 3 = reshard_after_forward=True, 2 = False, 0 = DDP")
    e.add_argument("--framework", default="zero-paper", choices=FRAMEWORKS,
                   help="zero-paper (default: the ZeRO paper's 2+2+12), deepspeed (DeepSpeed 0.19's "
                        "estimators), fsdp2 (PyTorch 2.13 fully_shard, bf16 MixedPrecisionPolicy)")
    e.add_argument("--optimizer", default="adamw", choices=optimizers, help="default: adamw (16 B/param)")
    e.add_argument("--optimizer-impl", default=DEFAULT_IMPL, choices=OPTIMIZER_IMPLS,
                   help="torch.optim.AdamW's step under fsdp2/DDP: foreach (default: torch.optim.AdamW(params) "
                        "on CUDA, as the guide's train.py and train_fsdp2.py build it; 4 B per local parameter "
                        "more at the step), fused (fused=True, the Trainer's adamw_torch_fused), forloop")
    e.add_argument("--offload-optimizer", action="store_true", help="optimizer states in host RAM")
    e.add_argument("--offload-params", action="store_true",
                   help="deepspeed stage 3: offload_param; fsdp2: with --offload-optimizer, CPUOffloadPolicy")
    e.add_argument("--largest-layer-params", type=_count,
                   help="deepspeed stage 3 with --params: parameters of the largest module")
    e.add_argument("--gpus-per-machine", type=_whole("gpus_per_machine", 1, MAX_GPUS_PER_MACHINE),
                   help="GPUs sharing one host's RAM (default: all)")
    e.add_argument("--seq-len", type=_whole("seq_len", 1, MAX_SEQ_LEN),
                   help="tokens per sequence: adds activations (needs --config)")
    e.add_argument("--micro-batch", type=_whole("micro_batch", 1, MAX_MICRO_BATCH), help="sequences per GPU (default 1)")
    e.add_argument("--attention", choices=ATTENTION, help="sdpa (default) or eager")
    e.add_argument("--recompute", choices=RECOMPUTE, help="none (default), selective or full")
    e.set_defaults(func=_cmd_estimate)

    s = sub.add_parser("serve", help="weights plus KV cache for serving")
    s.add_argument("config", help="path to config.json")
    s.add_argument("--context", type=_whole("context", 1, MAX_SEQ_LEN), required=True, help="tokens per sequence")
    s.add_argument("--batch", type=_whole("batch", 1, MAX_MICRO_BATCH), default=1, help="sequences (default 1)")
    s.add_argument("--weight-dtype", default="bf16", choices=WEIGHT_DTYPES)
    s.add_argument("--kv-dtype", default="bf16", choices=tuple(DTYPE_BITS))
    s.add_argument("--server", default="vllm", choices=SERVERS,
                   help="whose KV cache: vllm (default: sliding-window layers hold their window) or transformers "
                        "(DynamicCache: every layer holds the whole prompt right after the prefill)")
    s.set_defaults(func=_cmd_serve)

    lo = sub.add_parser("lora", help="LoRA / QLoRA memory on one GPU")
    lo.add_argument("config", help="path to config.json")
    lo.add_argument("--rank", type=_whole("rank", 1, MAX_LORA_RANK), required=True, help="adapter rank")
    lo.add_argument("--targets", default=ALL_LINEAR,
                    help="comma-separated nn.Linear names, or all-linear (default: PEFT's every nn.Linear but lm_head)")
    lo.add_argument("--base-dtype", default="bf16", choices=BASE_DTYPES, help="nf4 = QLoRA")
    lo.add_argument("--optimizer", default="adamw-fp32", choices=optimizers)
    lo.set_defaults(func=_cmd_lora)

    j = sub.add_parser("job", help="one finder job: bytes per card and which cards fit (as the site's finder)")
    j.add_argument("--config", required=True, help="path to config.json")
    j.add_argument("--kind", choices=KINDS, help=f"default {JOB_FIELDS['kind']}")
    j.add_argument("--cards", type=_integer_text("cards"), help="data-parallel GPUs, or the tensor-parallel size (serving)")
    j.add_argument("--framework", choices=FRAMEWORKS, help="training, LoRA: fsdp2 (stage 0 = DDP under AMP), deepspeed, zero-paper")
    j.add_argument("--zero-stage", type=_integer_text("zero_stage"), help="0-3 (fsdp2: 2/3 = reshard_after_forward False/True)")
    j.add_argument("--optimizer", choices=TRAINING_OPTIMIZERS, help="adamw (fp32 master under AMP), adamw-bf16, adam8bit")
    j.add_argument("--optimizer-impl", choices=OPTIMIZER_IMPLS,
                   help=f"torch.optim.AdamW's implementation whose step is counted (default {DEFAULT_IMPL})")
    j.add_argument("--offload", choices=OFFLOAD, help="none, optimizer, optimizer+params (host RAM reported)")
    j.add_argument("--seq-len", type=_integer_text("seq_len"), help="tokens per sequence (training, LoRA)")
    j.add_argument("--micro-batch", type=_integer_text("micro_batch"), help="sequences per GPU")
    j.add_argument("--recompute", choices=RECOMPUTE, help="none, selective or full")
    j.add_argument("--attention", choices=ATTENTION, help="default: what transformers runs the family with")
    j.add_argument("--rank", type=_integer_text("rank"), help="LoRA rank")
    j.add_argument("--targets", help="all-linear or comma-separated nn.Linear names")
    j.add_argument("--base-dtype", choices=BASE_DTYPES, help="LoRA base: bf16 (LoRA) or nf4 (QLoRA)")
    j.add_argument("--weights", choices=SERVING_WEIGHTS, help="serving weights (mxfp4: the checkpoint's own, gpt-oss)")
    j.add_argument("--kv-dtype", choices=KV_DTYPES, help="serving KV cache")
    j.add_argument("--context", type=_integer_text("context"), help="serving: tokens per sequence")
    j.add_argument("--concurrent", type=_integer_text("concurrent"), help="serving: sequences at once")
    j.add_argument("--gpu-memory-utilization", type=_decimal_text("gpu_memory_utilization"),
                   help="serving: vLLM's share of each card (default 0.9)")
    j.add_argument("--gpu", type=_card, action="append", help="a card KEY=MEMORY_MIB (repeat; nvidia-smi's total)")
    j.add_argument("--reserve-mib", type=_integer_text("reserve_mib"), help="CUDA context and NCCL per card (default 2048)")
    j.add_argument("--tight-free-fraction", type=_decimal_text("tight_free_fraction"), help="a fit leaving less than this share of the card free at the job's peak is tight "
                   "(every kind; default vram.fit.TIGHT_FREE_FRACTION, 0.1)")
    j.add_argument("--tokens", type=_integer_text("tokens"), help="training, LoRA: tokens to train (dataset x epochs; default 10^9)")
    j.add_argument("--price", type=_machine_price, action="append",
                   help="KEY=EUR_PER_HOUR: the price of --cards cards KEY (repeat); ranks the run by cost when every fitting card has one")
    j.add_argument("--host-ram", type=_machine_ram, action="append",
                   help="KEY=GB: the RAM of the machine of --cards cards KEY (repeat); with --offload, whether it holds it")
    j.set_defaults(func=_cmd_job)

    for command in (p, e, s, lo, j):
        command.add_argument("--json", action="store_true", help="print one JSON object")
    add_time_command(sub, _whole, _emit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns 0, or exits 2 with one line on stderr for bad input.

    A reader that closes the pipe early (``| head -1``) ends the command quietly, with
    status 1, as the Python documentation recommends for SIGPIPE (``signal`` module notes).
    """
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
        sys.stdout.flush()
    except ValueError as exc:  # includes ConfigError: bad numbers, files, keys
        _fail(str(exc))
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at devnull so that flush cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
