"""Time and cost placeholders: ranges from ``vram.timing`` and ``vram.billing``, in the page's language.

A training job is named by its arguments: ``model=`` (a key of models.yaml), ``gpu=`` (a card of
gpus.yaml), ``gpus=``, ``zero_stage=``, and optionally ``seq_len=`` (2048), ``micro_batch=`` (1),
``recompute=`` (none) and ``offload=1`` (optimizer in host RAM).

- ``{{ step_time JOB part=step|compute|communication|offload }}`` -> ``0,51–0,73 s``
- ``{{ run_time JOB tokens=1e9 }}`` -> ``4,3–6,2 h``
- ``{{ run_cost JOB tokens=1e9 }}`` -> ``135–194 €`` (the guide's price of the machine of
  ``gpus`` x ``gpu``, or ``price=``), billed per minute with the 15-minute minimum
- ``{{ run_bound JOB }}`` -> the part that bounds the step, in words (timing.yaml)
- ``{{ speedup JOB }}`` -> ``1,7–2``: ``gpus`` cards against one, same micro-batch
- ``{{ comm_time params=8e9 world_size=4 zero_stage=3 link=nvlink-h100 }}`` -> seconds per step
- ``{{ lora_flops }}`` -> ``4–4,8`` FLOPs per frozen parameter of a LoRA step (``part=speedup``: ``25%``)
- ``{{ mfu }}`` -> ``33–39 %``; ``{{ per_minute machine=8x-h100 }}`` -> ``0,52 €``;
  ``{{ billed_cost machine=8x-h100 minutes=10 }}`` -> ``7,80 €``
- ``{{ decode_bound model= gpu= gpus= context= batch= }}`` -> at most ``196 token/s`` per sequence
- ``{{ table name=run_cost model=... tokens=... zero_stage=... }}``: every priced machine.

A range is rounded outwards at the precision shown, so the page never claims more than the model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

from babel.numbers import format_decimal, format_percent

import vram.billing
import vram.catalogue
import vram.timing
import vram.units
from hooks.data.load import label, load_model, load_yaml
from hooks.data.measurements import measured_data
from hooks.errors import RenderError
from hooks.render.locale_format import (
    format_duration_range,
    format_eur,
    format_number,
    format_quantity,
    format_range,
    unit_label,
)
from hooks.render.markdown_table import markdown_table
from hooks.render.numbers import calculator_errors, model_config
from hooks.render.placeholders import Args
from vram.calibration import job_class
from vram.measurements import is_moe

JOB = {"model", "gpu", "gpus", "zero_stage", "seq_len", "micro_batch", "recompute", "offload"}
DURATIONS = (("days", 86_400), ("h", 3_600), ("min", 60))  # the largest unit the range's high end has twice


def catalogue() -> tuple[dict[str, vram.catalogue.Card], dict[str, vram.catalogue.Machine]]:
    """Cards and priced machines of gpus.yaml, links resolved (interconnects.yaml)."""
    gpus = load_yaml("gpus")
    with calculator_errors():
        return vram.catalogue.cards_from_data(gpus, load_yaml("interconnects")), vram.catalogue.machines_from_data(gpus)


def job_step(args: Args, gpu: str | None = None, gpus: int | None = None) -> vram.timing.StepTime:
    """The ``StepTime`` of the job the arguments name (``gpu``/``gpus`` override them), at the
    calibrated utilisation of its class (``vram.calibration``: the published runs of
    measurements.yaml on that card family, for that kind of model and task)."""
    cards, _ = catalogue()
    key = gpu or args.str("gpu")
    if key not in cards:
        raise RenderError(f"unknown gpu {key!r} in snippets/data/gpus.yaml (known: {', '.join(cards)})")
    config = model_config(args.str("model"))
    offload = bool(args.int("offload", default=0, minimum=0, maximum=1))
    with calculator_errors():
        return vram.timing.training_step(
            config,
            cards[key],
            gpus or args.int("gpus", minimum=1),
            args.int("zero_stage", minimum=0, maximum=3),
            args.int("seq_len", default=2048, minimum=1),
            args.int("micro_batch", default=1, minimum=1),
            args.str("recompute", "none"),
            offload,
            utilisation=utilisation(key, config, "full", offload),
        )


def utilisation(gpu: str, config: vram.ModelConfig, task: str, offload: bool) -> tuple[float, float]:
    """The calibrated range of a job's class (``vram.calibration.Calibration.backing``)."""
    backing = measured_data().calibration.backing(gpu, job_class("", is_moe(config), task, offload)[1:])
    if backing is None:
        raise RenderError(f"snippets/data/measurements.yaml: no published training run backs {gpu}")
    return backing.range.utilisation


