"""The finder's page, in the reader's language: the form, the static answer and the
finder's numbers in the prose, rendered from ``hooks/finder/compute.py``'s answers.

Two placeholders render the page's parts: ``{{ finder_form assets=../assets }}`` (the
labelled controls, every input that decides a fit, and for training and LoRA the run: tokens
to train and the reader's price per hour of each card's machine, ``price_KEY``; hidden until
the script runs) and
``{{ finder_table }}`` (the static result of the default choice, or of ``model= task= cards=
method= context=``: what a reader without JavaScript sees). Two more give the prose the
finder's own numbers: ``{{ finder_setting name= }}`` and ``{{ finder_activations model=
recompute= }}``. Raises RenderError. Pure: no MkDocs import.
"""

from __future__ import annotations

import functools
import html
import math
from typing import Any

from babel.numbers import format_decimal, format_percent, get_decimal_symbol, get_group_symbol

import vram
from hooks.data.load import load_yaml, text
from hooks.data.measurements import measured_data, validation
from hooks.errors import RenderError
from hooks.finder.compute import (
    CUSTOM_MODEL,
    FINDER_YAML,
    MODELS_YAML,
    Catalogue,
    activation_reference,
    load_catalogue,
    options,
    reference_batch,
    result,
    task_accountings,
)
from hooks.render.calibration import percent, times
from hooks.render.locale_format import format_duration_range, format_eur, format_number, format_quantity, unit_label
from hooks.render.placeholders import Args
from hooks.render.script_json import script_json
from hooks.render.typography import unit_space
from verify.pins import pinned
from vram.billing import CENT, MAX_PRICE_EUR_PER_HOUR
from vram.calibration import RULE, group_of, held_out
from vram.fit import TIGHT_FREE_FRACTION, mib_to_bytes
from vram.job import JOB_FIELDS, KV_DTYPES, MACHINE_GPUS_MAX, OFFLOAD
from vram.models import count_params
from vram.serving import VLLM_MAX_NUM_BATCHED_TOKENS
from vram.units import bytes_to_gb, bytes_to_gib


def _label(catalogue: Catalogue, key: str, lang: str, **fields: Any) -> str:
    value = text(catalogue.labels.get(key), lang, f"{FINDER_YAML}: labels.{key}")
    return value.format(**fields) if fields else value


def page_labels(catalogue: Catalogue, lang: str) -> dict[str, str]:
    """Every label the script needs, in ``lang`` (templates keep their ``{fields}``)."""
    labels = {key: text(value, lang, f"{FINDER_YAML}: labels.{key}") for key, value in catalogue.labels.items()}
    labels.update(
        {f"part_{key}": text(value, lang, f"{FINDER_YAML}: parts.{key}") for key, value in catalogue.parts.items()}
    )
    # the method as each task computes it (finder.json's tasks[].accounting), else the method's own name
    labels.update(
        {
            f"accounting_{key}": text(value, lang, f"{FINDER_YAML}: accountings.{key}")
            for key, value in catalogue.accountings.items()
        }
    )
    labels.update({f"method_{key}": _method_label(catalogue, key, lang) for key in catalogue.methods})
    labels["unit_gb"] = unit_label("gb", lang)
    labels["unit_gib"] = unit_label("gib", lang)
    labels["run_source"] = run_source_text(catalogue, lang)
    labels["decode_source"] = decode_source_text(catalogue, lang)
    labels["tensor_parallel_params"] = str(tensor_parallel_params())  # warn_tensor_parallel's rule (warning_texts)
    # The reader types numbers as the page writes them: the locale's symbols (Babel), which
    # finder.js accepts beside the canonical point and the URL keeps canonical.
    labels["decimal_symbol"] = get_decimal_symbol(lang)
    labels["group_symbol"] = get_group_symbol(lang)
    example = max(m["price_eur_per_hour_from"] for m in catalogue.machines.values())  # the guide's own price
    labels["error_price"] = labels["error_price"].format(
        field="{field}",
        example=format_decimal(example, format="#,##0.00", locale=lang),
        minimum=format_decimal(CENT, format="#,##0.00", locale=lang),
        maximum=format_number(MAX_PRICE_EUR_PER_HOUR, lang, 0),
    )
    labels.update({f"unit_{unit}": unit_label(unit, lang) for unit in ("s", "min", "h", "days", "tokens_per_s")})
    labels["unit_space"] = unit_space(lang)  # typography.yaml's space before a unit
    units = load_yaml("units")
    labels["range_words"] = text(units["range_words"], lang, "snippets/data/units.yaml: range_words")
    labels["days_hours"] = text(units["days_hours"], lang, "snippets/data/units.yaml: days_hours")
    return labels


