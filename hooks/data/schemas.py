"""Schemas of the data files (pydantic 2): one model per YAML file of ``snippets/data/``
and ``snippets/comments.yaml``, registered in ``SCHEMAS`` by file name.

``hooks.data.load.load_yaml`` validates every file it reads against its schema, and every build
validates every YAML file of ``snippets/data/`` first (``check_data_files``): a file without
a schema is an error too. A refusal is one line naming the file and the key
(``snippets/data/gpus.yaml: gpus.h200.memory_gb: Input should be a valid number (got '141 GB')``;
list items count from 1). Validation is strict: a number is an int or a float, never a
string or a bool; a text is a string; unknown keys are refused (a typo is not ignored).

Texts shown to readers are ``Text``: a mapping with exactly the site's languages
(``mkdocs.yml``), each a non-empty string. A text the code fills with ``str.format`` (or
``finder.js``'s ``fill``, or the notebook's ``fill``: ``str.replace`` of each ``{field}``) declares the fields the code passes, ``Text("choice")``, or, for
the tables of labels, ``FINDER_LABEL_FIELDS`` / ``NOTEBOOK_LABEL_FIELDS``: any other field
(``{nope}``) or a lone brace is refused; ``{{`` and ``}}`` are literal braces.

Adding a key or a file: add the field to its model below (or a new model to ``SCHEMAS``),
with its type (``Text(...)`` for reader-facing text); that is the only place to edit.
"""

import re
import string
import unicodedata
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, StringConstraints, model_validator

from verify.languages import DEFAULT_LANGUAGE, LANGUAGES, check_languages
from verify.record import LINK_CLASSES
from vram.accounting import ACCOUNTINGS, accounting
from vram.calibration import MODEL_CODES, RULES
from vram.frameworks import OFFLOAD
from vram.measurements import ENGINES


class Data(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _keys_are_names(cls, data: Any) -> Any:
        """A key that is not a string, named after the key before it: in a flow mapping
        (``{gpu: h100, price_eur_per_hour_from: 31,20}``) a decimal comma ends the value, and
        YAML reads ``31`` and a key ``20``."""
        if not isinstance(data, dict):
            return data
        previous = None
        for key, value in data.items():
            if not isinstance(key, str):
                if previous is not None and value is None and type(key) is int and type(data[previous]) in (int, float):
                    raise ValueError(
                        f"{previous}: a number written with a decimal comma ({data[previous]},…): in {{…}} the "
                        f"comma ends the value, and YAML read {data[previous]} and a key {key}; write a decimal point"
                    )
                raise ValueError(f"a key that is not a name ({key!r}) after {previous!r}")
            previous = key
        return data


Key = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$")]
HIDDEN_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "a format character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Cs": "a surrogate",
}


def plain_text(text: str) -> str:
    """``text`` if it is text only, as every data text written into a page must be: no ``<``
    (the render layer writes data texts into Markdown, which passes HTML through: a tag or a
    comment would be markup of the page, a link to another host, a hidden row) and no
    character a reader does not see or that reorders what they see (a control character but a
    newline or tab, a bidirectional override, a zero-width character, a line separator).
    Raises ValueError naming the character."""
    if "<" in text:
        raise ValueError(
            f"{text[:40]!r}: '<' would start HTML markup in the page; a data text is text only (write it in words)"
        )
    for char in text:
        kind = HIDDEN_CATEGORIES.get(unicodedata.category(char))
        if kind and char not in "\n\t":
            raise ValueError(f"{text[:40]!r}: contains {kind} (U+{ord(char):04X}), not seen by a reader as written")
    return text


Name = Annotated[str, StringConstraints(min_length=1), AfterValidator(plain_text)]
Count = Annotated[int, Field(ge=1)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
ZeroStage = Annotated[int, Field(ge=0, le=3)]


# ---------------------------------------------------------------- texts in every language
def format_fields(template: str) -> set[str]:
    """The fields ``str.format`` would fill in ``template``; raises ValueError for a lone brace."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def check_text(value: dict[str, str], fields: Iterable[str] = (), required: bool = False) -> dict[str, str]:
    """``value`` if it has exactly the site's languages and uses only ``fields`` (with
    ``required``, every one of them, in each language); raises ValueError."""
    check_languages(value)
    allowed = set(fields)
    for lang, text in value.items():
        try:
            used = format_fields(text)
        except ValueError as exc:
            raise ValueError(f"{lang}: {exc} (write {{{{ and }}}} for literal braces)") from None
        extra = sorted(used - allowed)
        if extra:
            may = (
                f"may use only {', '.join('{' + f + '}' for f in sorted(allowed))}" if allowed else "takes no {fields}"
            )
            raise ValueError(f"{lang}: unknown field {{{extra[0]}}}: this text {may}")
        missing = sorted(allowed - used) if required else []
        if missing:
            raise ValueError(
                f"{lang}: lacks {{{missing[0]}}}: this text states the record, every one of "
                f"{', '.join('{' + f + '}' for f in sorted(allowed))}"
            )
    return value


def Text(*fields: str) -> Any:  # a type factory, used like a type
    """A reader-facing text in every language; a template that may use only ``fields``."""
    return Annotated[dict[str, Name], AfterValidator(lambda value: check_text(value, fields))]


def RequiredText(*fields: str) -> Any:
    """A ``Text`` that must use every one of ``fields`` in every language: a text that states
    a record (the verification note) cannot print a fixed claim instead of the record's values."""
    return Annotated[dict[str, Name], AfterValidator(lambda value: check_text(value, fields, required=True))]