def tokens(args: Args) -> int:
    with calculator_errors():
        return vram.units.parse_count(args.str("tokens"), "token count", "tokens", "1e9", 10**15)


def outward(low: float, high: float, decimals: int) -> tuple[float, float]:
    """``low`` rounded down and ``high`` up to ``decimals`` decimals."""
    scale = 10**decimals
    return math.floor(low * scale) / scale, math.ceil(high * scale) / scale


def _decimals(value: float) -> int:
    return 0 if value >= 10 else 1 if value >= 1 else 2


def format_span(low: float, high: float, unit: str, lang: str) -> str:
    """``low``–``high`` in ``unit``, rounded outwards to the precision the low end needs (the
    high end's when the low is 0): rounding a slow path's low end down to the precision of its
    high end made "1–12 s" (1.44 s at the least) read faster than a quicker path's "1.1–2 s"."""
    decimals = _decimals(low if low > 0 else high)
    low, high = outward(low, high, decimals)
    return format_range(low, high, unit, lang, decimals)


def _duration_unit(seconds: float) -> tuple[str, int]:
    return next(((u, size) for u, size in DURATIONS if seconds >= 2 * size), ("s", 1))


def format_duration(span: vram.timing.Span, lang: str) -> str:
    """Seconds as seconds, minutes, hours or days (the largest unit each end has twice); one
    unit after the range when both ends share it (``4,3–6,2 h``), else each end with its own
    (``8,8 h–3,1 giorni``). Several days (the high end at least two): days and hours, as the
    finder writes them (``vram.timing.shown_duration``, ``format_duration_range``:
    ``da 2 giorni e 14 h a 5 giorni e 5 h``)."""
    if span.high >= 2 * 86_400:
        return format_duration_range(
            vram.timing.shown_duration(span.low, up=False), vram.timing.shown_duration(span.high, up=True), lang
        )
    unit, size = _duration_unit(span.high)
    low_unit, low_size = _duration_unit(span.low)
    if low_unit == unit or span.low == 0:
        return format_span(span.low / size, span.high / size, unit, lang)
    low = math.floor(span.low / low_size * 10 ** _decimals(span.low / low_size)) / 10 ** _decimals(span.low / low_size)
    high = math.ceil(span.high / size * 10 ** _decimals(span.high / size)) / 10 ** _decimals(span.high / size)
    pattern = load_model("units").range[lang]
    return pattern.format(
        low=format_quantity(low, low_unit, lang, _decimals(span.low / low_size)),
        high=format_quantity(high, unit, lang, _decimals(span.high / size)),
    )


def step_time(raw: dict[str, str], lang: str) -> str:
    args = Args(raw, JOB | {"part"})
    part = args.str("part", "step")
    if part not in ("step", "compute", "communication", "offload"):
        raise RenderError(f"part={part} is not one of step, compute, communication, offload")
    return format_duration(getattr(job_step(args), part), lang)


def run_time(raw: dict[str, str], lang: str) -> str:
    args = Args(raw, JOB | {"tokens"})
    with calculator_errors():
        return format_duration(vram.timing.run_seconds(tokens(args), job_step(args)), lang)


def machine_price(args: Args, gpu: str, gpus: int) -> Decimal:
    """``price=`` if given, else the guide's price of the machine of ``gpus`` x ``gpu``."""
    if args.has("price"):
        with calculator_errors():
            return vram.billing.parse_price(args.str("price"), "price")
    _, machines = catalogue()
    for machine in machines.values():
        if (machine.gpu, machine.count) == (gpu, gpus):
            return machine.price_eur_per_hour
    raise RenderError(f"no price for {gpus} x {gpu} in snippets/data/gpus.yaml machines: give price=")


def cost_span(seconds: vram.timing.Span, price: Decimal) -> tuple[Decimal, Decimal]:
    with calculator_errors():
        return vram.billing.run_cost_eur(seconds.low, price), vram.billing.run_cost_eur(seconds.high, price)


def format_cost(low: Decimal, high: Decimal, lang: str) -> str:
    """A cost range: whole euros from 100 € (rounded outwards), else to the cent (``7,80–9,36 €``)."""
    if high >= 100:
        low, high = Decimal(math.floor(low)), Decimal(math.ceil(high))
        decimals = 0
    else:
        decimals = 2
    if low == high:
        return format_eur(low, lang)
    pattern = load_model("units").range[lang]
    digits = "#,##0" + ("." + "0" * decimals if decimals else "")
    span = pattern.format(
        low=format_decimal(low, format=digits, locale=lang), high=format_decimal(high, format=digits, locale=lang)
    )
    return f"{span}\u00a0{unit_label('eur', lang)}"