def run_source_text(catalogue: Catalogue, lang: str) -> str:
    """Where the run's time and cost come from (the datasheets' peaks x the utilisation of the
    published runs of the job's class, ``vram.calibration``), how often the range held the
    measurement on sources it had not seen (the training coverage), and what the held-out
    sources gave (``group_of`` ``holdout``: runs and sources, inside their range; for those slower
    than it, how many times the longest time of their range they took (``predicted.low /
    measured`` of a throughput range), for those faster, how many times the shortest
    (``predicted.high / measured``), rounded outwards to one and two decimals); under a table with a
    run. Raises RenderError when no held-out run was slower, or none faster, than its range (the
    label says some were)."""
    checks, figures = validation()
    measurements = measured_data().measurements
    held = [c for c in checks if group_of(c, measurements) == "holdout"]
    slower = [c.predicted.low / c.measured for c in held if c.measured < c.predicted.low]
    faster = [c.predicted.high / c.measured for c in held if c.measured > c.predicted.high]
    if not slower or not faster:
        side = "slower" if not slower else "faster"
        raise RenderError(f"{FINDER_YAML}: labels.run_source: no held-out run was {side} than its range")
    return _label(
        catalogue,
        "run_source",
        lang,
        coverage=format_percent(figures["training"].coverage, locale=lang),
        held_runs=format_number(len(held), lang, 0),
        held_sources=format_number(len({c.source for c in held}), lang, 0),
        held_inside=format_number(sum(c.covered for c in held), lang, 0),
        held_slower=format_number(len(slower), lang, 0),
        slower_low=format_number(math.floor(min(slower) * 10) / 10, lang, 1),
        slower_high=format_number(math.ceil(max(slower) * 10) / 10, lang, 1),
        held_faster=format_number(len(faster), lang, 0),
        faster_low=format_number(math.floor(min(faster) * 100) / 100, lang, 2),
        faster_high=format_number(math.ceil(max(faster) * 100) / 100, lang, 2),
    )


def decode_source_text(catalogue: Catalogue, lang: str) -> str:
    """How far to trust the decoding range beside the roofline: the server engines' group of the
    validation (``validation_figures`` ``serving``: coverage, median width rounded up to a
    tenth, with the formulas page's own formatting: ``hooks.render.calibration``); under a
    serving table."""
    _checks, figures = validation()
    found = figures["serving"]
    return _label(
        catalogue,
        "decode_source",
        lang,
        coverage=percent(found.coverage, lang),
        width=times(found.median_width, lang),
    )


def tensor_parallel_params() -> int:
    """The parameters of the smallest model whose published training run on one machine (at most
    ``vram.job.MACHINE_GPUS_MAX`` GPUs) also split its layers over them (``tensor_parallel`` > 1,
    measurements.yaml: NeMo AutoModel's Llama 3 70B LoRA, TP 2 on 8 H100): from it up, a
    communication-bound job gets ``warn_tensor_parallel``, whose sentence names those sources.
    The calibration's runs only: a held-out source (validation only, ``holdout``) is not one the
    sentence speaks of (FlagPerf's Megatron-LM Llama 3 8B runs with TP 2 by choice of recipe).
    Raises RenderError when no run does."""
    measured = measured_data()
    sizes = [
        count_params(measured.configs[m.model]).total
        for m in measured.measurements.values()
        if m.task != "serving" and m.tensor_parallel > 1 and m.count <= MACHINE_GPUS_MAX and not held_out(m, RULE)
    ]
    if not sizes:
        raise RenderError("snippets/data/measurements.yaml: no training run on one machine with tensor_parallel > 1")
    return min(sizes)


def warning_texts(catalogue: Catalogue, lang: str, warnings: list[str], params: int) -> list[str]:
    """The run's warnings (``answer_job``'s ``run.warnings``) in ``lang``; after the
    communication-bound one, for a model of at least ``tensor_parallel_params`` parameters, what
    the published runs of such models add (tensor parallelism). finder.js's noteText: the same."""
    texts = []
    for warning in warnings:
        texts.append(_label(catalogue, f"warn_{warning}", lang))
        if warning == "communication_bound" and params >= tensor_parallel_params():
            texts.append(_label(catalogue, "warn_tensor_parallel", lang))
    return texts


def backing_text(catalogue: Catalogue, lang: str, backing: dict[str, Any] | None) -> str:
    """Which published runs back a time (``answer_job``'s ``backing``): on this card's family,
    with how many sources they come from, none on this card, or none of this class (a widened
    range); empty without a calibration."""
    if backing is None:
        return ""
    runs = format_number(backing["runs"], lang, 0)
    if not backing["exact"]:  # one run: no plural after "1"
        return _label(catalogue, "backing_none_one" if backing["runs"] == 1 else "backing_none_many", lang, runs=runs)
    key = "backing_runs" if backing["on_card"] else "backing_other"
    count = len(backing["sources"])
    sources = (
        _label(catalogue, "backing_sources_one", lang)
        if count == 1
        else _label(catalogue, "backing_sources_many", lang, sources=format_number(count, lang, 0))
    )
    return _label(catalogue, key, lang, family=backing["family"], runs=runs, sources=sources)


def _task_label(catalogue: Catalogue, key: str, lang: str) -> str:
    label = text(catalogue.tasks[key].get("label"), lang, f"{FINDER_YAML}: tasks.{key}.label")
    return label.format(rank=catalogue.settings["lora"]["rank"])


def _method_label(catalogue: Catalogue, key: str, lang: str, task: str | None = None) -> str:
    """The method ``key`` as the calculator computes ``task`` under it (``accountings``: DDP under
    AMP or all in bf16, LoRA without the framework's buffers…), or the method's own name where
    the task refuses it or none is given."""
    name = task_accountings(catalogue, task).get(key) if task is not None else None
    if name is not None:
        return text(catalogue.accountings[name], lang, f"{FINDER_YAML}: accountings.{name}")
    return text(catalogue.methods[key].get("label"), lang, f"{FINDER_YAML}: methods.{key}.label")