def Texts(fields_by_key: dict[str, tuple[str, ...]]) -> Any:
    """A table of texts whose keys are among ``fields_by_key``, each using only its fields (a
    text the code looks up and the file lacks is the code's one-line error)."""

    def check(table: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for key, value in table.items():
            if key not in fields_by_key:
                raise ValueError(
                    f"unknown text {key!r}: add it, with the fields the code passes, to hooks/data/schemas.py"
                )
            try:
                check_text(value, fields_by_key[key])
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
        return table

    return Annotated[dict[str, Annotated[dict[str, Name], AfterValidator(check_languages)]], AfterValidator(check)]


# ---------------------------------------------------------------- snippets/data/gpus.yaml
class Card(Data):
    name: Name
    short_name: Name | None = None  # the name the prose uses ("H200" for "H200 141GB"); name when absent
    memory_mib: Count  # nvidia-smi's memory.total (MiB = 2^20 bytes)
    source: Name  # a public nvidia-smi output showing it
    bf16_dense_tflops: Positive  # vendor datasheet: BF16 tensor, FP32 accumulate, without sparsity (vram.timing)
    memory_bandwidth_gb_per_s: Positive  # vendor datasheet (10^9 bytes/s)
    datasheet: Name  # the vendor document of both figures
    peer_link: Key  # interconnects.yaml: a row's key, or a without_p2p key (no peer-to-peer)
    host_link: Key  # interconnects.yaml: the row of the card's PCIe link to host memory (offload)


def _host_ram_gb(value: Any) -> Any:
    if value == "not published" or (type(value) is int and value >= 1):
        return value
    raise ValueError(f"must be whole GB (an integer, the catalogue's figure) or 'not published', got {value!r}")


class Machine(Data):
    gpu: Key
    count: Count
    price_eur_per_hour_from: Positive
    # the machine's system RAM (whole GB, the rental catalogue's row), or "not published" (vram.job host_ram_gb)
    host_ram_gb: Annotated[Any, AfterValidator(_host_ram_gb)]
    host_ram_source: Name  # where the figure comes from, or why there is none

    @model_validator(mode="after")
    def _unpublished_ram_says_so(self) -> Self:
        if self.host_ram_gb == "not published" and not self.host_ram_source.startswith("not published"):
            raise ValueError("host_ram_source: must start with 'not published' when host_ram_gb is 'not published'")
        return self


class GpusFile(Data):
    reserve_mib: Annotated[int, Field(ge=0)]  # CUDA context and NCCL buffers, taken from every card (vram.fit)
    gpus: Annotated[dict[Key, Card], Field(min_length=1)]
    machines: dict[Key, Machine]

    @model_validator(mode="after")
    def _machines_use_catalogue_cards(self) -> Self:
        for key, machine in self.machines.items():
            if machine.gpu not in self.gpus:
                raise ValueError(f"machines.{key}.gpu: {machine.gpu!r} is not a card of gpus")
        return self

    @model_validator(mode="after")
    def _reserve_below_every_card(self) -> Self:
        for key, card in self.gpus.items():
            if self.reserve_mib >= card.memory_mib:
                raise ValueError(f"reserve_mib {self.reserve_mib} leaves nothing of gpus.{key} ({card.memory_mib} MiB)")
        return self


# ---------------------------------------------------------------- snippets/data/interconnects.yaml
class Interconnect(Data):
    link: Text()
    key: Key  # how gpus.yaml (peer_link, host_link) and vram.timing name the row
    class_: Literal["pcie", "nvlink"] = Field(alias="class")
    bandwidth_gb_per_s: Annotated[list[Positive], Field(min_length=2, max_length=2)]  # [low, high]
    per_direction: bool = False
    approximate: bool = False
    where: Text()

    @model_validator(mode="after")
    def _low_then_high(self) -> Self:
        low, high = self.bandwidth_gb_per_s
        if low > high:
            raise ValueError(f"bandwidth_gb_per_s: [low, high], got [{low:g}, {high:g}]")
        return self


class HostPath(Data):
    """The path between two cards without peer-to-peer: through host memory over ``over``."""

    key: Key
    over: Key  # the PCIe row it crosses
    bandwidth_gb_per_s: Annotated[list[Positive], Field(min_length=2, max_length=2)]  # [low, high] per direction
    source: Name  # where each end comes from


class InterconnectsFile(Data):
    columns: Texts({"link": (), "speed": (), "where": ()})
    qualifiers: Texts({"per_direction": (), "approximate": ("value",)})
    rows: Annotated[list[Interconnect], Field(min_length=1)]
    without_p2p: list[HostPath] = []

    @model_validator(mode="after")
    def _keys_once_and_paths_over_rows(self) -> Self:
        keys = [row.key for row in self.rows] + [path.key for path in self.without_p2p]
        for key in keys:
            if keys.count(key) > 1:
                raise ValueError(f"key {key!r} is used twice")
        for path in self.without_p2p:
            over = next((row for row in self.rows if row.key == path.over), None)  # keys are unique (above)
            if over is None:
                raise ValueError(f"without_p2p.{path.key}.over: {path.over!r} is not the key of a row")
            low, high = path.bandwidth_gb_per_s
            if not low <= high <= over.bandwidth_gb_per_s[0]:
                raise ValueError(
                    f"without_p2p.{path.key}.bandwidth_gb_per_s: [low, high] with high at most "
                    f"{path.over}'s low end, {over.bandwidth_gb_per_s[0]:g} (never faster than peer-to-peer)"
                )
        return self


# ---------------------------------------------------------------- snippets/data/sharding.yaml, needs.yaml, units.yaml
class ShardingRow(Data):
    zero_stage: ZeroStage
    method: Text()
    holds: Text()


class ShardingFile(Data):
    columns: Texts({"method": (), "holds": (), "per_gpu": ("world_size",)})
    rows: Annotated[list[ShardingRow], Field(min_length=1)]


class NeedsRow(Data):
    job: Text()
    one_card: Text()  # may hold number placeholders: {{ gpu_memory gpu=h100 }} (literal braces to format)
    several_cards: Text()


class NeedsFile(Data):
    columns: Texts({"job": (), "one_card": (), "several_cards": ()})
    rows: Annotated[list[NeedsRow], Field(min_length=1)]


class UnitsFile(Data):
    labels: Annotated[dict[Key, Text()], Field(min_length=1)]
    range: Text("low", "high")
    range_words: Text("low", "high")  # a range whose ends carry their own units
    days_hours: Text("days", "hours")


# ---------------------------------------------------------------- snippets/data/timing.yaml
class CalibrationTexts(Data):
    """Words of the formulas page's validation section (hooks/render/calibration.py)."""

    columns: Texts({"family": (), "kind": (), "task": (), "share": (), "runs": (), "sources": ()})
    words: Texts(
        {
            "dense": (),
            "moe": (),
            "serving": (),
            "full": (),
            "lora": (),
            "qlora": (),
            "offload": (),
            "transformers": (),
            "own": (),
            "bits": ("bits",),
            "single": (),
            "batched": (),
            "parallel": (),
            "read": ("date",),
            "list_separator": (),
            "met": (),
            "missed": (),
        }
    )
    plot: Texts(
        {
            "measured": (),
            "predicted": (),
            "same": (),
            "scale": (),
            "serving": (),
            "serving_local": (),
            "holdout": (),
            "alt": ("runs", "coverage", "width"),
            "alt_holdout": ("runs", "inside"),
            "points": ("runs",),
            "col_run": (),
            "col_card": (),
            "col_measured": (),
            "col_predicted": (),
            "col_inside": (),
            "inside": (),
            "outside": (),
        }
    )


class TimingFile(Data):
    """Words of the time and cost figures (hooks/render/timing.py, hooks/render/calibration.py)."""

    bounds: Texts({"compute": (), "communication": (), "offload": (), "memory_bandwidth": ()})
    columns: Texts({"machine": (), "price": (), "step": (), "bound": (), "run": (), "cost": ()})
    machine: Text("count", "gpu")
    calibration: CalibrationTexts


# ---------------------------------------------------------------- snippets/data/prose.yaml
class ProseFile(Data):
    """Words of the sentences that state facts of the catalogue (hooks/render/catalogue_prose.py)."""

    card_memory: Text("card", "memory")  # one card of a list: "la B200 con 192,3 GB"
    machine: Text("count", "card")  # one priced machine: "4 × RTX 4090"
    machine_price: Text("machine", "price")  # with its price: "4 × RTX 4090 da 2,36 €/h"


# ---------------------------------------------------------------- snippets/data/models.yaml
class ModelEntry(Data):
    name: Name
    config: Annotated[str, StringConstraints(pattern=r"^[\w.-]+\.json$")]  # a file of snippets/data/models/
    source: Name  # the Hugging Face model the config.json belongs to
    copy_: Name | None = Field(None, alias="copy")  # the public file it was copied from, where not the model repository


class ModelsFile(Data):
    models: Annotated[dict[Key, ModelEntry], Field(min_length=1)]


# ---------------------------------------------------------------- snippets/data/measurements.yaml
Https = Annotated[str, StringConstraints(pattern=r"^https://[^\s<>\"]+$")]
Share = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


def _engine(value: str) -> str:
    if value not in ENGINES:
        raise ValueError(f"engine: {value!r} is not one of {', '.join(sorted(ENGINES))}")
    return value


class MeasuredCard(Data):
    """A measured card the catalogue does not carry: gpus.yaml's datasheet fields."""

    name: Name
    bf16_dense_tflops: Positive
    memory_bandwidth_gb_per_s: Positive
    datasheet: Name
    peer_link: Key
    host_link: Key
    memory_gb: Positive | None = None  # the datasheet's memory (10^9 bytes): whether a served batch fits


class CardFamily(Data):
    name: Name  # as the finder and the formulas page name the class ("A100: 9 published runs")
    cards: Annotated[list[Key], Field(min_length=1)]


GITHUB_AT_COMMIT = re.compile(r"^https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/")


class MeasurementSource(Data):
    title: Name
    url: Https  # the page itself, at a commit where the source is a repository
    where: Name  # repository, file and commit (or paper and table, or the page's date)
    read: Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")] | None = None  # a page outside git
    # held out of the calibration, with the reason: its runs are predicted (vram.calibration's
    # "holdout" group), never calibrated on by the rule named in collected_after or an earlier one
    holdout: Name | None = None
    collected_after: str | None = None  # the last rule frozen before the source was collected

    @model_validator(mode="after")
    def _findable_again(self) -> Self:
        if self.read is None and not GITHUB_AT_COMMIT.match(self.url):
            raise ValueError("url: a GitHub file at a 40-hex commit, or a page with the date it was read (read)")
        return self

    @model_validator(mode="after")
    def _held_out_from_a_rule(self) -> Self:
        names = [rule.name for rule in RULES]
        if self.collected_after is not None and self.collected_after not in names:
            raise ValueError(f"collected_after: {self.collected_after!r} is not one of {', '.join(names)}")
        if (self.holdout is None) != (self.collected_after is None):
            raise ValueError("holdout and collected_after go together: why, and after which rule it was collected")
        return self


class DerivedFrom(Data):
    """The source's own figures a throughput is computed from: ``tokens`` / ``seconds``,
    ``global_batch`` x ``seq_len`` / ``step_s``, or ``samples_per_s`` x ``seq_len`` (samples packed
    to ``seq_len`` tokens each: the machine's rate); per GPU: divided by the run's GPUs."""

    tokens: Count | None = None
    seconds: Positive | None = None
    global_batch: Count | None = None
    seq_len: Count | None = None
    step_s: Positive | None = None
    samples_per_s: Positive | None = None

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        by_time = self.tokens is not None and self.seconds is not None
        by_step = None not in (self.global_batch, self.seq_len, self.step_s)
        by_samples = self.samples_per_s is not None and self.seq_len is not None
        if [by_time, by_step, by_samples].count(True) != 1 or (by_samples and by_step):
            raise ValueError("give tokens and seconds, global_batch, seq_len and step_s, or samples_per_s and seq_len")
        return self


class Measurement(Data):
    """One published run (measurements.yaml's header describes every field)."""

    source: Key
    table: Name  # where in the source: the table and row
    gpu: Key
    count: Count
    nodes: Count = 1
    interconnect: Key  # a key of interconnects.yaml, or none for one GPU
    model: Key
    task: Literal["full", "lora", "qlora", "serving"]
    seq_len: Count | None = None
    micro_batch: Count | None = None
    recompute: Literal["none", "selective", "full"] = "none"
    optimizer: Name | None = None
    offload: Literal["none", "optimizer", "params"] = "none"
    zero_stage: ZeroStage = 0
    tensor_parallel: Count = 1
    expert_parallel: Count = 1
    lora_rank: Count | None = None
    lora_targets: Annotated[list[Name], Field(min_length=1)] | None = None
    weights: Literal["bf16", "fp8", "int4"] = "bf16"
    kv_dtype: Literal["bf16", "fp8"] = "bf16"
    engine: Annotated[str, AfterValidator(_engine)] | None = None  # decoding: vram.measurements.ENGINES
    prompt: Count | None = None  # decoding: tokens of each prompt, where the source fixes them
    output: Count | None = None  # decoding: tokens each sequence generates
    context: Count | None = None
    batch: Count = 1
    tokens_per_s: Positive
    per: Literal["gpu", "machine", "sequence"]
    derived_from: DerivedFrom | None = None
    mfu_quoted: Share | None = None
    excluded: Name | None = None  # why the calibration does not read it
    model_code: Literal[MODEL_CODES] | None = None  # training: transformers or own (vram.calibration)
    note: Name | None = None

    @model_validator(mode="after")
    def _what_the_task_needs(self) -> Self:
        needs = (
            ["context", "engine"] if self.task == "serving" else ["seq_len", "micro_batch", "optimizer", "model_code"]
        )
        needs += ["lora_rank", "lora_targets"] if self.task in ("lora", "qlora") else []
        missing = [field for field in needs if getattr(self, field) is None]
        if missing:
            raise ValueError(f"a {self.task} run needs {', '.join(missing)}")
        if (self.per == "sequence") != (self.task == "serving" and self.batch == 1):
            raise ValueError("per: sequence is for decoding one sequence (task serving, batch 1), and only for it")
        if (self.interconnect == "none") != (self.count == 1):
            raise ValueError(f"interconnect: none is for one GPU, and one GPU has none (count {self.count})")
        if self.task != "serving" and (self.engine, self.prompt, self.output) != (None, None, None):
            raise ValueError("engine, prompt and output are for decoding runs (task serving)")
        if self.task == "serving" and self.model_code is not None:
            raise ValueError("model_code is for training runs (the decoding engine's code is its engine)")
        if self.prompt is not None and self.output is not None and self.context != self.prompt + self.output // 2:
            raise ValueError(
                f"context: {self.context} is not the mean tokens in the cache, prompt + output / 2 "
                f"= {self.prompt + self.output // 2}"
            )
        return self

    @model_validator(mode="after")
    def _derived_as_stated(self) -> Self:
        derived = self.derived_from
        if derived is None:
            return self
        if derived.tokens is not None and derived.seconds is not None:
            value = derived.tokens / derived.seconds
        elif derived.samples_per_s is not None:  # DerivedFrom._one_way: samples packed to seq_len
            assert derived.seq_len is not None
            value = derived.samples_per_s * derived.seq_len / (self.count if self.per == "gpu" else 1)
        else:  # DerivedFrom._one_way: the other way is given whole
            assert derived.global_batch is not None and derived.seq_len is not None and derived.step_s is not None
            value = derived.global_batch * derived.seq_len / derived.step_s
            value /= self.count if self.per == "gpu" else 1
        if abs(value - self.tokens_per_s) > 0.005 * value:
            raise ValueError(f"tokens_per_s: {self.tokens_per_s:g} is not what derived_from gives, {value:.2f}")
        return self


class MeasurementsFile(Data):
    cards: dict[Key, MeasuredCard] = {}
    families: Annotated[dict[Key, CardFamily], Field(min_length=1)]
    models: dict[Key, ModelEntry] = {}
    sources: Annotated[dict[Key, MeasurementSource], Field(min_length=1)]
    measurements: Annotated[dict[Key, Measurement], Field(min_length=1)]

    @model_validator(mode="after")
    def _names_known(self) -> Self:
        family_cards = [card for family in self.families.values() for card in family.cards]
        for card in family_cards:
            if family_cards.count(card) > 1:
                raise ValueError(f"families: card {card!r} is in two families")
        for card in self.cards:
            if card not in family_cards:
                raise ValueError(f"cards.{card}: in no family of families")
        for key, entry in self.measurements.items():
            if entry.source not in self.sources:
                raise ValueError(f"measurements.{key}.source: {entry.source!r} is not a key of sources")
            if entry.gpu not in family_cards:
                raise ValueError(
                    f"measurements.{key}.gpu: {entry.gpu!r} is not a card of gpus.yaml or of cards (and of a family)"
                )
        return self


# ---------------------------------------------------------------- snippets/data/finder.yaml
# The fields hooks/finder/compute.py and docs/assets/finder.js pass to each label.
FINDER_LABEL_FIELDS: dict[str, tuple[str, ...]] = {
    "legend": (),
    "model": (),
    "task": (),
    "cards": (),
    "method": (),
    "context": (),
    "context_option": ("tokens",),
    "method_hint": ("deepspeed", "torch"),
    "tensor_parallel": (),
    "caption": ("choice",),
    "cards_one": (),
    "cards_many": ("cards",),
    "col_card": (),
    "col_memory": (),
    "col_margin": (),
    "col_price": (),
    "tight": (),
    "recompute_needed": (),
    "margin_cell": ("margin", "free"),
    "price_guide": ("price",),
    "price_yours": ("price",),
    "no_price": (),
    "need_training": ("need", "reserve"),
    "need_serving": ("need", "reserve"),
    "summary_many": ("need_text", "count", "gpu", "margin"),
    "summary_one": ("need_text", "count", "gpu", "margin"),
    "summary_none": ("need_text",),
    "summary_recompute": (),
    "summary_short": ("cards",),
    "short_card": ("gpu", "margin"),
    "why": ("parts",),
    "part_size": ("part", "size"),
    "part_separator": (),
    "part_below": ("size",),
    "activations_training": ("model", "seq", "micro_batch", "attention", "none", "full", "reserve"),
    "activations_lora": ("model", "seq", "micro_batch", "attention", "none", "full", "reserve"),
    "not_computed": (),
    "load_error": (),
    "summary_none_serving": ("need_text",),
    "margin_serving": ("margin", "free", "count", "context"),
    "own_model": (),
    "config": (),
    "config_hint": (),
    "config_file": (),
    "config_kept": (),
    "config_read": ("family", "layers", "params"),
    "offload": (),
    "offload_none": (),
    "offload_optimizer": (),
    "offload_optimizer_params": (),
    "seq_len": (),
    "micro_batch": (),
    "recompute": (),
    "recompute_none": (),
    "recompute_selective": (),
    "recompute_full": (),
    "attention": (),
    "attention_default": (),
    "rank": (),
    "targets": (),
    "kv_dtype": (),
    "concurrent": (),
    "gpu_memory_utilization": (),
    "computing": (),
    "activations_job": ("seq", "micro_batch", "attention", "recompute", "asked", "full", "reserve"),
    "serving_job": ("concurrent", "context", "kv_dtype", "kv", "share", "reserve", "chunk"),
    "grad_accum": (),
    "max_num_batched_tokens": (),
    "chunk_hint": ("default",),
    "batch": ("global_batch", "micro_batch", "grad_accum", "cards", "tokens_per_step", "steps", "tokens"),
    "host_ram": ("host",),
    "qlora_storage": (),
    "error_integer": ("field", "minimum", "maximum"),
    "error_fraction": ("field", "minimum", "maximum"),
    "error_choice": ("field",),
    "error_too_long": ("field", "maximum"),
    "error_config_json": ("field", "line", "column"),
    "error_config_duplicate": ("field", "key"),
    "error_config_object": ("field", "got"),
    "error_config_unreadable": ("field",),
    "error_config_depth": ("field", "maximum"),
    "error_config_family": ("field", "key", "choices"),
    "error_config_family_odd": ("field", "key", "characters", "choices"),
    "odd_character": ("character", "code_point", "name"),
    "error_config_key": ("field", "key"),
    "error_config_multimodal": ("field", "key", "got", "add"),
    "error_config_no_text": ("field", "key", "got"),
    "error_config_value": ("field", "key"),
    "error_not_offered": ("field",),
    "refused_framework": (),
    "refused_cards": (),
    "refused_optimizer": (),
    "refused_offload": (),
    "refused_weights": (),
    "refused_targets": (),
    "refused_lora_paper": (),
    "refused_lora_fsdp2_experts": (),
    "refused_too_long": (),
    "unavailable_one": ("choices", "reason"),
    "unavailable_many": ("choices", "reason"),
    "col_run": (),
    "run_cell": ("step", "bound", "run", "cost"),
    "run_cost": ("cost", "price"),
    "span": ("low", "high"),
    "bound_compute": (),
    "bound_communication": (),
    "bound_offload": (),
    "ranked_cost": ("tokens", "order"),
    "run_source": (
        "coverage",
        "held_runs",
        "held_sources",
        "held_inside",
        "held_slower",
        "slower_low",
        "slower_high",
        "held_faster",
        "faster_low",
        "faster_high",
    ),
    "ranked_time": ("tokens", "order", "unpriced"),
    "ranked_time_none_priced": ("tokens", "order"),
    "ranked_one": ("tokens", "order"),
    "ranked_one_unpriced": ("tokens", "order"),
    "ranked_first_unbacked": ("gpu",),
    "decode_source": ("coverage", "width"),
    "backing_runs": ("family", "runs", "sources"),
    "backing_other": ("family", "runs", "sources"),
    "backing_sources_one": (),
    "backing_sources_many": ("sources",),
    "backing_none_many": ("runs",),
    "backing_none_one": (),
    "decode_realistic": ("range",),
    "decode_estimated": ("range",),
    "warn_expert_parallel": (),
    "warn_several_machines": (),
    "warn_communication_bound": (),
    "warn_tensor_parallel": (),
    "tokens": (),
    "prices": (),
    "price_card": ("gpu",),
    "error_price": ("field", "example", "minimum", "maximum"),
    "error_price_ambiguous": ("field", "got", "decimal", "thousands"),
    "col_decode": (),
    "decode_cell": ("per_sequence", "total"),
    "decode_one": ("per_sequence",),
    "host_ram_gb": (),
    "ram_holds": ("ram",),
    "ram_short": ("ram",),
    "ram_unknown": (),
    "ram_unknown_why": (),
}
# The fields the code cells of docs/memory-notebook.*.ipynb pass to each label (their ``fill``:
# str.replace, not str.format, which would read any attribute a label's field names).
NOTEBOOK_LABEL_FIELDS: dict[str, tuple[str, ...]] = {
    "cards_axis": (),
    "per_card_axis": ("unit",),
    "sharding_alt": ("model", "ddp", "zero1", "zero2", "zero3", "cards"),
    "sharding_caption": ("model",),
    "values": ("unit",),
    "cards_column": (),
    "measured": (),
    "evidence_axis": ("unit",),
    "evidence_alt": ("measured", "predicted"),
    "evidence_caption": ("params",),
    "bytes": (),
    "bytes_measured": (),
    "bytes_predicted": (),
    "mb": (),
    "part_column": (),
}


class FinderDefault(Data):
    model: Key
    task: Key
    cards: Count
    method: Key
    context: Count


class FinderServing(Data):
    kv_dtype: Literal["bf16", "fp8"]  # vram.job.KV_DTYPES
    concurrent: Count
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)]


