""""Find the GPU your model fits in": the reference answers computed by ``vram`` at build time.

``finder_data()`` answers, for every model of ``snippets/data/models.yaml`` (parameters
counted by ``vram.count_params`` from the shipped ``config.json``), every task, card count
and method (training) or context length (serving) of ``snippets/data/finder.yaml``, the
reference job (``job``: finder.yaml's sequence length and micro-batch, one sequence served
under vLLM's default ``gpu_memory_utilization``) with ``vram.answer_job``, the finder's one
calculator: the bytes one card needs, what takes them, and which cards of
``snippets/data/gpus.yaml`` fit (smallest first, with the margin and, only where the guide
gives one, the machine price). The verdicts are ``vram.job``'s: for training and LoRA,
backward with the activations at their peak and the optimizer step must both hold
(``vram.fit.training_verdict``), "tight" when only with full recomputation. Choices the calculator
refuses (``NOT_OFFERED``) are left out, and the page greys them out with the reason.
The result is locale-independent, sizes already in GB: MkDocs writes it once as
``assets/finder.json``; the page's JavaScript only selects, filters and formats it, and
sends any other job to the same ``vram`` code running under Pyodide in a Web Worker
(``hooks/pyodide_assets.py``, ``docs/assets/finder-worker.js``).

Two placeholders render the page's parts in the reader's language:
``{{ finder_form assets=../assets }}`` (the labelled controls, every input that decides a
fit, hidden until the script runs) and ``{{ finder_table }}`` (the static result of the
default choice, or of ``model= task= cards= method= context=``: what a reader without JavaScript sees). Two more
give the prose the finder's own numbers: ``{{ finder_setting name= }}`` and
``{{ finder_activations model= recompute= }}``.

Pure: no MkDocs import; data files are read on every call (``mkdocs serve`` shows edits).
"""

from __future__ import annotations

import functools
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from babel.numbers import format_percent

import vram
from vram.catalogue import card_speed, cards_from_data
from vram.fit import mib_to_bytes, usable_bytes
from vram.job import JOB_FIELDS, KV_DTYPES, OFFLOAD, JobError
from vram.units import bytes_to_gb, bytes_to_gib

from . import data as data_module
from .data import load_yaml, relative, text, tree_stamp
from .errors import RenderError
from .languages import LANGUAGES
from .locale_format import format_eur, format_number, format_quantity, unit_label
from .numbers import calculator_errors
from .placeholders import Args
from .script_json import script_json

JSON_URI = "assets/finder.json"
KINDS = ("training", "lora", "serving")
FINDER_YAML = "snippets/data/finder.yaml"
MODELS_YAML = "snippets/data/models.yaml"


@dataclass(frozen=True)
class Model:
    key: str
    name: str
    config: vram.ModelConfig
    params: vram.ParamCount
    max_context: int | None
    shape: vram.ModelShape  # the sizes the frameworks need (largest module, layer, root)


@dataclass(frozen=True)
class Catalogue:
    """finder.yaml, models.yaml (with parsed configs) and gpus.yaml, checked."""

    settings: dict[str, Any]
    tasks: dict[str, dict[str, Any]]
    methods: dict[str, dict[str, Any]]
    models: dict[str, Model]
    gpus: list[tuple[str, dict[str, Any]]]  # smallest memory first, catalogue order on ties
    machines: dict[str, dict[str, Any]]
    labels: dict[str, Any]
    parts: dict[str, Any]
    reserve_mib: int  # gpus.yaml: CUDA context and NCCL buffers, taken from every card
    speeds: dict[str, dict[str, Any]] = field(default_factory=dict)  # vram.catalogue.card_speed per card


def _mapping(value: Any, where: str) -> dict:
    if not isinstance(value, dict) or not value:
        raise RenderError(f"{where}: expected a non-empty mapping")
    return value


def _load_models(data_dir: Path) -> dict[str, Model]:
    models = {}
    for key, entry in _mapping((load_yaml("models", data_dir) or {}).get("models"), f"{MODELS_YAML}: models").items():
        where = f"{MODELS_YAML}: models.{key}"
        if not isinstance(entry, dict) or not entry.get("name") or not entry.get("config"):
            raise RenderError(f"{where}: needs 'name' and 'config' (a file of snippets/data/models/)")
        path = data_dir / "models" / entry["config"]
        if not path.is_file():
            raise RenderError(f"{where}: config file {relative(path)} not found")
        try:
            config = vram.load_model_config(path)
            raw = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise RenderError(f"{where}: {exc}") from None
        max_context = raw.get("max_position_embeddings")
        try:
            shape = vram.model_shape(config)
        except ValueError as exc:
            raise RenderError(f"{where}: {exc}") from None
        models[key] = Model(key, str(entry["name"]), config, vram.count_params(config),
                            max_context if isinstance(max_context, int) else None, shape)
    return models


