"""Reader cases in Chromium (../shared/cases/reader.md), both languages, on the site served
as a project site under /REPO/:

- search: a word found after an elision ("dell’ottimizzatore", "l’inférence"), the finder's
  model names as words, French without accents finding what the accented word finds;
- the language switcher keeps the section reached by scrolling (navigation.tracking);
- the finder's choice lives in the URL: the link opened in the other language shows the
  same choice and the numbers Python computes for it, in that language's format;
- at 390×844 the finder's table and caption fit the screen, no code sits under a copy
  button (at 1280×800 neither), and no line of code wraps (it scrolls sideways);
- a missing page deep under either language shows that language's 404 page, every link
  of which answers.

Expected values come from the built pages read with BeautifulSoup (which pages hold a word)
and from the render layer (the finder's result), never from the page's own scripts.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup

from tests.browser.conftest import measured_in_turn, reset_page, site_pages
from tests.browser.test_finder import choose, normalised, open_finder, python_result, shown
from tests.browser.test_layout import SPLIT_WORDS_JS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOTS = {"it": "", "fr": "fr/"}
WORD_SPLIT = re.compile(r"[^\w.]+|\.(?!\d)")  # words as a reader sees them: l’inférence -> l, inférence


# ------------------------------------------------------------------------------ search
def pages_with_word(site, lang: str, word: str) -> set[str]:
    """Pages of ``lang`` (URL paths) whose prose holds ``word`` as a word (accents and case ignored)."""
    return {
        path
        for path, words in prose_words(site).items()
        if not path.endswith("404.html") and path.startswith("fr/") == (lang == "fr") and fold(word.lower()) in words
    }


@functools.cache
def prose_words(site) -> dict[str, set[str]]:
    """{page: the words of its article's prose, folded}, each built page read once."""
    found = {}
    for path in site_pages(site):
        if path.endswith("404.html"):
            continue
        article = BeautifulSoup((site / path / "index.html").read_text(encoding="utf-8"), "html.parser").select_one(
            "article"
        )
        assert article is not None, path
        for el in article.select("pre, code, script, style, .clipboard-copy-txt"):
            el.decompose()
        found[path] = {fold(w.lower()) for w in WORD_SPLIT.split(article.get_text(" "))}
    return found


def fold(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))


DESKTOP = {"width": 1280, "height": 800}
META = "document.querySelector('.md-search-result__meta').textContent.trim()"
PLACEHOLDER = "JSON.parse(document.getElementById('__config').textContent).translations['search.result.placeholder']"


@pytest.fixture(scope="module")
def searcher(reused_page, site_server):
    """``search(lang, query)`` -> the pages (URL paths under the site root) Material lists
    (on the worker's reused page, kept on the language's home page between searches)."""
    page = reused_page

    def search(lang: str, query: str) -> set[str]:
        if urlsplit(page.url).path != urlsplit(site_server.url(ROOTS[lang])).path or page.viewport_size != DESKTOP:
            reset_page(page)
            page.set_viewport_size(DESKTOP)
            page.goto(site_server.url(ROOTS[lang]), wait_until="networkidle")
        page.click("input.md-search__input")
        page.keyboard.press("Control+A")
        page.keyboard.press("Backspace")  # Material reads the query on keyup: type as a reader does
        page.wait_for_function(f"() => {META} === {PLACEHOLDER}")
        page.keyboard.type(query)
        page.wait_for_function(f"() => {META} !== {PLACEHOLDER}")
        page.wait_for_timeout(300)  # the result list follows its count
        hrefs = page.eval_on_selector_all(".md-search-result__item > a[href]", "els => els.map(a => a.href)")
        prefix = site_server.url("")
        return {urlsplit(h).path[len(urlsplit(prefix).path) :] for h in hrefs}

    yield search
    reset_page(page)