def _context_label(catalogue: Catalogue, tokens: int, lang: str) -> str:
    return _label(catalogue, "context_option", lang, tokens=format_number(tokens, lang, 0))


def _select(name: str, label: str, choices: list[tuple[str, str]], selected: str, extra: str = "") -> str:
    # "\n" between elements: search indexes the page's text, and without whitespace the
    # options and cells run together ("Mistral 7B v0.1Qwen2.5 7B": "Qwen2.5" found nothing).
    opts = "\n".join(
        f'<option value="{html.escape(v)}"{" selected" if v == selected else ""}>{html.escape(t)}</option>'
        for v, t in choices
    )
    return (
        f'<label for="finder-{name}">{html.escape(label)}</label>\n'
        f'<select id="finder-{name}" name="{name}"{extra}>{opts}</select>'
    )


def _text(name: str, label: str, value: Any, numeric: bool = True, mode: str = "numeric", extra: str = "") -> str:
    mode_attr = f' inputmode="{mode}"' if numeric or mode != "numeric" else ""
    return (
        f'<label for="finder-{name}">{html.escape(label)}</label>\n'
        f'<input type="text" id="finder-{name}" name="{name}" value="{html.escape(str(value))}"{mode_attr} '
        f'autocomplete="off" spellcheck="false"{extra}>'
    )


def _context_field(catalogue: Catalogue, lang: str) -> str:
    """Serving: the context length, any whole number of tokens (the calculator refuses one
    beyond the model's maximum in one line); the precomputed lengths offered as suggestions."""
    suggestions = "\n".join(
        f'<option value="{n}">{html.escape(_context_label(catalogue, n, lang))}</option>'
        for n in catalogue.settings["contexts"]
    )
    return (
        _text(
            "context",
            _label(catalogue, "context", lang),
            catalogue.settings["default"]["context"],
            extra=' list="finder-contexts" aria-describedby="finder-context-hint"',
        )
        + f'<datalist id="finder-contexts">{suggestions}</datalist>'
    )


def _config_field(catalogue: Catalogue, lang: str) -> str:
    """The reader's own config.json: pasted, dropped on the box or chosen as a file."""
    hint = html.escape(_label(catalogue, "config_hint", lang) + " " + _label(catalogue, "config_kept", lang))
    return (
        f'<label for="finder-config">{html.escape(_label(catalogue, "config", lang))}</label>\n'
        f'<textarea id="finder-config" name="config" rows="6" spellcheck="false" autocomplete="off" '
        f'aria-describedby="finder-config-hint"></textarea>'
        f'<p class="finder-hint" id="finder-config-hint">{hint}</p>'
        f'<label for="finder-config-file">{html.escape(_label(catalogue, "config_file", lang))}</label>\n'
        f'<input type="file" id="finder-config-file" accept=".json,application/json">'
    )


def _chunk_field(catalogue: Catalogue, lang: str) -> str:
    """Serving: vLLM's prefill chunk (``max_num_batched_tokens``), vLLM's default to start with
    (``vram.serving.VLLM_MAX_NUM_BATCHED_TOKENS``), with the hint that says so."""
    default = VLLM_MAX_NUM_BATCHED_TOKENS
    hint = _label(catalogue, "chunk_hint", lang, default=format_number(default, lang, 0))
    return (
        _text(
            "max_num_batched_tokens",
            _label(catalogue, "max_num_batched_tokens", lang),
            default,
            extra=' aria-describedby="finder-chunk-hint"',
        )
        + f'<p class="finder-hint" id="finder-chunk-hint">{html.escape(hint)}</p>'
    )


def _refused_line(name: str) -> str:
    """Under a choice, the line where finder.js names the options the calculator refuses for the
    reader's other choices and why (greyed out in the list; a touch screen shows no tooltip)."""
    return f'<p class="finder-hint finder-refused" id="finder-{name}-refused" hidden></p>'


def _hidden_at_first(catalogue: Catalogue, kinds: str) -> bool:
    """Whether a field of ``kinds`` ("training lora", "custom", "" for every task) is hidden
    before the script runs: only the default task's fields show from the first paint
    (finder.js's updateControls keeps the same rule afterwards)."""
    default = catalogue.settings["default"]
    if not kinds:
        return False
    if kinds == "custom":
        return default["model"] != CUSTOM_MODEL
    return catalogue.tasks[default["task"]]["kind"] not in kinds.split()


def _prices_field(catalogue: Catalogue, lang: str) -> str:
    """The reader's price per hour of the machine of each card (``price_KEY``, empty: the
    guide's price where it gives one), kept in the link; the run is ranked by its cost when
    every fitting machine has one. From the first paint, only the cards that fit the default
    choice show theirs (finder.js's rule afterwards)."""
    d = catalogue.settings["default"]
    serving = catalogue.tasks[d["task"]]["kind"] == "serving"
    found = result(catalogue, d["model"], d["task"], d["cards"], str(d["context"]) if serving else d["method"])
    fitting = {fit["gpu"] for fit in found["fits"]} if found else set()
    inputs = "\n".join(
        f'<div class="finder-price"{"" if key in fitting else " hidden"}>'
        f'{_text(f"price_{key}", _label(catalogue, "price_card", lang, gpu=g["name"]), "", numeric=False, mode="decimal")}'
        f'</div>'
        for key, g in catalogue.gpus
    )
    return (
        f'<fieldset class="finder-prices"><legend>{html.escape(_label(catalogue, "prices", lang))}</legend>\n'
        f'{inputs}</fieldset>'
    )