def model_config_files(data_dir: Path | None = None) -> dict[str, Path]:
    """Model key -> its config.json, as models.yaml names them (the worker's bundle ships them)."""
    folder = data_dir or data_module.DATA_DIR
    return {key: folder / "models" / entry["config"]
            for key, entry in (load_yaml("models", folder) or {}).get("models", {}).items()}


def _check_translations(finder: dict) -> None:
    """Every text of finder.yaml has every language, whichever language is being built."""
    for section in ("labels", "parts", "notebook"):
        for key, value in _mapping(finder.get(section), f"{FINDER_YAML}: {section}").items():
            text(value, LANGUAGES[0], f"{FINDER_YAML}: {section}.{key}")
    for section in ("tasks", "methods"):
        for key, entry in finder[section].items():
            text(entry.get("label") if isinstance(entry, dict) else None, LANGUAGES[0], f"{FINDER_YAML}: {section}.{key}.label")


_catalogue_memo: dict[Path, tuple[tuple, Catalogue]] = {}


def load_catalogue(data_dir: Path | None = None) -> Catalogue:
    """Read and check the finder's data, once while no file under ``data_dir`` changes
    (every finder placeholder of both languages reads it; callers treat it as read-only).
    Raises RenderError naming the file and key."""
    folder = data_dir or data_module.DATA_DIR
    stamp = tree_stamp(folder)
    cached = _catalogue_memo.get(folder)
    if cached is None or cached[0] != stamp:
        _catalogue_memo[folder] = cached = (stamp, _read_catalogue(folder))
    return cached[1]


def _speeds(gpus_yaml: dict, data_dir: Path) -> dict[str, dict[str, Any]]:
    with calculator_errors():
        cards = cards_from_data(gpus_yaml, _mapping(load_yaml("interconnects", data_dir), "snippets/data/interconnects.yaml"))
    return {key: card_speed(card) for key, card in cards.items()}


def _read_catalogue(data_dir: Path) -> Catalogue:
    finder = _mapping(load_yaml("finder", data_dir), FINDER_YAML)
    settings = _mapping(finder.get("settings"), f"{FINDER_YAML}: settings")
    tasks = _mapping(finder.get("tasks"), f"{FINDER_YAML}: tasks")
    for key, task in tasks.items():
        if not isinstance(task, dict) or task.get("kind") not in KINDS:
            raise RenderError(f"{FINDER_YAML}: tasks.{key}: 'kind' must be one of {', '.join(KINDS)}")
    methods = _mapping(finder.get("methods"), f"{FINDER_YAML}: methods")
    gpus_yaml = _mapping(load_yaml("gpus", data_dir), "snippets/data/gpus.yaml")
    gpus = sorted(_mapping(gpus_yaml.get("gpus"), "snippets/data/gpus.yaml: gpus").items(),
                  key=lambda item: item[1]["memory_mib"])
    _check_translations(finder)
    catalogue = Catalogue(settings, tasks, methods, _load_models(data_dir), gpus,
                          gpus_yaml.get("machines") or {}, _mapping(finder.get("labels"), f"{FINDER_YAML}: labels"),
                          _mapping(finder.get("parts"), f"{FINDER_YAML}: parts"), gpus_yaml["reserve_mib"],
                          _speeds(gpus_yaml, data_dir))
    default = settings.get("default", {})
    for field, known in (("model", catalogue.models), ("task", tasks), ("method", methods)):
        if default.get(field) not in known:
            raise RenderError(f"{FINDER_YAML}: settings.default.{field}={default.get(field)!r} is not one of {', '.join(known)}")
    return catalogue


def options(catalogue: Catalogue, task_key: str) -> list[str]:
    """The second choice of a task: method keys (training, LoRA) or context lengths (serving)."""
    if catalogue.tasks[task_key]["kind"] == "serving":
        return [str(n) for n in catalogue.settings["contexts"]]
    return list(catalogue.methods)


# --- what one card needs: vram.job.answer_job, the finder's one calculator ------------------