# The search cases run one language after the other: the searcher reloads the home page (and its
# search index) only when the language changes (it, then fr to the end of the French cases).
@pytest.mark.parametrize(("lang", "word"), [("fr", "inférence"), ("fr", "entraînement"), ("it", "ottimizzatore")])
def test_a_word_after_an_elision_is_found(searcher, site_server, lang, word):
    expected = pages_with_word(site_server.root, lang, word)
    assert expected, f"no {lang} page holds {word!r}: the case has nothing to find"
    found = searcher(lang, word)
    assert expected <= found, f"{word!r}: pages holding it {sorted(expected)}, search lists {sorted(found)}"
    if lang == "fr":
        assert "fr/gpu-finder/" in found  # the finder says it only after "l’"


@pytest.mark.parametrize(
    ("lang", "model"), [(lang, model) for lang in ("it", "fr") for model in ("Mixtral", "Qwen2.5", "Mistral")]
)
def test_the_finder_is_found_by_each_model_name(searcher, lang, model):
    assert f"{ROOTS[lang]}gpu-finder/" in searcher(lang, model)


@pytest.mark.parametrize(
    ("bare", "accented"), [("memoire", "mémoire"), ("entrainement", "entraînement"), ("parametres", "paramètres")]
)
def test_french_without_accents_finds_what_the_accented_word_finds(searcher, bare, accented):
    with_accents = searcher("fr", accented)
    assert with_accents and searcher("fr", bare) == with_accents


