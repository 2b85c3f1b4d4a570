"""``python -m vram time``: time per step, per run and its cost (``vram.timing``, ``vram.billing``).

``--json`` prints one object: ``flops_per_token``, ``compute_s``, ``communication_s``,
``offload_s``, ``step_s``, ``tokens_per_s`` (the whole machine) as [low, high], ``bound``,
and with ``--tokens`` ``run_s``; with a price (``--price-eur-per-hour``, or the guide's
price of a machine of ``--gpus`` x ``--gpu``) ``price_eur_per_hour``, ``price_source``
("reader" or the machine's key), ``billed_minutes`` and ``cost_eur`` as [low, high].
``--rank`` ranks the guide's priced machines (plus ``--gpus`` x ``--gpu``) for the run:
``ranked_by`` ("cost" when every machine has a price, else "time") and ``machines``, best first.
``--task lora`` times a LoRA run (``--lora-rank``, ``--targets``, ``--base-dtype`` nf4 = QLoRA;
``vram.timing.lora_step``), with ``flops_per_token`` [low, high] and ``flops_source``.
``--grad-accum N`` times an optimizer step of N micro-batches (``grad_accum``, ``global_batch``
and ``tokens_per_step`` in the JSON); ``--offload-optimizer`` (and ``--offload-params``:
DeepSpeed's ``offload_param``, FSDP2's ``CPUOffloadPolicy``) adds the host link's traffic.
``--task serve`` prints the decoding bound instead (``vram.timing.decode_bound``):
``bytes_per_step``, ``tokens_per_s_per_sequence_at_most``, ``tokens_per_s_at_most``.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..activations import MAX_MICRO_BATCH, MAX_SEQ_LEN, RECOMPUTE
from ..billing import MINIMUM_MINUTES, billed_minutes, parse_price, run_cost_eur
from ..calibration import Backing, job_class, load_measured_data
from ..catalogue import Card, GuideCatalogue, read_catalogue
from ..dtypes import DTYPE_BITS, WEIGHT_DTYPES
from ..frameworks import FRAMEWORKS
from ..job import MAX_GRAD_ACCUM, RunSetting, asked_run, check_job, global_batch, settled_runs
from ..lora import ALL_LINEAR, BASE_DTYPES
from ..measurements import is_moe
from ..models import ModelConfig, count_params, load_model_config
from ..ranking import rank_runs, run_options
from ..sharding import check_world_size
from ..timing import (
    CPU_ADAM_SOURCE,
    LORA_FLOPS_SOURCE,
    MFU,
    MFU_SOURCE,
    StepTime,
    decode_bound,
    lora_step,
    run_seconds,
    shown_duration,
    training_step,
)
from ..units import parse_count
from .common import emit, whole

MAX_TOKENS = 10**15  # 65 x the 15 trillion tokens Llama 3 was trained on: above it, a typo


def _tokens(text: str) -> int:
    try:
        return parse_count(text, "token count", "tokens", "1e9, 1B or 350M", MAX_TOKENS)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _price(text: str) -> Decimal:
    try:
        return parse_price(text, "price_eur_per_hour")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _span(values: Sequence[float]) -> str:
    low, high = values
    return f"{low:,.3g}-{high:,.3g}"


def _duration(seconds: float, up: bool = False) -> str:
    """A run's end as the finder writes it (``shown_duration``: "3 days 2 h", "4.3 h")."""
    return " ".join(f"{value:,g} {unit}" for unit, value in shown_duration(seconds, up))