class FinderSettings(Data):
    default: FinderDefault
    cards: Annotated[list[Count], Field(min_length=1)]
    contexts: Annotated[list[Count], Field(min_length=1)]
    lora: dict[Literal["rank"], Count]
    activations: dict[Literal["seq_length", "micro_batch"], Count]
    serving: FinderServing
    decimals: Annotated[int, Field(ge=0, le=3)]
    optimizer_impl: Literal["foreach", "fused", "forloop"]  # vram.optimizer_step.OPTIMIZER_IMPLS


class Task(Data):
    kind: Literal["training", "lora", "serving"]
    label: Text("rank")
    optimizer: Name | None = None  # training
    optimizer_impl: Literal["foreach", "fused", "forloop"] | None = None  # training: else settings.optimizer_impl
    base_dtype: Name | None = None  # lora
    weight_dtype: Name | None = None  # serving
    answers_of: Key | None = None  # another task with the same job: its reference answers are this one's

    @model_validator(mode="after")
    def _what_the_kind_needs(self) -> Self:
        needs = {"training": "optimizer", "lora": "base_dtype", "serving": "weight_dtype"}[self.kind]
        if getattr(self, needs) is None:
            raise ValueError(f"a {self.kind} task needs {needs!r}")
        return self


class Method(Data):
    framework: Literal["zero-paper", "deepspeed", "fsdp2"]  # vram.frameworks.FRAMEWORKS
    zero_stage: ZeroStage
    label: Text()


