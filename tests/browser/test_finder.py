"""In Chromium, "find the GPU" on the site served as a project site (issue 5):

- in both languages, choosing inputs shows the cards and numbers Python computed
  (``{{ finder_table }}`` rendered for the same choice by the render layer, Babel
  formatting), as the page's script formats them with Intl (fr: "Go", decimal comma);
- keyboard alone drives the form, and the result is announced (aria-live);
- without JavaScript the default result is there; at phone width nothing overflows;
- a screenshot of each language goes to test-artifacts/ (gitignored).
"""

from __future__ import annotations

import functools

import pytest
from babel.numbers import format_decimal
from bs4 import BeautifulSoup

from hooks.data.load import load_yaml
from hooks.render.markdown import render_markdown
from tests.conftest import REPO_ROOT
from tests.finder.answers import finder_answers

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = REPO_ROOT / "test-artifacts"
PATHS = {"it": "gpu-finder/", "fr": "fr/gpu-finder/"}
SPACES = str.maketrans({"\u00a0": " ", "\u202f": " "})


def plain(text: str) -> str:
    return " ".join(text.translate(SPACES).split())


def python_result(lang: str, **choice) -> dict:
    """What the render layer (Python, Babel, the typography of the page's language: "nell’82%")
    shows for ``choice``: the expected page."""
    from hooks.render.typography import typeset_html

    args = " ".join(f"{k}={v}" for k, v in choice.items())
    html = render_markdown("{{ finder_table " + args + " }}", lang)
    soup = BeautifulSoup(typeset_html(f'<html lang="{lang}"><body>{html}</body></html>', lang), "html.parser")
    status, caption, why, note = (
        soup.select_one(s) for s in ("#finder-status", "caption", "#finder-why", "#finder-note")
    )
    assert status is not None and why is not None and note is not None
    return {
        "status": plain(status.get_text()),
        "caption": plain(caption.get_text()) if caption else None,
        "rows": [[plain(c.get_text(" ")) for c in tr.select("th, td")] for tr in soup.select("tbody tr")],
        "why": plain(why.get_text()),
        "note": plain(note.get_text()),
    }


def shown(page) -> dict:
    """What the page shows once the answer it is computing (a reference answer fetched from
    finder-results.json, or the calculator's) has arrived."""
    page.wait_for_function(
        "() => document.getElementById('finder-form')?.getAttribute('data-state') !== 'computing'",
        timeout=60_000,
    )
    return page.evaluate("""() => {
        const text = (sel) => { const n = document.querySelector(sel); return n ? n.textContent : null; };
        return {
            status: text('#finder-status'), caption: text('#finder-table caption'),
            rows: [...document.querySelectorAll('#finder-table tbody tr')].map(
                tr => [...tr.querySelectorAll('th, td')].map(c => c.textContent)),
            why: text('#finder-why'), note: text('#finder-note'),
        };
    }""")


def normalised(result: dict) -> dict:
    return {
        k: (plain(v) if isinstance(v, str) else [[plain(c) for c in row] for row in v] if k == "rows" else v)
        for k, v in result.items()
    }


def guide_prices(cards: int) -> dict[str, float]:
    """Card name -> the price the site's catalogue gives a machine of ``cards`` such cards."""
    gpus = load_yaml("gpus")
    return {
        gpus["gpus"][m["gpu"]]["name"]: m["price_eur_per_hour_from"]
        for m in gpus["machines"].values()
        if m["count"] == cards
    }


@functools.cache
def reference_results() -> dict:
    """finder_data's precomputed answers (what the built page's JSON holds), computed once."""
    return finder_answers()["results"]


def computed(model: str, task: str, cards: str, option: str | None = None) -> bool:
    by_cards = reference_results()[model][task]
    return cards in by_cards and (option is None or option in by_cards[cards])


def open_finder(page, site_server, lang: str):
    """Open the finder and start using it (its reference answers load on the first focus; the
    page's scripts have run at "load", and the wait is for the finder's own ``data-ready``)."""
    page.goto(site_server.url(PATHS[lang]), wait_until="load")
    start_finder(page)