# -------------------------------------------------------------------------- switcher
def test_the_switcher_keeps_the_section_reached_by_scrolling(page, site_server):
    """No click on the table of contents: the reader scrolls; Material's navigation.tracking
    puts the section in the URL, and the switcher takes it to the other language."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(site_server.url("fr/"), wait_until="networkidle")
    section = page.eval_on_selector_all("article h2[id]", "els => els.map(e => e.id)")[3]
    page.eval_on_selector(f"#{section}", "e => window.scrollTo(0, e.getBoundingClientRect().top + scrollY + 5)")
    page.wait_for_function("id => location.hash === '#' + id", arg=section, timeout=5_000)
    page.hover(".md-header__option .md-select")
    page.click('a.md-select__link[hreflang="it"]')
    page.wait_for_url(site_server.url(f"#{section}"))
    assert page.eval_on_selector("html", "e => e.lang") == "it"
    assert page.eval_on_selector(f"#{section}", "e => Math.abs(e.getBoundingClientRect().top) < innerHeight / 2")


# ----------------------------------------------------------------------- finder URL
CHOICE = {"model": "llama-3.1-8b", "task": "full-adamw", "cards": "8", "method": "zero3"}


def test_the_finder_choice_is_a_link_in_either_language(page, site_server):
    open_finder(page, site_server, "fr")
    choose(page, **CHOICE)
    query = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert query == CHOICE
    assert normalised(shown(page)) == python_result("fr", **CHOICE)
    # The link, opened in Italian: the same choice, Python's numbers in Italian format.
    page.goto(site_server.url("gpu-finder/") + "?" + urlsplit(page.url).query, wait_until="networkidle")
    page.wait_for_selector('#finder-form[data-ready="true"]')
    assert {name: page.input_value(f"#finder-{name}") for name in CHOICE} == CHOICE
    assert normalised(shown(page)) == python_result("it", **CHOICE)
    # The switcher carries it back to French.
    page.hover(".md-header__option .md-select")
    page.click('a.md-select__link[hreflang="fr"]')
    page.wait_for_selector('#finder-form[data-ready="true"]')
    assert urlsplit(page.url).path.endswith("/fr/gpu-finder/")
    assert normalised(shown(page)) == python_result("fr", **CHOICE)


def test_a_link_with_a_bad_choice_falls_back_to_the_default(page, site_server):
    open_finder(page, site_server, "it")
    default = normalised(shown(page))
    page.goto(site_server.url("gpu-finder/") + "?model=<script>&cards=3&method=zero9", wait_until="networkidle")
    page.wait_for_selector('#finder-form[data-ready="true"]')
    assert normalised(shown(page)) == default


# ----------------------------------------------------------------------- phone layout
PHONE = {"width": 390, "height": 844}
PRICED = {"model": "llama-3.1-8b", "task": "full-adamw", "cards": 8, "method": "zero1"}  # 8 × H100: a guide price

CODE_UNDER_BUTTON_JS = r"""() => {
  const hidden = [];
  for (const nav of document.querySelectorAll('article .md-code__nav, article .zeroclipboard-container')) {
    const b = nav.getBoundingClientRect();
    const block = nav.closest('.highlight, .jp-InputArea, .jp-Cell');
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.textContent.trim() || nav.contains(node) || node.parentElement.closest('.clipboard-copy-txt')) continue;
      for (const word of node.textContent.matchAll(/\S+/g)) {  // visible characters, not hanging spaces
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        for (const r of range.getClientRects())
          if (r.width && r.left < b.right && r.right > b.left && r.top < b.bottom && r.bottom > b.top)
            hidden.push(word[0]);
      }
    }
  }
  return hidden;
}"""


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_phone_finder_table_and_caption_fit(page, site_server, lang):
    """On a phone the caption and the table's frame stay on the screen and the page never
    scrolls sideways; a table wider than the frame (five columns with time and cost) scrolls
    inside it and shows the guide's scroll cue, as every wide table does (test_layout.py)."""
    page.set_viewport_size(PHONE)
    open_finder(page, site_server, lang)
    choose(page, **PRICED)
    for selector in ("#finder-table-wrap", "#finder-table caption"):
        box = page.locator(selector).first.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (selector, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"
    frame = page.eval_on_selector(
        "#finder-table-wrap",
        """e => ({
        wider: e.scrollWidth > e.clientWidth,
        scrolls: ['auto', 'scroll'].includes(getComputedStyle(e).overflowX),
        cue: getComputedStyle(e).backgroundImage.includes('gradient')})""",
    )
    assert not frame["wider"] or (frame["scrolls"] and frame["cue"]), frame


SIZES = [(390, 844), (1280, 800)]
UNDER_BUTTON_PAGES = ("", "fr/", "fr/memory-notebook/")
LINES_PAGES = ("", "fr/", "memory-notebook/", "fr/memory-notebook/")


@pytest.fixture(scope="module")
def code_layout(reused_page, site_server):
    """{(size, path): (copy buttons, words under a copy button, wrapped lines)}: each page
    loaded once per size for the two code-layout tests below (both only read the layout), by
    the worker's reused page and a second page of its context in turn (``measured_in_turn``)."""

    def measure(page, key):
        return (
            page.locator("article .md-code__nav, article .zeroclipboard-container").count(),
            page.evaluate(CODE_UNDER_BUTTON_JS),
            page.evaluate(WRAPPED_LINES_JS),
        )

    jobs = [
        ((size, path), site_server.url(path), {"width": size[0], "height": size[1]})
        for size in SIZES
        for path in dict.fromkeys(UNDER_BUTTON_PAGES + LINES_PAGES)
    ]
    reset_page(reused_page)
    second = reused_page.context.new_page()
    try:
        return measured_in_turn([reused_page, second], jobs, measure)
    finally:
        second.close()
        reset_page(reused_page)


@pytest.mark.parametrize("size", SIZES)
def test_no_code_under_a_copy_button(code_layout, size):
    for path in UNDER_BUTTON_PAGES:
        buttons, under, _ = code_layout[(size, path)]
        assert buttons, path
        assert under == [], (path, size)


# A wrapped line of code loses its indentation (the rest of "if acc:" starts at column 0)
# and breaks inside names and options ("--mixed_" / "precision"): at every width each line of
# a code block or a notebook cell stays one line and the block scrolls sideways. A visual
# line is one distinct top among the text's line boxes.
WRAPPED_LINES_JS = r"""() => {
  const wrapped = [];
  for (const code of document.querySelectorAll('article .highlight pre > code, article .highlight-ipynb pre')) {
    if (!code.getClientRects().length) continue;  // a hidden tab
    const range = document.createRange();
    range.selectNodeContents(code);
    const tops = new Set([...range.getClientRects()].filter(r => r.width).map(r => Math.round(r.top)));
    const lines = code.textContent.split('\n').filter(line => line.trim()).length;
    if (tops.size !== lines) wrapped.push([code.textContent.slice(0, 40), lines, tops.size]);
  }
  return wrapped;
}"""


@pytest.mark.parametrize("size", SIZES)
def test_code_keeps_its_lines(code_layout, size):
    """On a phone and on a desktop (where a wrapped f-string of nccl_check.py read like
    broken Python), both languages."""
    for path in LINES_PAGES:
        assert code_layout[(size, path)][2] == [], (path, size)


# -------------------------------------------------------------------------- 404 pages
@pytest.mark.parametrize(("missing", "lang"), [("a/b/c/", "it"), ("fr/a/b/c/", "fr")])
def test_a_deep_missing_page_shows_a_working_404(page, site_server, missing, lang):
    """GitHub Pages answers any depth with the root 404.html: its links must not be
    relative to where it is served, and must stay under /REPO/."""
    failed = []

    def record(r):
        return r.response() and r.response().status >= 400 and not r.url.endswith(missing) and failed.append(r.url)

    page.on("requestfinished", record)
    page.goto(site_server.url(missing), wait_until="networkidle")
    page.remove_listener("requestfinished", record)  # the page is reused by the next test
    assert page.eval_on_selector("html", "e => e.lang") == lang
    links = page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)")
    internal = {link.split("#")[0] for link in links if link.startswith(site_server.origin)}
    assert internal and all(urlsplit(link).path.startswith(site_server.prefix) for link in internal), internal
    for link in internal:
        try:
            with urllib.request.urlopen(link, timeout=10) as response:
                assert response.status == 200, link
        except urllib.error.HTTPError as exc:
            pytest.fail(f"{link}: {exc.code}")
    assert not [url for url in failed if not url.endswith("404.html")], failed