class FinderFile(Data):
    settings: FinderSettings
    tasks: Annotated[dict[Key, Task], Field(min_length=1)]
    methods: Annotated[dict[Key, Method], Field(min_length=1)]
    # vram.accounting.ACCOUNTINGS's names: the method's label beside the tasks computed with it
    accountings: Annotated[dict[Literal[tuple(ACCOUNTINGS)], Text()], Field(min_length=1)]
    parts: Annotated[dict[Key, Text()], Field(min_length=1)]
    labels: Texts(FINDER_LABEL_FIELDS)
    notebook: Texts(NOTEBOOK_LABEL_FIELDS)

    @model_validator(mode="after")
    def _default_is_a_choice(self) -> Self:
        default = self.settings.default
        for field, known in (("task", self.tasks), ("method", self.methods)):
            if getattr(default, field) not in known:
                raise ValueError(
                    f"settings.default.{field}: {getattr(default, field)!r} is not one of {', '.join(known)}"
                )
        if default.cards not in self.settings.cards:
            raise ValueError(f"settings.default.cards: {default.cards} is not one of settings.cards")
        return self

    @model_validator(mode="after")
    def _every_computed_method_has_its_label(self) -> Self:
        for task_key, task in self.tasks.items():
            for method_key, method in self.methods.items():
                for offload in OFFLOAD if task.kind != "serving" else ("none",):  # the reader may offload
                    name = accounting(
                        task.kind,
                        method.framework,
                        method.zero_stage,
                        task.optimizer or "adamw",
                        task.base_dtype or "bf16",
                        offload,
                    )
                    if name is not None and name not in self.accountings:
                        raise ValueError(
                            f"accountings.{name}: missing, the label of methods.{method_key} beside "
                            f"tasks.{task_key} ({ACCOUNTINGS[name]})"
                        )
        return self

    @model_validator(mode="after")
    def _answers_of_a_task_with_the_same_job(self) -> Self:
        job = ("kind", "optimizer", "optimizer_impl", "base_dtype", "weight_dtype")
        for key, task in self.tasks.items():
            other = self.tasks.get(task.answers_of) if task.answers_of else None
            if task.answers_of is None:
                continue
            if (
                other is None
                or other.answers_of is not None
                or [getattr(task, f) for f in job] != [getattr(other, f) for f in job]
            ):
                raise ValueError(
                    f"tasks.{key}.answers_of: {task.answers_of!r} is not a task of its own answers with "
                    f"the same {', '.join(job)}"
                )
        return self