def start_finder(page):
    """Start using the finder open in ``page`` (focus its first control, wait for its answers)."""
    page.focus("#finder-model")
    page.wait_for_selector('#finder-form[data-ready="true"]', state="visible", timeout=10_000)


def choose(page, **choice):
    """Set the choice, then wait for its answer (a reference answer comes from
    finder-results.json, fetched the first time one is needed)."""
    for name, value in choice.items():
        if name == "context":  # serving: a free field, any length up to the model's maximum
            page.fill("#finder-context", str(value))
            page.dispatch_event("#finder-context", "change")
        else:
            page.select_option(f"#finder-{name}", str(value))
        page.wait_for_selector('#finder-form[data-state="ready"]', state="attached", timeout=60_000)


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_default_choice_matches_the_static_result(page, site_server, lang):
    open_finder(page, site_server, lang)
    assert normalised(shown(page)) == python_result(lang)


CHOICES = [
    {"model": "llama-3.1-8b", "task": "full-adamw", "cards": 4, "method": "zero3"},
    {"model": "llama-3.1-8b", "task": "full-adamw", "cards": 8, "method": "zero1"},  # a machine of 8 with a guide price
    {"model": "llama-3.2-1b", "task": "full-adamw", "cards": 4, "method": "zero2"},  # a machine of 4 with a guide price
    {"model": "mixtral-8x7b", "task": "qlora", "cards": 1, "method": "ddp"},
    {"model": "llama-3.1-70b", "task": "serve-fp8", "cards": 1, "context": 32768},
    {"model": "llama-3.1-70b", "task": "full-adamw", "cards": 1, "method": "ddp"},  # no card fits
    {"model": "llama-3.1-70b", "task": "lora", "cards": 8, "method": "zero3"},  # costs above 1,000 EUR: grouped
]


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_70b_sentence_of_the_link_warning_follows_the_model_as_in_python(page, site_server, lang):
    """Both jobs are bound by the link (vram.job's communication_bound); only the 70B one gets the
    sentence on the published 70B runs' tensor parallelism (page.py's warning_texts), in the
    browser as in Python (the whole answer, rows included: test_choices_show_what_python_computed_in_the_page_locale)."""
    from tests.finder.test_finder_render import LABELS

    open_finder(page, site_server, lang)
    for choice, said in (
        ({"model": "llama-3.1-8b", "task": "full-adamw", "cards": 8, "method": "zero3"}, False),
        ({"model": "llama-3.1-70b", "task": "lora", "cards": 8, "method": "zero3"}, True),
    ):
        choose(page, **choice)
        note = normalised(shown(page))["note"]
        assert note == python_result(lang, **choice)["note"], choice
        assert (plain(LABELS["warn_tensor_parallel"][lang]) in note) is said, choice


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_choices_show_what_python_computed_in_the_page_locale(page, site_server, lang):
    open_finder(page, site_server, lang)
    for choice in CHOICES:
        choose(page, **choice)
        got = normalised(shown(page))
        assert got == python_result(lang, **choice), choice
    unit = "Go" if lang == "fr" else "GB"
    choose(page, **CHOICES[0])
    got = normalised(shown(page))
    # oracles.md: DeepSpeed ZeRO-3, Llama 3.1 8B on 4 GPUs: 38,237,521,920 B per GPU
    assert got["status"].startswith(f"{'Il faut' if lang == 'fr' else 'Servono'} 38,2 {unit}")
    gpus = load_yaml("gpus")
    usable = {g["name"]: (g["memory_mib"] - gpus["reserve_mib"]) * 2**20 for g in gpus["gpus"].values()}
    shown_cards = [row[0] for row in got["rows"]]
    assert shown_cards and all(
        usable[name] >= 38_237_521_920 for name in shown_cards
    )  # no card holds less (a 32 GB RTX 5090)
    # the smallest card that holds it, named first; the rows follow the run's order
    smallest = min(shown_cards, key=usable.get)
    assert (f"à commencer par la {smallest}" if lang == "fr" else f"a partire dalla {smallest}") in got["status"]
    choose(page, **CHOICES[1])
    prices = {row[0]: row[3] for row in normalised(shown(page))["rows"]}
    priced = guide_prices(CHOICES[1]["cards"])  # the site's own catalogue, as Babel writes the price
    assert priced and set(priced) <= set(prices)  # the choice shows a machine the guide prices
    for name, price in priced.items():
        price_text = format_decimal(price, "#,##0.00", locale=lang)
        assert prices[name] == (
            f"à partir de {price_text} €/h (prix du guide)"
            if lang == "fr"
            else f"da {price_text} €/h (prezzo della guida)"
        )