def job(catalogue: Catalogue, model_key: str, task_key: str, cards: int, option: str) -> dict[str, Any]:
    """The ``vram.job`` job of one choice with finder.yaml's defaults (the page's worker builds
    the same from the reader's inputs): the method's framework and stage, the reference
    micro-batch of ``settings.activations`` (training, LoRA), one sequence of ``option``
    tokens under ``settings.serving`` (serving), and the catalogue's cards."""
    task, settings = catalogue.tasks[task_key], catalogue.settings
    found: dict[str, Any] = {"kind": task["kind"], "config": catalogue.models[model_key].config, "cards": cards,
                             "gpus": [{"key": k, "memory_mib": g["memory_mib"], "speed": catalogue.speeds[k]}
                                      for k, g in catalogue.gpus],
                             "reserve_mib": catalogue.reserve_mib, "tight_free_fraction": settings["tight_free_fraction"]}
    if task["kind"] == "serving":
        found.update(weights=task["weight_dtype"], context=int(option), **settings["serving"])
        return found
    method = catalogue.methods[option]
    found.update(framework=method["framework"], zero_stage=method["zero_stage"],
                 seq_len=settings["activations"]["seq_length"], micro_batch=settings["activations"]["micro_batch"],
                 recompute="none")
    if task["kind"] == "training":
        found.update(optimizer=task["optimizer"], optimizer_impl=settings["optimizer_impl"],
                     prices={m["gpu"]: str(m["price_eur_per_hour_from"]) for m in catalogue.machines.values()
                             if m["count"] == cards})
    else:
        found.update(rank=settings["lora"]["rank"], base_dtype=task["base_dtype"])
    return found


CUSTOM_MODEL = "custom"  # the model select's value for the reader's own config.json
NOT_OFFERED = ("not_offered", "too_long")  # a choice the page greys out, with the reason


def answer(catalogue: Catalogue, model_key: str, task_key: str, cards: int, option: str) -> dict[str, Any] | None:
    """``vram.answer_job`` of ``job(...)``, or None where the choice is not offered (LoRA
    under FSDP2 or the paper's accounting, a context beyond the model's maximum, heads vLLM
    cannot split over that many cards). Raises RenderError for any other fault."""
    try:
        return vram.answer_job(job(catalogue, model_key, task_key, cards, option))
    except JobError as exc:
        if exc.code in NOT_OFFERED:
            return None
        raise RenderError(f"{model_key} {task_key} on {cards} cards with {option}: {exc}") from None


def card_capacity_bytes(catalogue: Catalogue, gpu: dict[str, Any]) -> int:
    """What a process can use of one card: nvidia-smi's memory less the reserve (vram.fit.usable_bytes)."""
    with calculator_errors():
        return usable_bytes(gpu["memory_mib"], catalogue.reserve_mib)


def page_result(catalogue: Catalogue, found: dict[str, Any], cards: int) -> dict[str, Any]:
    """An answer as the page shows it: per card and parts in GB, each fitting card with its
    margin, whether it is tight (training and LoRA: only with full recomputation;
    serving: little free), the sequences it holds (serving) and, where the guide gives one,
    the machine price. No arithmetic: every figure is ``answer_job``'s."""
    machines = {(m["gpu"], m["count"]): (k, m["price_eur_per_hour_from"]) for k, m in catalogue.machines.items()}
    fits = []
    for fit in found["fits"]:
        shown = {key: fit[key] for key in ("gpu", "margin_gb", "free_fraction", "tight", "recompute", "max_concurrent", "time")
                 if key in fit}
        if (fit["gpu"], cards) in machines:
            shown["machine"], shown["price_eur_per_hour_from"] = machines[(fit["gpu"], cards)]
        fits.append(shown)
    result = {"per_gpu_gb": found["per_gpu_gb"], "parts": [[k, gb] for k, _, gb in found["parts"]],
              "fits": fits, "short": [{"gpu": f["gpu"], "margin_gb": f["margin_gb"]} for f in found["short"]]}
    if found["host_bytes"]:
        result["host_gb"] = found["host_gb"]
    if "run" in found:
        result["run"] = found["run"]
    if "kv_per_sequence_gb" in found:
        result["kv_per_sequence_gb"] = found["kv_per_sequence_gb"]
    return result


def result(catalogue: Catalogue, model_key: str, task_key: str, cards: int, option: str) -> dict[str, Any] | None:
    """One choice as the page shows it (``page_result`` of ``answer``), or None where not offered."""
    found = answer(catalogue, model_key, task_key, cards, option)
    return None if found is None else page_result(catalogue, found, cards)


