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
import vram.fit
import vram.loading
from hooks.cache import Memo, file_stamp
from hooks.data.load import load_model, load_yaml
from hooks.errors import RenderError
from hooks.render.locale_format import format_eur, format_number, format_quantity, format_range
from hooks.render.placeholders import Args
from verify.pins import pinned
from vram.units import bytes_to_gb

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
    """``{{ offload_host_ram params=8e9 framework=deepspeed round=10 }}``: host RAM one machine
    pins when its GPUs offload the optimizer (``framework=zero-paper``, the default: the
    optimizer states only, 12 B/param; ``deepspeed``: fp32 master, moments and fp32
    gradients, 16 B/param; ``fsdp2`` needs ``model=``: CPUOffloadPolicy)."""
    args = Args(raw, {"params", "model", "framework", "optimizer", "world_size", "zero_stage", "offload"} | ROUNDING)
    framework = args.str("framework", "zero-paper")
    memory = _framework_memory(
        args,
        framework,
        default_stage=2 if framework != "zero-paper" else 1,
        default_offload="all" if framework == "fsdp2" else "optimizer",
    )
    return gb(memory.host_bytes, args, lang)


def load_host_ram(raw: dict[str, str], lang: str) -> str:
    """``{{ load_host_ram params=8e9 world_size=8 }}`` -> ``128 GB``: host RAM of one machine
    while every rank loads the whole model (``rank0_only=1``: one copy, as with
    ``cpu_ram_efficient_loading`` or meta-device init). ``vram.loading``."""
    args = Args(raw, {"params", "world_size", "dtype", "rank0_only"} | ROUNDING)
    with calculator_errors():
        ram = vram.loading.load_host_ram(args.params(), args.int("world_size"), args.str("dtype", "bf16"))
    rank0_only = args.int("rank0_only", default=0, minimum=0, maximum=1)
    return gb(ram.rank0_loads_bytes if rank0_only else ram.every_rank_loads_bytes, args, lang)


# --- frameworks: zero-paper, DeepSpeed, FSDP2 (vram.frameworks) ---------------------------

OFFLOAD = {"none": (False, False), "optimizer": (True, False), "all": (True, True)}
FRAMEWORK_PARTS = ("weights", "gradients", "optimizer", "working", "states", "total", "host")
FORMULA_PARTS = {
    "gpu": vram.breakdown.GPU_PARTS,
    "states": ("weights", "gradients", "optimizer"),
    **{part: (part,) for part in vram.breakdown.PARTS},
}


def model_config(key: str) -> vram.ModelConfig:
    """The config of a model of ``snippets/data/models.yaml`` (its key), parsed by vram."""
    from hooks.data.load import DATA_DIR

    models = load_model("models").models
    if key not in models:
        raise RenderError(f"unknown model {key!r} in snippets/data/models.yaml (known: {', '.join(models)})")
    path = DATA_DIR / "models" / models[key].config

    def parse() -> vram.ModelConfig:
        with calculator_errors():
            return vram.load_model_config(path)  # a missing file is its error

    return _configs.get(path, file_stamp(path), parse) if path.is_file() else parse()


_configs = Memo()  # path -> the parsed config (frozen), while the file is unchanged


def _shape(args: Args) -> vram.ModelShape:
    if args.has("model") == args.has("params"):
        raise RenderError("give model= (a key of snippets/data/models.yaml) or params=, not both")
    if args.has("model"):
        with calculator_errors():
            return vram.model_shape(model_config(args.str("model")))
    return vram.ModelShape(args.params())


def _framework_memory(args: Args, framework: str, default_stage: int = 0, default_offload: str = "none"):
    offload = args.str("offload", default_offload)
    if offload not in OFFLOAD:
        raise RenderError(f"offload={offload} is not one of {', '.join(OFFLOAD)}")
    world_size = args.int("world_size", default=1, minimum=1)
    zero_stage = args.int("zero_stage", default=default_stage, minimum=0, maximum=3)
    with calculator_errors():
        if args.has("moment"):  # FSDP2's working buffers at one moment of backward (the formulas page)
            if (
                framework != "fsdp2"
                or zero_stage == 1
                or offload != "none"
                or (zero_stage == 0 and args.str("moment") not in ("backward", "step"))
            ):
                raise RenderError(
                    "moment= applies to framework=fsdp2 without offload: zero_stage=2 or 3, "
                    "or zero_stage=0 with moment=backward or moment=step"
                )
            return vram.fsdp2_memory(
                _shape(args),
                world_size,
                zero_stage,
                args.str("optimizer", "adamw"),
                moment=args.str("moment"),
                optimizer_impl=args.str("optimizer_impl", "foreach"),
            )
        return vram.framework_memory(
            framework,
            _shape(args),
            world_size,
            zero_stage,
            args.str("optimizer", "adamw"),
            *OFFLOAD[offload],
            optimizer_impl=args.str("optimizer_impl", "foreach"),
        )


