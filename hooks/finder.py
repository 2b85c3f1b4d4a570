""""Find the GPU your model fits in": every number computed by ``vram`` at build time.

``finder_data()`` computes, for every model of ``snippets/data/models.yaml`` (parameters
counted by ``vram.count_params`` from the shipped ``config.json``), every task, card count
and method (training) or context length (serving) of ``snippets/data/finder.yaml``, the
bytes one card needs, what takes them, and which cards of ``snippets/data/gpus.yaml`` fit
(smallest first, with the margin and, only where the guide gives one, the machine price).
For training and LoRA a card fits only when backward (model states, the framework's buffers
and the reference micro-batch's activations at their peak, the loss's backward included)
holds at least with full recomputation, and so does the optimizer step (AdamW as the guide's
scripts run it, ``settings.optimizer_impl``); it is "tight" when it holds only with full
recomputation (``fitting_cards``, ``vram.fit.training_verdict``).
Training per card under the method's framework, named on the page: DDP under PyTorch AMP,
DeepSpeed ZeRO-1/2/3, FSDP2 ``reshard_after_forward=False/True`` (``vram.framework_memory``);
LoRA/QLoRA per data-parallel card under DDP or ZeRO-1/2/3 (``vram.lora_memory_per_gpu``);
activations of one reference sequence by ``vram.activation_memory``; serving per card of
a tensor-parallel group (``vram.serving_memory_per_gpu``; card counts whose heads vLLM
cannot split are left out).
The result is locale-independent, sizes already in GB (``vram.bytes_to_gb``): MkDocs
writes it once as ``assets/finder.json`` and the page's JavaScript of both languages only
selects, filters and formats it (no arithmetic there).

Two placeholders render the page's parts in the reader's language:
``{{ finder_form assets=../assets }}`` (the labelled controls, hidden until the script
runs) and ``{{ finder_table }}`` (the static result of the default choice, or of
``model= task= cards= method= context=``: what a reader without JavaScript sees). Two more
give the prose the finder's own numbers: ``{{ finder_setting name= }}`` and
``{{ finder_activations model= recompute= }}``.

Pure: no MkDocs import; data files are read on every call (``mkdocs serve`` shows edits).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from babel.numbers import format_percent

import vram
from vram.fit import mib_to_bytes, training_verdict, usable_bytes
from vram.units import bytes_to_gb, bytes_to_gib

from . import data as data_module
from .data import load_yaml, relative, text, tree_stamp
from .digest import hash_files
from .errors import RenderError
from .languages import LANGUAGES
from .locale_format import format_eur, format_number, format_quantity, unit_label
from .numbers import calculator_errors
from .passed import markers_trusted
from .placeholders import Args
from .script_json import script_json

JSON_URI = "assets/finder.json"
KINDS = ("training", "lora", "serving")
PART_KEYS = ("weights", "gradients", "optimizer", "working", "base", "adapters", "kv_cache")
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
                          _mapping(finder.get("parts"), f"{FINDER_YAML}: parts"), gpus_yaml["reserve_mib"])
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


# --- what one card needs -----------------------------------------------------------------

def _training(model: Model, task: dict, cards: int, option: str, catalogue: Catalogue) -> tuple[int, dict[str, int], int]:
    # The method names its framework (finder.yaml): DeepSpeed 0.19's estimators, FSDP2 or
    # DDP under PyTorch AMP as vram.framework_memory counts them; working = gathered layers,
    # autocast copies, DDP buckets.
    # The optimizer step is counted as the guide's scripts run it (settings.optimizer_impl);
    # the activations add to backward's bytes, not to the step's (vram.fit.training_verdict).
    method = catalogue.methods[option]
    memory = vram.framework_memory(method["framework"], model.shape, cards, method["zero_stage"], task["optimizer"],
                                   optimizer_impl=catalogue.settings["optimizer_impl"])
    return memory.per_gpu_bytes, {"weights": memory.weights_bytes, "gradients": memory.gradients_bytes,
                                  "optimizer": memory.optimizer_bytes, "working": memory.working_bytes}, memory.backward_bytes


def _lora(model: Model, task: dict, cards: int, option: str, catalogue: Catalogue) -> tuple[int, dict[str, int], int] | None:
    method = catalogue.methods[option]
    if method["framework"] == "zero-paper" or (method["framework"] == "fsdp2" and method["zero_stage"] > 0):
        return None  # vram.lora models DDP and ZeRO's sharding, not FSDP2's working set
    # Adapters sharded like any model states (ZeRO-1/2/3); the frozen base whole on every
    # card up to ZeRO-2, split at ZeRO-3 (QLoRA there: bnb_4bit_quant_storage, see vram.lora).
    # PEFT's target_modules="all-linear": every nn.Linear but lm_head (MoE experts are not nn.Linear).
    memory = vram.lora_memory_per_gpu(model.config, catalogue.settings["lora"]["rank"], cards,
                                      catalogue.methods[option]["zero_stage"], vram.ALL_LINEAR, task["base_dtype"])
    adapters = memory.adapter_weights_bytes + memory.adapter_gradients_bytes + memory.adapter_optimizer_bytes
    return memory.total_bytes, {"base": memory.base_weights_bytes, "adapters": adapters}, memory.total_bytes


def _serving(model: Model, task: dict, cards: int, option: str, catalogue: Catalogue) -> tuple[int, dict[str, int], int] | None:
    context = int(option)
    if model.max_context is not None and context > model.max_context:
        return None  # longer than the model was trained for
    try:
        vram.check_tensor_parallel(model.config, cards)
    except ValueError:
        return None  # vLLM cannot split its heads over that many cards (qwen2.5-7b: 28 heads, not 8)
    memory = vram.serving_memory_per_gpu(model.config, task["weight_dtype"], context_length=context,
                                         tensor_parallel=cards)
    return memory.total_bytes, {"weights": memory.weights_bytes, "kv_cache": memory.kv_cache_bytes}, memory.total_bytes


_KIND = {"training": _training, "lora": _lora, "serving": _serving}


def requirement(catalogue: Catalogue, model_key: str, task_key: str, cards: int, option: str) -> tuple[int, dict[str, int], int] | None:
    """(bytes per card, bytes of each part, bytes at backward that the activations add to)
    from vram, or None where the choice does not apply."""
    task = catalogue.tasks[task_key]
    with calculator_errors():
        return _KIND[task["kind"]](catalogue.models[model_key], task, cards, option, catalogue)


def card_capacity_bytes(catalogue: Catalogue, gpu: dict[str, Any]) -> int:
    """What a process can use of one card: nvidia-smi's memory less the reserve (vram.fit.usable_bytes)."""
    with calculator_errors():
        return usable_bytes(gpu["memory_mib"], catalogue.reserve_mib)


