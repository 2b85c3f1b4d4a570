"""``python -m vram job``: one "find the GPU" job answered by ``vram.job.answer_job``, the
function the site's finder runs (in Python at build time and in the browser under Pyodide);
its ``--json`` is ``vram.job.dumps`` of the answer, the same text the page's worker returns.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from ..accounting import ACCOUNTINGS
from ..activations import ATTENTION, RECOMPUTE
from ..calibration import load_measured_data
from ..catalogue import card_speed, read_catalogue
from ..frameworks import FRAMEWORKS
from ..job import JOB_FIELDS, KINDS, KV_DTYPES, OFFLOAD, SERVING_WEIGHTS, TRAINING_OPTIMIZERS, answer_job, dumps
from ..lora import BASE_DTYPES
from ..models import load_model_config
from ..optimizer_step import DEFAULT_IMPL, OPTIMIZER_IMPLS
from ..serving import VLLM_MAX_NUM_BATCHED_TOKENS
from ..units import quote_text
from .common import decimal_text, emit, integer_text, size_rows, size_text
from .time import _tokens, backing_line


def _card(text: str) -> dict[str, Any]:
    key, sep, mib = text.partition("=")
    if not sep or not key.strip() or not (mib.strip().isascii() and mib.strip().isdigit()) or len(mib) > 20:
        raise argparse.ArgumentTypeError(f"--gpu must be KEY=MEMORY_MIB (nvidia-smi's total), got {quote_text(text)}")
    return {"key": key.strip(), "memory_mib": int(mib)}


JOB_FLAGS = (
    "kind",
    "cards",
    "framework",
    "zero_stage",
    "optimizer",
    "optimizer_impl",
    "offload",
    "seq_len",
    "micro_batch",
    "grad_accum",
    "recompute",
    "attention",
    "rank",
    "targets",
    "base_dtype",
    "weights",
    "kv_dtype",
    "context",
    "concurrent",
    "gpu_memory_utilization",
    "max_num_batched_tokens",
    "reserve_mib",
    "tight_free_fraction",
    "tokens",
)


def _machine_price(text: str) -> tuple[str, str]:
    key, sep, price = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"--price must be KEY=EUR_PER_HOUR (the machine of --cards such cards), got {quote_text(text)}"
        )
    return key.strip(), price.strip()  # answer_job checks the price and names it


def _machine_ram(text: str) -> tuple[str, int | str]:
    key, sep, ram = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"--host-ram must be KEY=GB (the RAM of the machine of --cards such cards), got {quote_text(text)}"
        )
    ram = ram.strip()
    return key.strip(), int(ram) if ram.isascii() and ram.isdigit() and len(ram) <= 20 else ram  # answer_job checks it


def job_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The job ``answer_job`` reads, from ``python -m vram job`` flags (unset ones left to its defaults)."""
    job = {name: getattr(args, name) for name in JOB_FLAGS if getattr(args, name) is not None}
    load_model_config(args.config)  # the file's own checks (a regular file, its size, UTF-8), naming it
    with open(args.config, encoding="utf-8") as file:
        job["config"] = file.read()  # read as the page's worker reads it: messages say "config.json"
    catalogue = read_catalogue()  # the cited speeds of the guide's cards (time and cost of a run) and its reserve
    cards = catalogue.cards
    job.setdefault("reserve_mib", catalogue.reserve_mib)
    job["gpus"] = [
        card | {"speed": card_speed(cards[card["key"]])} if card["key"] in cards else card for card in args.gpu or []
    ]
    if args.price:
        job["prices"] = dict(args.price)
    if args.host_ram:
        job["host_ram_gb"] = dict(args.host_ram)
    job["calibration"] = load_measured_data().calibration.as_job()  # the published runs behind each time
    return job


def _decoding_line(gpu: str, decode: Mapping[str, Any]) -> str:
    """A fitting card's decoding: the roofline, and where published runs back it, the share of that
    roofline server engines like vLLM reached in the job's class (``vram.calibration``, rule R2)."""
    line = (
        f"decoding on {gpu}: at most {decode['tokens_per_s_per_sequence_at_most']:,} tokens/s per "
        f"sequence, {decode['tokens_per_s_at_most']:,} in all (memory-bandwidth roofline, an upper bound)"
    )
    if "tokens_per_s_per_sequence" in decode:
        low, high = decode["tokens_per_s_per_sequence"]
        line += (
            f"; server engines like vLLM reached {low:,}-{high:,} per sequence in published runs "
            f"({backing_line(decode['backing'])})"
        )
    return line


