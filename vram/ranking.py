"""Which machine finishes a run cheapest: every machine's run time and cost, ranked.

A renter's question is not which card is the smallest that fits but which machine finishes the
job for the least money. ``rank_runs`` ranks the machines given (those that fit, as the caller
decides with ``vram.fit``) by the cost of the run when every one has a price, by its time
otherwise, and says which it used. Ranges are ranked by their middle, ties by the lower high
end, then by key, so the order never depends on the input's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .billing import parse_price, run_cost_eur
from .catalogue import Card
from .models import ModelConfig
from .timing import Span, StepTime, lora_step, run_seconds, training_step


@dataclass(frozen=True)
class RunOption:
    """One machine for the run: ``count`` x ``card``; ``run_s`` seconds; ``cost_eur`` [low, high]
    when ``price_eur_per_hour`` is known, else None."""

    key: str
    card: Card
    count: int
    step: StepTime
    run_s: Span
    price_eur_per_hour: Decimal | None
    cost_eur: tuple[Decimal, Decimal] | None


def run_options(
    config: ModelConfig,
    tokens: int,
    machines: Mapping[str, tuple[Card, int]],
    prices: Mapping[str, Decimal | str],
    zero_stage: int,
    seq_len: int = 2048,
    micro_batch: int = 1,
    recompute: str = "none",
    offload: str = "none",
    lora: Mapping[str, Any] | None = None,
    utilisation: Mapping[str, tuple[float, float]] | None = None,
    *,
    grad_accum: int = 1,
    framework: str = "deepspeed",
) -> list[RunOption]:
    """The run of ``tokens`` tokens on each machine of ``machines`` (key -> (card, count)), priced
    from ``prices`` (key -> EUR per hour; a machine without one has no cost): a full training
    (``vram.timing.training_step``), or with ``lora`` (``rank``, ``target_modules``,
    ``base_dtype``) a LoRA/QLoRA one (``vram.timing.lora_step``), under ``framework`` with
    ``offload`` (``vram.frameworks.OFFLOAD``) and ``grad_accum`` micro-batches per optimizer
    step, each machine at its class's calibrated ``utilisation`` (key -> [low, high],
    ``vram.calibration``; a machine without one: torchtitan's ``MFU``). Raises ValueError for bad
    input, naming the machine of a bad price."""
    options = []
    for key, (card, count) in machines.items():
        share = (utilisation or {}).get(key)
        if lora is None:
            step = training_step(
                config,
                card,
                count,
                zero_stage,
                seq_len,
                micro_batch,
                recompute,
                offload != "none",
                **({"utilisation": share} if share else {}),
                offload_params=offload == "optimizer+params",
                grad_accum=grad_accum,
                framework=framework,
            )
        else:
            step = lora_step(
                config,
                card,
                count,
                zero_stage,
                seq_len,
                micro_batch,
                recompute,
                **lora,
                utilisation=share,
                offload=offload,
                grad_accum=grad_accum,
                framework=framework,
            )
        run = run_seconds(tokens, step)
        price = parse_price(prices[key], f"price of {key}") if key in prices else None
        cost = (run_cost_eur(run.low, price), run_cost_eur(run.high, price)) if price is not None else None
        options.append(RunOption(key, card, count, step, run, price, cost))
    return options


def _cost_order(option: RunOption) -> tuple[Decimal, Decimal, str]:
    assert option.cost_eur is not None  # rank_runs orders by cost when every option has one
    low, high = option.cost_eur
    return low + high, high, option.key


def rank_runs(options: list[RunOption]) -> tuple[str, list[RunOption]]:
    """``("cost", options)`` cheapest first when every option has a price, else ``("time",
    options)`` fastest first."""
    if options and all(o.cost_eur is not None for o in options):
        return "cost", sorted(options, key=_cost_order)
    return "time", sorted(options, key=lambda o: (o.run_s.middle, o.run_s.high, o.key))