def _cmd_decode(args: argparse.Namespace, config: ModelConfig, card: Card) -> None:
    bound = decode_bound(
        config, card.memory_bandwidth_gb_per_s, args.context, args.batch, args.gpus, args.weight_dtype, args.kv_dtype
    )
    data = {
        "task": "serve",
        "gpu": args.gpu,
        "tensor_parallel": args.gpus,
        "context_length": args.context,
        "batch": args.batch,
        "weight_dtype": args.weight_dtype,
        "kv_dtype": args.kv_dtype,
        "memory_bandwidth_gb_per_s": card.memory_bandwidth_gb_per_s,
        "bytes_per_step": bound.bytes_per_step,
        "tokens_per_s_per_sequence_at_most": bound.tokens_per_second_per_sequence,
        "tokens_per_s_at_most": bound.tokens_per_second,
        "bound": "memory_bandwidth",
    }
    lines = [
        (
            f"decoding on {args.gpus} x {card.name} (tensor parallel {args.gpus}), {args.batch} x {args.context:,} tokens, "
            f"weights {args.weight_dtype}, KV cache {args.kv_dtype}:"
        ),
        f"  bytes read per step per GPU  {bound.bytes_per_step / 1e9:,.2f} GB at {card.memory_bandwidth_gb_per_s:g} GB/s",
        (
            f"  at most {bound.tokens_per_second_per_sequence:,.0f} tokens/s per sequence, "
            f"{bound.tokens_per_second:,.0f} tokens/s in all (memory-bandwidth roofline: an upper bound, not a forecast)"
        ),
    ]
    emit(args, data, lines)


def _machine_price(text: str) -> tuple[str, object]:
    key, sep, price = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--price takes MACHINE=EUR_PER_HOUR (4x-rtx-4090=2.36), got {text!r}")
    try:
        return key.strip(), parse_price(price, f"price of {key.strip()}")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _check_lora(args: argparse.Namespace) -> None:
    """LoRA's flags go with ``--task lora``; ``--offload-params`` with ``--offload-optimizer``."""
    if args.task != "lora" and (args.lora_rank, args.targets, args.base_dtype) != (None, None, None):
        raise ValueError("time: --lora-rank, --targets and --base-dtype go with --task lora")
    if args.offload_params and not args.offload_optimizer:
        raise ValueError(
            "time: --offload-params goes with --offload-optimizer (the parameters and the optimizer in host memory)"
        )


def _offload(args: argparse.Namespace) -> str:
    """The job's ``offload`` (``vram.frameworks.OFFLOAD``) of the offload flags."""
    return "optimizer+params" if args.offload_params else "optimizer" if args.offload_optimizer else "none"


def _job(
    args: argparse.Namespace, config: ModelConfig, catalogue: GuideCatalogue, gpu: str, count: int
) -> dict[str, Any]:
    """The ``vram.job`` job of these flags on ``count`` cards ``gpu`` (their memory and the
    reserve from the catalogue): what the finder answers for the same run."""
    job: dict[str, Any] = {
        "kind": "lora" if args.task == "lora" else "training",
        "config": config,
        "cards": count,
        "framework": args.framework,
        "zero_stage": args.zero_stage,
        "seq_len": args.seq_len,
        "micro_batch": args.micro_batch,
        "grad_accum": args.grad_accum,
        "recompute": args.recompute,
        "offload": _offload(args),
        **({"tokens": args.tokens} if args.tokens is not None else {}),
        "gpus": [{"key": gpu, "memory_mib": catalogue.memory_mib[gpu]}],
        "reserve_mib": catalogue.reserve_mib,
    }
    if args.task == "lora":
        job.update(
            rank=16 if args.lora_rank is None else args.lora_rank,
            targets=args.targets or ALL_LINEAR,
            base_dtype=args.base_dtype or "bf16",
        )
    return job


def _settled(
    args: argparse.Namespace, config: ModelConfig, catalogue: GuideCatalogue, gpu: str, count: int
) -> tuple[RunSetting, bool]:
    """The run these flags make on ``count`` cards ``gpu``, settled as the finder settles it
    (``vram.job.settled_runs``: full recomputation where only it lets the activations fit),
    and whether the job fits; a job that does not fit is timed as asked."""
    job = _job(args, config, catalogue, gpu, count)
    settled = settled_runs(job)[gpu]
    return (settled, True) if settled is not None else (asked_run(check_job(job)), False)


def _backing(args: argparse.Namespace, config: ModelConfig, gpu: str) -> Backing | None:
    """The published runs behind a time on ``gpu`` (``vram.calibration``: measurements.yaml)."""
    task = "full" if args.task != "lora" else "qlora" if args.base_dtype == "nf4" else "lora"
    return load_measured_data().calibration.backing(
        gpu, job_class("", is_moe(config), task, args.offload_optimizer)[1:]
    )