def run_cost(raw: dict[str, str], lang: str) -> str:
    args = Args(raw, JOB | {"tokens", "price"})
    step = job_step(args)
    with calculator_errors():
        run = vram.timing.run_seconds(tokens(args), step)
    return format_cost(*cost_span(run, machine_price(args, args.str("gpu"), step.world_size)), lang)


def bound_word(bound: str, lang: str) -> str:
    return label(load_model("timing").bounds, bound, lang, "snippets/data/timing.yaml: bounds")


def run_bound(raw: dict[str, str], lang: str) -> str:
    return bound_word(job_step(Args(raw, JOB)).bound, lang)


def speedup(raw: dict[str, str], lang: str) -> str:
    args = Args(raw, JOB)
    with calculator_errors():
        span = vram.timing.speedup(job_step(args, gpus=1), job_step(args))
    low, high = outward(span.low, span.high, 1)
    return _plain_range(low, high, lang, 1)


def _plain_range(low: float, high: float, lang: str, decimals: int) -> str:
    """A range of plain numbers (no unit), the page's range pattern."""
    if low == high:
        return format_number(low, lang, decimals)
    pattern = load_model("units").range[lang]
    return pattern.format(low=format_number(low, lang, decimals), high=format_number(high, lang, decimals))


def comm_time(raw: dict[str, str], lang: str) -> str:
    args = Args(raw, {"params", "world_size", "zero_stage", "link"})
    links = vram.catalogue.links_from_data(load_yaml("interconnects"))
    link = args.str("link")
    if link not in links:
        raise RenderError(f"unknown link {link!r} in snippets/data/interconnects.yaml (known: {', '.join(links)})")
    with calculator_errors():
        span = vram.timing.communication_seconds(
            args.params(), args.int("world_size", minimum=1), args.int("zero_stage", minimum=0, maximum=3), links[link]
        )
    return format_duration(span, lang)


def mfu(raw: dict[str, str], lang: str) -> str:
    """``33–39%`` (it), ``33 à 39 %`` (fr): the published MFU range, the percent sign as Babel writes it;
    ``part=tokens_per_gpu``: the measurement it comes from, ``5.762`` tokens/s per GPU (it)."""
    args = Args(raw, {"part"})
    part = args.str("part", "range")
    if part not in ("range", "tokens_per_gpu"):
        raise RenderError(f"part={part} is not range or tokens_per_gpu")
    if part == "tokens_per_gpu":
        return format_number(vram.timing.TORCHTITAN_H100["fsdp"], lang, 0)
    low, high = vram.timing.MFU
    pattern = load_model("units").range[lang]
    return pattern.format(low=format_number(low * 100, lang, 0), high=format_percent(high, locale=lang))


def lora_flops(raw: dict[str, str], lang: str) -> str:
    """``4–4,8`` (it), ``4 à 4,8`` (fr): FLOPs per frozen parameter and token of a LoRA step
    (``vram.timing.LORA_FLOPS_PER_FROZEN_PARAM``); ``part=speedup``: the measured speed-up the
    high end comes from (Hu et al. 2021), ``25%`` / ``25 %``, as 6 / high - 1."""
    args = Args(raw, {"part"})
    part = args.str("part", "range")
    if part not in ("range", "speedup"):
        raise RenderError(f"part={part} is not range or speedup")
    low, high = vram.timing.LORA_FLOPS_PER_FROZEN_PARAM
    if part == "speedup":
        return format_percent(float(6 / high - 1), locale=lang)
    return _plain_range(float(low), float(high), lang, 1)


def cpu_adam(raw: dict[str, str], lang: str) -> str:
    """The host's Adam step under offload (``vram.timing.cpu_optimizer_seconds``):
    ``part=bytes`` -> ``28`` bytes per parameter; ``part=memory`` -> ``51,2–614,4`` (it), the
    host memory bandwidth range in GB/s; ``part=seconds params=70.6e9`` -> the step's range in
    seconds for that many parameters on one machine."""
    args = Args(raw, {"part", "params"})
    part = args.str("part", "bytes")
    if part == "bytes":
        return format_number(vram.timing.ADAM_HOST_BYTES_PER_PARAM, lang, 0)
    if part == "memory":
        return _plain_range(*vram.timing.HOST_MEMORY_GB_PER_S, lang, 1)
    if part == "seconds":
        span = vram.timing.cpu_optimizer_seconds(args.params())
        return format_span(span.low, span.high, "s", lang)
    raise RenderError(f"part={part} is not bytes, memory or seconds")