def fitting_cards(catalogue: Catalogue, per_gpu_bytes: int, cards: int,
                  activations: dict[str, int] | None = None,
                  backward_bytes: int | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The catalogue's cards for one choice, smallest first: ``(fits, short)``.

    A card holds ``per_gpu_bytes`` when its usable bytes (nvidia-smi's memory less the
    reserve, ``card_capacity_bytes``) are at least that (a tie holds, with 0 left); what is
    left is its margin (``margin_gb``, ``free_fraction`` of the usable bytes).

    Training and LoRA (``activations``: bytes of the reference micro-batch without and with
    full recomputation at their peak, ``activation_bytes``; ``backward_bytes``: what the
    framework holds at backward, default ``per_gpu_bytes``): a card fits only when the step
    holds with the activations at least with full recomputation
    (``vram.fit.training_verdict``: the activations add to backward's bytes, and the
    optimizer step, which may hold more, comes after them). ``recompute`` says what it needs ("none":
    the margin holds them without; "full": only with full recomputation, and the card is
    ``tight``). A card that holds ``per_gpu_bytes`` but whose margin is below the activations
    with full recomputation does not fit: it is listed in ``short`` with its margin.

    Serving (``activations`` None): every card that holds ``per_gpu_bytes`` fits, ``tight``
    when under ``settings.tight_free_fraction`` of its usable bytes is free; ``short`` is empty.
    """
    tight = catalogue.settings["tight_free_fraction"]
    fits, short = [], []
    for key, gpu in catalogue.gpus:
        capacity = card_capacity_bytes(catalogue, gpu)
        if not vram.fits(per_gpu_bytes, capacity):
            continue
        margin = capacity - per_gpu_bytes
        fit: dict[str, Any] = {"gpu": key, "margin_gb": bytes_to_gb(margin)}
        verdict = None
        if activations is not None:
            with calculator_errors():
                verdict = training_verdict(per_gpu_bytes, per_gpu_bytes if backward_bytes is None else backward_bytes,
                                           activations["none"], activations["full"], capacity)
            if verdict is None:
                short.append(fit)
                continue
        fit["free_fraction"] = vram.free_fraction(per_gpu_bytes, capacity)
        if activations is not None:
            fit["recompute"] = verdict
            fit["tight"] = fit["recompute"] == "full"
        else:
            fit["tight"] = not vram.fits(per_gpu_bytes, capacity, min_free_fraction=tight)
        for machine_key, machine in catalogue.machines.items():
            if machine["gpu"] == key and machine["count"] == cards:
                fit.update(machine=machine_key, price_eur_per_hour_from=machine["price_eur_per_hour_from"])
        fits.append(fit)
    return fits, short


def result(catalogue: Catalogue, model_key: str, task_key: str, cards: int, option: str,
           activations: dict[str, int] | None = None) -> dict[str, Any] | None:
    """One choice, in GB: memory per card, its parts (largest first), the cards that fit and,
    for training and LoRA, the cards that hold the model states but not the activations
    (``fitting_cards``). ``activations``: ``activation_bytes`` of the model, if already known."""
    needed = requirement(catalogue, model_key, task_key, cards, option)
    if needed is None:
        return None
    per_gpu, parts, backward = needed
    if catalogue.tasks[task_key]["kind"] == "serving":
        activations = None
    elif activations is None:
        activations = activation_bytes(catalogue, catalogue.models[model_key])
    fits, short = fitting_cards(catalogue, per_gpu, cards, activations, backward)
    ordered = sorted(((k, v) for k, v in parts.items() if v), key=lambda kv: (-kv[1], PART_KEYS.index(kv[0])))
    return {"per_gpu_gb": bytes_to_gb(per_gpu), "parts": [[k, bytes_to_gb(v)] for k, v in ordered],
            "fits": fits, "short": short}


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
    for model_key, model in catalogue.models.items():
        activations = activation_bytes(catalogue, model)
        for task_key in catalogue.tasks:
            for cards in settings["cards"]:
                for option in options(catalogue, task_key):
                    found = result(catalogue, model_key, task_key, cards, option, activations)
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
        "tasks": [{"key": k, "kind": t["kind"]} for k, t in catalogue.tasks.items()],
        "methods": [{"key": k, "framework": m["framework"], "zero_stage": m["zero_stage"]}
                    for k, m in catalogue.methods.items()],
        "reserve_mib": catalogue.reserve_mib,
        "reserve_gib": bytes_to_gib(mib_to_bytes(catalogue.reserve_mib)),
        "gpus": [{"key": k, "name": g["name"], "memory_mib": g["memory_mib"],
                  "memory_gb": bytes_to_gb(mib_to_bytes(g["memory_mib"])),
                  "usable_gb": bytes_to_gb(card_capacity_bytes(catalogue, g))} for k, g in catalogue.gpus],
        "results": results,
    }


_json_memo: dict[tuple[Path, bool], tuple[tuple, str]] = {}
RESULTS_DIR = data_module.REPO_ROOT / ".cache" / "finder"  # finder.json by SHA-256 of its inputs
CODE_DIRS = (data_module.REPO_ROOT / "hooks", data_module.REPO_ROOT / "vram")


def finder_json(data_dir: Path | None = None) -> str:
    """``finder_data`` as compact, stable JSON (the content of ``assets/finder.json``).

    Computed once while no file under ``data_dir`` changes (both languages read the same
    file; ``mkdocs serve`` recomputes it after a data edit, and after a code edit the
    module itself is reloaded). A development build also keeps it in ``RESULTS_DIR`` under
    the SHA-256 of everything it is computed from (``inputs_digest``), so an unchanged
    checkout does not compute it again; a publication build (``trust_markers(False)``)
    always computes it. Raises RenderError.
    """
    folder = data_dir or data_module.DATA_DIR
    stamp = tree_stamp(folder)
    memo = (folder, markers_trusted())  # what a development build read is not a publication's
    cached = _json_memo.get(memo)
    if cached is None or cached[0] != stamp:
        _json_memo[memo] = cached = (stamp, _stored_or_computed(folder))
    return cached[1]


def inputs_digest(data_dir: Path) -> str:
    """SHA-256 (hex) of what ``finder_data`` reads: every file under ``data_dir`` and every
    ``.py`` under ``CODE_DIRS`` (relative path and bytes), and the Python version."""
    digest = hashlib.sha256(sys.version.encode() + b"\0")
    hash_files(digest, data_dir.rglob("*"), data_dir)
    for folder in CODE_DIRS:
        hash_files(digest, folder.rglob("*.py"), folder.parent)
    return digest.hexdigest()


def _stored_or_computed(data_dir: Path) -> str:
    trusted = markers_trusted()
    stored = RESULTS_DIR / f"{inputs_digest(data_dir)}.json" if trusted else None
    if stored is not None and stored.is_file():
        return stored.read_text(encoding="utf-8")
    content = json.dumps(finder_data(data_dir), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if stored is not None:
        try:
            stored.parent.mkdir(parents=True, exist_ok=True)
            temporary = stored.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(content, encoding="utf-8")
            temporary.replace(stored)
        except OSError:
            pass  # a read-only checkout computes it every time
    return content


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
        _select("model", _label(catalogue, "model", lang), [(k, m.name) for k, m in catalogue.models.items()], d["model"]),
        _select("task", _label(catalogue, "task", lang), [(k, _task_label(catalogue, k, lang)) for k in catalogue.tasks], d["task"]),
        _select("cards", _label(catalogue, "cards", lang), [(str(n), str(n)) for n in catalogue.settings["cards"]], str(d["cards"])),
        _select("method", _label(catalogue, "method", lang), [(k, _method_label(catalogue, k, lang)) for k in catalogue.methods],
                d["method"], ' aria-describedby="finder-method-hint"')
        + f'<p class="finder-hint" id="finder-method-hint">{html.escape(_label(catalogue, "method_hint", lang))}</p>',
        _select("context", _label(catalogue, "context", lang),
                [(str(n), _context_label(catalogue, n, lang)) for n in catalogue.settings["contexts"]], str(d["context"]),
                ' aria-describedby="finder-context-hint"')
        + f'<p class="finder-hint" id="finder-context-hint">{html.escape(_label(catalogue, "tensor_parallel", lang))}</p>',
    ]
    kinds = ["", "", "", "training lora", "serving"]
    body = "\n".join(f'<div class="finder-field"{f" data-kinds={chr(34)}{k}{chr(34)}" if k else ""}>{f}</div>'
                   for f, k in zip(fields, kinds))
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
        summary = _label(catalogue, "summary_none", lang, need_text=need)
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


def note_text(catalogue: Catalogue, lang: str, model: str, task: str, option: str) -> str:
    """The note under the table: the reserve, and the activations (training, LoRA) or the KV
    cache (serving) the margin is compared with or left for."""
    reserve = format_quantity(bytes_to_gib(mib_to_bytes(catalogue.reserve_mib)), "gib", lang, catalogue.settings["decimals"])
    kind = catalogue.tasks[task]["kind"]
    if kind == "serving":
        return _label(catalogue, "activations_serving", lang, context=format_number(int(option), lang, 0), reserve=reserve)
    ref, settings = activation_reference(catalogue, catalogue.models[model]), catalogue.settings["activations"]
    return _label(catalogue, f"activations_{kind}", lang, model=catalogue.models[model].name,
                  seq=format_number(settings["seq_length"], lang, 0), micro_batch=format_number(settings["micro_batch"], lang, 0),
                  attention=ref["attention"], none=_gb(ref["none"], catalogue, lang),
                  full=_gb(ref["full"], catalogue, lang), reserve=reserve)


def render_result(catalogue: Catalogue, lang: str, found: dict[str, Any], model: str, task: str, cards: int, option: str) -> str:
    """The results block; ``finder.js`` builds the same structure from the JSON."""
    esc = html.escape
    names = dict((k, g["name"]) for k, g in catalogue.gpus)
    fits = found["fits"]
    summary = summary_text(catalogue, lang, found, catalogue.tasks[task]["kind"] == "serving")
    head = "\n".join(f'<th scope="col">{esc(_label(catalogue, c, lang))}</th>' for c in ("col_card", "col_memory", "col_margin", "col_price"))
    rows = []
    for fit in fits:
        margin = _label(catalogue, "margin_cell", lang, margin=_gb(fit["margin_gb"], catalogue, lang),
                        free=format_percent(fit["free_fraction"], locale=lang))
        if fit["tight"]:
            tight = "tight_recompute" if "recompute" in fit else "tight"
            margin += f' <strong class="finder-tight">{esc(_label(catalogue, tight, lang))}</strong>'
        price = (_label(catalogue, "price_cell", lang, count=cards, gpu=names[fit["gpu"]], price=format_eur(fit["price_eur_per_hour_from"], lang))
                 if "machine" in fit else _label(catalogue, "no_price", lang))
        memory = _gb(bytes_to_gb(mib_to_bytes(dict(catalogue.gpus)[fit["gpu"]]["memory_mib"])), catalogue, lang)
        rows.append(f'<tr><th scope="row">{esc(names[fit["gpu"]])}</th>\n<td>{esc(memory)}</td>\n<td>{margin}</td>\n<td>{esc(price)}</td></tr>')
    parts = _label(catalogue, "part_separator", lang).join(_label(catalogue, "part_size", lang, part=text(catalogue.parts[k], lang, f"{FINDER_YAML}: parts.{k}"),
                             size=_gb(v, catalogue, lang)) for k, v in found["parts"])
    note = note_text(catalogue, lang, model, task, option)
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
