"""Layout a demanding reader checks, in Chromium, at 390×844 (phone) and 1280×800
(desktop), in both languages (issues 23 and 35):

- inline code never breaks right after a hyphen ("passa -" / "-mixed_precision");
- on a phone every figure of every row of the guide's tables (the needs table, the cost
  table, the sharding tables) and of the finder's answer after a job (card, memory and
  margin, price, time and cost) is on the screen: nothing to scroll sideways, each cell
  within the screen's width and under its column's heading (the row shown as a card);
  an identifier (``SHARD_GRAD_OP``) never breaks inside;
- the needs table's rows are each at most a screen tall on a phone;
- on a desktop the method menu shows every label whole.

Measured from the text's line boxes (a word on two lines has two tops), not from the CSS.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import measured_in_turn, reset_page
from tests.browser.test_finder import choose, start_finder

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOTS = {"it": "", "fr": "fr/"}
SIZES = {"phone": (390, 844), "desktop": (1280, 800)}

# Characters of inline code (outside <pre>) that start a new line right after a hyphen.
BREAK_AFTER_HYPHEN_JS = r"""() => {
  const top = (node, i) => {
    const range = document.createRange();
    range.setStart(node, i);
    range.setEnd(node, i + 1);
    const rect = [...range.getClientRects()].find(r => r.width);
    return rect ? Math.round(rect.top) : null;
  };
  const broken = [];
  for (const code of document.querySelectorAll('article code')) {
    if (code.closest('pre') || !code.getClientRects().length) continue;
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    const chars = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode())
      for (let i = 0; i < node.textContent.length; i++) chars.push([node, i]);
    for (let k = 0; k + 1 < chars.length; k++) {
      const [node, i] = chars[k];
      if (node.textContent[i] !== '-') continue;
      const [next, j] = chars[k + 1];
      const a = top(node, i), b = top(next, j);
      if (a !== null && b !== null && a !== b) broken.push(code.textContent);
    }
  }
  return broken;
}"""

# Words (split at spaces) of the given elements that lie on more than one line.
SPLIT_WORDS_JS = r"""(selector) => {
  const split = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!el.getClientRects().length) continue;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.textContent.matchAll(/\S+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width).map(r => Math.round(r.top)));
        if (tops.size > 1) split.push(word[0]);
      }
    }
  }
  return split;
}"""

# Every cell of the tables of ``selector``: its text, its box against the screen, whether it
# shows its column's heading (a data-label cell's ::before) and whether it is visible at all.
CELLS_JS = r"""(selector) => [...document.querySelectorAll(selector)].flatMap(table =>
  [...table.querySelectorAll('tbody tr')].flatMap(row => [...row.children].map(cell => {
    const box = cell.getBoundingClientRect();
    const before = getComputedStyle(cell, '::before').content;
    return {
      table: table.querySelector('thead, tr').textContent.trim().slice(0, 30),
      text: cell.textContent.trim().slice(0, 40),
      left: box.left, right: box.right, width: box.width,
      label: cell.dataset.label || null,
      first: cell === row.firstElementChild,
      shown: before && before !== 'none' && before !== 'normal' ? before.replace(/^"|"$/g, '') : null,
    };
  })))"""

# Each option's label, measured in the select's own font, against the room the select shows.
METHOD_LABELS_JS = r"""() => {
  const select = document.getElementById('finder-method');
  const style = getComputedStyle(select);
  const context = document.createElement('canvas').getContext('2d');
  context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 24;  // the arrow
  return [...select.options].filter(o => context.measureText(o.text).width > room).map(o => o.text);
}"""


PAGES = ("", "memory-formulas/", "gpu-finder/")
TABLES_PAGE, FORMULAS_PAGE, FINDER_PAGE = "", "memory-formulas/", "gpu-finder/"


@pytest.fixture(scope="module")
def layout(reused_page, site_server):
    """``layout(lang, size, path)``: what the tests below read of that page at that size, every
    page of ``PAGES`` loaded once per language and size for the module, by the worker's reused
    page and a second page of its context in turn (``measured_in_turn``; every check only
    reads the layout; the finder's are read once it is in use, as ``open_finder`` leaves it)."""

    def measure(page, key) -> dict:
        _, size, path = key
        found = {
            "inline_code": page.locator("article code:not(pre code)").count(),
            "broken_after_hyphen": page.evaluate(BREAK_AFTER_HYPHEN_JS),
        }
        if size == "phone":
            found["page_overflow"] = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if path in (TABLES_PAGE, FORMULAS_PAGE) and size == "phone":
            page.wait_for_selector(
                "article .md-typeset__scrollwrap table", state="attached"
            )  # Material's script wraps them
            found["cells"] = page.evaluate(CELLS_JS, "article table:not(details table)")  # a closed list is not shown
            found["split_in_table_code"] = page.evaluate(SPLIT_WORDS_JS, "article table code")
            found["needs_rows"] = page.eval_on_selector_all(
                ".needs-table tbody tr",
                "rows => rows.map(r => [r.textContent.trim().slice(0, 30), r.getBoundingClientRect().height])",
            )
            found["split_in_needs"] = page.evaluate(SPLIT_WORDS_JS, ".needs-table th, .needs-table td")
        if path == FINDER_PAGE:
            start_finder(page)
            if size == "phone":
                choose(page, cards=8, method="zero3")  # a run on every card, one machine with the guide's price
                found["page_overflow"] = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                found["finder_headings"] = page.locator("#finder-table thead th").count()
                found["finder_cells"] = page.evaluate(CELLS_JS, "#finder-table")
                found["split_in_finder"] = page.evaluate(SPLIT_WORDS_JS, "#finder-table td")
                found["overflowing_cells"] = page.evaluate(OVERFLOWING_CELLS_JS)
                found["finder_rows"] = page.eval_on_selector_all(
                    "#finder-table tbody tr", "rows => rows.map(r => r.getBoundingClientRect().height)"
                )
                found["cut_attention_labels"] = page.evaluate(
                    METHOD_LABELS_JS.replace("finder-method", "finder-attention")
                )
            else:
                found["method_options"] = page.locator("#finder-method option").count()
                found["cut_method_labels"] = page.evaluate(METHOD_LABELS_JS)
        return found

    jobs = [
        ((lang, size, path), site_server.url(ROOTS[lang] + path), {"width": width, "height": height})
        for lang in ROOTS
        for size, (width, height) in SIZES.items()
        for path in PAGES
    ]
    reset_page(reused_page)
    second = reused_page.context.new_page()
    try:
        measured = measured_in_turn([reused_page, second], jobs, measure)
    finally:
        second.close()
        reset_page(reused_page)
    yield lambda lang, size, path: measured[(lang, size, path)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("lang", ROOTS)
def test_inline_code_never_breaks_after_a_hyphen(layout, lang, size):
    for path in PAGES:
        found = layout(lang, size, path)
        assert found["inline_code"], path
        assert found["broken_after_hyphen"] == [], (path, size)


PHONE_WIDTH = SIZES["phone"][0]


def figures_off_screen(cells: list[dict]) -> list[dict]:
    """The cells not wholly on a phone's screen, and the cells after a row's first (its title)
    that do not show their column's heading above their figure."""
    return [
        cell
        for cell in cells
        if cell["left"] < 0
        or cell["right"] > PHONE_WIDTH + 0.5
        or cell["width"] <= 0
        or (not cell["first"] and (not cell["label"] or cell["shown"] != cell["label"]))
    ]


@pytest.mark.parametrize("lang", ROOTS)
def test_phone_every_figure_of_the_guides_tables_is_on_the_screen(layout, lang):
    """Issue 35: the cost table was 662-749 px wide on a 390 px phone. Each row is now a card:
    every cell on the screen, every figure under its heading; the page never scrolls sideways."""
    found = layout(lang, "phone", TABLES_PAGE)
    assert found["page_overflow"] <= 0
    cells = found["cells"]
    tables = {cell["table"] for cell in cells}
    assert len(tables) >= 5 and len(cells) >= 60  # needs, sharding, frameworks, links, cost
    assert figures_off_screen(cells) == []
    assert found["split_in_table_code"] == []  # SHARD_GRA / D_OP


@pytest.mark.parametrize("lang", ROOTS)
def test_phone_every_figure_of_the_formulas_tables_is_on_the_screen(layout, lang):
    """The formulas page's own pipe tables (the stages, the frameworks' formulas, the validation)
    scrolled sideways on a phone, their sources and targets off the screen: labelled by the render
    layer (hooks/render/markdown_table.py's label_cells), each row is a card as in the guide."""
    found = layout(lang, "phone", FORMULAS_PAGE)
    assert found["page_overflow"] <= 0
    cells = found["cells"]
    assert len({cell["table"] for cell in cells}) >= 4 and len(cells) >= 50  # stages, formulas, classes, validation
    assert figures_off_screen(cells) == []


@pytest.mark.parametrize("lang", ROOTS)
def test_phone_needs_rows_fit_a_screen(layout, lang):
    found = layout(lang, "phone", TABLES_PAGE)
    heights = found["needs_rows"]
    assert len(heights) >= 5
    assert [(row, h) for row, h in heights if h > 844] == []
    assert found["split_in_needs"] == []


# Cells whose text runs past their own box (into the next heading: "indiquéet").
OVERFLOWING_CELLS_JS = r"""() => [...document.querySelectorAll('#finder-table th, #finder-table td')]
  .filter(cell => cell.scrollWidth > cell.clientWidth + 1).map(cell => cell.textContent.trim().slice(0, 40))"""


@pytest.mark.parametrize("lang", ROOTS)
def test_phone_every_figure_of_the_finders_answer_is_on_the_screen(layout, lang):
    """The finder's answer to a training run on 8 cards (issue 35: 735-752 px wide, the price,
    time and cost off the screen): every row a card, the card's name then memory, margin,
    price and time and cost, each under its heading and on the screen; no word split or
    running out of its cell; each card at most half a screen; every select shows its labels."""
    found = layout(lang, "phone", FINDER_PAGE)
    assert found["page_overflow"] <= 0
    assert found["finder_headings"] == 5  # card, memory, margin, price, time and cost
    cells = found["finder_cells"]
    assert len(cells) >= 5 * 5 and figures_off_screen(cells) == []
    assert [cell["first"] for cell in cells].count(True) == len(cells) // 5  # the card's name, then four figures
    assert found["split_in_finder"] == []
    assert found["overflowing_cells"] == []
    heights = found["finder_rows"]
    assert heights and max(heights) <= SIZES["phone"][1] / 2, heights
    assert found["cut_attention_labels"] == []  # was cut off


@pytest.mark.parametrize("lang", ROOTS)
def test_desktop_method_menu_shows_every_label(layout, lang):
    found = layout(lang, "desktop", FINDER_PAGE)
    assert found["method_options"] >= 5
    assert found["cut_method_labels"] == []