def backing_line(backing: Mapping[str, Any] | None) -> str:
    """A time's backing (``vram.calibration.Backing.as_dict``) in words: "A100: 6 published runs
    (vectorlm-2024)", or that none backs this card or this kind of job."""
    if backing is None:
        return "no published measurement backs this time: torchtitan's MFU range"
    runs = f"{backing['runs']} published run{'s' if backing['runs'] != 1 else ''} ({', '.join(backing['sources'])})"
    if not backing["exact"]:
        return f"no published measurement on this card for this kind of job: widened to {runs} of other classes"
    if not backing["on_card"]:
        return f"no published measurement on this card; {backing['family']}: {runs}"
    return f"{backing['family']}: {runs}"


def _memory_line(card: Card, count: int, run: RunSetting, fits: bool, args: argparse.Namespace) -> str:
    if not fits:
        return (
            f"memory: the job does not fit {count} x {card.name} even with full recomputation "
            f"({args.framework}; python -m vram job says what takes the memory); timed as asked"
        )
    if run.recompute != args.recompute:
        return (
            f"memory: the activations fit {count} x {card.name} only with full recomputation ({args.framework}): "
            "timed with it, as the finder does"
        )
    return f"memory: the job fits {count} x {card.name} ({args.framework})"


def _cmd_rank(args: argparse.Namespace, config: ModelConfig, catalogue: GuideCatalogue) -> None:
    if args.zero_stage is None or args.tokens is None:
        raise ValueError("time --rank needs --zero-stage and --tokens (the run to rank the machines for)")
    cards, machines = catalogue.cards, catalogue.machines
    chosen = {key: (cards[m.gpu], m.count) for key, m in machines.items()}
    prices: dict[str, Any] = {key: m.price_eur_per_hour for key, m in machines.items()}
    if args.gpu is not None:
        key = f"{args.gpus}x-{args.gpu}"
        chosen[key] = (cards[args.gpu], args.gpus)
        if args.price_eur_per_hour is not None:
            prices[key] = args.price_eur_per_hour
    for key, price in args.price or []:
        if key not in chosen:
            raise ValueError(f"--price {key}=...: {key!r} is not a machine of the ranking ({', '.join(chosen)})")
        prices[key] = price
    options, memory = [], dict[str, dict[str, Any]]()
    for key, (card, count) in chosen.items():
        run, fits = _settled(args, config, catalogue, card.key, count)
        backing = _backing(args, config, card.key)
        memory[key] = {
            "fits": fits,
            "recompute": run.recompute,
            "backing": None if backing is None else backing.as_dict(),
        }
        options += run_options(
            config,
            args.tokens,
            {key: (card, count)},
            {key: prices[key]} if key in prices else {},
            args.zero_stage,
            **run.timing(),
            utilisation=None if backing is None else {key: backing.range.utilisation},
        )
    by, ranked = rank_runs(options)
    data = {
        "ranked_by": by,
        "tokens": args.tokens,
        "zero_stage": args.zero_stage,
        "framework": args.framework,
        "machines": [
            {
                "machine": o.key,
                "gpu": o.card.key,
                "count": o.count,
                "run_s": o.run_s.as_list(),
                "bound": o.step.bound,
                "price_eur_per_hour": None if o.price_eur_per_hour is None else str(o.price_eur_per_hour),
                "cost_eur": None if o.cost_eur is None else [str(c) for c in o.cost_eur],
                **memory[o.key],
            }
            for o in ranked
        ],
    }
    why = "cost of the run (every machine has a price)" if by == "cost" else "time (a machine has no price)"
    lines = [f"machines for {args.tokens:,} tokens, ZeRO-{args.zero_stage}, ranked by {why}:"]
    for i, o in enumerate(ranked, 1):
        cost = f", {o.cost_eur[0]}-{o.cost_eur[1]} EUR at {o.price_eur_per_hour:.2f} EUR/h" if o.cost_eur else ""
        held = memory[o.key]
        fit = (
            ""
            if held["fits"] and held["recompute"] == args.recompute
            else ", recompute full (only so do the activations fit)"
            if held["fits"]
            else ", does not fit: timed as asked"
        )
        lines.append(
            f"  {i}. {o.count} x {o.card.name}: {_duration(o.run_s.low)} to {_duration(o.run_s.high, True)}"
            f"{cost} (bound: {o.step.bound}{fit}; {backing_line(held['backing'])})"
        )
    lines.append(
        f"memory checked as python -m vram job checks it ({args.framework}; full recomputation where only it "
        "fits, as the finder)"
    )
    emit(args, data, lines)