def activation_bytes(catalogue: Catalogue, model: Model) -> dict[str, int]:
    """Bytes of the activations of one reference micro-batch (``settings.activations``:
    tokens and micro-batch) at their peak, the loss's backward included
    (``ActivationMemory.peak_bytes``), by ``vram.activation_memory`` with the attention
    transformers runs the model with
    (``vram.default_attention``): ``{"none": …, "full": …}``, without recomputation and with
    full recomputation (every decoder layer checkpointed). Raises RenderError for a family
    the calculator does not model."""
    ref, cfg = catalogue.settings["activations"], model.config
    with calculator_errors():
        attention = vram.default_attention(cfg)
        return {mode: vram.activation_memory(cfg, ref["seq_length"], ref["micro_batch"], attention, mode).peak_bytes
                for mode in ("none", "full")}


def activation_reference(catalogue: Catalogue, model: Model) -> dict[str, Any]:
    """``activation_bytes`` in GB (``"none"``, ``"full"``) and the attention (``"attention"``:
    sdpa, or eager where transformers refuses sdpa), as the page's note shows them."""
    found: dict[str, Any] = {mode: bytes_to_gb(n) for mode, n in activation_bytes(catalogue, model).items()}
    with calculator_errors():
        found["attention"] = vram.default_attention(model.config)
    return found


def finder_data(data_dir: Path | None = None) -> dict[str, Any]:
    """Everything the finder page shows, for every choice: plain JSON types, sizes in GB (10**9 bytes)."""
    catalogue = load_catalogue(data_dir)
    settings = catalogue.settings
    results: dict[str, Any] = {}
    for model_key in catalogue.models:
        for task_key in catalogue.tasks:
            for cards in settings["cards"]:
                for option in options(catalogue, task_key):
                    found = result(catalogue, model_key, task_key, cards, option)
                    if found is not None:
                        results.setdefault(model_key, {}).setdefault(task_key, {}).setdefault(str(cards), {})[option] = found
    return {
        "schema": 1,
        "default": settings["default"],
        "cards": settings["cards"],
        "contexts": settings["contexts"],
        "activations": settings["activations"],
        "models": [{"key": m.key, "name": m.name, "params": m.params.total, "active_params": m.params.active,
                    "max_context": m.max_context, "activation_gb": activation_reference(catalogue, m)}
                   for m in catalogue.models.values()],
        "tasks": [{key: value for key, value in t.items() if key != "label"} | {"key": k} for k, t in catalogue.tasks.items()],
        "lora": settings["lora"],
        "serving": settings["serving"],
        "tight_free_fraction": settings["tight_free_fraction"],
        "methods": [{"key": k, "framework": m["framework"], "zero_stage": m["zero_stage"]}
                    for k, m in catalogue.methods.items()],
        "machines": {f"{m['gpu']}@{m['count']}": {"key": k, "price_eur_per_hour_from": m["price_eur_per_hour_from"]}
                     for k, m in catalogue.machines.items()},
        "reserve_mib": catalogue.reserve_mib,
        "reserve_gib": bytes_to_gib(mib_to_bytes(catalogue.reserve_mib)),
        "gpus": [{"key": k, "name": g["name"], "memory_mib": g["memory_mib"],
                  "memory_gb": bytes_to_gb(mib_to_bytes(g["memory_mib"])),
                  "usable_gb": bytes_to_gb(card_capacity_bytes(catalogue, g)), "speed": catalogue.speeds[k]}
                 for k, g in catalogue.gpus],
        "run_tokens": JOB_FIELDS["tokens"],
        # the RAM of the catalogue's machines where a source gives it (gpus.yaml host_ram_gb)
        "host_ram_gb": {f"{m['gpu']}@{m['count']}": m["host_ram_gb"] for m in catalogue.machines.values()
                        if m["host_ram_gb"] != "not published"},
        "results": results,
    }


_json_memo: dict[Path, tuple[tuple, str]] = {}