# ---------------------------------------------------------------- snippets/data/verification.yaml
class VerificationFile(Data):
    title: Text()
    unverified: Text()
    verified: RequiredText("gpus", "links", "when", "rate", "size", "algbw", "busbw", "torch", "cuda", "nccl")
    verified_one_gpu: RequiredText("model", "when", "rate", "size", "torch", "cuda", "nccl")
    gpus: RequiredText("count", "model")
    when: RequiredText("date", "time")
    links: RequiredText("classes")
    and_: Text() = Field(alias="and")
    link_classes: Texts(dict.fromkeys(LINK_CLASSES, ()))
    fixture: Text()


# ---------------------------------------------------------------- snippets/comments.yaml
CODING_COOKIE_RE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")  # PEP 263, as tokenize applies it
CHARACTER_NAMES = {"\n": "a newline", "\r": "a carriage return", "\f": "a form feed", "\t": "a tab"}


def safe_comment(text: str) -> str:
    """``text`` if it can only ever be the text of one comment line; raises ValueError naming
    the character (newline, carriage return, backslash, control or format character) or the
    coding cookie (PEP 263) that could change what Python runs."""
    for char in text:
        if char == "\\":
            raise ValueError("contains a backslash, which could start an escape if Python decoded the file otherwise")
        kind = CHARACTER_NAMES.get(char) or HIDDEN_CATEGORIES.get(unicodedata.category(char))
        if kind:
            raise ValueError(f"contains {kind} (U+{ord(char):04X}); a comment is one line of plain text")
    cookie = CODING_COOKIE_RE.match(f"# {text}")
    if cookie:
        shown = cookie.group(0)[cookie.group(0).rfind("coding", 0, cookie.start(1)) :]
        raise ValueError(
            f"matches Python's coding-cookie rule ({shown!r}): "
            "on line 1 or 2 it would make Python decode the file otherwise"
        )
    return text