def test_controls_follow_the_task(page, site_server):
    open_finder(page, site_server, "it")
    assert page.is_enabled("#finder-method")  # one card: nothing to shard, but each framework keeps its own buffers
    choose(page, cards=2)
    assert page.is_enabled("#finder-method") and page.is_visible("#finder-method")
    choose(page, task="serve-bf16")
    assert page.is_hidden("#finder-method") and page.is_visible("#finder-context")
    choose(page, context=32768, model="mistral-7b")  # trained up to 32768 tokens
    disabled = page.eval_on_selector_all("#finder-cards option", "os => os.filter(o => o.disabled).map(o => o.value)")
    assert disabled == [value for value in ("2", "4", "8") if not computed("mistral-7b", "serve-bf16", value)]
    choose(page, task="lora", cards=2)  # only what the JSON holds a result for is offered
    offered = page.eval_on_selector_all("#finder-method option", "os => os.filter(o => !o.disabled).map(o => o.value)")
    assert offered == [
        m
        for m in ("ddp", "zero1", "zero2", "zero3", "fsdp2-keep", "fsdp2-reshard")
        if computed("mistral-7b", "lora", "2", m)
    ]
    assert offered[-2:] == ["fsdp2-keep", "fsdp2-reshard"]  # LoRA (bf16 base) under FSDP2 is offered
    choose(page, task="qlora")  # QLoRA under FSDP2 too (bnb_4bit_quant_storage=torch.bfloat16)
    offered = page.eval_on_selector_all("#finder-method option", "os => os.filter(o => !o.disabled).map(o => o.value)")
    assert offered[-2:] == ["fsdp2-keep", "fsdp2-reshard"]
    choose(page, model="mixtral-8x7b")  # not LoRA on fused experts under FSDP2, and it says why
    assert page.eval_on_selector('#finder-method option[value="fsdp2-reshard"]', "o => o.disabled")
    said = page.text_content("#finder-method-refused")  # in visible text: a touch screen shows no tooltip
    assert page.is_visible("#finder-method-refused") and "MoE" in said and "FSDP2" in said
    assert not normalised(shown(page))["status"].startswith("Questa combinazione")


TRAINING_FIELDS = [
    "model",
    "task",
    "cards",
    "method",
    "offload",
    "seq_len",
    "micro_batch",
    "grad_accum",
    "recompute",
    "attention",
    "host_ram_gb",
    "tokens",
    "price_",
]  # the default task (full fine-tuning) asks for these only (prices: one per card)