def finder_form(raw: dict[str, str], lang: str) -> str:
    """``{{ finder_form assets=../assets }}``: the controls, the labels and the script.

    ``assets`` is the site's assets folder relative to the page (it: ``../assets``, fr:
    ``../../assets``). The form stays hidden until the script has loaded the JSON.
    """
    args = Args(raw, {"assets"})
    assets = html.escape(args.str("assets").rstrip("/"))
    catalogue = load_catalogue()
    d = catalogue.settings["default"]
    fields = [
        _select(
            "model",
            _label(catalogue, "model", lang),
            [(k, m.name) for k, m in catalogue.models.items()] + [(CUSTOM_MODEL, _label(catalogue, "own_model", lang))],
            d["model"],
        ),
        _select(
            "task",
            _label(catalogue, "task", lang),
            [(k, _task_label(catalogue, k, lang)) for k in catalogue.tasks],
            d["task"],
            ' aria-describedby="finder-task-refused"',
        )
        + _refused_line("task"),
        _select(
            "cards",
            _label(catalogue, "cards", lang),
            [(str(n), str(n)) for n in catalogue.settings["cards"]],
            str(d["cards"]),
            ' aria-describedby="finder-cards-refused"',
        )
        + _refused_line("cards"),
        _select(
            "method",
            _label(catalogue, "method", lang),
            [(k, _method_label(catalogue, k, lang, d["task"])) for k in catalogue.methods],
            d["method"],
            ' aria-describedby="finder-method-refused finder-method-hint"',
        )
        + _refused_line("method")
        + f'<p class="finder-hint" id="finder-method-hint">{html.escape(_label(catalogue, "method_hint", lang, deepspeed=pinned("deepspeed", 2), torch=pinned("torch", 2)))}</p>',
        _context_field(catalogue, lang)
        + f'<p class="finder-hint" id="finder-context-hint">{html.escape(_label(catalogue, "tensor_parallel", lang))}</p>',
    ]
    kinds = ["", "", "", "training lora", "serving"]
    fields.insert(1, _config_field(catalogue, lang))
    kinds.insert(1, "custom")
    settings = catalogue.settings
    label = functools.partial(_label, catalogue, lang=lang)
    more = [  # every other input that decides a fit (the task names the optimizer or the weights' format)
        (
            "training lora",
            _select(
                "offload", label("offload"), [(v, label(f"offload_{v.replace('+', '_')}")) for v in OFFLOAD], "none"
            ),
        ),
        ("training lora", _text("seq_len", label("seq_len"), settings["activations"]["seq_length"])),
        ("training lora", _text("micro_batch", label("micro_batch"), settings["activations"]["micro_batch"])),
        ("training lora", _text("grad_accum", label("grad_accum"), JOB_FIELDS["grad_accum"])),
        (
            "training lora",
            _select("recompute", label("recompute"), [(v, label(f"recompute_{v}")) for v in vram.RECOMPUTE], "none"),
        ),
        (
            "training lora",
            _select(
                "attention",
                label("attention"),
                [("", label("attention_default"))] + [(v, v) for v in vram.ATTENTION],
                "",
            ),
        ),
        ("lora", _text("rank", label("rank"), settings["lora"]["rank"])),
        ("lora", _text("targets", label("targets"), vram.ALL_LINEAR, numeric=False)),
        (
            "serving",
            _select("kv_dtype", label("kv_dtype"), [(v, v) for v in KV_DTYPES], settings["serving"]["kv_dtype"]),
        ),
        ("serving", _text("concurrent", label("concurrent"), settings["serving"]["concurrent"])),
        (
            "serving",
            _text(
                "gpu_memory_utilization",
                label("gpu_memory_utilization"),
                format_decimal(settings["serving"]["gpu_memory_utilization"], locale=lang),
                numeric=False,
                mode="decimal",
            ),
        ),
        ("serving", _chunk_field(catalogue, lang)),
        ("training lora", _text("host_ram_gb", label("host_ram_gb"), "")),
        ("training lora", _text("tokens", label("tokens"), format_number(JOB_FIELDS["tokens"], lang, 0))),
        ("training lora", _prices_field(catalogue, lang)),
    ]
    fields += [field for _, field in more]
    kinds += [kind for kind, _ in more]
    body = "\n".join(
        f'<div class="finder-field"{f" data-kinds={chr(34)}{k}{chr(34)}" if k else ""}'
        f'{" hidden" if _hidden_at_first(catalogue, k) else ""}>{f}</div>'
        for f, k in zip(fields, kinds, strict=True)
    )
    body += '\n<p class="finder-error" id="finder-error" role="alert" hidden></p>'
    labels = script_json(page_labels(catalogue, lang))
    return (
        f'<div class="finder" id="finder"><link rel="stylesheet" href="{assets}/finder.css">'
        f'<form class="finder-form" id="finder-form" data-json="{assets}/finder.json" hidden>'
        f'<fieldset><legend>{html.escape(_label(catalogue, "legend", lang))}</legend>\n{body}</fieldset></form>'
        f'<script type="application/json" id="finder-labels">{labels}</script>'
        f'<script src="{assets}/finder.js" defer></script></div>'
    )


