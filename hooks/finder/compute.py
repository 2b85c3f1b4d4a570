""" "Find the GPU your model fits in": the reference answers computed by ``vram`` at build time.

``finder_data()`` answers, for every model of ``snippets/data/models.yaml`` (parameters
counted by ``vram.count_params`` from the shipped ``config.json``), every task, card count
and method (training) or context length (serving) of ``snippets/data/finder.yaml``, the
reference job (``job``: finder.yaml's sequence length and micro-batch, one sequence served
under vLLM's default ``gpu_memory_utilization``) with ``vram.answer_job``, the finder's one
calculator: the bytes one card needs, what takes them, and which cards of
``snippets/data/gpus.yaml`` fit (smallest first, with the margin and, only where the guide
gives one, the machine price). The verdicts are ``vram.job``'s: for training and LoRA,
backward with the activations at their peak and the optimizer step must both hold
(``vram.fit.training_verdict``), with full recomputation where only that holds, and "tight"
by ``vram.fit.is_tight``'s one rule. Choices the calculator refuses (``NOT_OFFERED``) are left
out, and the page greys them out with the reason (``refused``).
The result is locale-independent, sizes already in GB: MkDocs writes it once as
``assets/finder.json``; the page's JavaScript only selects, filters and formats it, and
sends any other job to the same ``vram`` code running under Pyodide in a Web Worker
(``hooks/finder/pyodide_assets.py``, ``docs/assets/finder-worker.js``).

The page's parts in the reader's language (the form, the static answer, the finder's
numbers in the prose) are rendered from these answers by ``hooks/finder/page.py``.

The data folder is read in one place, ``load_catalogue`` (each file once, validated by its
schema, while no file under the folder changes): what it returns, a ``Catalogue``, is handed
down to every other function. Pure: no MkDocs import; data files are read again after every
edit (``mkdocs serve`` shows them); ``finder_json`` can keep its text in ``.cache/finder``
(``STORE_DIR``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vram
from hooks.cache import (
    Memo,
    code_digest,
    inputs_digest as cache_digest,
    package_versions,
    stored,
    tree_digest,
    tree_stamp,
)
from hooks.data import load as data_module
from hooks.data.load import load_model, load_yaml, relative
from hooks.data.measurements import measured_data
from hooks.errors import RenderError
from hooks.render.numbers import calculator_errors
from verify.languages import DEFAULT_LANGUAGE, LANGUAGES
from vram.accounting import job_accounting
from vram.catalogue import card_speed, cards_from_data
from vram.fit import TIGHT_FREE_FRACTION, mib_to_bytes, usable_bytes
from vram.job import JOB_FIELDS, JobError, check_job, global_batch
from vram.serving import VLLM_MAX_NUM_BATCHED_TOKENS
from vram.units import bytes_to_gb, bytes_to_gib

JSON_URI = "assets/finder.json"  # what the form needs: fetched on the reader's first use
RESULTS_URI = "assets/finder-results.json"  # the reference answers: fetched when a choice needs one
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
    """finder.yaml, models.yaml (with parsed configs) and gpus.yaml, checked (``load_catalogue``)."""

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
    accountings: dict[str, Any] = field(default_factory=dict)  # vram.accounting name -> the method's label
    config_files: dict[str, Path] = field(default_factory=dict)  # model key -> its config.json (models.yaml)
    calibration: dict[str, Any] | None = None  # vram.calibration.Calibration.as_job() of measurements.yaml


def _config_files(models: Any, data_dir: Path) -> dict[str, Path]:
    """Model key -> its config.json, as the validated models.yaml (``models``) names them."""
    return {key: data_dir / "models" / entry.config for key, entry in models.models.items()}


def _load_models(models: Any, config_files: dict[str, Path]) -> dict[str, Model]:
    """models.yaml's models (the validated file, ``models``) with their parsed configs."""
    found = {}
    for key, entry in models.models.items():
        where = f"{MODELS_YAML}: models.{key}"
        path = config_files[key]
        if not path.is_file():
            raise RenderError(f"{where}: config file {relative(path)} not found")
        try:
            config = vram.load_model_config(path)
            raw = json.loads(path.read_text(encoding="utf-8"))
            shape = vram.model_shape(config)
        except ValueError as exc:
            raise RenderError(f"{where}: {exc}") from None
        max_context = raw.get("max_position_embeddings")
        found[key] = Model(
            key,
            entry.name,
            config,
            vram.count_params(config),
            max_context if isinstance(max_context, int) else None,
            shape,
        )
    return found