def _comment(value: dict[str, str]) -> dict[str, str]:
    check_text(value)
    for lang in LANGUAGES:
        if lang != DEFAULT_LANGUAGE:
            try:
                safe_comment(value[lang])
            except ValueError as exc:
                raise ValueError(f"{lang}: {exc} (the comment {value[DEFAULT_LANGUAGE]!r})") from None
    return value


# a comment line is shown in a code block (Pygments escapes it): '<' is text there; safe_comment checks the rest
Comment = Annotated[dict[str, Annotated[str, StringConstraints(min_length=1)]], AfterValidator(_comment)]


class CommentsFile(RootModel[list[Comment]]):
    model_config = ConfigDict(strict=True, frozen=True)

    @model_validator(mode="after")
    def _each_comment_once(self) -> Self:
        seen: set[str] = set()
        for entry in self.root:
            if entry[DEFAULT_LANGUAGE] in seen:
                raise ValueError(f"the comment {entry[DEFAULT_LANGUAGE]!r} is listed twice")
            seen.add(entry[DEFAULT_LANGUAGE])
        return self


# ---------------------------------------------------------------- front matter of docs/*.md
# The theme writes these values into the page as they are, unescaped (``<title>{{ page.title }}``,
# ``<meta name="description" content="...">``): "</title><script>" in a title was a script in
# the page's head. Plain text: no <, >, " and no control character.
Plain = Annotated[str, StringConstraints(min_length=1, pattern=r'^[^<>"\x00-\x1f\x7f]+$')]