def _cmd_time(args: argparse.Namespace) -> None:
    config = load_model_config(args.config)
    catalogue = read_catalogue()
    cards, machines = catalogue.cards, catalogue.machines
    _check_lora(args)
    if args.gpu is not None and args.gpu not in cards:
        raise ValueError(f"unknown gpu {args.gpu!r}; known: {', '.join(cards)}")
    if (args.gpu is None) != (args.gpus is None):
        raise ValueError("time: --gpu and --gpus go together (the machine: --gpus cards of --gpu)")
    if args.rank:
        _cmd_rank(args, config, catalogue)
        return
    if args.price:
        raise ValueError("time: --price MACHINE=EUR goes with --rank; use --price-eur-per-hour for --gpu")
    if args.gpu is None:
        raise ValueError("time: give --gpu and --gpus (or --rank to compare the priced machines)")
    card = cards[args.gpu]
    check_world_size(args.gpus)
    if args.task == "serve":
        given = [
            flag
            for flag, value in (
                ("--zero-stage", args.zero_stage),
                ("--tokens", args.tokens),
                ("--price-eur-per-hour", args.price_eur_per_hour),
            )
            if value is not None
        ]
        if given or args.context is None:
            raise ValueError(
                f"time --task serve: {given[0]} is for training"
                if given
                else "time --task serve needs --context (tokens per sequence)"
            )
        _cmd_decode(args, config, card)
        return
    if args.zero_stage is None:
        raise ValueError("time: --zero-stage is required for training (0 DDP, 1-2 ZeRO-1/2, 3 ZeRO-3)")
    run, fits = _settled(args, config, catalogue, args.gpu, args.gpus)
    batch = global_batch(check_job(_job(args, config, catalogue, args.gpu, args.gpus)))
    lora = run.lora
    backing = _backing(args, config, args.gpu)
    share = MFU if backing is None else backing.range.utilisation
    offload = (
        dict(offload_optimizer=run.offload != "none", offload_params=run.offload == "optimizer+params")
        if lora is None
        else dict(offload=run.offload)
    )
    timed: Callable[..., StepTime] = training_step if lora is None else functools.partial(lora_step, **lora)
    step = timed(
        config,
        card,
        args.gpus,
        args.zero_stage,
        run.seq_len,
        run.micro_batch,
        run.recompute,
        utilisation=share,
        **offload,
        grad_accum=run.grad_accum,
        framework=run.framework,
    )
    data: dict[str, Any] = {
        "gpu": args.gpu,
        "gpus": args.gpus,
        "zero_stage": args.zero_stage,
        "seq_len": run.seq_len,
        "micro_batch": run.micro_batch,
        "grad_accum": run.grad_accum,
        **{key: batch[key] for key in ("global_batch", "tokens_per_step")},
        "recompute": run.recompute,
        "offload_optimizer": run.offload != "none",
        "offload_params": run.offload == "optimizer+params",
        "framework": args.framework,
        "reserve_mib": catalogue.reserve_mib,
        "fits": fits,
        "params": count_params(config).total,
        "flops_per_token": step.flops_per_token,
        "bf16_dense_tflops": card.bf16_dense_tflops,
        "mfu": list(share),
        "backing": None if backing is None else backing.as_dict(),
        "peer_link": card.peer.key,
        "busbw_gb_per_s": [card.peer.low_gb_per_s, card.peer.high_gb_per_s],
        "compute_s": step.compute.as_list(),
        "communication_s": step.communication.as_list(),
        "offload_s": step.offload.as_list(),
        "step_s": step.step.as_list(),
        "bound": step.bound,
        "tokens_per_s": step.tokens_per_second.as_list(),
    }
    data["mfu_source"] = MFU_SOURCE if backing is None else backing_line(data["backing"])
    if lora is not None:
        data.update(
            {
                "task": "lora",
                "lora_rank": lora["rank"],
                "base_dtype": lora["base_dtype"],
                "targets": lora["target_modules"]
                if isinstance(lora["target_modules"], str)
                else ",".join(lora["target_modules"]),
                "flops_per_token": [step.flops_per_token, step.flops_per_token_high],
                "flops_source": LORA_FLOPS_SOURCE,
            }
        )
    flops_high = step.flops_per_token if step.flops_per_token_high is None else step.flops_per_token_high  # LoRA's
    lines = [
        (
            f"{args.gpus} x {card.name}, ZeRO-{args.zero_stage}, {args.micro_batch} x {args.seq_len:,} tokens per GPU per "
            f"micro-batch, {run.grad_accum} micro-batch(es) per optimizer step: a global batch of {data['global_batch']:,} "
            f"sequences, {data['tokens_per_step']:,} tokens (recompute {run.recompute}"
            f"{', offload ' + run.offload if run.offload != 'none' else ''}):"
        ),
        _memory_line(card, args.gpus, run, fits, args),
        f"  FLOPs per token   {step.flops_per_token / 1e9:,.1f} GFLOP (6 x matmul params + attention, torchtitan's count)"
        if lora is None
        else f"  FLOPs per token   {step.flops_per_token / 1e9:,.1f}-{flops_high / 1e9:,.1f} GFLOP "
        f"(LoRA rank {lora['rank']}, base {lora['base_dtype']}: frozen weights without weight gradients)",
        (
            f"  compute           {_span(data['compute_s'])} s at {card.bf16_dense_tflops:g} TFLOPS bf16 dense x MFU "
            f"{share[0]:.0%}-{share[1]:.0%}"
        ),
        (
            f"  communication     {_span(data['communication_s'])} s over {card.peer.key} "
            f"({card.peer.low_gb_per_s:g}-{card.peer.high_gb_per_s:g} GB/s busbw per direction)"
        ),
    ]
    if args.offload_optimizer:
        lines.append(
            f"  offload           {_span(data['offload_s'])} s over {card.host.key} and the host's Adam step "
            f"({CPU_ADAM_SOURCE})"
        )
    lines += [
        f"  optimizer step    {_span(data['step_s'])} s (longest part, perfect overlap, to their sum); bound: {step.bound}",
        f"  tokens/s          {_span(data['tokens_per_s'])} for the machine",
    ]
    if step.communication.low > step.compute.high:  # vram.job: "communication_bound"
        data["warnings"] = ["communication_bound"]
        lines.append(
            "warning: communication_bound: the collectives at the link's fastest outlast the compute at its "
            "slowest; published runs of such models add tensor parallelism inside the machine"
        )
    if args.tokens is not None:
        length = run_seconds(args.tokens, step)
        data["tokens"] = args.tokens
        data["optimizer_steps"] = batch["optimizer_steps"]
        data["run_s"] = length.as_list()
        lines.append(f"run of {args.tokens:,} tokens: {_duration(length.low)} to {_duration(length.high, True)}")
        price, source = args.price_eur_per_hour, "reader"
        if price is None:
            guide = [m for m in machines.values() if m.gpu == args.gpu and m.count == args.gpus]
            if guide:
                price, source = guide[0].price_eur_per_hour, guide[0].key
        if price is not None:
            data.update(
                {
                    "price_eur_per_hour": str(price),
                    "price_source": source,
                    "billed_minutes": [billed_minutes(length.low), billed_minutes(length.high)],
                    "cost_eur": [str(run_cost_eur(length.low, price)), str(run_cost_eur(length.high, price))],
                }
            )
            where = "your price" if source == "reader" else f"the guide's price of {source}, from"
            lines.append(
                f"cost at {price:.2f} EUR/h ({where}), billed per minute, {MINIMUM_MINUTES}-minute minimum: "
                f"{data['cost_eur'][0]}-{data['cost_eur'][1]} EUR"
            )
    elif args.price_eur_per_hour is not None:
        raise ValueError("time: --price-eur-per-hour needs --tokens (the run's length)")
    if lora is not None:
        lines.append(
            f"source of the LoRA FLOPs range: {LORA_FLOPS_SOURCE}"
            + ("; QLoRA's dequantisation is not counted" if lora["base_dtype"] == "nf4" else "")
        )
    lines.append(f"source of the MFU range: {data['mfu_source']}")
    emit(args, data, lines)