# A word of the finder's flags split across two lines ("CHECKPOINTI" / "NG") on a phone: every
# word of the "tight" and "needs the gradient checkpointing" flags stays on one line
# (test_layout's SPLIT_WORDS_JS).
FLAG_LABELS = "#finder-table .finder-tight, #finder-table .finder-flag"
FLAGGED = {"model": "qwen3-32b", "task": "lora", "cards": 4, "method": "ddp"}  # cards that fit only with recomputation
TIGHT = {"model": "llama-3.1-8b", "task": "full-adamw", "cards": 1, "method": "paper"}  # the H200: 2 % free at the peak


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_phone_finder_labels_keep_their_words_whole(page, site_server, lang):
    page.set_viewport_size(PHONE)
    open_finder(page, site_server, lang)
    choose(page, **FLAGGED)
    assert page.locator("#finder-table .finder-flag").count(), "no card needs recomputation here: update FLAGGED"
    assert page.evaluate(SPLIT_WORDS_JS, FLAG_LABELS) == []
    choose(page, **TIGHT)
    assert page.locator("#finder-table .finder-tight").count(), "no tight card for this choice: update TIGHT"
    assert page.evaluate(SPLIT_WORDS_JS, FLAG_LABELS) == []


@pytest.mark.parametrize("path", ["memory-notebook/", "fr/memory-notebook/"])
def test_notebook_prompts_are_not_shown(page, site_server, path):
    """Jupyter's "In [2]:" (English, numbered from 2: the set-up cell is hidden) on a desktop."""
    page.goto(site_server.url(path), wait_until="networkidle")
    assert page.locator(".jp-InputPrompt").count()
    assert (
        page.evaluate(
            "() => [...document.querySelectorAll('.jp-InputPrompt, .jp-OutputPrompt')]"
            ".filter(e => e.getClientRects().length).map(e => e.textContent.trim())"
        )
        == []
    )