def finder_json(data_dir: Path | None = None) -> str:
    """``finder_data`` as compact, stable JSON (the content of ``assets/finder.json``).

    Computed once while no file under ``data_dir`` changes (both languages read the same
    file; ``mkdocs serve`` recomputes it after a data edit, and after a code edit the
    module itself is reloaded). Raises RenderError.
    """
    folder = data_dir or data_module.DATA_DIR
    stamp = tree_stamp(folder)
    cached = _json_memo.get(folder)
    if cached is None or cached[0] != stamp:
        content = json.dumps(finder_data(folder), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        _json_memo[folder] = cached = (stamp, content)
    return cached[1]


# --- the page's parts, in the reader's language ---------------------------------------------

def _label(catalogue: Catalogue, key: str, lang: str, **fields: Any) -> str:
    value = text(catalogue.labels.get(key), lang, f"{FINDER_YAML}: labels.{key}")
    return value.format(**fields) if fields else value


def page_labels(catalogue: Catalogue, lang: str) -> dict[str, str]:
    """Every label the script needs, in ``lang`` (templates keep their ``{fields}``)."""
    labels = {key: text(value, lang, f"{FINDER_YAML}: labels.{key}") for key, value in catalogue.labels.items()}
    labels.update({f"part_{key}": text(value, lang, f"{FINDER_YAML}: parts.{key}") for key, value in catalogue.parts.items()})
    labels["unit_gb"] = unit_label("gb", lang)
    labels["unit_gib"] = unit_label("gib", lang)
    return labels


def _task_label(catalogue: Catalogue, key: str, lang: str) -> str:
    label = text(catalogue.tasks[key].get("label"), lang, f"{FINDER_YAML}: tasks.{key}.label")
    return label.format(rank=catalogue.settings["lora"]["rank"])


def _method_label(catalogue: Catalogue, key: str, lang: str) -> str:
    return text(catalogue.methods[key].get("label"), lang, f"{FINDER_YAML}: methods.{key}.label")


def _context_label(catalogue: Catalogue, tokens: int, lang: str) -> str:
    return _label(catalogue, "context_option", lang, tokens=format_number(tokens, lang, 0))


def _select(name: str, label: str, choices: list[tuple[str, str]], selected: str, extra: str = "") -> str:
    # "\n" between elements: search indexes the page's text, and without whitespace the
    # options and cells run together ("Mistral 7B v0.1Qwen2.5 7B": "Qwen2.5" found nothing).
    opts = "\n".join(f'<option value="{html.escape(v)}"{" selected" if v == selected else ""}>{html.escape(t)}</option>'
                     for v, t in choices)
    return (f'<label for="finder-{name}">{html.escape(label)}</label>\n'
            f'<select id="finder-{name}" name="{name}"{extra}>{opts}</select>')


def _text(name: str, label: str, value: Any, numeric: bool = True, mode: str = "numeric", extra: str = "") -> str:
    mode_attr = f' inputmode="{mode}"' if numeric or mode != "numeric" else ""
    return (f'<label for="finder-{name}">{html.escape(label)}</label>\n'
            f'<input type="text" id="finder-{name}" name="{name}" value="{html.escape(str(value))}"{mode_attr} '
            f'autocomplete="off" spellcheck="false"{extra}>')


def _context_field(catalogue: Catalogue, lang: str) -> str:
    """Serving: the context length, any whole number of tokens (the calculator refuses one
    beyond the model's maximum in one line); the precomputed lengths offered as suggestions."""
    suggestions = "\n".join(f'<option value="{n}">{html.escape(_context_label(catalogue, n, lang))}</option>'
                            for n in catalogue.settings["contexts"])
    return (_text("context", _label(catalogue, "context", lang), catalogue.settings["default"]["context"],
                  extra=' list="finder-contexts" aria-describedby="finder-context-hint"')
            + f'<datalist id="finder-contexts">{suggestions}</datalist>')


def _config_field(catalogue: Catalogue, lang: str) -> str:
    """The reader's own config.json: pasted, dropped on the box or chosen as a file."""
    hint = html.escape(_label(catalogue, "config_hint", lang))
    return (f'<label for="finder-config">{html.escape(_label(catalogue, "config", lang))}</label>\n'
            f'<textarea id="finder-config" name="config" rows="6" spellcheck="false" autocomplete="off" '
            f'aria-describedby="finder-config-hint"></textarea>'
            f'<p class="finder-hint" id="finder-config-hint">{hint}</p>'
            f'<label for="finder-config-file">{html.escape(_label(catalogue, "config_file", lang))}</label>\n'
            f'<input type="file" id="finder-config-file" accept=".json,application/json">')


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
        _select("model", _label(catalogue, "model", lang), [(k, m.name) for k, m in catalogue.models.items()]
                + [(CUSTOM_MODEL, _label(catalogue, "own_model", lang))], d["model"]),
        _select("task", _label(catalogue, "task", lang), [(k, _task_label(catalogue, k, lang)) for k in catalogue.tasks], d["task"]),
        _select("cards", _label(catalogue, "cards", lang), [(str(n), str(n)) for n in catalogue.settings["cards"]], str(d["cards"])),
        _select("method", _label(catalogue, "method", lang), [(k, _method_label(catalogue, k, lang)) for k in catalogue.methods],
                d["method"], ' aria-describedby="finder-method-hint"')
        + f'<p class="finder-hint" id="finder-method-hint">{html.escape(_label(catalogue, "method_hint", lang))}</p>',
        _context_field(catalogue, lang)
        + f'<p class="finder-hint" id="finder-context-hint">{html.escape(_label(catalogue, "tensor_parallel", lang))}</p>',
    ]
    kinds = ["", "", "", "training lora", "serving"]
    fields.insert(1, _config_field(catalogue, lang))
    kinds.insert(1, "custom")
    settings = catalogue.settings
    label = functools.partial(_label, catalogue, lang=lang)
    more = [  # every other input that decides a fit (the task names the optimizer or the weights' format)
        ("training", _select("offload", label("offload"), [(v, label(f"offload_{v.replace('+', '_')}")) for v in OFFLOAD], "none")),
        ("training lora", _text("seq_len", label("seq_len"), settings["activations"]["seq_length"])),
        ("training lora", _text("micro_batch", label("micro_batch"), settings["activations"]["micro_batch"])),
        ("training lora", _select("recompute", label("recompute"), [(v, label(f"recompute_{v}")) for v in vram.RECOMPUTE], "none")),
        ("training lora", _select("attention", label("attention"), [("", label("attention_default"))] + [(v, v) for v in vram.ATTENTION], "")),
        ("lora", _text("rank", label("rank"), settings["lora"]["rank"])),
        ("lora", _text("targets", label("targets"), vram.ALL_LINEAR, numeric=False)),
        ("serving", _select("kv_dtype", label("kv_dtype"), [(v, v) for v in KV_DTYPES], settings["serving"]["kv_dtype"])),
        ("serving", _text("concurrent", label("concurrent"), settings["serving"]["concurrent"])),
        ("serving", _text("gpu_memory_utilization", label("gpu_memory_utilization"),
                          settings["serving"]["gpu_memory_utilization"], numeric=False, mode="decimal")),
        ("training", _text("host_ram_gb", label("host_ram_gb"), "")),
        ("training", _text("tokens", label("tokens"), JOB_FIELDS["tokens"])),
        ("training", _text("price", label("price"), "", numeric=False, mode="decimal")),
        ("training", _select("price_gpu", label("price_gpu"), [(k, g["name"]) for k, g in catalogue.gpus], catalogue.gpus[0][0])),
    ]
    fields += [field for _, field in more]
    kinds += [kind for kind, _ in more]
    body = "\n".join(f'<div class="finder-field"{f" data-kinds={chr(34)}{k}{chr(34)}" if k else ""}>{f}</div>'
                   for f, k in zip(fields, kinds))
    body += f'\n<p class="finder-error" id="finder-error" role="alert" hidden></p>'
    labels = script_json(page_labels(catalogue, lang))
    return (f'<div class="finder" id="finder"><link rel="stylesheet" href="{assets}/finder.css">'
            f'<form class="finder-form" id="finder-form" data-json="{assets}/finder.json" hidden>'
            f'<fieldset><legend>{html.escape(_label(catalogue, "legend", lang))}</legend>\n{body}</fieldset></form>'
            f'<script type="application/json" id="finder-labels">{labels}</script>'
            f'<script src="{assets}/finder.js" defer></script></div>')