def _gb(gb: float, catalogue: Catalogue, lang: str) -> str:
    return format_quantity(gb, "gb", lang, catalogue.settings["decimals"])


def _part_gb(gb: float, catalogue: Catalogue, lang: str) -> str:
    """A part of a card's memory: ``0,02`` GB shown at the finder's decimals would read ``0 GB``,
    so a part that is not zero but rounds to it reads "less than 0,1 GB" (finder.js's partGb)."""
    shown = _gb(gb, catalogue, lang)
    if gb <= 0 or shown != _gb(0, catalogue, lang):
        return shown
    return _label(catalogue, "part_below", lang, size=_gb(10 ** -catalogue.settings["decimals"], catalogue, lang))


def choice_text(catalogue: Catalogue, lang: str, model: str, task: str, cards: int, option: str) -> str:
    """ "Llama 3.1 8B, Fine-tuning completo, AdamW, una scheda, DDP, PyTorch AMP (…)" — the table's
    caption; training and LoRA name the method, hence the framework, whatever the number of
    cards, as the calculator computed this task under it (``_method_label``)."""
    parts = [
        catalogue.models[model].name,
        _task_label(catalogue, task, lang),
        _label(catalogue, "cards_one", lang) if cards == 1 else _label(catalogue, "cards_many", lang, cards=cards),
    ]
    if catalogue.tasks[task]["kind"] == "serving":
        parts.append(_context_label(catalogue, int(option), lang))
    else:
        parts.append(_method_label(catalogue, option, lang, task))
    return _label(catalogue, "caption", lang, choice=", ".join(parts))


def finder_table(raw: dict[str, str], lang: str) -> str:
    """``{{ finder_table }}``: the result of one choice (default: finder.yaml's), as static HTML."""
    args = Args(raw, {"model", "task", "cards", "method", "context"})
    catalogue = load_catalogue()
    d = catalogue.settings["default"]
    model, task = args.str("model", d["model"]), args.str("task", d["task"])
    if model not in catalogue.models:
        raise RenderError(f"unknown model {model!r} in {MODELS_YAML} (known: {', '.join(catalogue.models)})")
    if task not in catalogue.tasks:
        raise RenderError(f"unknown task {task!r} in {FINDER_YAML} (known: {', '.join(catalogue.tasks)})")
    cards = args.int("cards", default=d["cards"], minimum=1)
    if cards not in catalogue.settings["cards"]:
        raise RenderError(f"cards={cards} is not one of {catalogue.settings['cards']}")
    serving = catalogue.tasks[task]["kind"] == "serving"
    option = args.str("context", str(d["context"])) if serving else args.str("method", d["method"])
    if option not in options(catalogue, task):
        raise RenderError(
            f"{'context' if serving else 'method'}={option} is not one of {', '.join(options(catalogue, task))}"
        )
    found = result(catalogue, model, task, cards, option)
    if found is None:
        raise RenderError(f"{model} {task} on {cards} cards with {option}: not computed")
    return render_result(catalogue, lang, found, model, task, cards, option)


def summary_text(catalogue: Catalogue, lang: str, found: dict[str, Any], serving: bool) -> str:
    """The status line: what the figure per card holds, the reserve and (training, LoRA) the
    activations beside it, the card models that fit, whether the first needs full
    recomputation, and the cards whose margin is below the activations."""
    names = {k: g["name"] for k, g in catalogue.gpus}
    reserve = format_quantity(
        bytes_to_gib(mib_to_bytes(catalogue.reserve_mib)), "gib", lang, catalogue.settings["decimals"]
    )
    need = _label(
        catalogue,
        "need_serving" if serving else "need_training",
        lang,
        need=_gb(found["per_gpu_gb"], catalogue, lang),
        reserve=reserve,
    )
    fits = found["fits"]
    if not fits:
        summary = _label(catalogue, "summary_none_serving" if serving else "summary_none", lang, need_text=need)
    else:
        summary = _label(
            catalogue,
            "summary_one" if len(fits) == 1 else "summary_many",
            lang,
            need_text=need,
            count=len(fits),
            gpu=names[fits[0]["gpu"]],
            margin=_gb(fits[0]["margin_gb"], catalogue, lang),
        )
        if fits[0].get("recompute") == "full":
            summary += " " + _label(catalogue, "summary_recompute", lang)
    if found["short"]:
        short = ", ".join(
            _label(catalogue, "short_card", lang, gpu=names[fit["gpu"]], margin=_gb(fit["margin_gb"], catalogue, lang))
            for fit in found["short"]
        )
        summary += " " + _label(catalogue, "summary_short", lang, cards=short)
    return summary


