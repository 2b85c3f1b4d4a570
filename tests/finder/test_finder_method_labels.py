"""The finder names each method as the calculator computed the chosen task under it.

Every task and method the finder offers (finder.yaml's tasks x methods, on one card and on
several) is answered by ``vram.answer_job``; the label the page shows beside that task (the
method select's option, the table's caption) must state what those bytes assume, read from
the bytes themselves, not from the label table:

- "AMP" only where the weights are fp32 (4 B per parameter: PyTorch AMP keeps fp32 weights
  and autocasts), and always for DDP with fp32 weights;
- "all in bf16" exactly where the weights are bf16 and AdamW's moments too (2 + 4 B per
  parameter, no fp32 master: transformers 5's Trainer);
- "one copy per card" (or "whole on every card") only where the weights or the frozen base
  per card do not shrink with more cards, "split between the cards" only where they do;
- "without the framework's buffers" exactly where the answer counts none;
- ``bnb_4bit_quant_storage`` exactly where a 4-bit base is split between the cards (QLoRA
  under ZeRO-3: bitsandbytes' constraint, stated where it applies).

On the main of 774c017 the all-bf16 task and LoRA under DDP were labelled "DDP, PyTorch AMP".
"""

from __future__ import annotations

import json
import re

import pytest
from bs4 import BeautifulSoup

import vram
from hooks.finder.compute import job, load_catalogue, task_accountings
from hooks.finder.page import choice_text, finder_form, page_labels
from tests.finder.answers import finder_text
from tests.finder.test_finder_render import plain, render_markdown
from vram.job import JobError

LANGS = ("it", "fr")
MODELS = ("llama-3.1-8b", "qwen3-30b-a3b")  # a dense model and a mixture of experts
CARDS = 4
# What a label says, per language (lower-cased text).
AMP = re.compile(r"\bamp\b")  # the word, not the "amp" of "tampons"
ALL_BF16 = {"it": "tutto in bf16", "fr": "tout en bf16"}
ONE_COPY = {
    "it": ("una copia per scheda", "interi su ogni scheda"),
    "fr": ("une copie par carte", "entiers sur chaque carte"),
}
SPLIT = {"it": "divis", "fr": "réparti"}
NO_BUFFERS = {"it": "senza i buffer", "fr": "sans les tampons"}
QUANT_STORAGE = "bnb_4bit_quant_storage"


def _offered():
    catalogue = load_catalogue()
    for task_key, task in catalogue.tasks.items():
        if task["kind"] == "serving":
            continue
        for method_key in catalogue.methods:
            yield task_key, method_key


def _answer(catalogue, model, task, cards, method):
    try:
        return vram.answer_job(job(catalogue, model, task, cards, method))
    except JobError as exc:
        assert exc.code == "not_offered", exc
        return None


def _parts(answer):
    return {key: size for key, size, _ in answer["parts"]}


def test_every_training_and_lora_choice_is_enumerated():
    pairs = list(_offered())
    kinds = {load_catalogue().tasks[t]["kind"] for t, _ in pairs}
    frameworks = {load_catalogue().methods[m]["framework"] for _, m in pairs}
    assert kinds == {"training", "lora"} and frameworks == {"fsdp2", "deepspeed", "zero-paper"}
    assert len(pairs) == 6 * 7  # 4 training tasks (pre-training among them) and LoRA, QLoRA, under the 7 methods


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("task, method", list(_offered()))
def test_the_label_names_what_the_calculator_assumed(model, task, method):
    catalogue = load_catalogue()
    one, many = (_answer(catalogue, model, task, n, method) for n in (1, CARDS))
    name = task_accountings(catalogue, task).get(method)
    if one is None and many is None:  # refused for this model (greyed out, with the reason)
        return
    assert one is not None and many is not None, "offered on one card but not on several, or the reverse"
    assert one["accounting"] == many["accounting"] == name is not None  # the page's name is the answer's
    params, kind = one["params"], one["kind"]
    first, more = _parts(one), _parts(many)
    held = "weights" if kind == "training" else "base"
    fp32_whole = kind == "training" and first["weights"] == more["weights"] == 4 * params
    all_bf16 = kind == "training" and first["weights"] == 2 * params and first["optimizer"] == 4 * params
    shrinks = any(more.get(part, 0) < size for part, size in first.items())
    quantised_and_split = task == "qlora" and more[held] < first[held]
    for lang in LANGS:
        label = plain(choice_text(catalogue, lang, model, task, CARDS, method)).lower()
        shown = plain(text_of(catalogue, name, lang)).lower()
        assert label.endswith(shown)  # the caption ends with the method as computed
        assert bool(AMP.search(shown)) == fp32_whole, shown
        assert (ALL_BF16[lang] in shown) == all_bf16, shown
        if any(words in shown for words in ONE_COPY[lang]):
            assert more[held] == first[held], shown
        if SPLIT[lang] in shown:
            assert shrinks, shown
        assert (NO_BUFFERS[lang] in shown) == (kind == "lora" and "working" not in first), shown
        assert (QUANT_STORAGE in shown) == quantised_and_split, shown


