"""Number placeholders: every figure of the prose that the calculator knows.

Each renderer takes checked arguments and the language, calls ``vram`` and formats
the result with ``locale_format``. Rounding to the prose's precision is explicit in
the page (``round=10`` -> nearest 10, ``floor=100`` -> "over 100", ``step=5`` on a
range rounds outwards), so the page never claims more precision than it shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import contextmanager

import vram
from vram.units import bytes_to_gb

from .data import load_yaml, text
from .errors import RenderError
from .locale_format import format_eur, format_number, format_quantity, format_range
from .placeholders import Args

PARTS = ("weights", "gradients", "optimizer", "total")
ROUNDING = {"round", "floor", "decimals"}


@contextmanager
def calculator_errors():
    """Turn the calculator's ValueError (out-of-range input) into a RenderError."""
    try:
        yield
    except ValueError as exc:
        raise RenderError(str(exc)) from None


def rounded(value: float, args: Args) -> float:
    """Apply ``round=N`` (nearest multiple of N) or ``floor=N`` (multiple of N below)."""
    if args.has("round"):
        step = args.int("round", minimum=1)
        return round(value / step) * step
    if args.has("floor"):
        step = args.int("floor", minimum=1)
        return math.floor(value / step) * step
    return value


def gb(n_bytes: float, args: Args, lang: str) -> str:
    decimals = args.int("decimals", default=0, minimum=0, maximum=3)
    return format_quantity(rounded(bytes_to_gb(n_bytes), args), "gb", lang, decimals)


def _part(states: vram.ModelStates | vram.BytesPerParam, part: str) -> int:
    if part not in PARTS:
        raise RenderError(f"part={part} is not one of {', '.join(PARTS)}")
    if isinstance(states, vram.BytesPerParam):
        return states.total if part == "total" else getattr(states, part)
    return states.total_bytes if part == "total" else getattr(states, f"{part}_bytes")


def bytes_per_param(raw: dict[str, str], lang: str) -> str:
    """``{{ bytes_per_param optimizer=adamw part=total }}`` -> ``16``."""
    args = Args(raw, {"optimizer", "part"})
    with calculator_errors():
        bpp = vram.bytes_per_param(args.str("optimizer", "adamw"))
    return format_number(_part(bpp, args.str("part", "total")), lang)


def memory(raw: dict[str, str], lang: str) -> str:
    """``{{ memory params=8e9 world_size=1 zero_stage=0 part=total }}`` -> ``128 GB``."""
    args = Args(raw, {"params", "world_size", "zero_stage", "optimizer", "part"} | ROUNDING)
    with calculator_errors():
        states = vram.model_states_per_gpu(
            args.params(),
            args.int("world_size", default=1),
            args.int("zero_stage", default=0),
            args.str("optimizer", "adamw"),
        )
    return gb(_part(states, args.str("part", "total")), args, lang)


def gradients_per_step(raw: dict[str, str], lang: str) -> str:
    """``{{ gradients_per_step params=1e9 }}``: one bf16 copy of the gradients (DDP)."""
    args = Args(raw, {"params", "grad_bytes"} | ROUNDING)
    with calculator_errors():
        n_bytes = vram.gradient_bytes(args.params(), args.int("grad_bytes", default=2, minimum=1))
    return gb(n_bytes, args, lang)


def traffic_per_step(raw: dict[str, str], lang: str) -> str:
    """``{{ traffic_per_step params=8e9 world_size=4 zero_stage=3 step=5 }}`` -> ``35–50 GB``.

    The range runs from bf16 gradients to fp32 gradients; ``step`` rounds it outwards.
    """
    args = Args(raw, {"params", "world_size", "zero_stage", "step"})
    params, world_size = args.params(), args.int("world_size")
    zero_stage = args.int("zero_stage", default=0)
    with calculator_errors():
        low = bytes_to_gb(vram.bytes_per_gpu_per_step(params, world_size, zero_stage, grad_bytes_per_param=2))
        high = bytes_to_gb(vram.bytes_per_gpu_per_step(params, world_size, zero_stage, grad_bytes_per_param=4))
    step = args.int("step", default=1, minimum=1)
    return format_range(math.floor(low / step) * step, math.ceil(high / step) * step, "gb", lang, 0)


def offload_host_ram(raw: dict[str, str], lang: str) -> str:
    """``{{ offload_host_ram params=8e9 round=10 }}``: host RAM one machine needs for the
    optimizer states offloaded by its GPUs (ZeRO-Offload, FSDP ``cpu_offload``)."""
    args = Args(raw, {"params", "optimizer", "world_size"} | ROUNDING)
    with calculator_errors():
        memory = vram.training_memory_per_gpu(
            args.params(), args.int("world_size", default=1), 1, args.str("optimizer", "adamw"), offload_optimizer=True
        )
    return gb(memory.host_optimizer_bytes_per_machine, args, lang)


def checkpoint(raw: dict[str, str], lang: str) -> str:
    """``{{ checkpoint params=8e9 floor=100 }}``: bf16 weights + optimizer states."""
    args = Args(raw, {"params", "optimizer"} | ROUNDING)
    with calculator_errors():
        size = vram.checkpoint_bytes(args.params(), args.str("optimizer", "adamw"))
    return gb(size.total_bytes, args, lang)


def catalogue_entry(section: str, arg: str, raw: dict[str, str]) -> dict:
    """The entry of ``snippets/data/gpus.yaml``'s ``section`` named by argument ``arg``."""
    key = Args(raw, {arg}).str(arg)
    entries = load_yaml("gpus")[section]
    if key not in entries:
        raise RenderError(f"unknown {arg} {key!r} in snippets/data/gpus.yaml (known: {', '.join(entries)})")
    return entries[key]


def gpu_memory(raw: dict[str, str], lang: str) -> str:
    """``{{ gpu_memory gpu=h200 }}`` -> ``141 GB``: a card's memory from the catalogue."""
    return format_quantity(catalogue_entry("gpus", "gpu", raw)["memory_gb"], "gb", lang, 0)


def price(raw: dict[str, str], lang: str) -> str:
    """``{{ price machine=4x-rtx-4090 }}`` -> ``2,36 €``: an hourly price the guide gives."""
    return format_eur(catalogue_entry("machines", "machine", raw)["price_eur_per_hour_from"], lang)


NUMBERS: dict[str, Callable[[dict[str, str], str], str]] = {
    "bytes_per_param": bytes_per_param,
    "memory": memory,
    "gradients_per_step": gradients_per_step,
    "traffic_per_step": traffic_per_step,
    "offload_host_ram": offload_host_ram,
    "checkpoint": checkpoint,
    "gpu_memory": gpu_memory,
    "price": price,
}
