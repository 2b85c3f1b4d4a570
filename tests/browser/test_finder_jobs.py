"""In Chromium, the finder answers the reader's own job with the calculator itself (issue 20).

- 312 jobs drawn at random (seeded; every model of the finder and a pasted config.json of a
  family it does not ship, every task kind): the page's own Web Worker
  (Pyodide running vram from the site's assets) answers each with the same JSON text as
  CPython's ``python -m vram job ... --json`` (``vram.cli.main`` with the same argv; a
  few of them also in a real subprocess), or the same one-line error;
- the same through the form, in both languages, including the issue's jobs: Llama 3.1 8B
  at 4,096 tokens refuses 8 x RTX 4090 under ZeRO-3; gpt-oss-20b in its MXFP4 weights
  holds 16 sequences of 8,192 tokens on a 32 GB RTX 5090 under gpu_memory_utilization 0.9;
  an 8B trained all in bf16 fits one H100 at 2,048 tokens;
- bad input (a config.json that is not JSON, an unknown model_type, a sequence beyond the
  model's maximum, a negative or huge number): one line in the page's language naming the
  field, no answer shown, no console error, and the page still answers afterwards;
- a serving context of any length up to the model's maximum: the calculator's answer, one line
  beyond it, the length kept in the link.

One page per language and its worker, for the whole module: Pyodide starts twice, and twice
more for the language switch (each new page starts its own).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import subprocess
import sys
from unittest import mock

import pytest
from babel.numbers import format_decimal

import vram
from hooks.data.load import load_yaml
from hooks.render.locale_format import format_number
from tests.browser.conftest import recorded
from tests.browser.test_content_security_policy import LISTEN as CSP_LISTEN
from tests.browser.test_finder import PATHS, choose, plain
from tests.conftest import REPO_ROOT
from vram.calibration import load_measured_data
from vram.catalogue import card_speed, load_catalogue as load_speeds, read_catalogue
from vram.cli import main as vram_main
from vram.job import KV_DTYPES, OFFLOAD, SERVING_WEIGHTS, TRAINING_OPTIMIZERS
from vram.models import SUPPORTED_MODEL_TYPES
from vram.optimizer_step import OPTIMIZER_IMPLS
from vram.serving import VLLM_MAX_NUM_BATCHED_TOKENS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MODELS_DIR = REPO_ROOT / "snippets" / "data" / "models"
UNSHIPPED = REPO_ROOT / "tests" / "vram" / "configs" / "gemma-2-9b.json"  # gemma2: no finder model has it
JOBS = 312
SUBPROCESS_SAMPLE = 4


def catalogue() -> tuple[dict, list[dict], dict]:
    models = {key: MODELS_DIR / entry["config"] for key, entry in load_yaml("models")["models"].items()}
    gpus = load_yaml("gpus")
    speeds = load_speeds()[0]  # the cited speeds the page and the command line give every card
    cards = [
        {"key": key, "memory_mib": card["memory_mib"], "speed": card_speed(speeds[key])}
        for key, card in gpus["gpus"].items()
    ]
    return models, cards, load_yaml("finder")


MODEL_FILES, CARDS, FINDER = catalogue()
METHODS = [(m["framework"], m["zero_stage"]) for m in FINDER["methods"].values()]
LORA_METHODS = [(f, stage) for f, stage in METHODS if f != "zero-paper"]  # DDP, ZeRO-1/2/3, FSDP2


def random_job(rng: random.Random, config_path, kind: str) -> dict:
    maximum = json.loads(config_path.read_text())["max_position_embeddings"]
    job = {
        "kind": kind,
        "cards": rng.choice([1, 2, 4, 8]),
        "gpus": CARDS,
        "reserve_mib": load_yaml("gpus")["reserve_mib"],
        "tight_free_fraction": 0.1,
    }
    tokens = (
        rng.choice([rng.randint(1, min(8192, maximum)), rng.randint(1, maximum), maximum])  # OLMo 2: 4,096
        if rng.random() < 0.9
        else rng.choice([maximum + rng.randint(1, 999), 0])
    )  # a tenth refused: beyond the model, or none
    if kind == "serving":
        shipped = json.loads(config_path.read_text())["model_type"] == "gpt_oss"  # MXFP4 checkpoints
        weights = rng.choice(SERVING_WEIGHTS if shipped or rng.random() < 0.2 else ("bf16", "fp8", "int4"))
        job.update(
            weights=weights,
            kv_dtype=rng.choice(KV_DTYPES),
            context=tokens,
            concurrent=rng.randint(1, 64),
            gpu_memory_utilization=rng.choice([0.5, 0.8, 0.9, 0.95, 1.0]),
        )
        if rng.random() < 0.3:  # vLLM's prefill chunk (what its sliding-window layers reserve)
            job["max_num_batched_tokens"] = rng.choice(
                [256, 2048, 8192, 8192, 0] if rng.random() < 0.2 else [256, 8192]
            )
        return job
    offered = METHODS if kind == "training" or rng.random() < 0.2 else LORA_METHODS  # a few refusals kept
    framework, stage = rng.choice(offered)
    job.update(
        framework=framework,
        zero_stage=stage,
        seq_len=tokens,
        micro_batch=rng.randint(1, 4),
        grad_accum=rng.choice([1, 1, 2, 16, 0] if rng.random() < 0.1 else [1, 1, 2, 16]),
        recompute=rng.choice(["none", "selective", "full"]),
        attention=rng.choice([None, None, "sdpa", "eager"]),
    )
    if kind == "training":
        job.update(
            optimizer=rng.choice((*TRAINING_OPTIMIZERS, "adamw", "adam8bit")),
            offload=rng.choice(OFFLOAD + ("none",) * 4),
        )
        if job["offload"] != "none":  # the machine's RAM for one card's machine: holds the offload or not
            job["host_ram_gb"] = {rng.choice(CARDS)["key"]: rng.choice([64, 128, 512, 2048])}
    else:
        job.update(
            rank=rng.choice([1, 8, 16, 64]),
            targets=rng.choice(["all-linear", "q_proj,v_proj"]),
            base_dtype=rng.choice(["bf16", "nf4"]),
            offload="none",
        )
        offloads = {
            ("fsdp2", 2): ("optimizer+params",),
            ("fsdp2", 3): ("optimizer+params",),
            ("deepspeed", 3): ("optimizer", "optimizer+params"),
        }.get((framework, stage))
        if rng.random() < (
            0.3 if offloads else 0.05
        ):  # with host memory where modelled (vram.lora_offload), else refused
            offloads = offloads or ("optimizer",)
            job["offload"] = rng.choice(offloads)
        if job["offload"] != "none":  # LoRA with host memory (vram.lora_offload): its machine's RAM too
            job["host_ram_gb"] = {rng.choice(CARDS)["key"]: rng.choice([32, 64, 128])}
        if framework == "fsdp2" and stage:  # LoRA under FSDP2 counts the AdamW step's temporaries
            job["optimizer_impl"] = rng.choice(OPTIMIZER_IMPLS)
            # LoRA and QLoRA (tests/vram/test_qlora_fsdp2.py); fused experts are refused
            if json.loads(config_path.read_text())["model_type"] in ("mixtral", "qwen3_moe"):
                job["targets"] = "q_proj,v_proj"
    # the run (issue 21): tokens to train and a price per hour for some machines, a few refused
    job["tokens"] = rng.choice([10**6, 10**9, rng.randint(1, 10**13)])
    job["prices"] = {card["key"]: f"{rng.randint(1, 4000) / 100:.2f}" for card in rng.sample(CARDS, rng.randint(0, 4))}
    if job["prices"] and rng.random() < 0.1:
        job["prices"][next(iter(job["prices"]))] = rng.choice(["abc", "-1", "0", "1e9", "31,20"])
    return job


def argv(job: dict, config_path) -> list[str]:
    """The ``python -m vram job`` command line of ``job``."""
    args = ["job", "--config", str(config_path), "--json"]
    for key, value in job.items():
        if key == "gpus":
            args += [f"--gpu={card['key']}={card['memory_mib']}" for card in value]
        elif key == "prices":
            args += [f"--price={card}={price}" for card, price in value.items()]
        elif key == "host_ram_gb":
            args += [f"--host-ram={card}={ram}" for card, ram in value.items()]
        elif value is not None:
            args.append(f"--{key.replace('_', '-')}={value}")
    return args


def cpython(args: list[str]) -> str:
    """What ``python -m vram ARGS`` prints: stdout, or the one line on stderr (exit 2)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str | None = vram_main(args)
        except SystemExit as exc:
            code = exc.code
    return out.getvalue().strip() if code == 0 else err.getvalue().strip()