class FrontMatter(Data):
    """The keys a page may set (MkDocs and Material's documented ones)."""

    title: Plain | None = None
    description: Plain | None = None
    hide: list[Literal["navigation", "toc", "footer", "path", "tags", "feedback"]] | None = None
    search: dict[Literal["exclude", "boost"], bool | float] | None = None
    icon: Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+(?:/[a-z0-9-]+)*$")] | None = None  # material/…
    subtitle: Plain | None = None
    status: Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+$")] | None = None
    template: Annotated[str, StringConstraints(pattern=r"^[\w-]+(?:/[\w-]+)*\.html$")] | None = None


Space = Literal["nbsp", "nnbsp"]
# A sign a space goes before or after: visible characters (a rule replaces the whitespace beside
# it, so whitespace as the sign would make a rule of a space beside a space)
Sign = Annotated[str, StringConstraints(pattern=r"^\S+$")]


class TypographyLanguage(Data):
    """One language's rules of hooks/render/typography.yaml: the space before or after a sign, between
    the groups of a number, between a number and its unit; the elided form of an article before a
    number read with a vowel (Italian: ``nel 82%`` -> ``nell’82%``)."""

    space_before: dict[Sign, Space] = {}
    space_after: dict[Sign, Space] = {}
    thousands: Space | None = None
    units: Space | None = None
    elide_before_vowel_numbers: dict[Annotated[str, StringConstraints(pattern=r"^[a-z]+$")], Sign] = {}