def _framework_part(memory: vram.FrameworkMemory, part: str) -> int:
    if part not in FRAMEWORK_PARTS:
        raise RenderError(f"part={part} is not one of {', '.join(FRAMEWORK_PARTS)}")
    if part == "states":
        return memory.model_states_bytes
    if part == "total":
        return memory.per_gpu_bytes
    return memory.part_bytes(part)


def train_memory(raw: dict[str, str], lang: str) -> str:
    """``{{ train_memory framework=deepspeed model=llama-3.1-70b world_size=8 zero_stage=3 }}``
    -> ``163 GB``: per GPU under a framework (``vram.framework_memory``), activations excluded.

    ``model=`` (a key of models.yaml) or ``params=``; ``offload=none|optimizer|all``;
    ``part=weights|gradients|optimizer|working|states|total|host`` (default total);
    ``optimizer_impl=foreach|fused|forloop``: the AdamW step FSDP2 and DDP count (default
    foreach, as the guide's scripts run it; ``vram.optimizer_step``).
    """
    args = Args(
        raw,
        {"framework", "model", "params", "world_size", "zero_stage", "optimizer", "offload", "part", "optimizer_impl"}
        | ROUNDING,
    )
    memory = _framework_memory(args, args.str("framework", "zero-paper"))
    return gb(_framework_part(memory, args.str("part", "total")), args, lang)


def framework_formula(raw: dict[str, str], lang: str) -> str:
    """``{{ framework_formula framework=deepspeed zero_stage=2 }}`` -> ``2P + 18P/N``: the
    bytes per GPU of ``vram.framework_memory`` as its coefficients; ``part=`` one of
    ``FORMULA_PARTS`` (``gpu`` default, ``states`` without working buffers, ``host`` per machine).

    Symbols (``vram.breakdown.SYMBOLS``): P, N, M, L, B, R, O, W; the page defines them. The
    coefficients do not depend on the model (``model=`` defaults to the first of models.yaml)
    except FSDP2's working buffers, whose larger moment of backward does: give
    ``moment=block|root`` (``vram.fsdp2.MOMENTS``) to name the one the page describes.
    ``world_size`` (default 2) matters only to DDP, whose buckets exist from 2 GPUs.
    """
    allowed = {"framework", "model", "world_size", "zero_stage", "optimizer", "offload", "part", "moment"}
    Args(raw, allowed)
    raw = {"model": next(iter(load_model("models").models)), "world_size": "2", **raw}
    args = Args(raw, allowed)
    part = args.str("part", "gpu")
    if part not in FORMULA_PARTS:
        raise RenderError(f"part={part} is not one of {', '.join(FORMULA_PARTS)}")
    framework = args.str("framework", "zero-paper")
    if (
        framework == "fsdp2"
        and args.int("zero_stage", default=0) in (2, 3)
        and "working" in FORMULA_PARTS[part]
        and not args.has("moment")
    ):
        raise RenderError(
            "FSDP2's working buffers depend on the moment of backward: give moment=block or moment=root (or moment=step, the optimizer step)"
        )
    memory = _framework_memory(args, framework)
    coefficients = vram.breakdown.combined(memory.terms, FORMULA_PARTS[part])
    if not coefficients:
        raise RenderError(f"the formula of {part} is empty here")
    return vram.breakdown.format_formula(coefficients, lambda c: format_number(c, lang))


def activation_memory(raw: dict[str, str], lang: str) -> str:
    """``{{ activation_memory model=llama-3.1-8b seq_len=2048 }}``: activations of one
    micro-batch (``vram.activation_memory``; ``attention=`` default the one transformers
    runs the model with, ``recompute=none|selective|full``, ``micro_batch=1``;
    ``part=total|layers|logits|peak|loss_backward``: what is kept, or the peak with the
    loss's backward, or that backward's own buffers)."""
    args = Args(raw, {"model", "seq_len", "micro_batch", "attention", "recompute", "part"} | ROUNDING)
    config = model_config(args.str("model"))
    part = args.str("part", "total")
    if part not in ("total", "layers", "logits", "peak", "loss_backward"):
        raise RenderError(f"part={part} is not one of total, layers, logits, peak, loss_backward")
    with calculator_errors():
        act = vram.activation_memory(
            config,
            args.int("seq_len", minimum=1),
            args.int("micro_batch", default=1, minimum=1),
            args.str("attention", vram.default_attention(config)),
            args.str("recompute", "none"),
        )
    return gb(getattr(act, f"{part}_bytes"), args, lang)