def _ram_verdict(fit: Mapping[str, Any]) -> str:
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
    lines = [
        (
            f"params: {answer['params']:,}; {answer['kind']} on {answer['cards']} card(s) "
            "(GB = 10^9 bytes, GiB = 2^30 bytes):"
        ),
        *size_rows([(part, size) for part, size, _ in answer["parts"]] + [("total", answer["per_gpu_bytes"])]),
    ]
    if "accounting" in answer:  # what the bytes assume, by name (vram.accounting)
        lines.append(f"accounting: {answer['accounting']}: {ACCOUNTINGS[answer['accounting']]}")
    if "activations" in answer:
        act = answer["activations"]
        lines.append(
            f"activations ({act['attention']}, recompute {act['recompute']}, {act['micro_batch']} x "
            f"{act['seq_len']:,} tokens): {size_text(act['bytes'])}; with full recomputation {size_text(act['full_bytes'])}"
        )
    else:
        lines.append(f"KV cache per sequence: {size_text(answer['kv_per_sequence_bytes'])}")
    if answer["host_bytes"]:
        lines.append(f"host RAM per machine for offload: {size_text(answer['host_bytes'])}")
    if "batch" in answer:
        b = answer["batch"]
        lines.append(
            f"global batch: {b['global_batch']:,} sequences ({b['micro_batch']:,} x {b['grad_accum']:,} "
            f"accumulated x {b['cards']:,} cards), {b['tokens_per_step']:,} tokens per optimizer step; "
            f"{b['optimizer_steps']:,} optimizer steps for the run's tokens"
        )
    for fit in answer["fits"]:
        extra = (
            f", recompute {fit['recompute']}" if "recompute" in fit else f", {fit['max_concurrent']} sequences at most"
        )
        lines.append(
            f"fits {fit['gpu']}: margin {size_text(fit['margin_bytes'])}{extra}, {fit['free_fraction']:.0%} free at "
            f"the peak{' (tight)' if fit['tight'] else ''}"
            f"{_ram_verdict(fit)}"
        )
    lines += [
        f"short {fit['gpu']}: margin {size_text(fit['margin_bytes'])} holds the states, not the activations"
        for fit in answer["short"]
    ]
    if "run" in answer:
        run = answer["run"]
        lines.append(f"run of {run['tokens']:,} tokens, ranked by {run['ranked_by']}: {', '.join(run['order'])}")
        for fit in answer["fits"]:
            t = fit["time"]
            cost = (
                f", {t['cost_eur'][0]}-{t['cost_eur'][1]} EUR at {t['price_eur_per_hour']} EUR/h"
                if t["cost_eur"]
                else ""
            )
            lines.append(
                f"  {fit['gpu']}: optimizer step {t['step_s'][0]:.3g}-{t['step_s'][1]:.3g} s ({t['bound']}-bound), "
                f"run {t['run_s'][0] / 3600:.3g}-{t['run_s'][1] / 3600:.3g} h{cost}; {backing_line(t['backing'])}"
            )
        lines += [f"warning: {warning}" for warning in run.get("warnings", [])]
    lines += [_decoding_line(fit["gpu"], fit["decode"]) for fit in answer["fits"] if "decode" in fit]
    lines += [f"warning: {warning}" for warning in answer.get("warnings", [])]
    lines += [f"note: {note}" for note in answer["notes"]]
    emit(args, answer, lines)