def _gb(gb: float, catalogue: Catalogue, lang: str) -> str:
    return format_quantity(gb, "gb", lang, catalogue.settings["decimals"])


def choice_text(catalogue: Catalogue, lang: str, model: str, task: str, cards: int, option: str) -> str:
    """"Llama 3.1 8B, Fine-tuning completo, AdamW, una scheda, DDP (…)" — the table's caption;
    training and LoRA name the method, hence the framework, whatever the number of cards."""
    parts = [catalogue.models[model].name, _task_label(catalogue, task, lang),
             _label(catalogue, "cards_one", lang) if cards == 1 else _label(catalogue, "cards_many", lang, cards=cards)]
    if catalogue.tasks[task]["kind"] == "serving":
        parts.append(_context_label(catalogue, int(option), lang))
    else:
        parts.append(_method_label(catalogue, option, lang))
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
        raise RenderError(f"{'context' if serving else 'method'}={option} is not one of {', '.join(options(catalogue, task))}")
    found = result(catalogue, model, task, cards, option)
    if found is None:
        raise RenderError(f"{model} {task} on {cards} cards with {option}: not computed")
    return render_result(catalogue, lang, found, model, task, cards, option)


def summary_text(catalogue: Catalogue, lang: str, found: dict[str, Any], serving: bool) -> str:
    """The status line: what the figure per card holds, the reserve and (training, LoRA) the
    activations beside it, the card models that fit, whether the first needs full
    recomputation, and the cards whose margin is below the activations."""
    names = dict((k, g["name"]) for k, g in catalogue.gpus)
    reserve = format_quantity(bytes_to_gib(mib_to_bytes(catalogue.reserve_mib)), "gib", lang, catalogue.settings["decimals"])
    need = _label(catalogue, "need_serving" if serving else "need_training", lang,
                  need=_gb(found["per_gpu_gb"], catalogue, lang), reserve=reserve)
    fits = found["fits"]
    if not fits:
        summary = _label(catalogue, "summary_none_serving" if serving else "summary_none", lang, need_text=need)
    else:
        summary = _label(catalogue, "summary_one" if len(fits) == 1 else "summary_many", lang, need_text=need,
                         count=len(fits), gpu=names[fits[0]["gpu"]], margin=_gb(fits[0]["margin_gb"], catalogue, lang))
        if fits[0].get("recompute") == "full":
            summary += " " + _label(catalogue, "summary_recompute", lang)
    if found["short"]:
        short = ", ".join(_label(catalogue, "short_card", lang, gpu=names[fit["gpu"]], margin=_gb(fit["margin_gb"], catalogue, lang))
                          for fit in found["short"])
        summary += " " + _label(catalogue, "summary_short", lang, cards=short)
    return summary