def test_first_paint_shows_only_the_tasks_fields(page, site_server):
    """Before any click or focus (the reference answers not loaded yet), the form already
    hides LoRA's rank, the KV cache format, vLLM's share and the context of serving."""
    page.goto(site_server.url(PATHS["fr"]), wait_until="networkidle")
    assert page.get_attribute("#finder-form", "data-ready") is None  # nothing loaded: the first paint
    visible = page.evaluate("""() => [...document.querySelectorAll('#finder-form .finder-field')]
        .filter(f => f.offsetParent !== null).map(f => f.querySelector('select, input, textarea').id.slice(7).replace(/^price_.*/, 'price_'))""")
    assert visible == TRAINING_FIELDS
    prices = "inputs => inputs.filter(i => i.offsetParent !== null).map(i => i.name)"
    first_prices = page.eval_on_selector_all(".finder-price input", prices)
    page.focus("#finder-model")  # the script's own rule afterwards: the same fields
    page.wait_for_selector('#finder-form[data-ready="true"]')
    assert (
        page.evaluate("""() => [...document.querySelectorAll('#finder-form .finder-field')]
        .filter(f => f.offsetParent !== null).map(f => f.querySelector('select, input, textarea').id.slice(7).replace(/^price_.*/, 'price_'))""")
        == TRAINING_FIELDS
    )
    # a price field only for the machines that fit, before the script runs as after
    assert first_prices == page.eval_on_selector_all(".finder-price input", prices)
    assert first_prices == [
        "price_" + fit["gpu"] for fit in finder_answers()["results"]["llama-3.1-8b"]["full-adamw"]["1"]["ddp"]["fits"]
    ]


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_keyboard_alone_drives_the_finder(page, site_server, lang):
    # Tab from the top of the freshly loaded page to the first control, as a reader does (not
    # from the model control around the whole page: that passes the job's fields, whose focus
    # boots the calculator, which this test never asks).
    page.goto(site_server.url(PATHS[lang]), wait_until="load")
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "finder-model":
            break
    else:
        pytest.fail("the model control cannot be reached with Tab")
    # reaching the form loads its reference answers (the focus, not a click)
    page.wait_for_selector('#finder-form[data-ready="true"]', state="visible", timeout=10_000)
    page.keyboard.press("ArrowDown")  # llama-3.1-8b -> mistral-7b
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "finder-task"
    page.keyboard.press("ArrowDown")  # full-adamw -> full-adam8bit
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")  # 1 -> 2 cards
    page.keyboard.press("ArrowDown")  # 2 -> 4 cards
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "finder-method"
    for _ in range(3):
        page.keyboard.press("ArrowDown")  # ddp -> zero3
    expected = python_result(lang, model="mistral-7b", task="full-adam8bit", cards=4, method="zero3")
    assert normalised(shown(page)) == expected
    assert page.get_attribute("#finder-status", "aria-live") == "polite"
    assert page.get_attribute("#finder-status", "role") == "status"


def test_a_choice_made_while_the_data_loads_is_in_the_link(page, site_server):
    """A new reader's report: the first key pressed on the model control both starts loading
    finder.json and moves the select; the answer followed the choice, but the address (the link
    to share, and what the language switcher carries) stayed bare. finder.json is held here
    until the choice is made, so the order does not depend on the machine's speed."""
    held = []

    def hold(route) -> None:  # Playwright wants a Python function, not list.append
        held.append(route)

    page.route("**/finder.json", hold)
    page.goto(site_server.url(PATHS["it"]), wait_until="load")
    with page.expect_request("**/finder.json"):
        page.focus("#finder-model")  # the focus asks for finder.json
    page.keyboard.press("ArrowDown")  # llama-3.1-8b -> mistral-7b, before the data is there
    assert len(held) == 1 and page.get_attribute("#finder-form", "data-ready") is None
    held[0].continue_()
    page.wait_for_selector('#finder-form[data-ready="true"]', state="visible", timeout=10_000)
    expected = python_result("it", model="mistral-7b", task="full-adamw", cards=1, method="ddp")
    assert normalised(shown(page)) == expected
    assert "model=mistral-7b" in page.url and "method=ddp" in page.url


@pytest.fixture(scope="module")
def without_javascript(chromium):
    """One page with JavaScript off, for both languages."""
    context = chromium.new_context(java_script_enabled=False)
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_without_javascript_the_default_result_is_shown(without_javascript, site_server, lang):
    page = without_javascript
    page.goto(site_server.url(PATHS[lang]), wait_until="load")
    assert page.is_hidden("#finder-form")
    assert page.is_visible("#finder-table")
    assert normalised(shown(page)) == python_result(lang)


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_phone_width_and_screenshots(page, site_server, lang):
    ARTIFACTS.mkdir(exist_ok=True)
    for name, viewport in (("desktop", {"width": 1280, "height": 900}), ("phone", {"width": 375, "height": 812})):
        page.set_viewport_size(viewport)
        open_finder(page, site_server, lang)
        choose(page, model="llama-3.1-8b", task="full-adamw", cards=4, method="zero2")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name}: the page is {overflow}px wider than the screen"
        for control in ("model", "task", "cards", "method"):
            box = page.locator(f"#finder-{control}").bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (name, control)
        page.locator("#finder").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"finder-{lang}-{name}.png"), full_page=True)
    assert (ARTIFACTS / f"finder-{lang}-desktop.png").stat().st_size > 10_000