def add_job_command(sub: Any) -> argparse.ArgumentParser:
    """Register ``job`` on the subparsers ``sub``."""
    j: argparse.ArgumentParser = sub.add_parser(
        "job", help="one finder job: bytes per card and which cards fit (as the site's finder)"
    )
    j.add_argument("--config", required=True, help="path to config.json")
    j.add_argument("--kind", choices=KINDS, help=f"default {JOB_FIELDS['kind']}")
    j.add_argument(
        "--cards", type=integer_text("cards"), help="data-parallel GPUs, or the tensor-parallel size (serving)"
    )
    j.add_argument(
        "--framework", choices=FRAMEWORKS, help="training, LoRA: fsdp2 (stage 0 = DDP under AMP), deepspeed, zero-paper"
    )
    j.add_argument(
        "--zero-stage", type=integer_text("zero_stage"), help="0-3 (fsdp2: 2/3 = reshard_after_forward False/True)"
    )
    j.add_argument(
        "--optimizer", choices=TRAINING_OPTIMIZERS, help="adamw (fp32 master under AMP), adamw-bf16, adam8bit"
    )
    j.add_argument(
        "--optimizer-impl",
        choices=OPTIMIZER_IMPLS,
        help=f"torch.optim.AdamW's implementation whose step is counted (default {DEFAULT_IMPL})",
    )
    j.add_argument(
        "--offload",
        choices=OFFLOAD,
        help="training, LoRA: none, optimizer, optimizer+params (DeepSpeed offload_param; FSDP2's "
        "CPUOffloadPolicy); host RAM reported",
    )
    j.add_argument("--seq-len", type=integer_text("seq_len"), help="tokens per sequence (training, LoRA)")
    j.add_argument("--micro-batch", type=integer_text("micro_batch"), help="sequences per GPU")
    j.add_argument(
        "--grad-accum",
        type=integer_text("grad_accum"),
        help="training, LoRA: micro-batches per optimizer step (default 1)",
    )
    j.add_argument("--recompute", choices=RECOMPUTE, help="none, selective or full")
    j.add_argument("--attention", choices=ATTENTION, help="default: what transformers runs the family with")
    j.add_argument("--rank", type=integer_text("rank"), help="LoRA rank")
    j.add_argument("--targets", help="all-linear or comma-separated nn.Linear names")
    j.add_argument("--base-dtype", choices=BASE_DTYPES, help="LoRA base: bf16 (LoRA) or nf4 (QLoRA)")
    j.add_argument("--weights", choices=SERVING_WEIGHTS, help="serving weights (mxfp4: the checkpoint's own, gpt-oss)")
    j.add_argument("--kv-dtype", choices=KV_DTYPES, help="serving KV cache")
    j.add_argument("--context", type=integer_text("context"), help="serving: tokens per sequence")
    j.add_argument("--concurrent", type=integer_text("concurrent"), help="serving: sequences at once")
    j.add_argument(
        "--gpu-memory-utilization",
        type=decimal_text("gpu_memory_utilization"),
        help="serving: vLLM's share of each card (default 0.9)",
    )
    j.add_argument("--gpu", type=_card, action="append", help="a card KEY=MEMORY_MIB (repeat; nvidia-smi's total)")
    j.add_argument(
        "--max-num-batched-tokens",
        type=integer_text("max_num_batched_tokens"),
        help=f"serving: vLLM's prefill chunk (default {VLLM_MAX_NUM_BATCHED_TOKENS:,})",
    )
    j.add_argument(
        "--reserve-mib",
        type=integer_text("reserve_mib"),
        help="CUDA context and NCCL per card (default: the catalogue's reserve_mib, snippets/data/gpus.yaml)",
    )
    j.add_argument(
        "--tight-free-fraction",
        type=decimal_text("tight_free_fraction"),
        help="a fit leaving less than this share of the card free at the job's peak is tight "
        "(every kind; default vram.fit.TIGHT_FREE_FRACTION, 0.1)",
    )
    j.add_argument("--tokens", type=_tokens, help="training, LoRA: tokens to train (dataset x epochs; default 10^9)")
    j.add_argument(
        "--price",
        type=_machine_price,
        action="append",
        help="KEY=EUR_PER_HOUR: the price of --cards cards KEY (repeat); ranks the run by cost when every fitting card has one",
    )
    j.add_argument(
        "--host-ram",
        type=_machine_ram,
        action="append",
        help="KEY=GB: the RAM of the machine of --cards cards KEY (repeat); with --offload, whether it holds it",
    )
    j.set_defaults(func=_cmd_job)

    return j