def add_time_command(sub: Any) -> argparse.ArgumentParser:
    """Register ``time`` on the subparsers ``sub``."""
    t: argparse.ArgumentParser = sub.add_parser(
        "time", help="time per step, per run and its cost (estimates as ranges)"
    )
    t.add_argument("--config", required=True, help="path to config.json")
    t.add_argument("--gpu", help="a card of snippets/data/gpus.yaml: h100, rtx-4090, ...")
    t.add_argument("--gpus", type=whole("gpus", 1, 2**10), help="cards training together")
    t.add_argument(
        "--rank",
        action="store_true",
        help="rank the guide's priced machines (and --gpus x --gpu) by the run's cost, or time without prices",
    )
    t.add_argument(
        "--price",
        type=_machine_price,
        action="append",
        metavar="MACHINE=EUR",
        help="with --rank: a machine's price per hour (4x-rtx-4090=2.36), repeatable",
    )
    t.add_argument(
        "--task",
        choices=("train", "lora", "serve"),
        default="train",
        help="train (default), lora (LoRA/QLoRA) or serve: the decoding bound, --gpus = tensor parallel",
    )
    t.add_argument("--lora-rank", type=whole("lora_rank", 1, 2**16), help="lora: the adapters' rank (16)")
    t.add_argument("--targets", help="lora: all-linear (default) or comma-separated nn.Linear names")
    t.add_argument("--base-dtype", choices=BASE_DTYPES, help="lora: the frozen base (bf16; nf4 = QLoRA)")
    t.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default="deepspeed",
        help="whose buffers the memory check counts, as python -m vram job: deepspeed (default: every "
        "stage, with optimizer offload), fsdp2 (0 = DDP, 2, 3) or zero-paper",
    )
    t.add_argument(
        "--zero-stage", type=whole("zero_stage", 0, 3), help="0 DDP, 1-2 ZeRO-1/2, 3 ZeRO-3 / FSDP2 full shard"
    )
    t.add_argument("--seq-len", type=whole("seq_len", 1, MAX_SEQ_LEN), default=2048, help="tokens per sequence (2048)")
    t.add_argument(
        "--micro-batch", type=whole("micro_batch", 1, MAX_MICRO_BATCH), default=1, help="sequences per GPU per step (1)"
    )
    t.add_argument("--recompute", choices=RECOMPUTE, default="none", help="activation recomputation (none)")
    t.add_argument(
        "--grad-accum",
        type=whole("grad_accum", 1, MAX_GRAD_ACCUM),
        default=1,
        help="micro-batches per optimizer step (1)",
    )
    t.add_argument("--offload-optimizer", action="store_true", help="optimizer states in host RAM")
    t.add_argument(
        "--offload-params",
        action="store_true",
        help="with --offload-optimizer: the parameters too (DeepSpeed offload_param at ZeRO-3; FSDP2's "
        "CPUOffloadPolicy needs both)",
    )
    t.add_argument("--tokens", type=_tokens, help="tokens to train on (dataset tokens x epochs): 1e9, 1B")
    t.add_argument(
        "--price-eur-per-hour",
        type=_price,
        help="the machine's price (default: the guide's, for the machines it prices)",
    )
    t.add_argument("--context", type=whole("context", 1, MAX_SEQ_LEN), help="serve: tokens per sequence")
    t.add_argument("--batch", type=whole("batch", 1, MAX_MICRO_BATCH), default=1, help="serve: sequences (1)")
    t.add_argument("--weight-dtype", default="bf16", choices=WEIGHT_DTYPES, help="serve: weights (bf16)")
    t.add_argument("--kv-dtype", default="bf16", choices=tuple(DTYPE_BITS), help="serve: KV cache (bf16)")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.set_defaults(func=_cmd_time)
    return t