def note_text(catalogue: Catalogue, lang: str, model: str, task: str, option: str, found: dict[str, Any]) -> str:
    """The note under the table: the reserve, and the activations (training, LoRA) or the KV
    cache and vLLM's share of the card (serving) the margin is compared with or left in."""
    reserve = format_quantity(
        bytes_to_gib(mib_to_bytes(catalogue.reserve_mib)), "gib", lang, catalogue.settings["decimals"]
    )
    kind = catalogue.tasks[task]["kind"]
    if kind == "serving":
        serving = catalogue.settings["serving"]
        return _label(
            catalogue,
            "serving_job",
            lang,
            concurrent=format_number(serving["concurrent"], lang, 0),
            context=format_number(int(option), lang, 0),
            kv_dtype=serving["kv_dtype"],
            kv=_gb(found["kv_per_sequence_gb"], catalogue, lang),
            share=format_percent(serving["gpu_memory_utilization"], locale=lang),
            reserve=reserve,
            chunk=format_number(VLLM_MAX_NUM_BATCHED_TOKENS, lang, 0),
        )
    ref, settings = activation_reference(catalogue, catalogue.models[model]), catalogue.settings["activations"]
    return _label(
        catalogue,
        f"activations_{kind}",
        lang,
        model=catalogue.models[model].name,
        seq=format_number(settings["seq_length"], lang, 0),
        micro_batch=format_number(settings["micro_batch"], lang, 0),
        attention=ref["attention"],
        none=_gb(ref["none"], catalogue, lang),
        full=_gb(ref["full"], catalogue, lang),
        reserve=reserve,
    )


def _span(catalogue: Catalogue, lang: str, low: str, high: str) -> str:
    return low if low == high else _label(catalogue, "span", lang, low=low, high=high)


def _with_unit(number: str, unit: str, lang: str) -> str:
    """``number`` and the label of ``unit`` (units.yaml) joined by the typography rule set's
    space before a unit (typography.yaml: a no-break space)."""
    return f"{number}{unit_space(lang)}{unit_label(unit, lang)}"


def duration_span(catalogue: Catalogue, lang: str, low: list[list], high: list[list]) -> str:
    """A run's [low, high] (``answer_job``'s ``run_shown``), as the guide writes durations
    (``locale_format.format_duration_range``) with the rule set's space before a unit."""
    return format_duration_range(low, high, lang, unit_space(lang))


def decode_text(catalogue: Catalogue, lang: str, decode: dict[str, Any]) -> str:
    """A fitting card's decoding bound (``answer_job``'s ``decode``): tokens/s at most, per
    sequence and in all (one figure when they are the same: one sequence), and the published
    decoding runs' range per sequence: "in the published runs" when runs of this card's family
    and job back it, an estimate from other classes' runs when none does (``backing.exact``)."""
    per_sequence, total = (
        _with_unit(format_number(decode[key], lang, 0), "tokens_per_s", lang)
        for key in ("tokens_per_s_per_sequence_at_most", "tokens_per_s_at_most")
    )
    if per_sequence == total:
        shown = _label(catalogue, "decode_one", lang, per_sequence=per_sequence)
    else:
        shown = _label(catalogue, "decode_cell", lang, per_sequence=per_sequence, total=total)
    if "tokens_per_s_per_sequence" in decode:  # the published decoding runs' share of that bound
        low, high = (format_number(n, lang, 0) for n in decode["tokens_per_s_per_sequence"])
        backing = decode["backing"]  # none of this card and job: a range from other classes' runs
        realistic = _label(
            catalogue,
            "decode_estimated" if backing is not None and not backing["exact"] else "decode_realistic",
            lang,
            range=_with_unit(_span(catalogue, lang, low, high), "tokens_per_s", lang),
        )
        separator = _label(catalogue, "part_separator", lang)  # French: a thin no-break space before ;
        shown += separator + realistic + " (" + backing_text(catalogue, lang, backing) + ")"
    return shown


def run_text(catalogue: Catalogue, lang: str, time: dict[str, Any]) -> str:
    """A fitting card's run (``answer_job``'s ``time``): seconds per step and what bounds it,
    the whole run (``duration_span``) and, with a price, its cost; ranges as [low, high]."""
    step = _with_unit(_span(catalogue, lang, *(format_number(s, lang, 2) for s in time["step_s"])), "s", lang)
    run = duration_span(catalogue, lang, *time["run_shown"])
    cost = ""
    if time["cost_eur"] is not None:
        cost = _label(
            catalogue,
            "run_cost",
            lang,
            cost=_span(catalogue, lang, *(format_eur(float(c), lang) for c in time["cost_eur"])),
            price=format_eur(float(time["price_eur_per_hour"]), lang),
        )
    shown = _label(
        catalogue,
        "run_cell",
        lang,
        step=step,
        bound=_label(catalogue, f"bound_{time['bound']}", lang),
        run=run,
        cost=cost,
    )
    backing = backing_text(catalogue, lang, time.get("backing"))
    return f"{shown} ({backing})" if backing else shown