def note_text(catalogue: Catalogue, lang: str, model: str, task: str, option: str, found: dict[str, Any]) -> str:
    """The note under the table: the reserve, and the activations (training, LoRA) or the KV
    cache and vLLM's share of the card (serving) the margin is compared with or left in."""
    reserve = format_quantity(bytes_to_gib(mib_to_bytes(catalogue.reserve_mib)), "gib", lang, catalogue.settings["decimals"])
    kind = catalogue.tasks[task]["kind"]
    if kind == "serving":
        serving = catalogue.settings["serving"]
        return _label(catalogue, "serving_job", lang, concurrent=format_number(serving["concurrent"], lang, 0),
                      context=format_number(int(option), lang, 0), kv_dtype=serving["kv_dtype"],
                      kv=_gb(found["kv_per_sequence_gb"], catalogue, lang),
                      share=format_percent(serving["gpu_memory_utilization"], locale=lang), reserve=reserve)
    ref, settings = activation_reference(catalogue, catalogue.models[model]), catalogue.settings["activations"]
    return _label(catalogue, f"activations_{kind}", lang, model=catalogue.models[model].name,
                  seq=format_number(settings["seq_length"], lang, 0), micro_batch=format_number(settings["micro_batch"], lang, 0),
                  attention=ref["attention"], none=_gb(ref["none"], catalogue, lang),
                  full=_gb(ref["full"], catalogue, lang), reserve=reserve)


def _span(catalogue: Catalogue, lang: str, low: str, high: str) -> str:
    return low if low == high else _label(catalogue, "span", lang, low=low, high=high)


def run_text(catalogue: Catalogue, lang: str, time: dict[str, Any]) -> str:
    """A fitting card's run (``answer_job``'s ``time``): seconds per step and what bounds it,
    hours for the whole run and, with a price, its cost; ranges as [low, high]."""
    step = _span(catalogue, lang, *(format_number(s, lang, 2) for s in time["step_s"]))
    run = _span(catalogue, lang, *(format_number(s / 3600, lang, 1) for s in time["run_s"]))
    cost = ""
    if time["cost_eur"] is not None:
        cost = _label(catalogue, "run_cost", lang, cost=_span(catalogue, lang, *(format_eur(float(c), lang) for c in time["cost_eur"])),
                      price=format_eur(float(time["price_eur_per_hour"]), lang))
    return _label(catalogue, "run_cell", lang, step=step, bound=_label(catalogue, f"bound_{time['bound']}", lang), run=run, cost=cost)


