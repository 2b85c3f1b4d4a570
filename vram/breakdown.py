"""What one GPU (and one machine's RAM) holds under a training framework, term by term.

``FrameworkMemory`` is the result of ``vram.frameworks.framework_memory``: a tuple of
``Term``s, each a number of bytes with the part it belongs to (weights, gradients,
optimizer, working, host), the formula that gives it and where that formula comes from.
The parts add the terms up, so a figure and its explanation cannot disagree.
``ModelShape`` carries the sizes beyond the parameter count that some frameworks need
(DeepSpeed ZeRO-3's largest layer, FSDP2's decoder layer and root module, the
``nn.Linear`` weights PyTorch autocast copies), read from a config by ``model_shape``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .validate import check_params

if TYPE_CHECKING:  # vram.models imports this module
    from .models import ModelConfig

GPU_PARTS = ("weights", "gradients", "optimizer", "working")
PARTS = (*GPU_PARTS, "host")
# The symbols of a formula, each a count of elements: P parameters, P/N a 1/N shard of them,
# PM/N the shards of the M GPUs of one machine, L the largest module (DeepSpeed ZeRO-3),
# B one decoder layer (FSDP2's block), R the root module, O its output part (final norm and
# lm_head), W every nn.Linear weight and bias, T the largest parameter tensor one GPU updates.
SYMBOLS = ("P", "P/N", "PM/N", "L", "B", "R", "O", "W", "T")


@dataclass(frozen=True)
class Term:
    """``bytes`` of one buffer kind; ``part`` one of ``PARTS``; ``key`` names the buffer kind
    (stable, for translated labels: ``snippets/data/frameworks.yaml``); ``coefficients``: the
    formula as (bytes per element, symbol of ``SYMBOLS``) pairs; ``what`` describes the
    buffers in English and gives the source of the multiplier."""

    part: str
    key: str
    bytes: int
    coefficients: tuple[tuple[int, str], ...]
    what: str

    def __post_init__(self) -> None:
        if self.part not in PARTS:
            raise ValueError(f"unknown part {self.part!r}; known: {', '.join(PARTS)}")
        for _, symbol in self.coefficients:
            if symbol not in SYMBOLS:
                raise ValueError(f"unknown symbol {symbol!r}; known: {', '.join(SYMBOLS)}")

    @property
    def formula(self) -> str:
        """The coefficients as text: ``2P/N``, ``2R + 4B``."""
        return format_formula(self.coefficients)


def format_formula(coefficients: Iterable[tuple[int, str]], number: Callable[[int], str] = str) -> str:
    """``((2, "P"), (18, "P/N"), (16, "PM/N"))`` -> ``2P + 18P/N + 16P·M/N``; a negative
    coefficient is subtracted (``((6, "R"), (-2, "P"))`` -> ``6R − 2P``). ``number`` formats
    each coefficient's absolute value (default ``str``; the site passes its locale's)."""
    text = ""
    for c, symbol in coefficients:
        sign = ("− " if c < 0 else "+ ") if text else ("−" if c < 0 else "")
        text += f"{' ' if text else ''}{sign}{number(abs(c))}{symbol.replace('PM', 'P·M')}"
    return text


def combined(terms: Iterable[Term], parts: tuple[str, ...] = GPU_PARTS) -> tuple[tuple[int, str], ...]:
    """The coefficients of ``terms`` in ``parts`` added up per symbol, in ``SYMBOLS`` order."""
    total = dict.fromkeys(SYMBOLS, 0)
    for term in terms:
        if term.part in parts:
            for c, symbol in term.coefficients:
                total[symbol] += c
    return tuple((c, symbol) for symbol, c in total.items() if c)


@dataclass(frozen=True)
class FrameworkMemory:
    """Bytes per GPU by part, and host RAM per machine, under one framework.

    ``notes``: what the figure leaves out on purpose (DeepSpeed's safety factors, transient
    buffers), one sentence each.
    """

    framework: str
    params: int
    world_size: int
    zero_stage: int
    terms: tuple[Term, ...]
    notes: tuple[str, ...] = ()
    # Working bytes of the moment of backward that holds the most, the one the activations
    # add to; None: ``working_bytes`` (no other moment counted). It differs when the terms
    # are those of the optimizer step (``vram.optimizer_step``), which comes after the
    # activations are freed.
    backward_working_bytes: int | None = None

    def part_bytes(self, part: str) -> int:
        """Sum of the terms of ``part`` (bytes). Raises ValueError for an unknown part."""
        if part not in PARTS:
            raise ValueError(f"unknown part {part!r}; known: {', '.join(PARTS)}")
        return sum(term.bytes for term in self.terms if term.part == part)

    @property
    def weights_bytes(self) -> int:
        return self.part_bytes("weights")

    @property
    def gradients_bytes(self) -> int:
        return self.part_bytes("gradients")

    @property
    def optimizer_bytes(self) -> int:
        return self.part_bytes("optimizer")

    @property
    def working_bytes(self) -> int:
        """Buffers that exist only while a step runs (gathered layers, autocast copies, buckets)."""
        return self.part_bytes("working")

    @property
    def host_bytes(self) -> int:
        """Host (CPU) RAM per machine that offload pins (0 without offload)."""
        return self.part_bytes("host")

    @property
    def model_states_bytes(self) -> int:
        """Weights, gradients and optimizer states on one GPU (bytes), without working buffers."""
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes

    @property
    def per_gpu_bytes(self) -> int:
        """Everything this framework keeps on one GPU for the model (bytes), activations excluded:
        the model states and the working buffers of the moment that holds the most (a moment
        of backward, or the optimizer step)."""
        return self.model_states_bytes + self.working_bytes

    @property
    def backward_bytes(self) -> int:
        """Model states and working buffers at the moment of backward that holds the most (bytes):
        what the activations come on top of."""
        working = self.working_bytes if self.backward_working_bytes is None else self.backward_working_bytes
        return self.model_states_bytes + working

    def peak_bytes(self, activation_bytes: int = 0) -> int:
        """The most one GPU holds in a training step with ``activation_bytes`` of activations
        (bytes, >= 0): the larger of backward (``backward_bytes`` plus the activations) and
        the moment of ``per_gpu_bytes`` (the optimizer step holds no activations).
        Raises ValueError for a negative or non-integer ``activation_bytes``."""
        if isinstance(activation_bytes, bool) or not isinstance(activation_bytes, int) or activation_bytes < 0:
            raise ValueError(f"activation_bytes must be a non-negative integer, got {activation_bytes!r}")
        return max(self.per_gpu_bytes, self.backward_bytes + activation_bytes)


@dataclass(frozen=True)
class ModelShape:
    """Sizes of one model in parameters (elements); None where not known (``--params`` alone).

    - ``largest_layer_params``: the most parameters one module holds directly (DeepSpeed
      ``model_to_params``; ``vram.models.largest_layer_params``);
    - ``decoder_layer_params``: one decoder layer, the largest (FSDP2's unit per block);
    - ``num_layers``: decoder layers;
    - ``root_params``: embedding, final norm and an untied ``lm_head`` (the root module);
    - ``output_params``: the root's parameters whose gradients exist from the first step of
      backward (final norm and ``lm_head``, or the tied embedding);
    - ``linear_params``: every ``nn.Linear`` weight and bias (what autocast copies to bf16);
    - ``param_shapes``: every distinct parameter shape with how many parameters have it
      (``((shape, count), ...)``, a tied ``lm_head`` left out): FSDP2's per-tensor dim-0
      shards and the largest tensor a for-loop optimizer step works on;
    - ``layer_shapes``: each kind of decoder layer (dense, mixture of experts) as the shapes of
      its parameters, and ``root_shapes`` the root's: FSDP2's all-gather and reduce-scatter
      buffers, padded per parameter (``vram.fsdp2.gathered_sizes``).
    """

    params: int
    largest_layer_params: int | None = None
    decoder_layer_params: int | None = None
    num_layers: int | None = None
    root_params: int | None = None
    output_params: int | None = None
    linear_params: int | None = None
    param_shapes: tuple[tuple[tuple[int, ...], int], ...] | None = None
    layer_shapes: tuple[tuple[tuple[int, ...], ...], ...] | None = None
    root_shapes: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self) -> None:
        check_params(self.params)
        if self.param_shapes is not None:
            total = 0
            for shape, count in self.param_shapes:
                if (
                    not shape
                    or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape)
                    or isinstance(count, bool)
                    or not isinstance(count, int)
                    or count < 1
                ):
                    raise ValueError(f"param_shapes: bad entry {(shape, count)!r}")
                total += count * _numel(shape)
            if total != self.params:
                raise ValueError(f"param_shapes hold {total:,} elements, params is {self.params:,}")
        for name in (
            "largest_layer_params",
            "decoder_layer_params",
            "num_layers",
            "root_params",
            "output_params",
            "linear_params",
        ):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if self.largest_layer_params is not None and self.largest_layer_params > self.params:
            raise ValueError(f"largest_layer_params {self.largest_layer_params:,} exceeds params {self.params:,}")


def model_shape(config: ModelConfig | Mapping[str, Any] | str | Path) -> ModelShape:
    """``ModelShape`` of a ``vram.models.ModelConfig`` (or what ``as_model_config`` accepts).

    Uses ``vram.models``: ``count_params``, ``largest_layer_params``, ``decoder_layer_params``,
    ``root_params``, ``linear_params`` (each checked against transformers in tests/vram).
    Raises ConfigError for a bad config.
    """
    from . import models

    return _model_shape(models.as_model_config(config))


@functools.lru_cache(maxsize=256)  # a ModelConfig is frozen; pages and the finder ask about few models, often
def _model_shape(config: ModelConfig) -> ModelShape:
    from . import models

    root = models.root_params(config)
    untied_input = 0 if config.tie_word_embeddings else config.vocab_size * config.hidden_size
    shapes: dict[tuple[int, ...], int] = {}
    modules = [(m, 1) for m in models.root_modules(config) if not m.tied]
    # A layer's modules differ only by its kind (experts or a dense MLP): each kind once, counted
    first_of_kind = {moe: index for index, moe in reversed(list(enumerate(config.moe_layers)))}
    for moe, index in sorted(first_of_kind.items(), key=lambda kind: kind[1]):
        modules += [(m, config.moe_layers.count(moe)) for m in models.layer_modules(config, index)]
    for module, count in modules:
        for _, shape in module.shapes:
            shapes[shape] = shapes.get(shape, 0) + count
    layer_shapes = tuple(
        tuple(dims for m in models.layer_modules(config, index) for _, dims in m.shapes)
        for index in sorted(first_of_kind.values())
    )
    root_shapes = tuple(dims for m in models.root_modules(config) if not m.tied for _, dims in m.shapes)
    return ModelShape(
        params=models.count_params(config).total,
        largest_layer_params=models.largest_layer_params(config),
        decoder_layer_params=models.decoder_layer_params(config),
        num_layers=config.num_hidden_layers,
        root_params=root,
        output_params=root - untied_input,
        linear_params=models.linear_params(config),
        param_shapes=tuple(shapes.items()),
        layer_shapes=layer_shapes,
        root_shapes=root_shapes,
    )


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