class TypographyFile(Data):
    """hooks/render/typography.yaml (hooks/render/typography.py)."""

    skip: list[Name]
    attributes: list[Name] = []
    json_islands: list[Name] = []
    units: list[Name]
    languages: dict[str, TypographyLanguage]


# The attributes hooks/render/interface.yaml may translate: text a reader sees or hears, never one
# that changes what an element is or does (``type``, ``href``, ``class``, ``id``, ``on…``: a
# ``type`` rewrite after the page checks turned a JSON data island into a module script).
# Add a name here only for such a text (README, "Verified publishing": the allow-lists).
TRANSLATABLE_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt")


class InterfaceString(BaseModel):
    """An attribute value an extension writes in English, with its text in every language."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)
    attribute: Literal[TRANSLATABLE_ATTRIBUTES]
    en: Name

    @model_validator(mode="after")
    def _every_language(self) -> Self:
        texts = check_languages(self.model_extra or {})
        not_text = [lang for lang in LANGUAGES if not isinstance(texts[lang], str) or not texts[lang].strip()]
        if not_text:
            raise ValueError(
                f"{', '.join(not_text)}: the translation must be a non-empty string (got {texts[not_text[0]]!r})"
            )
        return self


class InterfaceFile(Data):
    """hooks/render/interface.yaml (hooks/render/interface.py)."""

    attributes: list[InterfaceString]


SCHEMAS: dict[str, type[BaseModel]] = {
    "gpus": GpusFile,
    "interconnects": InterconnectsFile,
    "sharding": ShardingFile,
    "needs": NeedsFile,
    "units": UnitsFile,
    "timing": TimingFile,
    "measurements": MeasurementsFile,
    "prose": ProseFile,
    "models": ModelsFile,
    "finder": FinderFile,
    "verification": VerificationFile,
    "comments": CommentsFile,
    "front matter": FrontMatter,  # of every page (hooks/checks/unchecked_by_mkdocs.py)
    "interface": InterfaceFile,  # hooks/render/interface.yaml
    "typography": TypographyFile,  # hooks/render/typography.yaml
}