@contextlib.contextmanager
def catalogue_read_once():
    """``cpython`` for many jobs: the command line's ``read_catalogue`` and
    ``load_measured_data`` (PyYAML reading gpus.yaml, interconnects.yaml, models.yaml and
    measurements.yaml: most of a run's time, about 0.1 s a job) answer every job with what they
    read the first time, as each run reads the same files (the real reads and the rest of
    ``python -m vram``: SUBPROCESS_SAMPLE runs in a subprocess, same text)."""
    import vram.cli.job as cli

    once, measured = read_catalogue(), load_measured_data()
    with (
        mock.patch.object(cli, "read_catalogue", lambda: once),
        mock.patch.object(cli, "load_measured_data", lambda: measured),
    ):
        yield


def as_cli_text(worker_text: str) -> str:
    """The worker's answer as the command line prints it (an error: ``vram: error: message``)."""
    answer = json.loads(worker_text)
    if "error" in answer:
        return "vram: error: " + " ".join(answer["error"]["message"].split())
    return worker_text


# --------------------------------------------------------------------------------- pages
@pytest.fixture(scope="module")
def pages(chromium, site_server):
    """One page per language on the finder, in use (its reference answers loaded), with the
    console errors and page errors each has logged."""
    opened, contexts = {}, []
    for lang, path in PATHS.items():
        context = chromium.new_context()
        context.add_init_script(CSP_LISTEN)  # the policy's violations, as the page reports them
        contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.requests = recorded(page)
        page.on("console", lambda msg, page=page: msg.type == "error" and page.errors.append(msg.text))
        page.on("pageerror", lambda exc, page=page: page.errors.append(str(exc)))
        page.goto(site_server.url(path), wait_until="networkidle")
        page.focus("#finder-model")
        page.wait_for_selector('#finder-form[data-ready="true"]', state="visible", timeout=30_000)
        opened[lang] = page
    for page in opened.values():  # a job's field in use boots the page's calculator: both boot at once
        page.focus("#finder-seq_len")
    yield opened
    for context in contexts:
        context.close()


PAGE_WORKER_JS = """async (messages) => {
    const form = document.getElementById('finder-form');
    const answers = [];
    for (const message of messages) answers.push(await form.ask(message));  // the page's own worker
    return answers;
}"""