def checkpoint(raw: dict[str, str], lang: str) -> str:
    """``{{ checkpoint params=8e9 floor=100 }}``: bf16 weights + optimizer states."""
    args = Args(raw, {"params", "optimizer"} | ROUNDING)
    with calculator_errors():
        size = vram.checkpoint_bytes(args.params(), args.str("optimizer", "adamw"))
    return gb(size.total_bytes, args, lang)


def catalogue_entry(section: str, arg: str, raw: dict[str, str], extra: frozenset[str] = frozenset()) -> dict:
    """The entry of ``snippets/data/gpus.yaml``'s ``section`` named by argument ``arg``."""
    key = Args(raw, {arg} | extra).str(arg)
    entries = load_yaml("gpus")[section]
    if key not in entries:
        raise RenderError(f"unknown {arg} {key!r} in snippets/data/gpus.yaml (known: {', '.join(entries)})")
    return entries[key]


GPU_MEMORY_UNITS = {"gb": (vram.GB, 1), "gib": (vram.GIB, 1), "mib": (vram.fit.MIB, 0)}  # unit: (bytes, decimals)


def gpu_memory(raw: dict[str, str], lang: str) -> str:
    """``{{ gpu_memory gpu=h100 }}`` -> ``85,5 GB``: a card's memory as nvidia-smi reports it.

    From ``memory_mib`` of ``snippets/data/gpus.yaml`` (an H100 sold as 80 GB: 81,559 MiB).
    ``unit=gb`` (default, 10^9 bytes, one decimal), ``gib`` (2^30, one decimal) or ``mib``
    (nvidia-smi's own number); ``usable=yes``: less the catalogue's ``reserve_mib`` (what a
    process can use, ``vram.fit.usable_bytes``).
    """
    args = Args(raw, {"gpu", "unit", "usable"})
    card = catalogue_entry("gpus", "gpu", raw, frozenset({"unit", "usable"}))
    unit = args.str("unit", "gb")
    if unit not in GPU_MEMORY_UNITS:
        raise RenderError(f"unit={unit} is not one of {', '.join(GPU_MEMORY_UNITS)}")
    usable = args.str("usable", "no")
    if usable not in ("yes", "no"):
        raise RenderError(f"usable={usable} is not yes or no")
    with calculator_errors():
        n_bytes = (
            vram.fit.usable_bytes(card["memory_mib"], load_model("gpus").reserve_mib)
            if usable == "yes"
            else vram.fit.mib_to_bytes(card["memory_mib"])
        )
    unit_bytes, decimals = GPU_MEMORY_UNITS[unit]
    return format_quantity(n_bytes / unit_bytes, unit, lang, decimals)


def price(raw: dict[str, str], lang: str) -> str:
    """``{{ price machine=4x-rtx-4090 }}`` -> ``2,36 €``: an hourly price the guide gives."""
    return format_eur(catalogue_entry("machines", "machine", raw)["price_eur_per_hour_from"], lang)


def pinned_version(raw: dict[str, str], lang: str) -> str:
    """``{{ pinned package=torch parts=2 }}`` -> ``2.13``: the version of a package that
    ``constraints.txt`` pins (``verify.pins``, the one definition of every version), whole or
    its first ``parts`` numbers."""
    args = Args(raw, {"package", "parts"})
    parts = args.int("parts", 0, minimum=1, maximum=4) if args.has("parts") else None
    try:
        return pinned(args.str("package"), parts)
    except ValueError as exc:
        raise RenderError(str(exc)) from None


NUMBERS: dict[str, Callable[[dict[str, str], str], str]] = {
    "bytes_per_param": bytes_per_param,
    "memory": memory,
    "gradients_per_step": gradients_per_step,
    "traffic_per_step": traffic_per_step,
    "offload_host_ram": offload_host_ram,
    "load_host_ram": load_host_ram,
    "train_memory": train_memory,
    "framework_formula": framework_formula,
    "activation_memory": activation_memory,
    "checkpoint": checkpoint,
    "gpu_memory": gpu_memory,
    "price": price,
    "pinned": pinned_version,
}