def text_of(catalogue, name, lang):
    return catalogue.accountings[name][lang]


@pytest.mark.parametrize("lang", LANGS)
def test_all_bf16_and_lora_under_ddp_are_not_called_amp(lang):
    for task in ("full-bf16", "lora", "qlora"):
        html = render_markdown(f"{{{{ finder_table task={task} method=ddp }}}}", lang)
        caption = plain(BeautifulSoup(html, "html.parser").select_one("caption").get_text())
        assert "AMP" not in caption and "DDP" in caption, caption
    html = render_markdown("{{ finder_table task=full-adamw method=ddp }}", lang)
    assert "AMP" in plain(BeautifulSoup(html, "html.parser").select_one("caption").get_text())


@pytest.mark.parametrize("lang", LANGS)
def test_the_script_gets_every_label_a_task_can_show(lang):
    """finder.js relabels the method select from finder.json's tasks[].accounting: each name has
    its label in the page's labels, and each method its own name for the tasks that refuse it."""
    catalogue = load_catalogue()
    labels = page_labels(catalogue, lang)
    tasks = json.loads(finder_text())["tasks"]
    names = {name for task in tasks for name in task["accounting"].values()}
    assert names and all(labels[f"accounting_{name}"] == catalogue.accountings[name][lang] for name in names)
    assert all(f"method_{key}" in labels for key in catalogue.methods)
    assert {t["key"]: t["accounting"] for t in tasks} == {k: task_accountings(catalogue, k) for k in catalogue.tasks}
    form = BeautifulSoup(finder_form({"assets": "../assets"}, lang), "html.parser")
    default = catalogue.settings["default"]["task"]
    options = {o["value"]: o.get_text() for o in form.select("#finder-method option")}
    for key, text in options.items():
        name = task_accountings(catalogue, default).get(key)
        assert text == (catalogue.accountings[name][lang] if name else labels[f"method_{key}"])


def test_a_computed_method_without_its_label_is_one_line(data_dir):
    """finder.yaml lacking the label of an accounting a task reaches: the build stops, naming the key."""
    from hooks.errors import RenderError
    from tests.hooks.test_schemas import edit

    path = data_dir / "finder.yaml"
    line = next(line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("  ddp-bf16:"))
    edit(path, line + "\n", "")
    with pytest.raises(
        RenderError,
        match=r"finder\.yaml.*accountings\.ddp-bf16: missing, the label of methods\.ddp "
        r"beside tasks\.full-bf16",
    ):
        load_catalogue(data_dir)


@pytest.mark.parametrize("task", ["full-adamw", "full-adam8bit", "full-bf16"])
def test_offload_keeps_the_method_s_accounting(task):
    """Offload is its own field (host RAM beside the card): with it, the answer's accounting is the
    method's, so the label checked above still names what the bytes assume."""
    catalogue = load_catalogue()
    names = task_accountings(catalogue, task)
    offered = 0
    for method in catalogue.methods:
        for offload in vram.job.OFFLOAD:
            found = _answer(catalogue, "llama-3.1-8b", task, CARDS, method) if offload == "none" else None
            if offload != "none":
                try:
                    found = vram.answer_job({**job(catalogue, "llama-3.1-8b", task, CARDS, method), "offload": offload})
                except JobError as exc:
                    assert exc.code == "not_offered"
            if found is not None:
                offered += 1
                assert found["accounting"] == names[method], (method, offload)
                assert (found["host_bytes"] > 0) == (offload != "none")
    assert offered >= (7 if task != "full-bf16" else 2)


def test_serving_names_no_method():
    """Serving has one accounting (weights and KV cache): no method select, no accounting in the answer."""
    catalogue = load_catalogue()
    for task, spec in catalogue.tasks.items():
        if spec["kind"] == "serving" and task != "serve-mxfp4":
            found = vram.answer_job(job(catalogue, "llama-3.1-8b", task, 1, "8192"))
            assert "accounting" not in found and task_accountings(catalogue, task) == {}
    form = BeautifulSoup(finder_form({"assets": "../assets"}, "it"), "html.parser")
    assert form.select_one("#finder-method").find_parent(attrs={"data-kinds": True})["data-kinds"] == "training lora"