def ranking_text(catalogue: Catalogue, lang: str, run: dict[str, Any]) -> str:
    """The machines that fit, ranked for the run (``answer_job``'s ``run``), saying by what."""
    names = dict((k, g["name"]) for k, g in catalogue.gpus)
    return _label(catalogue, f"ranked_{run['ranked_by']}", lang, tokens=format_number(run["tokens"], lang, 0),
                  order=", ".join(names[key] for key in run["order"]))


def render_result(catalogue: Catalogue, lang: str, found: dict[str, Any], model: str, task: str, cards: int, option: str) -> str:
    """The results block; ``finder.js`` builds the same structure from the JSON."""
    esc = html.escape
    names = dict((k, g["name"]) for k, g in catalogue.gpus)
    fits = found["fits"]
    summary = summary_text(catalogue, lang, found, catalogue.tasks[task]["kind"] == "serving")
    columns = ("col_card", "col_memory", "col_margin", "col_price") + (("col_run",) if "run" in found else ())
    head = "\n".join(f'<th scope="col">{esc(_label(catalogue, c, lang))}</th>' for c in columns)
    rows = []
    for fit in fits:
        if "max_concurrent" in fit:  # serving: how many sequences of this length the card holds
            margin = _label(catalogue, "margin_serving", lang, margin=_gb(fit["margin_gb"], catalogue, lang),
                            free=format_percent(fit["free_fraction"], locale=lang),
                            count=format_number(fit["max_concurrent"], lang, 0), context=format_number(int(option), lang, 0))
        else:
            margin = _label(catalogue, "margin_cell", lang, margin=_gb(fit["margin_gb"], catalogue, lang),
                            free=format_percent(fit["free_fraction"], locale=lang))
        if fit["tight"]:
            tight = "tight_recompute" if "recompute" in fit else "tight"
            margin += f' <strong class="finder-tight">{esc(_label(catalogue, tight, lang))}</strong>'
        price = (_label(catalogue, "price_cell", lang, count=cards, gpu=names[fit["gpu"]], price=format_eur(fit["price_eur_per_hour_from"], lang))
                 if "machine" in fit else _label(catalogue, "no_price", lang))
        memory = _gb(bytes_to_gb(mib_to_bytes(dict(catalogue.gpus)[fit["gpu"]]["memory_mib"])), catalogue, lang)
        run = f'\n<td>{esc(run_text(catalogue, lang, fit["time"]))}</td>' if "time" in fit else ""
        rows.append(f'<tr><th scope="row">{esc(names[fit["gpu"]])}</th>\n<td>{esc(memory)}</td>\n<td>{margin}</td>\n<td>{esc(price)}</td>{run}</tr>')
    parts = _label(catalogue, "part_separator", lang).join(_label(catalogue, "part_size", lang, part=text(catalogue.parts[k], lang, f"{FINDER_YAML}: parts.{k}"),
                             size=_gb(v, catalogue, lang)) for k, v in found["parts"])
    note = note_text(catalogue, lang, model, task, option, found)
    if "run" in found:
        note += " " + ranking_text(catalogue, lang, found["run"])
    table = (f'<table id="finder-table">'
             f'<caption>{esc(choice_text(catalogue, lang, model, task, cards, option))}</caption>\n'
             f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>') if fits else ""
    return (f'<div class="finder-results" id="finder-results">'
            f'<p class="finder-summary" id="finder-status" role="status" aria-live="polite">{esc(summary)}</p>'
            f'<div class="finder-table-wrap" id="finder-table-wrap">{table}</div>'
            f'<p class="finder-why" id="finder-why">{esc(_label(catalogue, "why", lang, parts=parts))}</p>'
            f'<p class="finder-note" id="finder-note">{esc(note)}</p></div>')


SETTINGS = ("seq_length", "micro_batch", "tight_free_fraction")


def finder_setting(raw: dict[str, str], lang: str) -> str:
    """``{{ finder_setting name=seq_length }}`` -> ``2.048``: a setting of finder.yaml the
    page's prose names (``seq_length`` and ``micro_batch`` of the reference activations, as
    numbers; ``tight_free_fraction``, serving's threshold, as a percentage)."""
    name = Args(raw, {"name"}).str("name")
    if name not in SETTINGS:
        raise RenderError(f"name={name} is not one of {', '.join(SETTINGS)}")
    settings = load_catalogue().settings
    if name == "tight_free_fraction":
        return format_percent(settings[name], locale=lang)
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


FINDER = {"finder_form": finder_form, "finder_table": finder_table, "finder_setting": finder_setting,
          "finder_activations": finder_activations}