def model_config_files(data_dir: Path | None = None) -> dict[str, Path]:
    """Model key -> its config.json, as models.yaml names them (the worker's bundle ships them).
    Reads models.yaml alone: the catalogue's checks (``load_catalogue``: each config found and
    parsed) are where the finder's answers are computed. Raises RenderError naming the file and key."""
    folder = data_dir or data_module.DATA_DIR
    return _config_files(load_model("models", folder), folder)


_catalogue_memo = Memo()  # data folder -> its Catalogue, while nothing there changes


def load_catalogue(data_dir: Path | None = None) -> Catalogue:
    """Read and check the finder's data, once while no file under ``data_dir`` changes
    (every finder placeholder of both languages reads it; callers treat it as read-only).
    Raises RenderError naming the file and key."""
    folder = data_dir or data_module.DATA_DIR
    return _catalogue_memo.get(folder, tree_stamp(folder), lambda: _read_catalogue(folder))


def _speeds(gpus: dict[str, Any], interconnects: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Card key -> ``vram.catalogue.card_speed`` of gpus.yaml's card with its links resolved."""
    with calculator_errors():
        cards = cards_from_data(gpus, interconnects)
    return {key: card_speed(card) for key, card in cards.items()}


def _read_catalogue(data_dir: Path) -> Catalogue:
    """The catalogue of finder.yaml, models.yaml and gpus.yaml (and interconnects.yaml for the
    cards' links), each read once. Their schemas (``hooks/data/schemas.py``: keys, kinds, every
    language, the defaults among the choices) are the only checks of each file; this adds
    what no one file can say (the default model is a model of models.yaml) and what the files
    name (config files, model families). The catalogue's mappings are the files' own, as the
    schema accepted them (``load_yaml``: the numbers as written, as ``vram`` reads them in the
    CLI and the browser)."""
    finder, gpus, models_file = (load_model(name, data_dir) for name in ("finder", "gpus", "models"))
    config_files = _config_files(models_file, data_dir)
    models = _load_models(models_file, config_files)
    if finder.settings.default.model not in models:
        raise RenderError(
            f"{FINDER_YAML}: settings.default.model={finder.settings.default.model!r} is not one of {', '.join(models)}"
        )
    plain, gpus_plain = load_yaml("finder", data_dir), load_yaml("gpus", data_dir)
    return Catalogue(
        plain["settings"],
        plain["tasks"],
        plain["methods"],
        models,
        sorted(gpus_plain["gpus"].items(), key=lambda item: item[1]["memory_mib"]),
        gpus_plain["machines"],
        plain["labels"],
        plain["parts"],
        gpus.reserve_mib,
        _speeds(gpus_plain, load_yaml("interconnects", data_dir)),
        plain["accountings"],
        config_files,
        measured_data(data_dir).calibration.as_job(),
    )


def task_accountings(catalogue: Catalogue, task_key: str) -> dict[str, str]:
    """Method key -> the name of the formula the calculator runs for ``task_key`` under that
    method (``vram.accounting.job_accounting`` of the task's ``job``, as ``answer_job`` names
    it: it does not depend on the model or the cards); methods it refuses are left out, and
    serving tasks have none."""
    if catalogue.tasks[task_key]["kind"] == "serving":
        return {}
    model = next(iter(catalogue.models))
    found = {
        key: job_accounting(job(catalogue, model, task_key, catalogue.settings["cards"][0], key))
        for key in catalogue.methods
    }
    return {key: name for key, name in found.items() if name is not None}


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
    found: dict[str, Any] = {
        "kind": task["kind"],
        "config": catalogue.models[model_key].config,
        "cards": cards,
        "gpus": [{"key": k, "memory_mib": g["memory_mib"], "speed": catalogue.speeds[k]} for k, g in catalogue.gpus],
        "reserve_mib": catalogue.reserve_mib,
        "calibration": catalogue.calibration,
    }
    if task["kind"] == "serving":
        found.update(weights=task["weight_dtype"], context=int(option), **settings["serving"])
        return found
    method = catalogue.methods[option]
    found.update(
        framework=method["framework"],
        zero_stage=method["zero_stage"],
        seq_len=settings["activations"]["seq_length"],
        micro_batch=settings["activations"]["micro_batch"],
        recompute="none",
    )
    if task["kind"] == "training":
        found.update(optimizer=task["optimizer"], optimizer_impl=optimizer_impl(catalogue, task_key))
    else:
        found.update(rank=settings["lora"]["rank"], base_dtype=task["base_dtype"])
    found["prices"] = {
        m["gpu"]: str(m["price_eur_per_hour_from"]) for m in catalogue.machines.values() if m["count"] == cards
    }  # the guide's, for the run's cost (training and LoRA)
    return found


def optimizer_impl(catalogue: Catalogue, task_key: str) -> str:
    """The AdamW implementation a training task's step is counted with: the task's own (the
    all-bf16 task: the Trainer's adamw_torch_fused), else ``settings.optimizer_impl``."""
    return catalogue.tasks[task_key].get("optimizer_impl") or catalogue.settings["optimizer_impl"]


CUSTOM_MODEL = "custom"  # the model select's value for the reader's own config.json
NOT_OFFERED = ("not_offered", "too_long")  # a choice the page greys out, with the reason


def answer(catalogue: Catalogue, model_key: str, task_key: str, cards: int, option: str) -> dict[str, Any] | None:
    """``vram.answer_job`` of ``job(...)``, or None where the choice is not offered (LoRA in
    the paper's accounting or on fused experts under FSDP2, all-bf16 training outside DDP, a
    context beyond the model's maximum, heads vLLM cannot split over that many cards). Raises
    RenderError for any other fault."""
    return attempt(catalogue, model_key, task_key, cards, option)[0]


def attempt(
    catalogue: Catalogue, model_key: str, task_key: str, cards: int, option: str
) -> tuple[dict[str, Any] | None, str | None]:
    """``(answer, None)``, or ``(None, reason)`` where the choice is not offered: ``reason`` is
    the key of the page's words for why (``refused_REASON`` in finder.yaml's labels,
    ``refusal_reason``). Raises RenderError for any other fault."""
    try:
        return vram.answer_job(job(catalogue, model_key, task_key, cards, option)), None
    except JobError as exc:
        if exc.code in NOT_OFFERED:
            return None, refusal_reason(catalogue, model_key, task_key, option, exc)
        raise RenderError(f"{model_key} {task_key} on {cards} cards with {option}: {exc}") from None


# Why a choice is refused, by the job field vram.job names (JobError.field): the key of the
# page's sentence (labels.refused_KEY). LoRA's framework refusals are two: the paper's
# accounting (no LoRA there) and FSDP2 on a model with fused experts (vram.lora_fsdp2_memory
# does not model PEFT's target_parameters).
REFUSALS = {
    "optimizer": "optimizer",
    "cards": "cards",
    "weights": "weights",
    "context": "too_long",
    "seq_len": "too_long",
    "offload": "offload",
    "targets": "targets",
}


def refusal_reason(catalogue: Catalogue, model_key: str, task_key: str, option: str, exc: JobError) -> str:
    """The reason key of a refused reference choice (``REFUSALS``); RenderError for a refusal the
    page has no words for."""
    if exc.field == "framework" and catalogue.tasks[task_key]["kind"] == "lora":
        framework = catalogue.methods[option]["framework"]
        if framework == "zero-paper":
            return "lora_paper"
        model = catalogue.models[model_key]
        if framework == "fsdp2" and model.params.active < model.params.total:
            return "lora_fsdp2_experts"
    if exc.field in REFUSALS:
        return REFUSALS[exc.field]
    raise RenderError(
        f"{model_key} {task_key} with {option}: refused ({exc}) for a reason the finder has no words for "
        f"(hooks/finder/compute.py REFUSALS)"
    )


def card_capacity_bytes(catalogue: Catalogue, gpu: dict[str, Any]) -> int:
    """What a process can use of one card: nvidia-smi's memory less the reserve (vram.fit.usable_bytes)."""
    with calculator_errors():
        return usable_bytes(gpu["memory_mib"], catalogue.reserve_mib)


TIME_SHOWN = ("step_s", "bound", "run_shown", "price_eur_per_hour", "cost_eur")
BACKING_SHOWN = (
    "family",
    "runs",
    "sources",
    "on_card",
    "exact",
)  # which published runs back a time (vram.calibration.Backing)


def intern_backings(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Replace every ``backing`` of ``results`` (finder.json's answers) by its index in the list
    returned: a few distinct backings repeated over thousands of cells (finder.js resolves them)."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "backing" and isinstance(value, dict):
                    if value not in found:
                        found.append(value)
                    node[key] = found.index(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(results)
    return found


def backing_shown(backing: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the page says of a time's backing: the family's name, its runs and their sources, those on the card."""
    return None if backing is None else {key: backing[key] for key in BACKING_SHOWN}


def page_result(catalogue: Catalogue, found: dict[str, Any], cards: int) -> dict[str, Any]:
    """An answer as the page shows it: per card and parts in GB, each fitting card with its
    margin, the share free at the job's peak and whether that is tight (``vram.fit.is_tight``),
    the recomputation it runs with (training, LoRA), the sequences it holds (serving) and, where the guide gives one,
    the machine price. No arithmetic: every figure is ``answer_job``'s."""
    machines = {(m["gpu"], m["count"]): (k, m["price_eur_per_hour_from"]) for k, m in catalogue.machines.items()}
    fits = []
    for fit in found["fits"]:
        shown = {
            key: fit[key]
            for key in ("gpu", "margin_gb", "free_fraction", "tight", "recompute", "max_concurrent", "time", "decode")
            if key in fit
        }
        if "time" in shown:  # what run_text shows (finder.json stays small: 11 cards x every choice)
            shown["time"] = {key: fit["time"][key] for key in TIME_SHOWN} | {
                "backing": backing_shown(fit["time"]["backing"])
            }
        if "decode" in shown and "backing" in shown["decode"]:  # what decode_text shows: per sequence
            shown["decode"] = {key: value for key, value in shown["decode"].items() if key != "tokens_per_s"} | {
                "backing": backing_shown(shown["decode"]["backing"])
            }
        if (fit["gpu"], cards) in machines:
            shown["machine"], shown["price_eur_per_hour_from"] = machines[(fit["gpu"], cards)]
        fits.append(shown)
    result = {
        "per_gpu_gb": found["per_gpu_gb"],
        "parts": [[k, gb] for k, _, gb in found["parts"]],
        "fits": fits,
        "short": [{"gpu": f["gpu"], "margin_gb": f["margin_gb"]} for f in found["short"]],
    }
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
        return {
            mode: vram.activation_memory(cfg, ref["seq_length"], ref["micro_batch"], attention, mode).peak_bytes
            for mode in ("none", "full")
        }


def activation_reference(catalogue: Catalogue, model: Model) -> dict[str, Any]:
    """``activation_bytes`` in GB (``"none"``, ``"full"``) and the attention (``"attention"``:
    sdpa, or eager where transformers refuses sdpa), as the page's note shows them."""
    found: dict[str, Any] = {mode: bytes_to_gb(n) for mode, n in activation_bytes(catalogue, model).items()}
    with calculator_errors():
        found["attention"] = vram.default_attention(model.config)
    return found


def answered_task(catalogue: Catalogue, task_key: str) -> str:
    """The task whose reference answers ``task_key`` shows: its ``answers_of`` (the same job,
    computed once: finder.yaml's pre-training and full fine-tuning), else itself."""
    return catalogue.tasks[task_key].get("answers_of") or task_key


def reference_batch(catalogue: Catalogue, cards: int) -> dict[str, int]:
    """The reference job's batch per optimizer step on ``cards`` cards (``vram.job.global_batch``:
    finder.yaml's micro-batch and sequence length, no accumulation, ``JOB_FIELDS``' tokens), the
    same for every model and training or LoRA task."""
    training = next(key for key, task in catalogue.tasks.items() if task["kind"] != "serving")
    with calculator_errors():
        return global_batch(
            check_job(job(catalogue, next(iter(catalogue.models)), training, cards, next(iter(catalogue.methods))))
        )


def finder_data(catalogue: Catalogue | None = None) -> dict[str, Any]:
    """Everything the finder page shows, for every choice (of ``catalogue``, default: the
    checkout's, ``load_catalogue()``): plain JSON types, sizes in GB (10**9 bytes). A task that
    ``answers_of`` another shows that one's answers (``answered_task``): not computed twice."""
    catalogue = catalogue or load_catalogue()
    settings = catalogue.settings
    results: dict[str, Any] = {}
    offered: dict[str, Any] = {}
    refused: dict[str, Any] = {}
    for model_key in catalogue.models:
        for task_key in catalogue.tasks:
            if answered_task(catalogue, task_key) != task_key:
                continue
            for cards in settings["cards"]:
                for option in options(catalogue, task_key):
                    found, reason = attempt(catalogue, model_key, task_key, cards, option)
                    if found is not None:
                        found = page_result(catalogue, found, cards)
                        results.setdefault(model_key, {}).setdefault(task_key, {}).setdefault(str(cards), {})[
                            option
                        ] = found
                        offered.setdefault(model_key, {}).setdefault(task_key, {}).setdefault(str(cards), []).append(
                            option
                        )
                    else:
                        refused.setdefault(model_key, {}).setdefault(task_key, {}).setdefault(str(cards), {})[
                            option
                        ] = reason
    for model_key in offered:  # a task answered as another: the same choices and refusals, no answers of its own
        for task_key in catalogue.tasks:
            source = answered_task(catalogue, task_key)
            if source != task_key:
                for found in (offered, refused):
                    if source in found.get(model_key, {}):
                        found[model_key][task_key] = found[model_key][source]
    backings = intern_backings(results)
    return {
        "schema": 1,
        "default": settings["default"],
        "cards": settings["cards"],
        "contexts": settings["contexts"],
        "activations": settings["activations"],
        "models": [
            {
                "key": m.key,
                "name": m.name,
                "params": m.params.total,
                "active_params": m.params.active,
                "max_context": m.max_context,
                "activation_gb": activation_reference(catalogue, m),
            }
            for m in catalogue.models.values()
        ],
        "tasks": [
            {key: value for key, value in t.items() if key != "label"}
            | {"key": k, "accounting": task_accountings(catalogue, k)}
            | ({"optimizer_impl": optimizer_impl(catalogue, k)} if t["kind"] == "training" else {})
            for k, t in catalogue.tasks.items()
        ],
        "lora": settings["lora"],
        # vLLM's prefill chunk is vram's default (vram.serving: vLLM's SchedulerConfig), not a setting
        "serving": {**settings["serving"], "max_num_batched_tokens": VLLM_MAX_NUM_BATCHED_TOKENS},
        "batches": {str(cards): reference_batch(catalogue, cards) for cards in settings["cards"]},
        "tight_free_fraction": TIGHT_FREE_FRACTION,
        "methods": [
            {"key": k, "framework": m["framework"], "zero_stage": m["zero_stage"]} for k, m in catalogue.methods.items()
        ],
        "machines": {
            f"{m['gpu']}@{m['count']}": {"key": k, "price_eur_per_hour_from": m["price_eur_per_hour_from"]}
            for k, m in catalogue.machines.items()
        },
        "reserve_mib": catalogue.reserve_mib,
        "reserve_gib": bytes_to_gib(mib_to_bytes(catalogue.reserve_mib)),
        "gpus": [
            {
                "key": k,
                "name": g["name"],
                "memory_mib": g["memory_mib"],
                "memory_gb": bytes_to_gb(mib_to_bytes(g["memory_mib"])),
                "usable_gb": bytes_to_gb(card_capacity_bytes(catalogue, g)),
                "speed": catalogue.speeds[k],
            }
            for k, g in catalogue.gpus
        ],
        "run_tokens": JOB_FIELDS["tokens"],
        "grad_accum": JOB_FIELDS["grad_accum"],
        "calibration": catalogue.calibration,  # the published runs' shares: the worker's jobs carry them
        "backings": backings,  # each distinct backing once; results name them by index
        # the RAM of the catalogue's machines where a source gives it (gpus.yaml host_ram_gb)
        "host_ram_gb": {
            f"{m['gpu']}@{m['count']}": m["host_ram_gb"]
            for m in catalogue.machines.values()
            if m["host_ram_gb"] != "not published"
        },
        # which reference choices have an answer (the form offers only those) and why the others
        # do not (refused[model][task][cards][option]: a labels.refused_REASON key)
        "offered": offered,
        "refused": refused,
        "results": results,
    }


_json_memo = Memo()  # (data folder, store) -> finder.json's text, while nothing there changes
STORE_DIR = data_module.REPO_ROOT / ".cache" / "finder"  # finder.json under the SHA-256 of its inputs
# Every installed distribution computing finder.json imports (tests/finder/test_finder_store.py
# checks the list against what a computation really imports), and Python itself.
LIBRARIES = (
    "pydantic",
    "pydantic-core",
    "PyYAML",
    "Babel",
    "annotated-types",
    "typing_extensions",
    "typing-inspection",
    "Jinja2",
    "MarkupSafe",
)
STORE_KEEP = 4  # entries kept in the store: the newest, for switching between branches or edits


def finder_json(data_dir: Path | None = None, store: Path | None = None) -> str:
    """``finder_data`` as compact, stable JSON (the content of ``assets/finder.json``).

    Computed once while no file under ``data_dir`` changes (both languages read the same
    file; ``mkdocs serve`` recomputes it after a data edit, and after a code edit the
    module itself is reloaded). With a ``store`` folder (a development build passes
    ``STORE_DIR``; a publication build none, since anyone who writes the checkout can write
    there), the text is also kept there under ``inputs_digest``, the SHA-256 of every input
    of the computation, and an unchanged checkout reads it instead of computing it again.
    Raises RenderError.
    """
    folder = data_dir or data_module.DATA_DIR
    return _json_memo.get((folder, store), tree_stamp(folder), lambda: _stored_or_computed(folder, store))


def finder_assets(data_dir: Path | None = None, store: Path | None = None) -> dict[str, str]:
    """``finder_json`` as the site's two files: ``JSON_URI``, everything but the reference
    answers (the models, tasks, cards, prices, which choices are offered and why the others
    are not: what the form and the first job the calculator computes need), and
    ``RESULTS_URI``, the reference answers (``results``), which the page fetches only when a
    choice needs one. With a ``store`` (``finder_json``), the two texts are kept there too,
    under the same digest as finder.json. Raises RenderError."""
    folder = data_dir or data_module.DATA_DIR
    return _assets_memo.get((folder, store), tree_stamp(folder), lambda: _stored_assets(folder, store))


_assets_memo = Memo()  # (data folder, store) -> finder_assets, while nothing there changes


def _stored_assets(data_dir: Path, store: Path | None) -> dict[str, str]:
    if store is None:
        return _split(finder_json(data_dir, store))

    def joined() -> bytes:  # JSON text holds no NUL (json.dumps escapes control characters)
        split = _split(finder_json(data_dir, store))
        return f"{split[JSON_URI]}\0{split[RESULTS_URI]}".encode()

    form, _, results = (
        stored(store, inputs_digest(data_dir), joined, suffix=".assets", keep=STORE_KEEP).decode().partition("\0")
    )
    return {JSON_URI: form, RESULTS_URI: results}


@functools.lru_cache(maxsize=2)
def _split(text: str) -> dict[str, str]:
    data = json.loads(text)
    results = data.pop("results")
    return {JSON_URI: _dumps(data), RESULTS_URI: _dumps(results)}


def _dumps(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@functools.cache  # a process does not see its packages change
def library_versions() -> tuple[str, ...]:
    """``python=3.11.7 (main, ...)``, ``pydantic=2.14.3``...: what computing finder.json runs on."""
    return package_versions(LIBRARIES)


def inputs_digest(data_dir: Path) -> str:
    """SHA-256 (hex) of everything ``finder_data(load_catalogue(data_dir))`` is computed from: every file under
    ``data_dir`` (the data files and the models' ``config.json``, by relative path and bytes),
    every ``.py`` of ``CODE_DIRS`` (the calculator, the render layer and its schemas, the
    languages), the site's languages (``verify.languages``, read from ``mkdocs.yml``), and the
    versions of Python and of ``LIBRARIES``."""
    return cache_digest(
        "finder.json",
        (
            *library_versions(),
            f"languages={LANGUAGES!r} default={DEFAULT_LANGUAGE!r}",
            tree_digest(data_dir),
            code_digest(data_module.REPO_ROOT),
        ),
    )


def _stored_or_computed(data_dir: Path, store: Path | None) -> str:
    return stored(
        store,
        inputs_digest(data_dir),
        lambda: _dumps(finder_data(load_catalogue(data_dir))).encode(),
        suffix=".json",
        keep=STORE_KEEP,
    ).decode()


# --- the page's parts, in the reader's language ---------------------------------------------