def batch_text(catalogue: Catalogue, lang: str, batch: dict[str, Any], tokens: int) -> str:
    """The batch per optimizer step of a training or LoRA job (``vram.job.global_batch``): the
    global batch and how it is made, its tokens, and the optimizer steps for ``tokens``."""

    def number(n: int) -> str:
        return format_number(n, lang, 0)

    return _label(
        catalogue,
        "batch",
        lang,
        global_batch=number(batch["global_batch"]),
        micro_batch=number(batch["micro_batch"]),
        grad_accum=number(batch["grad_accum"]),
        cards=number(batch["cards"]),
        tokens_per_step=number(batch["tokens_per_step"]),
        steps=number(batch["optimizer_steps"]),
        tokens=number(tokens),
    )


def machine_names(catalogue: Catalogue, cards: int, keys: list[str]) -> str:
    """``2 × H100 80GB, 2 × RTX 4090 24GB``: the machines of ``cards`` such cards, each held on one
    line (no-break spaces around the ×, as finder.js writes them)."""
    names = {k: g["name"] for k, g in catalogue.gpus}
    return ", ".join(f"{cards}\u00a0×\u00a0{names[key]}" for key in keys)


def ranking_text(catalogue: Catalogue, lang: str, found: dict[str, Any], cards: int) -> str:
    """The machines that fit, ranked for the run (``answer_job``'s ``run``), saying by what and,
    when by time, which machines have no price (or that none has one); one machine is named
    alone (nothing to rank), with a word on its price when the guide gives none. When the first
    of several has no published run of its own class (its time's ``backing.exact`` false), a
    sentence says so: its place rests on other classes' runs."""
    run = found["run"]
    names = {k: g["name"] for k, g in catalogue.gpus}
    ranked = _ranking_text(catalogue, lang, run, cards, names)
    first = next(fit for fit in found["fits"] if fit["gpu"] == run["order"][0])
    backing = first.get("time", {}).get("backing")
    if len(run["order"]) > 1 and backing is not None and not backing["exact"]:
        ranked += " " + _label(catalogue, "ranked_first_unbacked", lang, gpu=names[first["gpu"]])
    return ranked


def _ranking_text(catalogue: Catalogue, lang: str, run: dict[str, Any], cards: int, names: dict[str, str]) -> str:
    if len(run["order"]) == 1:
        key = "ranked_one_unpriced" if run.get("unpriced") else "ranked_one"
        return _label(catalogue, key, lang, tokens=format_number(run["tokens"], lang, 0), order=names[run["order"][0]])
    if run["ranked_by"] == "time" and set(run["unpriced"]) >= set(run["order"]):  # no machine to name apart
        label, named = "ranked_time_none_priced", {}
    elif run["ranked_by"] == "time":
        label, named = "ranked_time", {"unpriced": machine_names(catalogue, cards, run["unpriced"])}
    else:
        label, named = "ranked_cost", {}
    return _label(
        catalogue,
        label,
        lang,
        tokens=format_number(run["tokens"], lang, 0),
        order=", ".join(names[key] for key in run["order"]),
        **named,
    )


def ordered(found: dict[str, Any]) -> list[dict[str, Any]]:
    """The fitting cards in the order the calculator ranked their runs (``run.order``: by cost
    when every machine has a price, else by time); without a run, smallest card first."""
    if "run" not in found:
        return found["fits"]
    by_key = {fit["gpu"]: fit for fit in found["fits"]}
    return [by_key[key] for key in found["run"]["order"]]


def price_text(catalogue: Catalogue, lang: str, fit: dict[str, Any]) -> str:
    """The price of the card's machine the run is costed at: the guide's (the static page has
    no other; finder.js also says when it is the one the reader typed), or none."""
    if "machine" not in fit:
        return _label(catalogue, "no_price", lang)
    return _label(catalogue, "price_guide", lang, price=format_eur(fit["price_eur_per_hour_from"], lang))