def test_random_jobs_equal_the_command_line_byte_for_byte(pages):
    rng = random.Random(20)
    models = [(key, path) for key, path in MODEL_FILES.items()] + [(None, UNSHIPPED)]
    kinds = ("training", "lora", "serving")
    drawn = []
    for index in range(JOBS):
        key, path = models[index % len(models)]
        kind = kinds[(index // len(models)) % len(kinds)]
        drawn.append((key, path, random_job(rng, path, kind)))
    assert {(key, job["kind"]) for key, _, job in drawn} == {(key, kind) for key, _ in models for kind in kinds}
    by_lang = {"it": drawn}  # the worker has no language; the form tests below run in both
    answered = lora_fsdp2 = lora_offload = accumulated = 0
    for lang, jobs in by_lang.items():
        # the published runs behind each time, as the page's own jobs and the command line carry them
        calibration = load_measured_data().calibration.as_job()
        messages = [
            {
                "id": i,
                "job": job | {"calibration": calibration},
                **({"model": key} if key else {"configText": path.read_text()}),
            }
            for i, (key, path, job) in enumerate(jobs)
        ]
        replies = pages[lang].evaluate(PAGE_WORKER_JS, messages)
        with catalogue_read_once():
            expected_texts = [cpython(argv(job, path)) for _, path, job in jobs]
        for (key, _path, job), reply, expected in zip(jobs, replies, expected_texts, strict=True):
            assert "failure" not in reply, (key, job, reply)
            assert as_cli_text(reply["text"]) == expected, (lang, key, job)
            answered += "error" not in json.loads(reply["text"])
            lora_fsdp2 += (job["kind"], job.get("framework"), job.get("zero_stage", 0) > 0) == (
                "lora",
                "fsdp2",
                True,
            ) and "error" not in json.loads(reply["text"])
            lora_offload += (
                job["kind"] == "lora" and job.get("offload") != "none" and "error" not in json.loads(reply["text"])
            )
            accumulated += job.get("grad_accum", 1) > 1 and "error" not in json.loads(reply["text"])
    assert answered >= JOBS * 2 // 3  # most drawn jobs are answered, not refused
    assert lora_fsdp2 >= 5  # LoRA under FSDP2 (vram.lora_fsdp2_memory) is among them
    assert lora_offload >= 3 and accumulated >= 20  # LoRA with host memory, accumulated micro-batches
    assert not pages["it"].errors
    # Pyodide and the calculator came from the site itself (the worker's requests are the page's)
    origin = "/".join(pages["it"].url.split("/")[:3])
    urls = [request.url for request in pages["it"].requests.requests]
    assert {url.rsplit("/", 1)[1] for url in urls if "/assets/pyodide/" in url} >= {
        "pyodide.asm.wasm.zst",
        "pyodide.mjs",
    }
    # the standard library trimmed to what the worker imports, the lock file without packages
    # (hooks/finder/pyodide_assets.py): every job above ran on them; the package's whole
    # library (2.5 MB compressed) and lock file (120 KB) are not fetched. The WebAssembly and
    # the two archives come packed (.zst), unpacked by fzstd in the worker: never unpacked.
    assert [url for url in urls if url.endswith("/assets/pyodide-stdlib.zip.zst")]
    assert [url for url in urls if url.endswith("/assets/pyodide-lock.json")]
    assert not [url for url in urls if url.endswith(("/python_stdlib.zip", "/pyodide/pyodide-lock.json"))]
    assert [url for url in urls if url.endswith("/assets/vram.zip.zst")]
    assert [url for url in urls if url.endswith("/assets/fzstd/index.mjs")]
    assert not [url for url in urls if url.endswith((".wasm", ".zip"))]
    # and the worker's blob: wrapper (finder.js: the page's own policy applies to it), one, of this origin
    wrappers = [url for url in urls if url.startswith("blob:")]
    assert len(wrappers) <= 1 and all(
        re.fullmatch(rf"blob:{re.escape(origin)}/[0-9a-f-]{{36}}", url) for url in wrappers
    ), wrappers
    assert not [url for url in urls if not url.startswith(origin + "/") and url not in wrappers]
    # and under the pages' Content-Security-Policy (tests/browser/test_content_security_policy.py)
    assert pages["it"].locator('meta[http-equiv="Content-Security-Policy"]').count() == 1
    assert pages["it"].evaluate("window.__violations") == []
    # The in-process main() is the command line: a few in a real subprocess give the same text.
    for _key, path, job in drawn[:SUBPROCESS_SAMPLE]:
        proc = subprocess.run(
            [sys.executable, "-m", "vram", *argv(job, path)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert (proc.stdout.strip() if proc.returncode == 0 else proc.stderr.strip()) == cpython(argv(job, path))


REFERENCE = {
    "offload": "none",
    "seq_len": FINDER["settings"]["activations"]["seq_length"],
    "micro_batch": FINDER["settings"]["activations"]["micro_batch"],
    "grad_accum": 1,
    "max_num_batched_tokens": VLLM_MAX_NUM_BATCHED_TOKENS,
    "recompute": "none",
    "attention": "",
    "rank": FINDER["settings"]["lora"]["rank"],
    "targets": "all-linear",
    **FINDER["settings"]["serving"],
    "tokens": 10**9,
    **{f"price_{card['key']}": "" for card in CARDS},
    "host_ram_gb": "",
}


def use_form(page, **values) -> None:
    """Set the form's controls (model and task first, as a reader would; every other input
    not given back to the reference job's value) and wait for the answer."""
    values = {**REFERENCE, **values}
    for name in ("model", "task"):
        if name in values:
            page.select_option(f"#finder-{name}", values.pop(name))
    page.evaluate(
        """(values) => {
        const form = document.getElementById('finder-form');
        for (const [name, value] of Object.entries(values)) document.getElementById('finder-' + name).value = value;
        form.removeAttribute('data-state');
        form.dispatchEvent(new Event('change', {bubbles: true}));
    }""",
        {k: str(v) for k, v in values.items()},
    )
    page.wait_for_selector('#finder-form[data-state="ready"]', timeout=120_000)


def page_answer(page) -> str:
    return page.get_attribute("#finder-results", "data-answer")


def table_cards(page) -> list[str]:
    return page.eval_on_selector_all("#finder-table tbody th", "cells => cells.map(c => c.textContent)")


def in_run_order(answer: dict) -> list[dict]:
    """The fitting cards of a training or LoRA answer in the order the calculator ranked their
    runs (run.order: by cost when every machine has a price, else by time): the rows' order."""
    by_gpu = {fit["gpu"]: fit for fit in answer["fits"]}
    return [by_gpu[key] for key in answer["run"]["order"]]


def names(keys) -> list[str]:
    from hooks.data.load import load_yaml

    gpus = load_yaml("gpus")["gpus"]
    return [gpus[key]["name"] for key in keys]


FORM_JOBS = [  # (form values, the same job for the command line)
    (
        {"model": "llama-3.1-8b", "task": "full-adamw", "cards": 8, "method": "zero3", "seq_len": 4096},
        [
            "--kind=training",
            "--cards=8",
            "--framework=deepspeed",
            "--zero-stage=3",
            "--optimizer=adamw",
            "--seq-len=4096",
            "--micro-batch=1",
            "--recompute=none",
            "--offload=none",
        ],
    ),
    (
        {"model": "gpt-oss-20b", "task": "serve-mxfp4", "cards": 1, "context": 8192, "concurrent": 16},
        [
            "--kind=serving",
            "--cards=1",
            "--context=8192",
            "--weights=mxfp4",
            "--concurrent=16",
            "--kv-dtype=bf16",
            "--gpu-memory-utilization=0.9",
        ],
    ),
    (
        {
            "model": "llama-3.1-8b",
            "task": "full-bf16",
            "cards": 1,
            "method": "paper",
            "seq_len": 2048,
            "micro_batch": 1,
            "recompute": "selective",
        },
        [
            "--kind=training",
            "--cards=1",
            "--framework=zero-paper",
            "--zero-stage=0",
            "--optimizer=adamw-bf16",
            "--seq-len=2048",
            "--recompute=selective",
            "--offload=none",
        ],
    ),
    (
        {"model": "qwen3-30b-a3b", "task": "qlora", "cards": 4, "method": "zero3", "rank": 64, "seq_len": 8192},
        [
            "--kind=lora",
            "--cards=4",
            "--framework=deepspeed",
            "--zero-stage=3",
            "--rank=64",
            "--base-dtype=nf4",
            "--seq-len=8192",
        ],
    ),
]


def cli_for(model: str | None, flags: list[str], config=None) -> str:
    path = config or MODEL_FILES[model]
    gpus = [f"--gpu={card['key']}={card['memory_mib']}" for card in CARDS]
    if "--kind=serving" not in flags:  # the page prices a training run with the guide's machines of that many cards
        cards = int(next(f for f in flags if f.startswith("--cards=")).split("=")[1])
        gpus += [
            f"--price={m['gpu']}={m['price_eur_per_hour_from']}"
            for m in load_yaml("gpus")["machines"].values()
            if m["count"] == cards and not any(f.startswith(f"--price={m['gpu']}=") for f in flags)
        ]
    return cpython(["job", "--config", str(path), "--json", *flags, *gpus])


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_form_answers_the_issue_jobs_as_the_command_line(pages, lang):
    page = pages[lang]
    for values, flags in FORM_JOBS:
        use_form(page, **dict(values))
        assert page_answer(page) == cli_for(values["model"], flags), values
        assert page.is_hidden("#finder-error")
    use_form(page, **dict(FORM_JOBS[0][0]))  # 8 x RTX 4090 under ZeRO-3 at 4,096 tokens: refused
    short = next(fit for fit in json.loads(page_answer(page))["short"] if fit["gpu"] == "rtx-4090")
    margin = format_decimal(short["margin_gb"], "#,##0.0", locale=lang)  # what is left after the states and the reserve
    assert "RTX 4090 24GB" not in table_cards(page)
    assert f"RTX 4090 24GB ({margin}" in plain(page.text_content("#finder-status"))  # named: its margin is short
    use_form(page, **dict(FORM_JOBS[1][0]))  # gpt-oss-20b, MXFP4, 16 x 8,192 tokens: a 32 GB card
    assert "RTX 5090 32GB" in table_cards(page)
    assert ("jusqu’à" if lang == "fr" else "fino a") in page.text_content("#finder-table tbody tr td:nth-child(3)")
    use_form(page, **dict(FORM_JOBS[2][0]))  # all bf16 on one card
    answer = json.loads(page_answer(page))
    fitting = [fit["gpu"] for fit in answer["fits"]]
    assert fitting and "RTX 5090 32GB" not in names(fitting)  # 80 GB of states: no 32 GB card
    assert sorted(table_cards(page)) == sorted(names(fitting))
    priced = {m["gpu"] for m in load_yaml("gpus")["machines"].values() if m["count"] == 1}
    assert answer["run"]["ranked_by"] == ("cost" if set(fitting) <= priced else "time")  # by time without every price
    assert table_cards(page) == names(answer["run"]["order"])
    # the link keeps every input that differs from the reference job
    assert "task=full-bf16" in page.url and "recompute=selective" in page.url
    use_form(page, model="llama-3.1-8b", task="full-adamw", cards=1, method="ddp", seq_len=2048, recompute="none")
    assert page.get_attribute("#finder-results", "data-answer") is None  # the reference job: precomputed
    assert not page.errors


def type_context(page, tokens: str) -> None:
    """Type a serving context and wait for its answer (the calculator's, or its one line)."""
    page.evaluate("document.getElementById('finder-form').removeAttribute('data-state')")
    choose(page, context=tokens)
    page.wait_for_selector('#finder-form[data-state="ready"]', timeout=120_000)


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_serving_context_is_any_length_up_to_the_models_maximum(pages, lang):
    """Any whole number of tokens: the calculator's answer for it (not a preset), one line in
    the page's language beyond the model's maximum, the length kept in the link (on the
    module's page of that language: its calculator started once for all these tests)."""
    page = pages[lang]
    use_form(page, model="mistral-7b", task="serve-bf16", cards=1)  # every other input back to the reference job
    choose(page, model="mistral-7b", task="serve-bf16", cards=1)
    type_context(page, "12345")
    assert page.is_hidden("#finder-error") and page.is_visible("#finder-table") and "context=12345" in page.url
    answer = json.loads(page.get_attribute("#finder-results", "data-answer"))
    config = vram.model_config_from_dict(
        json.loads((REPO_ROOT / "snippets" / "data" / "models" / "mistral-7b-v0.1.json").read_text())
    )
    assert (
        answer["kv_per_sequence_bytes"]
        == vram.serving_memory_per_gpu(config, "bf16", context_length=12345).kv_cache_bytes
    )
    assert ("12 345 tokens" if lang == "fr" else "12.345 token") in plain(page.text_content("#finder-table caption"))
    type_context(page, "32769")
    expected = (
        "Longueur du contexte : dépasse le maximum du modèle, 32 768 tokens."
        if lang == "fr"
        else "Lunghezza del contesto: supera il massimo del modello, 32.768 token."
    )
    assert plain(page.text_content("#finder-error")) == plain(expected) and page.is_hidden("#finder-results")
    assert "context=32769" in page.url
    type_context(page, "32768")  # a preset within the maximum: the precomputed answer, at once
    assert page.is_hidden("#finder-error") and page.get_attribute("#finder-results", "data-answer") is None
    assert not page.errors


def test_a_pasted_config_of_an_unshipped_family(pages):
    page = pages["fr"]
    page.select_option("#finder-model", "custom")
    page.fill("#finder-config", UNSHIPPED.read_text())
    use_form(page, task="full-adamw", cards=2, method="fsdp2-reshard", seq_len=4096)
    assert page_answer(page) == cli_for(
        None, ["--kind=training", "--cards=2", "--framework=fsdp2", "--zero-stage=3", "--seq-len=4096"], UNSHIPPED
    )
    assert page.is_visible("#finder-table")
    assert not page.errors


# issue 32: a reader's own config.json of the families added for it (public copies, models.yaml)
UPLOADED = [
    MODELS_DIR / "granite-3.3-8b-instruct.json",
    MODELS_DIR / "olmo-2-1124-7b.json",
    MODELS_DIR / "glm-4-9b-0414.json",
]


@pytest.mark.parametrize("config", UPLOADED, ids=lambda path: path.stem)
@pytest.mark.parametrize("lang", ["it", "fr"])
def test_an_uploaded_config_of_a_new_family_is_answered_as_the_command_line(pages, lang, config):
    from tests.vram.transformers_oracle import built

    page = pages[lang]
    text = config.read_text()
    page.select_option("#finder-model", "custom")
    page.fill("#finder-config", text)
    raw = json.loads(text)
    params = built(raw).total  # transformers' model on the meta device, not vram's count
    grouped = f"{params:,}".replace(",", "." if lang == "it" else " ")
    read = (
        f"Letto dal config.json: model_type {raw['model_type']}, {raw['num_hidden_layers']} layer, {grouped} parametri."
        if lang == "it"
        else f"Lu dans le config.json : model_type {raw['model_type']}, {raw['num_hidden_layers']} couches, "
        f"{grouped} paramètres."
    )
    seq = min(8192, raw["max_position_embeddings"])  # OLMo 2 7B reads 4,096 tokens at most
    for values, flags in (
        (
            {"task": "full-adamw", "cards": 2, "method": "fsdp2-reshard", "seq_len": 4096},
            ["--kind=training", "--cards=2", "--framework=fsdp2", "--zero-stage=3", "--seq-len=4096"],
        ),
        (  # the QLoRA job of the form (FORM_JOBS), with this config
            {"task": "qlora", "cards": 4, "method": "zero3", "rank": 64, "seq_len": seq},
            [*FORM_JOBS[3][1][:-1], f"--seq-len={seq}"],
        ),
    ):
        use_form(page, **values)
        assert page_answer(page) == cli_for(None, flags, config), values
        assert "error" not in json.loads(page_answer(page))
        assert read in plain(page.text_content("#finder-note"))
    assert not page.errors


FAMILIES = ", ".join(SUPPORTED_MODEL_TYPES)  # what `python -m vram` lists as supported
BAD = [  # (field values, what the line must say in it, in fr)
    (
        {"model": "custom", "config": "{ pas du json"},
        "config.json del modello: non è un JSON valido (riga 1, colonna 3).",
        "config.json du modèle : ce n’est pas un JSON valide (ligne 1, colonne 3).",
    ),
    # the command line's facts (vram.job.read_config's fields), not a generic "not JSON"
    (
        {"model": "custom", "config": "[1, 2]"},
        "config.json del modello: serve un oggetto JSON (tra parentesi graffe), non un valore di tipo array.",
        "config.json du modèle : il faut un objet JSON (entre accolades), pas une valeur de type array.",
    ),
    (
        {"model": "custom", "config": '{"model_type": "llama", "model_type": "qwen2"}'},
        (
            "config.json del modello: la chiave model_type compare due volte (un parser JSON ne terrebbe una sola senza "
            "avvisare): lasciane una."
        ),
        (
            "config.json du modèle : la clé model_type apparaît deux fois (un analyseur JSON n’en garderait qu’une sans "
            "prévenir) : n’en gardez qu’une."
        ),
    ),
    (
        {"model": "custom", "config": '{"model_type": "falcon", "hidden_size": 4544}'},
        f"config.json del modello: il model_type “falcon” non è tra quelli che il calcolatore conosce ({FAMILIES}).",
        f"config.json du modèle : le model_type « falcon » ne fait pas partie de ceux que le calculateur connaît ({FAMILIES}).",
    ),
    # a look-alike (the Cyrillic a, U+0430): said in the page's language, with its code point (a new reader's
    # report: the line held vram's English "(not plain ASCII: ...)" inside the Italian and French sentences)
    (
        {"model": "custom", "config": '{"model_type": "ll\u0430ma", "hidden_size": 4096}'},
        (
            "config.json del modello: il model_type “ll\u0430ma” contiene caratteri che non sono ASCII semplice "
            f"(“\u0430” è U+0430 CYRILLIC SMALL LETTER A), quindi non è tra quelli che il calcolatore conosce ({FAMILIES})."
        ),
        (
            "config.json du modèle : le model_type « ll\u0430ma » contient des caractères qui ne sont pas de l’ASCII "
            "simple (« \u0430 » est U+0430 CYRILLIC SMALL LETTER A) ; il ne fait donc pas partie de ceux que le "
            f"calculateur connaît ({FAMILIES})."
        ),
    ),
    # a multimodal Gemma 3 (its vision tower is not counted): what the command line tells, not "unknown family",
    # and the values to add, Gemma3TextConfig's defaults (tests/vram/test_job.py: transformers' own)
    (
        {
            "model": "custom",
            "config": '{"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, '
            '"intermediate_size": 10240, "num_hidden_layers": 34, "num_attention_heads": 8}}',
        },
        (
            "config.json del modello: “gemma3” è il modello multimodale, con la parte che legge le immagini, che il "
            "calcolatore non conta. Per il solo modello di testo incolla il suo text_config come config.json a sé, "
            "aggiungendo \"vocab_size\": 262208 (i valori predefiniti della configurazione di “gemma3_text” che il file "
            "lascia sottintesi)."
        ),
        (
            "config.json du modèle : « gemma3 » est le modèle multimodal, avec la partie qui lit les images, que le "
            "calculateur ne compte pas. Pour le seul modèle de texte, collez son text_config comme un config.json à part, "
            "en y ajoutant \"vocab_size\": 262208 (les valeurs par défaut de la configuration de « gemma3_text » que le "
            "fichier laisse sous-entendues)."
        ),
    ),
    # issue 33: 50,000 levels crashed Pyodide inside json.loads ("the calculator did not load"); refused before it
    (
        {"model": "custom", "config": '{"a":' * 50_000 + "1" + "}" * 50_000},
        "config.json del modello: più di 32 livelli di annidamento, che nessun config.json raggiunge.",
        "config.json du modèle : plus de 32 niveaux d’imbrication, ce qu’aucun config.json n’atteint.",
    ),
    (
        {"seq_len": "131073"},
        "Lunghezza delle sequenze (token): supera il massimo del modello, 131.072 token.",
        "Longueur des séquences (tokens) : dépasse le maximum du modèle, 131 072 tokens.",
    ),
    (
        {"micro_batch": "-2"},
        "Micro-batch per scheda: serve un numero intero da 1 a 65.536.",
        "Micro-lot par carte : il faut un nombre entier de 1 à 65 536.",
    ),
    (
        {"micro_batch": "99999999999999999999"},
        "Micro-batch per scheda: serve un numero intero da 1 a 65.536.",
        "Micro-lot par carte : il faut un nombre entier de 1 à 65 536.",
    ),
    (
        {"grad_accum": "0"},
        "Accumulazione del gradiente (micro-batch per step dell’ottimizzatore): serve un numero intero da 1 a 65.536.",
        "Accumulation de gradient (micro-lots par étape de l’optimiseur) : il faut un nombre entier de 1 à 65 536.",
    ),
]


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_bad_input_is_one_line_in_the_page_language(pages, lang):
    page = pages[lang]
    for fields, italian, french in BAD:
        values = dict(fields)
        use_form(
            page,
            model=values.pop("model", "llama-3.1-8b"),
            task="full-adamw",
            cards=1,
            method="ddp",
            seq_len=2048,
            micro_batch=1,
        )
        if "config" in values:
            page.fill("#finder-config", values.pop("config"))
        use_form(page, **values)
        line = plain(page.text_content("#finder-error"))
        assert line == plain(french if lang == "fr" else italian), values
        assert page.is_visible("#finder-error") and page.is_hidden("#finder-results")
        # the page still works: a good value brings an answer back
        use_form(page, model="llama-3.1-8b", seq_len=4096, micro_batch=1)
        assert page.is_hidden("#finder-error") and page.is_visible("#finder-table")
    assert not page.errors


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_greyed_out_choices_say_why_in_visible_text(pages, lang):
    """Issue 35: a touch screen shows no tooltip. Under each choice, a visible line names the
    options the calculator refuses for the others, and why (finder.json's refused reasons)."""
    page = pages[lang]
    labels = FINDER["labels"]

    def said(name: str) -> str:
        assert page.is_visible(f"#finder-{name}-refused"), name
        return plain(page.text_content(f"#finder-{name}-refused"))

    def disabled(name: str) -> list[str]:
        return page.eval_on_selector_all(f"#finder-{name} option", "os => os.filter(o => o.disabled).map(o => o.text)")

    use_form(page, model="llama-3.1-8b", task="full-bf16", cards=1, method="paper")
    refused = disabled("method")  # all-bf16: DDP and the paper's accounting have it
    assert refused and all(plain(option) in said("method") for option in refused)
    assert plain(labels["refused_optimizer"][lang]) in said("method")
    assert page.eval_on_selector('#finder-method option[value="ddp"]', "o => !o.disabled")
    assert disabled("task") and plain(labels["refused_weights"][lang]) in said("task")  # MXFP4: gpt-oss only
    use_form(page, model="qwen2.5-7b", task="serve-bf16", cards=1, context=8192)
    assert "8" in disabled("cards") and plain(labels["refused_cards"][lang]) in said("cards")  # 28 heads, 8 cards
    assert page.is_hidden("#finder-method-refused")  # serving: no method
    use_form(page, model="phi-4", task="serve-bf16", cards=1, context=8192)  # Phi-4 serving on 4 and 8 cards
    assert {"4", "8"} <= set(disabled("cards")) and plain(labels["refused_cards"][lang]) in said("cards")
    use_form(page, model="mixtral-8x7b", task="lora", cards=2, method="ddp")  # FSDP2 for MoE LoRA
    assert plain(labels["refused_lora_fsdp2_experts"][lang]) in said("method")
    use_form(page, model="llama-3.1-8b", task="full-adamw", cards=1, method="ddp")
    assert page.is_hidden("#finder-method-refused")  # every method offered: nothing to say
    assert not page.errors


UNIT_AFTER_SPACE = re.compile(r"\d[ \t\n]+(?:s|min|h|giorni|jours|tokens?/s)(?![^\W\d_])")


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_run_shows_the_command_lines_time_and_cost(pages, lang):
    """Issue 21: time per step, run and cost beside the memory verdict, for the tokens and the
    price the reader typed (kept in the link): the calculator's JSON is the command line's, and
    each figure in the page is the render layer's (Babel) formatting of that JSON, a number and
    its unit joined by the rule set's no-break space, as in the static page."""
    from hooks.finder.compute import load_catalogue
    from hooks.finder.page import ranking_text, run_text

    page = pages[lang]
    use_form(
        page, model="llama-3.1-8b", task="full-adamw", cards=8, method="zero3", tokens=2_000_000_000, price_a6000="4"
    )
    expected = cli_for(
        "llama-3.1-8b",
        [
            "--kind=training",
            "--cards=8",
            "--framework=deepspeed",
            "--zero-stage=3",
            "--optimizer=adamw",
            "--seq-len=2048",
            "--micro-batch=1",
            "--recompute=none",
            "--offload=none",
            "--tokens=2000000000",
            "--price=a6000=4",
        ],
    )
    assert page_answer(page) == expected
    answer, catalogue = json.loads(expected), load_catalogue()
    a6000 = next(f for f in answer["fits"] if f["gpu"] == "a6000")["time"]
    assert a6000["price_eur_per_hour"] == "4" and a6000["cost_eur"] is not None
    rows = page.eval_on_selector_all("#finder-table tbody tr", "rows => rows.map(r => r.lastElementChild.textContent)")
    assert [plain(r) for r in rows] == [plain(run_text(catalogue, lang, f["time"])) for f in in_run_order(answer)]
    for row in rows:  # the dynamic cells keep the no-break space before s, h, days
        assert not UNIT_AFTER_SPACE.search(row) and "\u00a0s" in row, row
    assert plain(ranking_text(catalogue, lang, answer, 8)) == plain(page.text_content("#finder-order"))
    # the price typed for the A6000's machine is shown as the reader's, the guide's as the guide's
    prices = dict(
        zip(
            table_cards(page),
            page.eval_on_selector_all("#finder-table tbody tr", "rows => rows.map(r => r.children[3].textContent)"),
            strict=True,
        )
    )
    assert plain(prices["RTX A6000 48GB"]) == ("4,00 €/h (votre prix)" if lang == "fr" else "4,00 €/h (il tuo prezzo)")
    guide = next(m for m in load_yaml("gpus")["machines"].values() if (m["gpu"], m["count"]) == ("h100", 8))
    price = format_decimal(
        guide["price_eur_per_hour_from"], "#,##0.00", locale=lang
    )  # the site's own, as Babel writes it
    assert plain(prices["H100 80GB"]) == (
        f"à partir de {price} €/h (prix du guide)" if lang == "fr" else f"da {price} €/h (prezzo della guida)"
    )
    assert "tokens=2000000000" in page.url and "price_a6000=4" in page.url
    assert not page.errors


def guide_example(lang: str) -> str:
    """The example of a price the page's error gives: the site's dearest guide price, as Babel writes it."""
    return format_decimal(
        max(m["price_eur_per_hour_from"] for m in load_yaml("gpus")["machines"].values()), "#,##0.00", locale=lang
    )


RANKED = {
    "it": "in ordine di costo (il punto medio di ogni intervallo), dalla macchina più economica",
    "fr": "par coût (le milieu de chaque fourchette), de la machine la moins chère à la plus chère",
}


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_typed_prices_rank_the_machines_by_the_runs_cost(pages, lang):
    """Issue 21's "done when": typed prices make the ranking by cost possible, and a smaller card
    made more expensive for the run moves down; the page says which ranking it uses. Every
    machine that fits gets a typed price (a typed price takes the guide's place): the smallest
    card the cheapest (a cent an hour, the least the page takes, against 10,000 EUR for the
    others, the most), then the dearest."""
    from hooks.finder.compute import load_catalogue
    from hooks.finder.page import ranking_text

    page, catalogue = pages[lang], load_catalogue()
    flags = [
        "--kind=training",
        "--cards=8",
        "--framework=deepspeed",
        "--zero-stage=3",
        "--optimizer=adamw",
        "--seq-len=2048",
        "--micro-batch=1",
        "--recompute=none",
        "--offload=none",
        "--tokens=2000000000",
    ]
    choice = {"model": "llama-3.1-8b", "task": "full-adamw", "cards": 8, "method": "zero3", "tokens": 2_000_000_000}
    use_form(page, **choice)
    untyped = json.loads(page_answer(page))
    fitting = [fit["gpu"] for fit in untyped["fits"]]  # smallest card first
    priced = {m["gpu"] for m in load_yaml("gpus")["machines"].values() if m["count"] == 8}
    assert untyped["run"]["ranked_by"] == ("cost" if set(fitting) <= priced else "time")  # and said so
    assert len(fitting) > 1, fitting
    smallest, orders = fitting[0], {}
    for mine, others in (("0.01", "10000"), ("10000", "0.01")):
        prices = {f"price_{gpu}": (mine if gpu == smallest else others) for gpu in fitting}
        use_form(page, **choice, **prices)
        typed = [f"--price={name[6:]}={value}" for name, value in prices.items()]
        answer = json.loads(page_answer(page))
        assert page_answer(page) == cli_for("llama-3.1-8b", flags + typed)
        assert answer["run"]["ranked_by"] == "cost"
        order = plain(page.text_content("#finder-order"))
        assert plain(ranking_text(catalogue, lang, answer, 8)) == order and RANKED[lang] in order
        assert table_cards(page) == names(answer["run"]["order"])  # the rows in the run's cost order
        costs = [sum(float(c) for c in fit["time"]["cost_eur"]) for fit in in_run_order(answer)]
        assert costs == sorted(costs)  # cheapest first
        assert f"price_{smallest}={mine}" in page.url
        orders[mine] = answer["run"]["order"]
    assert orders["0.01"][0] == smallest and orders["10000"][-1] == smallest  # the ranking changed
    shown = page.eval_on_selector_all(".finder-price:not([hidden]) input", "inputs => inputs.map(i => i.name)")
    assert sorted(shown) == sorted(f"price_{gpu}" for gpu in fitting)  # a field for each machine that fits
    assert not page.errors


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_when_no_machine_has_a_price_the_line_says_so_instead_of_naming_them_all(pages, lang):
    """A new reader's report: on 2 cards the guide prices no machine, and the line listed all
    nine as "without a price". It now says none has one, as page.py's ranking_text says it."""
    from hooks.finder.compute import load_catalogue
    from hooks.finder.page import ranking_text

    page, labels = pages[lang], FINDER["labels"]
    # a budget other than the reference one: the calculator answers (not finder-results.json)
    use_form(page, model="llama-3.2-1b", task="full-adamw", cards=2, method="zero3", tokens=2_000_000_000)
    answer = json.loads(page_answer(page))
    run = answer["run"]
    priced = {m["gpu"] for m in load_yaml("gpus")["machines"].values() if m["count"] == 2}
    assert run["ranked_by"] == "time" and len(run["order"]) > 1 and not priced & set(run["order"])
    order = plain(page.text_content("#finder-order"))
    assert order == plain(ranking_text(load_catalogue(), lang, answer, 2))
    assert plain(labels["ranked_time_none_priced"][lang].split("{order}")[1]) in order
    assert "2 × " not in order  # no machine listed twice
    assert not page.errors


@pytest.mark.parametrize(("lang", "said"), [("it", "meno di 0,1 GB."), ("fr", "moins de 0,1 Go.")])
def test_a_part_that_rounds_to_zero_reads_as_page_py_writes_it(pages, lang, said):
    """LoRA adapters of Llama 3.2 1B under ZeRO-3 on 8 cards: 0.02 GB per card
    (tests/finder/test_finder_render.py), "less than 0,1 GB", not "0 GB", in the calculator's answer too."""
    page = pages[lang]
    use_form(page, model="llama-3.2-1b", task="lora", cards=8, method="zero3", tokens=2_000_000_000)
    assert page_answer(page) is not None  # the calculator's answer, not finder-results.json's
    assert plain(page.text_content("#finder-why")).endswith(said)
    assert not page.errors


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_bad_price_is_one_line_naming_the_machine(pages, lang):
    page, labels = pages[lang], FINDER["labels"]
    field = labels["price_card"][lang].format(gpu="RTX 5090 32GB")
    # the example, the cent and the 10,000 EUR/h bound as the page writes numbers (Babel)
    expected = plain(
        labels["error_price"][lang].format(
            field=field, example=guide_example(lang), minimum="0,01", maximum="10.000" if lang == "it" else "10 000"
        )
    )
    for bad in ("abc", "-1", "0", "1e9", "1000000000"):
        use_form(page, model="llama-3.1-8b", task="full-adamw", cards=8, method="zero3", **{"price_rtx-5090": bad})
        assert plain(page.text_content("#finder-error")) == expected, bad
        assert page.is_visible("#finder-error") and page.is_hidden("#finder-results")
        code = cli_for(
            "llama-3.1-8b",
            ["--kind=training", "--cards=8", "--framework=deepspeed", "--zero-stage=3", f"--price=rtx-5090={bad}"],
        )
        assert code.startswith("vram: error: prices: prices.rtx-5090") and "\n" not in code, code  # the CLI: exit 2
    # a bad price on a machine that does not fit is still named, and its field shown to mend it
    use_form(page, model="llama-3.1-8b", task="full-adamw", cards=1, method="ddp", **{"price_rtx-3090": "abc"})
    assert plain(page.text_content("#finder-error")).startswith(
        plain(labels["price_card"][lang].format(gpu="RTX 3090 24GB"))
    )
    assert page.is_visible("#finder-price_rtx-3090")
    use_form(page, model="llama-3.1-8b", task="full-adamw", cards=8, method="zero3")
    assert page.is_hidden("#finder-error") and page.is_visible("#finder-table")
    assert page.is_hidden("#finder-price_rtx-3090")  # 24 GB does not hold it: no price asked
    assert not page.errors


def test_lora_and_serving_show_their_time_in_the_page(pages):
    """LoRA runs are timed and priced like full ones; serving shows each card's decoding bound."""
    from hooks.finder.compute import load_catalogue
    from hooks.finder.page import decode_text, run_text
    from hooks.render.typography import typeset_text  # what the static page gets after rendering

    page, catalogue = pages["fr"], load_catalogue()
    use_form(page, model="llama-3.1-8b", task="qlora", cards=1, method="ddp", tokens=10**8)
    answer = json.loads(page_answer(page))
    rows = page.eval_on_selector_all("#finder-table tbody tr", "rows => rows.map(r => r.lastElementChild.textContent)")
    assert rows == [typeset_text(run_text(catalogue, "fr", f["time"]), "fr") for f in in_run_order(answer)]
    use_form(page, model="llama-3.1-8b", task="serve-bf16", cards=2, context=8192, concurrent=4)
    answer = json.loads(page_answer(page))
    assert answer == json.loads(
        cli_for(
            "llama-3.1-8b",
            [
                "--kind=serving",
                "--cards=2",
                "--context=8192",
                "--weights=bf16",
                "--concurrent=4",
                "--kv-dtype=bf16",
                "--gpu-memory-utilization=0.9",
            ],
        )
    )
    rows = page.eval_on_selector_all("#finder-table tbody tr", "rows => rows.map(r => r.lastElementChild.textContent)")
    assert rows == [typeset_text(decode_text(catalogue, "fr", f["decode"]), "fr") for f in answer["fits"]]
    assert not page.errors


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_machines_ram_verdict_is_the_command_lines(pages, lang):
    """With an offload, each card says whether its machine's RAM holds the host bytes: greyed,
    with the reason, where the data give no RAM (gpus.yaml publishes none); the RAM the reader
    typed otherwise, the verdict the command line's, the RAM kept in the link."""
    page, labels = pages[lang], FINDER["labels"]
    job = {"model": "llama-3.1-8b", "task": "full-adamw", "cards": 4, "method": "zero3", "offload": "optimizer"}
    flags = [
        "--kind=training",
        "--cards=4",
        "--framework=deepspeed",
        "--zero-stage=3",
        "--optimizer=adamw",
        "--seq-len=2048",
        "--micro-batch=1",
        "--recompute=none",
        "--offload=optimizer",
    ]
    use_form(page, **job)
    assert page_answer(page) == cli_for("llama-3.1-8b", flags)
    unknown = page.eval_on_selector_all(
        "#finder-table .finder-unknown", "nodes => nodes.map(n => [n.textContent, n.title])"
    )
    assert unknown and {(plain(text), plain(title)) for text, title in unknown} == {
        (plain(labels["ram_unknown"][lang]), plain(labels["ram_unknown_why"][lang]))
    }
    assert plain(labels["ram_unknown_why"][lang]) in plain(page.text_content("#finder-note"))
    for ram, verdict in ((256, "ram_holds"), (100, "ram_short")):  # the offload pins 128.5 GB per machine
        use_form(page, **job, host_ram_gb=ram)
        assert page_answer(page) == cli_for("llama-3.1-8b", flags + [f"--host-ram={c['key']}={ram}" for c in CARDS])
        cells = page.eval_on_selector_all(
            "#finder-table tbody td:nth-child(3)", "cells => cells.map(c => c.textContent)"
        )
        said = plain(labels[verdict][lang].format(ram=f"{ram}\u00a0{'Go' if lang == 'fr' else 'GB'}"))
        assert cells and all(said in plain(cell) for cell in cells), cells
        assert page.query_selector("#finder-table .finder-unknown") is None
        assert f"host_ram_gb={ram}" in page.url
    use_form(page, **job, host_ram_gb="-5")
    line = plain(page.text_content("#finder-error"))
    assert line == plain(
        labels["error_integer"][lang].format(
            field=labels["host_ram_gb"][lang], minimum=1, maximum="1.000.000" if lang == "it" else "1\u202f000\u202f000"
        )
    ), line
    assert not page.errors


GROUPED = {"it": "2.000.000.000", "fr": "2\u202f000\u202f000\u202f000"}  # as the page writes numbers (Babel)


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_numbers_typed_as_the_page_writes_them(pages, lang):
    """A decimal comma (0,8; 4,50) and grouped digits (2.000.000.000) are the numbers the
    command line reads as 0.8, 4.50 and 2000000000; the link keeps the canonical form."""
    page = pages[lang]
    use_form(page, model="gpt-oss-20b", task="serve-mxfp4", cards=1, context=8192, gpu_memory_utilization="0,8")
    assert page_answer(page) == cli_for(
        "gpt-oss-20b",
        [
            "--kind=serving",
            "--cards=1",
            "--context=8192",
            "--weights=mxfp4",
            "--concurrent=1",
            "--kv-dtype=bf16",
            "--gpu-memory-utilization=0.8",
        ],
    )
    assert "gpu_memory_utilization=0.8" in page.url
    use_form(
        page, model="llama-3.1-8b", task="full-adamw", cards=8, method="zero3", tokens=GROUPED[lang], price_a6000="4,50"
    )
    assert page_answer(page) == cli_for(
        "llama-3.1-8b",
        [
            "--kind=training",
            "--cards=8",
            "--framework=deepspeed",
            "--zero-stage=3",
            "--optimizer=adamw",
            "--seq-len=2048",
            "--micro-batch=1",
            "--recompute=none",
            "--offload=none",
            "--tokens=2000000000",
            "--price=a6000=4.50",
        ],
    )
    assert "tokens=2000000000" in page.url and "price_a6000=4.50" in page.url
    use_form(page, model="llama-3.1-8b", task="full-adamw", cards=8, method="zero3", price_a6000="tanto")
    assert guide_example(lang) in plain(page.text_content("#finder-error"))  # as the reader writes it: 31,20, not 31.20
    assert not page.errors


# "1.200" in the price field: Italian writes thousands with a point (Babel), the calculator's point
# is decimal. Refused in one line naming both readings, as the command line refuses it; the decimal
# comma ("1,200": 1.2) and the page's own grouping with a comma or a space ("1.200,50", "1 200,50")
# are read, as the command line reads their canonical text.
UNAMBIGUOUS = {"it": (("1,200", "1.2"), ("1.200,50", "1200.50")), "fr": (("1,200", "1.2"), ("1 200,50", "1200.50"))}


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_price_with_a_point_before_three_digits_is_refused_as_ambiguous(pages, lang):
    page, labels = pages[lang], FINDER["labels"]
    field = labels["price_card"][lang].format(gpu="RTX 5090 32GB")
    expected = plain(
        labels["error_price_ambiguous"][lang].format(field=field, got="1.200", decimal="1,2", thousands="1200")
    )
    choice = {"model": "llama-3.1-8b", "task": "full-adamw", "cards": 8, "method": "zero3"}
    use_form(page, **choice, **{"price_rtx-5090": "1.200"})
    assert plain(page.text_content("#finder-error")) == expected
    assert page.is_visible("#finder-error") and page.is_hidden("#finder-results")
    flags = ["--kind=training", "--cards=8", "--framework=deepspeed", "--zero-stage=3", "--optimizer=adamw"]
    flags += ["--seq-len=2048", "--micro-batch=1", "--recompute=none", "--offload=none", "--tokens=1000000000"]
    code = cli_for("llama-3.1-8b", [*flags, "--price=rtx-5090=1.200"])
    assert code.startswith("vram: error: prices: prices.rtx-5090 '1.200' is ambiguous") and "\n" not in code, code
    for typed, canonical in UNAMBIGUOUS[lang]:
        use_form(page, **choice, price_a6000=typed)
        assert page.is_hidden("#finder-error") and f"price_a6000={canonical}" in page.url, typed
        assert page_answer(page) == cli_for("llama-3.1-8b", [*flags, f"--price=a6000={canonical}"]), typed
    assert not page.errors


def switch_language(page, lang: str) -> None:
    """Follow the page's language switcher (lang-switch.js carries the query) and wait for the answer."""
    with page.expect_navigation(wait_until="networkidle"):
        page.eval_on_selector(f'a.md-select__link[hreflang="{lang}"]', "a => a.click()")  # the reader's click
    page.wait_for_selector('#finder-form[data-ready="true"][data-state="ready"]', timeout=60_000)


def test_a_pasted_config_says_what_was_read_and_survives_the_language_switch(pages):
    page = pages["it"]
    text = UNSHIPPED.read_text()
    page.select_option("#finder-model", "custom")
    page.fill("#finder-config", text)
    use_form(page, task="full-adamw", cards=2, method="fsdp2-reshard", seq_len=4096)
    expected = cli_for(
        None, ["--kind=training", "--cards=2", "--framework=fsdp2", "--zero-stage=3", "--seq-len=4096"], UNSHIPPED
    )
    raw = json.loads(text)
    params = 9_241_705_984  # google/gemma-2-9b's published count (tests/vram/test_models.py), not vram's
    grouped = {"it": f"{params:,}".replace(",", "."), "fr": f"{params:,}".replace(",", " ")}
    read = {
        "it": f"Letto dal config.json: model_type {raw['model_type']}, {raw['num_hidden_layers']} layer, "
        f"{grouped['it']} parametri.",
        "fr": f"Lu dans le config.json : model_type {raw['model_type']}, {raw['num_hidden_layers']} couches, "
        f"{grouped['fr']} paramètres.",
    }
    assert page_answer(page) == expected
    assert read["it"] in plain(page.text_content("#finder-note"))
    for lang in ("fr", "it"):  # both ways: the job in the link, the config.json in this tab's sessionStorage
        switch_language(page, lang)
        assert page.input_value("#finder-model") == "custom" and page.input_value("#finder-config") == text
        assert page_answer(page) == expected, lang
        assert read[lang] in plain(page.text_content("#finder-note"))
    assert "/fr/" not in page.url
    assert not page.errors


# Answer.AI's FSDP-QLoRA recipe (AnswerDotAI/fsdp_qlora, README.md at 02fe695): a 70B in 4 bit on
# two 24 GB cards, FSDP with CPU offload and gradient checkpointing, batch 2 of 2,048 tokens; here
# with 4 micro-batches accumulated per optimizer step.
QLORA_70B_OFFLOAD = (
    {
        "model": "llama-3.1-70b",
        "task": "qlora",
        "cards": 2,
        "method": "fsdp2-reshard",
        "offload": "optimizer+params",
        "recompute": "full",
        "micro_batch": 2,
        "grad_accum": 4,
    },
    [
        "--kind=lora",
        "--cards=2",
        "--framework=fsdp2",
        "--zero-stage=3",
        "--base-dtype=nf4",
        "--seq-len=2048",
        "--micro-batch=2",
        "--grad-accum=4",
        "--recompute=full",
        "--offload=optimizer+params",
    ],
)


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_70b_fsdp_qlora_with_offload_on_two_rtx_4090(pages, lang):
    """The form's answer is the command line's, byte for byte: the 4-bit base, the adapters and
    their optimizer in host memory (FSDP2's CPUOffloadPolicy), so two RTX 4090 hold it; the
    caption names that accounting, each card says its machine's RAM is not known (none
    published), the note gives the global batch of 2 x 4 x 2 sequences and the host bytes; the
    link keeps the offload and the accumulation."""
    page, labels = pages[lang], FINDER["labels"]
    values, flags = QLORA_70B_OFFLOAD
    use_form(page, **values)
    answer = page_answer(page)
    assert answer == cli_for("llama-3.1-70b", flags)
    found = json.loads(answer)
    assert "rtx-4090" in [fit["gpu"] for fit in found["fits"]]
    assert load_yaml("gpus")["gpus"]["rtx-4090"]["name"] in table_cards(page)
    assert found["accounting"] == "qlora-fsdp2-reshard-offload"
    assert plain(FINDER["accountings"]["qlora-fsdp2-reshard-offload"][lang]) in plain(
        page.text_content("#finder-table caption")
    )
    note = plain(page.text_content("#finder-note"))
    batch = found["batch"]
    assert (batch["global_batch"], batch["tokens_per_step"]) == (16, 16 * 2048)
    said = labels["batch"][lang].split("{global_batch}")[0]
    assert plain(said) in note and plain(labels["host_ram"][lang].split("{host}")[0]) in note
    assert page.query_selector("#finder-table .finder-unknown") is not None  # the machine's RAM: not published
    assert "offload=optimizer%2Bparams" in page.url and "grad_accum=4" in page.url
    use_form(page, **{**values, "method": "zero2"})  # DeepSpeed ZeRO-2: LoRA's offload not modelled
    line = plain(page.text_content("#finder-error"))
    assert line.startswith(plain(labels["error_not_offered"][lang].format(field=labels["offload"][lang])))
    assert plain(labels["refused_offload"][lang]) in line
    assert not page.errors


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_serving_verdict_names_its_prefill_chunk_and_the_reader_sets_it(pages, lang):
    """gpt-oss-20b (sliding-window layers): the note names vLLM's default chunk, and one the reader
    types changes the KV cache as the command line says; the link keeps it; 0 is one line."""
    page, labels = pages[lang], FINDER["labels"]
    job = {"model": "gpt-oss-20b", "task": "serve-mxfp4", "cards": 1, "context": 8192, "concurrent": 16}
    flags = [
        "--kind=serving",
        "--cards=1",
        "--context=8192",
        "--weights=mxfp4",
        "--concurrent=16",
        "--kv-dtype=bf16",
        "--gpu-memory-utilization=0.9",
    ]
    use_form(page, **job)
    default = json.loads(page_answer(page))
    assert default["max_num_batched_tokens"] == VLLM_MAX_NUM_BATCHED_TOKENS
    grouped = format_number(VLLM_MAX_NUM_BATCHED_TOKENS, lang, 0)  # as the page writes numbers (Babel)
    assert f"max_num_batched_tokens, {'qui' if lang == 'it' else 'ici'} {grouped} token" in page.text_content(
        "#finder-note"
    )
    use_form(page, **job, max_num_batched_tokens=8192)
    assert page_answer(page) == cli_for("gpt-oss-20b", [*flags, "--max-num-batched-tokens=8192"])
    assert json.loads(page_answer(page))["kv_per_sequence_bytes"] > default["kv_per_sequence_bytes"]
    assert "max_num_batched_tokens=8192" in page.url
    use_form(page, **job, max_num_batched_tokens=0)
    line = plain(page.text_content("#finder-error"))
    assert line.startswith(plain(labels["max_num_batched_tokens"][lang])), line
    assert not page.errors


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_pre_training_shows_the_global_batch_and_the_steps_for_a_token_budget(pages, lang):
    """Pre-training is the training job (finder.yaml's answers_of): its reference answer is the
    precomputed one, shown with the task's name; with a token budget and accumulation the page
    asks the calculator, and its answer is the command line's, steps and run included."""
    page, _labels = pages[lang], FINDER["labels"]
    use_form(page, model="llama-3.2-1b", task="pretrain", cards=8, method="fsdp2-reshard")
    assert page_answer(page) is None  # the reference job: full fine-tuning's precomputed answer
    assert plain(FINDER["tasks"]["pretrain"]["label"][lang]) in plain(page.text_content("#finder-table caption"))
    use_form(
        page, model="llama-3.2-1b", task="pretrain", cards=8, method="fsdp2-reshard", grad_accum=32, tokens=20 * 10**9
    )
    flags = [
        "--kind=training",
        "--cards=8",
        "--framework=fsdp2",
        "--zero-stage=3",
        "--optimizer=adamw",
        "--seq-len=2048",
        "--micro-batch=1",
        "--grad-accum=32",
        "--recompute=none",
        "--offload=none",
        "--tokens=20000000000",
    ]
    answer = page_answer(page)
    assert answer == cli_for("llama-3.2-1b", flags)
    batch = json.loads(answer)["batch"]
    assert (batch["global_batch"], batch["tokens_per_step"], batch["optimizer_steps"]) == (256, 524_288, 38_147)
    assert format_number(batch["optimizer_steps"], lang, 0) in page.text_content("#finder-note")
    assert "task=pretrain" in page.url and "grad_accum=32" in page.url


WORKER_FETCHES_JS = """async (urls) => {
    const seen = [];
    self.addEventListener('securitypolicyviolation', e => seen.push(e.effectiveDirective + ' ' + e.blockedURI));
    const outcome = async (url) => {
        try { return 'loaded ' + (await fetch(url)).status; } catch (error) { return 'refused'; }
    };
    const results = [];
    for (const url of urls) results.push(await outcome(url));
    await new Promise(resolve => setTimeout(resolve, 200));  // violations are dispatched as tasks
    return {results, seen, scope: self.constructor.name};
}"""
OUTSIDE = "https://evil.example"


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_calculators_worker_lives_under_the_pages_policy(pages, site_server, lang):
    """Issue 33, hole 4: the policy is a <meta> of the page; a worker started from its script's
    URL took the policy of that script's HTTP response (none on GitHub Pages), so a change to
    vram/ could send the reader's job to another origin from inside Pyodide. Started from a
    blob: wrapper (finder.js), the worker that computed every job of this module inherits the
    page's policy (verify/theme_scripts.py: 'wasm-unsafe-eval' and worker-src blob: on the
    finder's pages only): a fetch to another origin from inside it is refused by the browser,
    a violation of connect-src (the policy's check, before any request is sent); the site's own
    file loads."""
    page = pages[lang]
    page.wait_for_function("() => document.getElementById('finder-form').bootTimes", timeout=120_000)
    (worker,) = [worker for worker in page.workers if worker.url.startswith("blob:")]
    outside = f"{OUTSIDE}/job?model=llama"
    found = worker.evaluate(WORKER_FETCHES_JS, [outside, site_server.url("assets/finder.json")])
    assert found == {
        "results": ["refused", "loaded 200"],
        "seen": [f"connect-src {outside}"],
        "scope": "DedicatedWorkerGlobalScope",
    }
    # the fetch that unpacked Pyodide's files while it started is the browser's own again
    assert worker.evaluate("() => Function.prototype.toString.call(self.fetch).includes('[native code]')")
    assert not page.errors


BREAK_STORAGE = """(failure) => {
    window.__savedSetItem = Storage.prototype.setItem;
    window.__savedStorage = [window, Window.prototype].map(o => [o, Object.getOwnPropertyDescriptor(o, 'sessionStorage')])
        .find(([o, d]) => d);
    if (failure === 'quota') {  // a config over what the tab may keep
        Storage.prototype.setItem = function () { throw new DOMException('over quota', 'QuotaExceededError'); };
    } else {  // site data blocked: reading window.sessionStorage itself throws
        Object.defineProperty(window, 'sessionStorage', {configurable: true,
            get() { throw new DOMException('site data blocked', 'SecurityError'); }});
    }
}"""
MEND_STORAGE = """() => {
    Storage.prototype.setItem = window.__savedSetItem;
    const [owner, descriptor] = window.__savedStorage;  // the browser's own accessor again
    Object.defineProperty(owner, 'sessionStorage', descriptor);
    if (owner !== window) delete window.sessionStorage;
    sessionStorage.clear();
}"""


def test_a_pasted_config_is_computed_when_the_tab_keeps_no_site_data(pages):
    """Issue 33, hole 6: with sessionStorage refused (site data blocked, or a config over the
    tab's quota), keptConfig returned "" and the calculator said a valid config.json was not
    JSON ("riga 1, colonna 1"). The pasted text stays in the page and is computed."""
    page = pages["it"]
    text = UNSHIPPED.read_text()
    expected = cli_for(
        None, ["--kind=training", "--cards=2", "--framework=fsdp2", "--zero-stage=3", "--seq-len=4096"], UNSHIPPED
    )
    for failure in ("quota", "blocked"):
        page.evaluate(BREAK_STORAGE, failure)
        try:
            page.select_option("#finder-model", "llama-3.1-8b")
            use_form(page, model="custom", task="full-adamw", cards=1, method="ddp")
            page.fill("#finder-config", text)
            use_form(page, task="full-adamw", cards=2, method="fsdp2-reshard", seq_len=4096)
            assert page.is_hidden("#finder-error"), (failure, page.text_content("#finder-error"))
            assert page_answer(page) == expected, failure
        finally:
            page.evaluate(MEND_STORAGE)
    assert not page.errors
