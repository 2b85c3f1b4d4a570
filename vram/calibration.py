"""The time model's utilisation ranges, read from published measurements, and how well they predict.

Each measurement of ``measurements.yaml`` implies a share (``vram.measurements.implied_share``:
of the card's dense BF16 peak for training, of the decoding roofline for serving). A job reads
the range of its **class**:

- training: (card family, dense or MoE, task: full / lora / qlora, offloaded or not, model code:
  ``transformers`` or ``own``; ``MODEL_CODES``, read only by a rule with ``model_code``, R3);
- serving: (card family, serving, weights: 16, 8 or 4 bits, regime). The regime, under ``RULE``
  (R2): one sequence on one GPU (``single``), a batch on one GPU (``batched``) or tensor parallel
  over several GPUs, whatever the batch (``parallel``); under R0 and R1: one sequence or a batch.
  A point keeps the detailed regime (``single-tp``, ``batched-tp`` for tensor parallel runs) and a
  rule reads it its way (``Rule.keyed``).

Runs over several machines (scale checks), entries marked ``excluded`` and the runs of a source
collected after the rule was frozen (``held_out``: the source's ``collected_after`` names that rule
or a later one; a validation set for that rule) are never read.
A class without a published run takes the first of these that has one (``RELAXATIONS``,
``SERVING_RELAXATIONS``), each wider than the last, and says so (``ClassRange.exact`` False,
``level``): the same family with every training task; every family with the same kind of
model and task; every family and task; every run. The finder and the command line then say
"no published measurement" for that class.

How a class's runs become a range is a ``Rule``; both are kept, with their validation
figures on the formulas page and in bench/results.md:

- ``FIRST_RULE`` (R0, the first calibration): the lowest to the highest share of the class's
  runs; a class whose runs all come from one source is widened on both sides by
  ``source_spread`` (for every card family and kind of run measured by several sources, each
  source's median share against the median of the others; the median of those ratios).
- ``RULE`` (R1, what the site uses; written down and committed before its validation was run):
  (1) only runs whose time is mostly compute are read: the time model's own communication and
  offload for the run (their high ends, ``vram.timing``) take at most ``COMPUTE_BOUND`` of the
  measured step, so that a share says how the card computed, not how the link carried (those
  runs are still predicted and counted in the validation); (2) the class's centre is the
  median over its sources of each source's median share: every source counts once, however
  many rows it published; (3) the range is the centre divided and multiplied by the
  ``dispersion`` of sources around the centres of the others: every calibration run's share
  against the centre of its class computed without its own source, the 80th percentile
  (``COVERAGE_TARGET``, nearest rank) of the ratios (or their inverses, whichever is at least
  1), training and serving apart; (4) a class's own runs always lie inside its range; (5) the
  high end never passes the fastest run of that kind (training or serving).
  The width of a range therefore says how far one set-up's published runs sit from another's,
  and nothing is read from a run being predicted: leave-one-source-out computes the
  dispersion from the other sources alone (a nested leave-one-source-out).
- ``RULE`` (R2, what the site uses since it was written down and committed, before any of its
  validation figures was computed): training exactly as R1. Decoding: (1) only runs of server
  engines (``vram.measurements.ENGINES``: vLLM, SGLang, TensorRT-LLM, LMDeploy, TGI) are read,
  because the finder's serving job is vLLM's; runs of local engines for one user (llama.cpp,
  MLC LLM, ExLlamaV2) are still predicted, in a group of their own (``serving_local``), never
  read; (2) tensor parallel runs make a regime of their own (``parallel``), because splitting
  a model over GPUs adds per-layer communication the roofline does not count, and a finder job
  on N cards is served tensor parallel over N; (3) centre, dispersion (of server runs only),
  own runs and cap as R1. ``SECOND_RULE`` is R1, kept with its figures.
- ``LOOP_RULE`` (R3, written down and committed as the site's next rule before any of its
  figures was computed). Why: five sources collected
  after R2 was frozen fell outside R2's ranges in 19 runs of 19, on both sides: loops over Hugging
  Face transformers' model code slower than the low end, Megatron-LM and NeMo faster than the high
  end; on the same card and job the model's code moved the time by more than a range's width.
  R3 is R2 with these changes, decoding unchanged: (1) a training run's class also has its
  ``model_code`` (measurements.yaml): ``transformers``, the forward pass is transformers' modeling
  code (``AutoModelForCausalLM``, whatever loop drives it, whatever ``attn_implementation``), as
  this guide's ``train_hf.py`` and ``train_fsdp2.py`` build their models; or ``own``, the training
  framework's own implementation of the model, or transformers' layers replaced by fused kernels
  (torchtitan, torchtune, fms, Megatron-LM, NeMo, NeMo AutoModel with Transformer Engine, Liger,
  Unsloth); (2) a class without a run is widened as before with the model code kept at every step
  but the last (every run of that kind); (3) a job's model code is ``SCRIPTS_MODEL_CODE``
  (``transformers``, this guide's scripts) unless the job names another (``model_code``);
  (4) the five sources collected after R2 was frozen (``collected_after: R2``) are read: they were
  held out from R0, R1 and R2, whose held-out figures stay as computed; R3's own held-out set is
  the sources collected after R3 was committed (``collected_after: R3``); (5) centre, dispersion
  (now over classes with their model code), compute bound, own runs and cap as R2. R3's figures are
  reported whatever they are, and R3 is the site's rule from its commit on: R2 was shown to place
  transformers-code runs, the guide's own, too fast.
  What followed (recorded after R3's figures were computed, the text above left as committed):
  leave-one-source-out over the 66 training runs on one machine R3 reads, R3 covers 70 % with a
  median width of 13.9x, because the published transformers-code loops disagree with each other
  as much as with the others (in the class A100, dense, QLoRA, transformers code: 0.06 of the
  peak for universal-llm-trainer's 8B and 13B runs, 0.45 to 0.59 for Answer.AI's 70B runs over 2 to
  8 cards; and vectorlm's transformers-code runs on A100 reach up to 0.79, more than any own-code run
  on one machine, at most 0.72); the model code does not order the runs. A range 14 times wide is no answer, so the switch R3's text promised was not made: the
  site keeps R2 (``RULE``), whose held-out failure its pages state; R3 (``LOOP_RULE``) is kept,
  validated and reported beside the others.

Validation (``leave_one_source_out``): every run is predicted from a calibration that never saw
its source, through the same time model the site uses (``predicted_span``). A source held out
from a rule is never in that rule's calibration, so its runs are predicted from the calibration
of every source the rule reads, and counted in a group of their own (``group_of``: ``holdout``). ``coverage`` is
the share of measured values inside their predicted range, ``median_width`` the median of
high / low. Both matter together: a range wide enough to cover everything has coverage 1 and
no value (``WIDTH_TARGET``).

Pure standard library: the browser computes the same ranges from the same points.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .catalogue import Card
from .measurements import (
    ENGINES,
    IMPLAUSIBLE_SHARE,
    SERVER,
    Measurement,
    card_families,
    implied_share,
    is_moe,
    measured_cards,
    measurements_from_data,
    serving_bound,
)
from .models import ModelConfig
from .timing import Span, StepTime, lora_step, training_step

COVERAGE_TARGET = 0.8
WIDTH_TARGET = 1.5
COMPUTE_BOUND = 0.25  # R1 reads a run only if modelled communication + offload <= this share of its measured step
ANY = "*"
# What computes a training run's forward pass (R3's class dimension, module docstring): transformers'
# modeling code, or the framework's own implementation (or fused kernels in transformers' place).
MODEL_CODES = ("transformers", "own")
SCRIPTS_MODEL_CODE = "transformers"  # this guide's train_hf.py and train_fsdp2.py: AutoModelForCausalLM
# How a training class is widened when it has no run: (family, arch, task, offload, model code) ->
# each tuple says which of the five stay (True) and which become ANY.
RELAXATIONS = (
    (True, True, True, True, True),
    (True, True, False, True, True),
    (False, True, True, True, True),
    (False, True, False, True, True),
    (False, False, False, True, True),
    (False, False, False, False, False),
)
# (family, "serving", weights bits, regime)
PARALLEL = "parallel"
TP_SUFFIX = "-tp"  # a point's detailed regime: "single-tp", "batched-tp" for tensor parallel runs
SERVING_RELAXATIONS = (  # the fifth: a decoding class's model code, always ANY
    (True, True, True, True, True),
    (True, True, False, True, True),
    (False, True, True, True, True),
    (False, True, False, True, True),
    (False, True, False, False, True),
)
WEIGHT_BITS = {"bf16": "16", "fp8": "8", "int4": "4", "nf4": "4", "mxfp4": "4"}


@dataclass(frozen=True)
class Rule:
    """How a class's runs become its range (module docstring): ``name``; ``centred`` False for
    R0 (lowest to highest share, one-source classes widened by ``source_spread``), True for R1
    and R2 (median of the sources' medians x/÷ ``dispersion``); ``compute_bound``: the largest
    share of a run's measured step the model's communication and offload may take for the run to
    be read (None: every run); ``engines``: the kind of engine whose decoding runs are read
    (``vram.measurements.ENGINES``; None: every engine); ``parallel``: tensor parallel decoding
    is a regime of its own; ``model_code``: a training class has its model code (R3)."""

    name: str
    centred: bool
    compute_bound: float | None
    engines: str | None = None
    parallel: bool = False
    model_code: bool = False

    def regime(self, detailed: str) -> str:
        """A decoding regime as this rule reads it: ``single`` or ``batched``, or ``parallel``
        for a tensor parallel run (``single-tp``, ``batched-tp``) when the rule sets it apart."""
        one_gpu = detailed.removesuffix(TP_SUFFIX)
        return PARALLEL if self.parallel and detailed != one_gpu else one_gpu

    def keyed(self, point: Point) -> Point:
        """``point`` with its class as this rule reads it: a decoding regime (``regime``); a
        training run's model code, or ANY for a rule without ``model_code``."""
        if point.arch != "serving":
            return point if self.model_code else dataclasses.replace(point, code=ANY)
        return dataclasses.replace(point, offload=self.regime(point.offload))

    def job_key(self, key: tuple[str, ...]) -> tuple[str, ...]:
        """A training job's class (``job_class``) as this rule reads it: the model code ANY for a
        rule without ``model_code``; a decoding class as given."""
        if key[1] == "serving" or self.model_code:
            return key
        return (*key[:4], ANY)

    def reads(self, m: Measurement) -> bool:
        """Whether the rule calibrates on a run of ``m``'s engine (training runs: always)."""
        return m.task != "serving" or self.engines is None or ENGINES[m.engine] == self.engines


FIRST_RULE = Rule("R0", centred=False, compute_bound=None)
SECOND_RULE = Rule("R1", centred=True, compute_bound=COMPUTE_BOUND)
RULE = Rule("R2", centred=True, compute_bound=COMPUTE_BOUND, engines=SERVER, parallel=True)
LOOP_RULE = Rule("R3", centred=True, compute_bound=COMPUTE_BOUND, engines=SERVER, parallel=True, model_code=True)
RULES = (FIRST_RULE, SECOND_RULE, RULE, LOOP_RULE)  # in the order they were frozen


def held_out(m: Measurement, rule: Rule) -> bool:
    """Whether ``m``'s source was collected after ``rule`` was frozen (its ``collected_after``
    names ``rule`` or a later rule of ``RULES``): ``rule`` never reads it, a held-out run."""
    names = [r.name for r in RULES]
    return m.collected_after is not None and names.index(rule.name) <= names.index(m.collected_after)


@dataclass(frozen=True)
class Point:
    """One run as the calibration reads it: its class fields, the share it implies, its source."""

    key: str
    source: str
    gpu: str
    family: str
    arch: str  # "dense", "moe"; "serving" for decoding
    task: str  # full, lora, qlora; serving: the weights' bits ("16", "8", "4")
    offload: str  # training: "none" or "offload"; serving: "single" or "batched"
    share: float
    code: str = ANY  # training: the run's model code (MODEL_CODES); decoding: ANY

    @property
    def class_key(self) -> tuple[str, str, str, str, str]:
        return (self.family, self.arch, self.task, self.offload, self.code)

    def as_list(self) -> list[Any]:
        """The point as plain JSON values (``Point(*as_list())`` gives it back)."""
        return [self.key, self.source, self.gpu, self.family, self.arch, self.task, self.offload, self.share, self.code]


@dataclass(frozen=True)
class ClassRange:
    """The range a class reads (``low``, ``high``: shares), from ``runs`` published runs of
    ``sources``; ``key`` the class asked for, ``used`` the class the runs come from (ANY where
    widened), ``level`` the relaxation step (0: the class itself)."""

    key: tuple[str, ...]
    used: tuple[str, ...]
    low: float
    high: float
    runs: int
    sources: tuple[str, ...]
    level: int

    @property
    def exact(self) -> bool:
        return self.level == 0

    @property
    def utilisation(self) -> tuple[float, float]:
        return (self.low, self.high)


def job_class(
    family: str, moe: bool, task: str, offload: bool, model_code: str = SCRIPTS_MODEL_CODE
) -> tuple[str, str, str, str, str]:
    """The class of a training job: (family, "dense"/"moe", task, "offload"/"none", model code:
    ``MODEL_CODES``, by default this guide's scripts')."""
    return (family, "moe" if moe else "dense", task, "offload" if offload else "none", model_code)


def detailed_regime(batch: int, tensor_parallel: int) -> str:
    """``single`` or ``batched``, with ``TP_SUFFIX`` when the model is split over GPUs."""
    return ("single" if batch == 1 else "batched") + (TP_SUFFIX if tensor_parallel > 1 else "")


def serving_class(
    family: str, weights: str, batch: int, tensor_parallel: int = 1, rule: Rule = RULE
) -> tuple[str, str, str, str, str]:
    """The class of a decoding job as ``rule`` reads it: (family, "serving", weight bits, regime:
    ``Rule.regime`` of ``batch`` sequences over ``tensor_parallel`` GPUs, ANY: no model code)."""
    return (family, "serving", WEIGHT_BITS[weights], rule.regime(detailed_regime(batch, tensor_parallel)), ANY)


def point_of(m: Measurement, family: str, card: Card, config: ModelConfig) -> Point:
    """``m`` as a calibration point on ``card`` (of ``family``), ``config`` its model; a decoding
    run keeps its detailed regime (``detailed_regime``), which each rule reads its way."""
    share = implied_share(m, card, config)
    if m.task == "serving":
        key = (family, "serving", WEIGHT_BITS[m.weights], detailed_regime(m.batch, m.tensor_parallel), ANY)
    else:
        key = job_class(family, is_moe(config), m.task, m.offload != "none", m.model_code)
    return Point(m.key, m.source, m.gpu, *key[:4], share, key[4])


def calibration_points(
    points: Iterable[Point],
    measurements: Mapping[str, Measurement],
    link_shares: Mapping[str, float] | None = None,
    rule: Rule = RULE,
) -> list[Point]:
    """The points a calibration reads, keyed as ``rule`` reads them (``Rule.keyed``): one
    machine, not excluded, not of a source held out from ``rule`` (``held_out``), of an engine the
    rule reads (``Rule.reads``), and under ``rule``'s
    ``compute_bound`` those whose ``link_shares`` (key -> the modelled communication and offload
    over the measured step, ``link_share``) is at most that."""
    link_shares = link_shares or {}
    return [
        rule.keyed(p)
        for p in points
        if not measurements[p.key].excluded
        and not measurements[p.key].scale_check
        and not held_out(measurements[p.key], rule)
        and rule.reads(measurements[p.key])
        and (rule.compute_bound is None or link_shares.get(p.key, 0.0) <= rule.compute_bound)
    ]


def source_spread(points: Iterable[Point]) -> float:
    """How far one source's runs sit from another's on the same cards: over every (card family,
    dense / MoE / serving) group with runs from several sources, each source's median share
    divided by the median share of the group's other sources (or the inverse, whichever is at
    least 1); the median of those ratios. 1.0 when no group has two sources."""
    by_class: dict[tuple[str, str], dict[str, list[float]]] = {}
    for p in points:
        by_class.setdefault((p.family, p.arch), {}).setdefault(p.source, []).append(p.share)
    ratios = []
    for sources in by_class.values():
        for source, shares in sources.items():
            others = [share for other, values in sources.items() if other != source for share in values]
            if others:
                ratio = statistics.median(shares) / statistics.median(others)
                ratios.append(max(ratio, 1 / ratio))
    return statistics.median(ratios) if ratios else 1.0


def _class_runs(points: list[Point], key: tuple[str, ...]) -> tuple[int, tuple[str, ...], list[Point]] | None:
    """(relaxation level, the class used with ANY where widened, its runs) for ``key``: the first
    of ``RELAXATIONS`` (``SERVING_RELAXATIONS``) with a run; None when no run of that kind exists."""
    serving = key[1] == "serving"
    steps = SERVING_RELAXATIONS if serving else RELAXATIONS
    for level, keep in enumerate(steps):
        used = tuple(value if kept else ANY for value, kept in zip(key, keep, strict=True))
        found = [
            p
            for p in points
            if (p.arch == "serving") == serving and all(u in (ANY, v) for u, v in zip(used, p.class_key, strict=True))
        ]
        if found:
            return level, used, found
    return None


def source_centre(runs: Iterable[Point]) -> float:
    """The median over the runs' sources of each source's median share: every source once."""
    by_source: dict[str, list[float]] = {}
    for p in runs:
        by_source.setdefault(p.source, []).append(p.share)
    return statistics.median(statistics.median(shares) for shares in by_source.values())


def nearest_rank(values: Iterable[float], share: float) -> float:
    """The ``share`` quantile of ``values`` by nearest rank (the smallest value with at least
    that share of the values at or below it)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def dispersion(points: Iterable[Point], serving: bool) -> float:
    """How far one source's runs sit from the others' (R1, module docstring): for every point of
    that kind (training or serving), its share against ``source_centre`` of its class computed
    from the points of the other sources only (the class relaxed as ``class_range`` does), as a
    ratio of at least 1; the ``COVERAGE_TARGET`` quantile (nearest rank). 1.0 when no point can
    be compared (a single source)."""
    points = [p for p in points if (p.arch == "serving") == serving]
    ratios = []
    for source in {p.source for p in points}:
        others = [p for p in points if p.source != source]
        for p in points:
            if p.source != source:
                continue
            found = _class_runs(others, p.class_key)
            if found is not None:
                ratio = p.share / source_centre(found[2])
                ratios.append(max(ratio, 1 / ratio))
    return nearest_rank(ratios, COVERAGE_TARGET) if ratios else 1.0


@functools.lru_cache(maxsize=64)
def _dispersion_cached(points: tuple[Point, ...], serving: bool) -> float:
    return dispersion(points, serving)


def class_range(points: Iterable[Point], key: tuple[str, ...], rule: Rule = RULE) -> ClassRange | None:
    """The range of class ``key`` (as ``rule`` reads it: ``Rule.job_key``) read from ``points``
    (already the calibration's, keyed by ``rule``: one machine, not excluded; module docstring)
    under ``rule``, the class relaxed as ``RELAXATIONS`` say
    when it has no run; None when no point of that kind (training or serving) exists at all.
    R0: the runs' lowest to highest share, widened by ``source_spread`` when they come from one
    source. R1: ``source_centre`` x/÷ ``dispersion``, holding the class's own runs. The high end
    never passes the highest share any run of that kind reached: no forecast is faster than the
    fastest published run."""
    points = tuple(points)
    found = _class_runs(list(points), rule.job_key(key))
    if found is None:
        return None
    level, used, runs = found
    serving = key[1] == "serving"
    shares = [p.share for p in runs]
    sources = tuple(sorted({p.source for p in runs}))
    fastest = max(p.share for p in points if (p.arch == "serving") == serving)
    if rule.centred:
        centre, factor = source_centre(runs), _dispersion_cached(points, serving)
        low, high = min(centre / factor, *shares), max(centre * factor, *shares)
    else:
        spread = source_spread(points) if len(sources) == 1 else 1.0
        low, high = min(shares) / spread, max(shares) * spread
    return ClassRange(key, used, low, min(fastest, high), len(runs), sources, level)


def class_table(points: Iterable[Point], rule: Rule = RULE) -> list[ClassRange]:
    """Every class that has published runs, with its range: the table a reader can check."""
    points = tuple(points)
    keys = sorted({p.class_key for p in points})
    return [found for key in keys if (found := class_range(points, key, rule)) is not None]  # each key has runs


# --- predicting a measured run: the validation ------------------------------------------------


def _training_step(m: Measurement, card: Card, config: ModelConfig, utilisation: tuple[float, float]) -> StepTime:
    """``vram.timing``'s step for ``m``'s run (world size, ZeRO stage, batch, recomputation,
    offload) at ``utilisation``."""
    if m.task == "full":
        return training_step(
            config,
            card,
            m.count,
            m.zero_stage,
            m.seq_len,
            m.micro_batch,
            m.recompute,
            m.offload != "none",
            utilisation=utilisation,
        )
    return lora_step(
        config,
        card,
        m.count,
        m.zero_stage,
        m.seq_len,
        m.micro_batch,
        m.recompute,
        m.lora_rank,
        m.lora_targets,
        "nf4" if m.task == "qlora" else "bf16",
        utilisation=utilisation,
    )


def link_share(m: Measurement, card: Card, config: ModelConfig) -> float:
    """For a training run: the time model's communication and offload (their high ends) over
    the step the source measured (tokens per GPU and step / measured tokens/s per GPU). What R1's
    ``compute_bound`` reads."""
    step = _training_step(m, card, config, (1.0, 1.0))
    measured_step = m.micro_batch * m.seq_len / m.tokens_per_s_per_gpu
    return (step.communication.high + step.offload.high) / measured_step


def predicted_span(m: Measurement, card: Card, config: ModelConfig, backing: ClassRange) -> Span:
    """Tokens/s of ``m``'s run as the time model predicts them with ``backing``'s range: per GPU
    for training (``vram.timing``'s step for ``m``'s world size, ZeRO stage, batch,
    recomputation and offload), for serving the roofline x the range (per sequence or in all)."""
    if m.task == "serving":
        bound = serving_bound(m, card, config)
        return Span(bound * backing.low, bound * backing.high)
    rate = _training_step(m, card, config, backing.utilisation).tokens_per_second
    return Span(rate.low / m.count, rate.high / m.count)


@dataclass(frozen=True)
class Check:
    """One run predicted without its source: ``measured`` and ``predicted`` (tokens/s, the
    unit of ``predicted_span``), the range that backed it."""

    key: str
    source: str
    gpu: str
    measured: float
    predicted: Span
    backing: ClassRange
    scale_check: bool
    held_out: bool = False  # its source was collected after the predicting rule was frozen (``held_out``)

    @property
    def covered(self) -> bool:
        return self.predicted.low <= self.measured <= self.predicted.high

    @property
    def width(self) -> float:
        return self.predicted.high / self.predicted.low

    @property
    def measured_over_low(self) -> float:
        """The measured value over the predicted range's low end: below 1 for a run slower than
        its range, at least 1 for one inside or above it."""
        return self.measured / self.predicted.low


def leave_one_source_out(
    points: list[Point],
    measurements: Mapping[str, Measurement],
    cards: Mapping[str, Card],
    configs: Mapping[str, ModelConfig],
    link_shares: Mapping[str, float] | None = None,
    rule: Rule = RULE,
) -> list[Check]:
    """Every non-excluded run (scale checks included, flagged) predicted from the calibration
    points (``calibration_points`` under ``rule``) of every other source; the runs of a source held
    out from ``rule`` therefore from every source ``rule`` reads (none of it is ever read). ``configs``: model key
    -> its config; ``link_shares``: ``MeasuredData.link_shares``."""
    calibrating = calibration_points(points, measurements, link_shares, rule)
    checks = []
    for point in points:
        m = measurements[point.key]
        if m.excluded:
            continue
        others = tuple(p for p in calibrating if p.source != m.source)
        backing = class_range(others, rule.keyed(point).class_key, rule)
        if backing is None:
            continue
        predicted = predicted_span(m, cards[m.gpu], configs[m.model], backing)
        measured = m.decoding_tokens_per_s if m.task == "serving" else m.tokens_per_s_per_gpu
        checks.append(Check(m.key, m.source, m.gpu, measured, predicted, backing, m.scale_check, held_out(m, rule)))
    return checks


def coverage(checks: Iterable[Check]) -> float:
    """Share of ``checks`` whose measured value lies inside its predicted range."""
    checks = list(checks)
    return sum(c.covered for c in checks) / len(checks)


def median_width(checks: Iterable[Check]) -> float:
    """Median of the predicted ranges' high / low."""
    return statistics.median(c.width for c in checks)


def meets_targets(coverage_value: float, width: float) -> bool:
    """Whether a validation meets the issue's targets: coverage >= 80 % with a median width
    <= 1.5x (``COVERAGE_TARGET``, ``WIDTH_TARGET``)."""
    return coverage_value >= COVERAGE_TARGET and width <= WIDTH_TARGET


# --- the calibration handed around: built from the data, passed to the finder as JSON -------


@dataclass(frozen=True)
class Calibration:
    """What the time model reads: ``points`` (the runs it calibrates on: one machine, not
    excluded), ``families`` (card key -> family key) and ``names`` (family key -> its name)."""

    points: tuple[Point, ...]
    families: Mapping[str, str]
    names: Mapping[str, str]
    _backings: dict[tuple[str, tuple[str, ...]], Backing | None] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def backing(self, gpu: str, key_without_family: tuple[str, ...]) -> Backing | None:
        """The range behind a job on ``gpu`` of class (family of ``gpu``, *key_without_family*:
        ``job_class`` or ``serving_class`` without their first value),
        with the runs on that card itself; None when no run of that kind exists. A card in no
        family (one just added to the catalogue) reads the classes of every family. Each answer
        is kept: the calibration is frozen, and a finder page asks the same few thousand times."""
        asked = (gpu, key_without_family)
        if asked not in self._backings:
            self._backings[asked] = self._backing(gpu, key_without_family)
        return self._backings[asked]

    def _backing(self, gpu: str, key_without_family: tuple[str, ...]) -> Backing | None:
        family = self.families.get(gpu, "")
        found = class_range(self.points, (family, *key_without_family))
        if found is None:
            return None
        on_card = sum(
            1
            for p in self.points
            if p.gpu == gpu
            and p.arch == found.key[1]
            and all(u in (ANY, v) for u, v in zip(found.used, p.class_key, strict=True))
        )
        return Backing(found, self.names.get(family, gpu), on_card)

    def as_job(self) -> dict[str, Any]:
        """The calibration as ``vram.job``'s ``calibration`` field (plain JSON values)."""
        return {
            "families": dict(self.families),
            "names": dict(self.names),
            "points": [p.as_list() for p in self.points],
        }


@dataclass(frozen=True)
class Backing:
    """Which published runs back a job's time: the class range, the family's name and how many
    of those runs were on the job's own card."""

    range: ClassRange
    family_name: str
    on_card: int

    def as_dict(self) -> dict[str, Any]:
        """As the finder shows it: ``family`` (name), ``runs``, ``sources``, ``on_card``, ``exact``
        (the job's own class has runs), ``share`` [low, high] and ``class`` (ANY where widened)."""
        r = self.range
        return {
            "family": self.family_name,
            "runs": r.runs,
            "sources": list(r.sources),
            "on_card": self.on_card,
            "exact": r.exact,
            "share": [r.low, r.high],
            "class": list(r.used),
        }


def _point(row: Any) -> Point:
    key, source, gpu, family, arch, task, offload, share, code = row
    names = (key, source, gpu, family, arch, task, offload, code)
    if isinstance(row, str | dict) or not all(isinstance(value, str) for value in names):
        raise TypeError(f"a row is a list of eight strings and a share, not {row!r:.80}")
    return Point(key, source, gpu, family, arch, task, offload, float(share), code)


def calibration_from_job(raw: Any) -> Calibration:
    """A ``Calibration`` from ``vram.job``'s ``calibration`` field (``Calibration.as_job``).
    Raises ValueError naming what is malformed."""
    try:
        points = tuple(_point(row) for row in raw["points"])
        families, names = dict(raw["families"]), dict(raw["names"])
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:  # OverflowError: float(10**400)
        raise ValueError(f"calibration needs families, names and points rows of 9 values ({exc})") from None
    for p in points:
        if not 0 < p.share <= 1 or p.family not in names or p.code not in (*MODEL_CODES, ANY):
            raise ValueError(f"calibration point {p.key!r}: a share in (0, 1], a known family and model code")
    return Calibration(points, families, names)


@dataclass(frozen=True)
class MeasuredData:
    """measurements.yaml resolved against the catalogue: every measurement, its card and model,
    every point (scale checks and excluded runs included) and the ``Calibration`` of the rest."""

    measurements: Mapping[str, Measurement]
    cards: Mapping[str, Card]
    configs: Mapping[str, ModelConfig]
    points: tuple[Point, ...]
    calibration: Calibration
    link_shares: Mapping[str, float]  # training run -> modelled communication + offload / measured step

    def checks(self, rule: Rule = RULE) -> list[Check]:
        """``leave_one_source_out`` over every point, under ``rule``."""
        return leave_one_source_out(
            list(self.points), self.measurements, self.cards, self.configs, self.link_shares, rule
        )


def measured_data(
    data: Mapping[str, Any],
    catalogue_cards: Mapping[str, Card],
    interconnects: Mapping[str, Any],
    configs: Mapping[str, ModelConfig],
) -> MeasuredData:
    """Resolve ``measurements.yaml`` (``data``, schema-checked) against the catalogue's cards,
    ``interconnects.yaml`` and ``configs`` (model key -> config, for every model the runs name).
    Raises ValueError in one line naming the entry and key: a card in no catalogue, a family
    card the catalogue lacks, an unknown interconnect or model, a source's ``collected_after``
    that names no rule of ``RULES``, a training run's ``model_code`` not one of ``MODEL_CODES``,
    or a run implying at least 90 % of the peak (or the roofline) that is not marked excluded."""
    cards = {**catalogue_cards, **measured_cards(data, interconnects)}
    families = card_families(data)
    for family, entry in data["families"].items():
        for card in entry["cards"]:
            if card not in cards:
                raise ValueError(f"families.{family}.cards: {card!r} is not a card of gpus.yaml or of cards")
    links = {row["key"] for row in interconnects["rows"]} | {p["key"] for p in interconnects.get("without_p2p", [])}
    rule_names = [rule.name for rule in RULES]
    for key, source in data.get("sources", {}).items():  # the command line reads the file without the schema
        if source.get("collected_after", rule_names[0]) not in rule_names:
            raise ValueError(
                f"sources.{key}.collected_after: {source['collected_after']!r} is not one of {', '.join(rule_names)}"
            )
    measurements = {m.key: m for m in measurements_from_data(data)}
    points = []
    for m in measurements.values():
        where = f"measurements.{m.key}"
        if m.gpu not in cards:
            raise ValueError(f"{where}.gpu: {m.gpu!r} is not a card of gpus.yaml or of cards")
        if m.interconnect != "none" and m.interconnect not in links:
            raise ValueError(f"{where}.interconnect: {m.interconnect!r} is not a key of interconnects.yaml")
        if m.model not in configs:
            raise ValueError(f"{where}.model: {m.model!r} is not a model of models.yaml or of models")
        if m.task != "serving" and m.model_code not in MODEL_CODES:
            raise ValueError(f"{where}.model_code: {m.model_code!r} is not one of {', '.join(MODEL_CODES)}")
        point = point_of(m, families[m.gpu], cards[m.gpu], configs[m.model])
        if point.share >= IMPLAUSIBLE_SHARE and not m.excluded:
            what = "the decoding roofline" if m.task == "serving" else f"{cards[m.gpu].name}'s dense BF16 peak"
            raise ValueError(
                f"{where}.tokens_per_s: implies {point.share:.0%} of {what}; "
                f"at or above {IMPLAUSIBLE_SHARE:.0%} an entry stays only marked excluded, with the reason"
            )
        points.append(point)
    names = {family: entry["name"] for family, entry in data["families"].items()}
    link_shares = {
        m.key: link_share(m, cards[m.gpu], configs[m.model]) for m in measurements.values() if m.task != "serving"
    }
    calibration = Calibration(tuple(calibration_points(points, measurements, link_shares)), families, names)
    return MeasuredData(measurements, cards, dict(configs), tuple(points), calibration, link_shares)


def load_measured_data(data_dir: Any = None) -> MeasuredData:
    """``measured_data`` from the YAML files and configs of ``data_dir`` (default: this
    repository's snippets/data), for the command line. Raises ValueError in one line."""
    import json
    from pathlib import Path

    import yaml  # the command line only: the calculator itself is standard library

    from .catalogue import DATA_DIR, cards_from_data, parse_yaml
    from .models import load_model_config

    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    raw = {}
    for name in ("measurements", "gpus", "interconnects", "models"):
        try:
            raw[name] = parse_yaml((folder / f"{name}.yaml").read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"cannot read {folder / (name + '.yaml')}: {' '.join(str(exc).split())}") from None
    entries = {**raw["models"]["models"], **raw["measurements"].get("models", {})}
    used = {entry["model"] for entry in raw["measurements"]["measurements"].values()}
    configs = {}
    for key in sorted(used & set(entries)):
        try:
            configs[key] = load_model_config(folder / "models" / entries[key]["config"])
        except (OSError, ValueError, json.JSONDecodeError) as exc:
            raise ValueError(f"measurements.yaml: model {key}: {exc}") from None
    try:
        return measured_data(
            raw["measurements"], cards_from_data(raw["gpus"], raw["interconnects"]), raw["interconnects"], configs
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"measurements.yaml in {folder} lacks {exc}") from None


@dataclass(frozen=True)
class Figures:
    """The validation of one group of runs: how many, ``coverage`` and ``median_width``."""

    runs: int
    coverage: float
    median_width: float

    @property
    def meets_targets(self) -> bool:
        return meets_targets(self.coverage, self.median_width)


GROUPS = ("training", "serving", "serving_local", "scale", "holdout")


def group_of(check: Check, measurements: Mapping[str, Measurement]) -> str:
    """Which figure a check counts in: "holdout" (a run of a source held out from the rule
    that predicted it, on one machine or several: ``Check.held_out``), "scale" (several machines), "serving" (decoding by a
    server engine, the finder's job), "serving_local" (decoding by a local engine) or
    "training"."""
    m = measurements[check.key]
    if check.held_out:
        return "holdout"
    if check.scale_check:
        return "scale"
    if m.task == "serving":
        return "serving" if ENGINES[m.engine] == SERVER else "serving_local"
    return "training"


def validation_figures(checks: Iterable[Check], measurements: Mapping[str, Measurement]) -> dict[str, Figures]:
    """``Figures`` per group of ``GROUPS``: training on one machine (the times and costs the
    finder ranks by), decoding by server engines (the realistic range beside the roofline),
    decoding by local engines (predicted with the same range, which no rule since R2 reads
    them for), the scale checks (runs over several machines, predicted with the one-machine
    model) and the held-out sources' runs (never calibrated on: an out-of-sample check)."""
    checks = list(checks)
    found = {}
    for group in GROUPS:
        chosen = [c for c in checks if group_of(c, measurements) == group]
        if chosen:
            found[group] = Figures(len(chosen), coverage(chosen), median_width(chosen))
    return found