def machine_gpus(raw: dict[str, str], lang: str) -> str:
    """``8``: the GPUs of the largest machine the guide describes (``vram.job.MACHINE_GPUS_MAX``),
    the one the "several machines" warning is checked on."""
    Args(raw, set())
    from vram.job import MACHINE_GPUS_MAX

    return format_number(MACHINE_GPUS_MAX, lang, 0)


def _machine(raw: dict[str, str], extra: set[str]) -> tuple[Args, vram.catalogue.Machine]:
    args = Args(raw, {"machine"} | extra)
    _, machines = catalogue()
    key = args.str("machine")
    if key not in machines:
        raise RenderError(f"unknown machine {key!r} in snippets/data/gpus.yaml (known: {', '.join(machines)})")
    return args, machines[key]


def per_minute(raw: dict[str, str], lang: str) -> str:
    _, machine = _machine(raw, set())
    exact = vram.billing.price_per_minute(machine.price_eur_per_hour)
    return format_eur(Decimal(exact.numerator) / Decimal(exact.denominator), lang)


def billed_cost(raw: dict[str, str], lang: str) -> str:
    args, machine = _machine(raw, {"minutes"})
    minutes = args.int("minutes", minimum=0, maximum=10**6)
    with calculator_errors():
        return format_eur(vram.billing.run_cost_eur(minutes * 60, machine.price_eur_per_hour), lang)


def run_cost_table(raw: dict[str, str], lang: str) -> str:
    """``{{ table name=run_cost model=... tokens=... zero_stage=... }}``: for every machine the
    guide prices, the step time, what bounds it, the run's time and cost."""
    args = Args(raw, JOB - {"gpu", "gpus"} | {"name", "tokens"})
    data = load_model("timing")
    header = [
        label(data.columns, c, lang, "snippets/data/timing.yaml: columns")
        for c in ("machine", "price", "step", "bound", "run", "cost")
    ]
    cards, machines = catalogue()
    body = []
    for machine in machines.values():
        step = job_step(args, gpu=machine.gpu, gpus=machine.count)
        with calculator_errors():
            run = vram.timing.run_seconds(tokens(args), step)
        body.append(
            [
                data.machine[lang].format(count=machine.count, gpu=cards[machine.gpu].name),
                format_eur(machine.price_eur_per_hour, lang),
                format_duration(step.step, lang),
                bound_word(step.bound, lang),
                format_duration(run, lang),
                format_cost(*cost_span(run, machine.price_eur_per_hour), lang),
            ]
        )
    return markdown_table(header, body)


def decode_bound(raw: dict[str, str], lang: str) -> str:
    """``{{ decode_bound model= gpu= gpus=1 context=2048 batch=1 part=sequence|total }}`` ->
    ``196 token/s``: at most that many tokens per second (memory-bandwidth roofline), rounded up."""
    args = Args(raw, {"model", "gpu", "gpus", "context", "batch", "part"})
    cards, _ = catalogue()
    key = args.str("gpu")
    if key not in cards:
        raise RenderError(f"unknown gpu {key!r} in snippets/data/gpus.yaml (known: {', '.join(cards)})")
    part = args.str("part", "sequence")
    if part not in ("sequence", "total"):
        raise RenderError(f"part={part} is not sequence or total")
    with calculator_errors():
        bound = vram.timing.decode_bound(
            model_config(args.str("model")),
            cards[key].memory_bandwidth_gb_per_s,
            args.int("context", minimum=0),
            args.int("batch", default=1, minimum=1),
            args.int("gpus", default=1, minimum=1),
        )
    value = bound.tokens_per_second_per_sequence if part == "sequence" else bound.tokens_per_second
    decimals = _decimals(value)
    return format_quantity(math.ceil(value * 10**decimals) / 10**decimals, "tokens_per_s", lang, decimals)


def flops_per_token(raw: dict[str, str], lang: str) -> str:
    """``{{ flops_per_token model=llama-3.1-8b seq_len=8192 }}`` -> ``57,9 GFLOP`` (torchtitan's count)."""
    args = Args(raw, {"model", "seq_len"})
    with calculator_errors():
        flops = vram.timing.flops_per_token(model_config(args.str("model")), args.int("seq_len", minimum=1))
    return format_quantity(flops / 1e9, "gflop", lang, 1)


TIMING: dict[str, Callable[[dict[str, str], str], str]] = {
    "step_time": step_time,
    "run_time": run_time,
    "run_cost": run_cost,
    "run_bound": run_bound,
    "speedup": speedup,
    "comm_time": comm_time,
    "mfu": mfu,
    "lora_flops": lora_flops,
    "cpu_adam": cpu_adam,
    "machine_gpus": machine_gpus,
    "per_minute": per_minute,
    "billed_cost": billed_cost,
    "decode_bound": decode_bound,
    "flops_per_token": flops_per_token,
}