def render_result(
    catalogue: Catalogue, lang: str, found: dict[str, Any], model: str, task: str, cards: int, option: str
) -> str:
    """The results block; ``finder.js`` builds the same structure from the JSON. Each body cell
    carries its column's heading (``data-label``): on a phone each row shows as a card."""
    esc = html.escape
    names = {k: g["name"] for k, g in catalogue.gpus}
    fits = found["fits"]
    summary = summary_text(catalogue, lang, found, catalogue.tasks[task]["kind"] == "serving")
    columns = ("col_card", "col_memory", "col_margin", "col_price") + (("col_run",) if "run" in found else ())
    decoding = any("decode" in fit for fit in fits)
    columns += ("col_decode",) if decoding else ()
    headings = [_label(catalogue, c, lang) for c in columns]
    head = "\n".join(f'<th scope="col">{esc(h)}</th>' for h in headings)
    rows = []
    for fit in ordered(found):
        if "max_concurrent" in fit:  # serving: how many sequences of this length the card holds
            margin = _label(
                catalogue,
                "margin_serving",
                lang,
                margin=_gb(fit["margin_gb"], catalogue, lang),
                free=format_percent(fit["free_fraction"], locale=lang),
                count=format_number(fit["max_concurrent"], lang, 0),
                context=format_number(int(option), lang, 0),
            )
        else:
            margin = _label(
                catalogue,
                "margin_cell",
                lang,
                margin=_gb(fit["margin_gb"], catalogue, lang),
                free=format_percent(fit["free_fraction"], locale=lang),
            )
        margin = esc(margin)
        if fit.get("recompute") == "full":  # the reference job asks for none: only full recomputation fits
            margin += f' <strong class="finder-flag">{esc(_label(catalogue, "recompute_needed", lang))}</strong>'
        if fit["tight"]:  # vram.fit.is_tight: under a tenth of the card free at the peak
            margin += f' <strong class="finder-tight">{esc(_label(catalogue, "tight", lang))}</strong>'
        memory = _gb(bytes_to_gb(mib_to_bytes(dict(catalogue.gpus)[fit["gpu"]]["memory_mib"])), catalogue, lang)
        cells = [esc(memory), margin, esc(price_text(catalogue, lang, fit))]
        if "time" in fit:
            cells.append(esc(run_text(catalogue, lang, fit["time"])))
        if decoding:
            cells.append(esc(decode_text(catalogue, lang, fit["decode"]) if "decode" in fit else ""))
        body = "".join(f'\n<td data-label="{esc(h)}">{c}</td>' for h, c in zip(headings[1:], cells, strict=False))
        rows.append(f'<tr><th scope="row">{esc(names[fit["gpu"]])}</th>{body}</tr>')
    parts = _label(catalogue, "part_separator", lang).join(
        _label(
            catalogue,
            "part_size",
            lang,
            part=text(catalogue.parts[k], lang, f"{FINDER_YAML}: parts.{k}"),
            size=_part_gb(v, catalogue, lang),
        )
        for k, v in found["parts"]
    )
    # The note in paragraphs (finder.js's noteText: the same groups): what the margin holds, the
    # global batch, where the times come from with their warnings.
    paragraphs = [note_text(catalogue, lang, model, task, option, found)]
    if catalogue.tasks[task]["kind"] != "serving":
        paragraphs.append(batch_text(catalogue, lang, reference_batch(catalogue, cards), JOB_FIELDS["tokens"]))
    order = ""
    sources = []
    if "run" in found:
        order = ranking_text(catalogue, lang, found, cards)
        sources = [run_source_text(catalogue, lang)]
        params = catalogue.models[model].params.total
        sources += warning_texts(catalogue, lang, found["run"].get("warnings", []), params)
    if catalogue.tasks[task]["kind"] == "serving" and any(
        fit.get("decode", {}).get("backing") is not None for fit in fits
    ):
        sources = [decode_source_text(catalogue, lang)]
    sources += [_label(catalogue, f"warn_{w}", lang) for w in found.get("warnings", [])]  # no card fits
    paragraphs += [" ".join(sources)] if sources else []
    note = " ".join(f"<p>{esc(paragraph)}</p>" for paragraph in paragraphs)  # a space: one text, read aloud
    table = (
        (
            f'<table id="finder-table">'
            f'<caption>{esc(choice_text(catalogue, lang, model, task, cards, option))}</caption>\n'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        )
        if fits
        else ""
    )
    return (
        f'<div class="finder-results" id="finder-results">'
        f'<p class="finder-summary" id="finder-status" role="status" aria-live="polite">{esc(summary)}</p>'
        f'<p class="finder-order" id="finder-order"{"" if order else " hidden"}>{esc(order)}</p>'
        f'<div class="finder-table-wrap" id="finder-table-wrap">{table}</div>'
        f'<p class="finder-why" id="finder-why">{esc(_label(catalogue, "why", lang, parts=parts))}</p>'
        f'<div class="finder-note" id="finder-note">{note}</div></div>'
    )


SETTINGS = ("seq_length", "micro_batch", "tight_free_fraction")


def finder_setting(raw: dict[str, str], lang: str) -> str:
    """``{{ finder_setting name=seq_length }}`` -> ``2.048``: a setting of finder.yaml the
    page's prose names (``seq_length`` and ``micro_batch`` of the reference activations, as
    numbers) and ``tight_free_fraction``, ``vram.fit.TIGHT_FREE_FRACTION`` (what a fit leaves
    free at its peak under which it is tight), as a percentage."""
    name = Args(raw, {"name"}).str("name")
    if name not in SETTINGS:
        raise RenderError(f"name={name} is not one of {', '.join(SETTINGS)}")
    settings = load_catalogue().settings
    if name == "tight_free_fraction":  # vram's one rule for "tight" (vram.fit.is_tight)
        return format_percent(TIGHT_FREE_FRACTION, locale=lang)
    return format_number(settings["activations"][name], lang, 0)


def finder_activations(raw: dict[str, str], lang: str) -> str:
    """``{{ finder_activations model=llama-3.1-8b recompute=full }}`` -> ``2,6 GB``: the
    reference activations the finder compares the margin with (``activation_reference``,
    ``recompute=none|full``), with the finder's decimals."""
    args = Args(raw, {"model", "recompute"})
    catalogue = load_catalogue()
    model, recompute = args.str("model"), args.str("recompute")
    if model not in catalogue.models:
        raise RenderError(f"unknown model {model!r} in {MODELS_YAML} (known: {', '.join(catalogue.models)})")
    if recompute not in ("none", "full"):
        raise RenderError(f"recompute={recompute} is not none or full")
    return _gb(activation_reference(catalogue, catalogue.models[model])[recompute], catalogue, lang)


FINDER = {
    "finder_form": finder_form,
    "finder_table": finder_table,
    "finder_setting": finder_setting,
    "finder_activations": finder_activations,
}
