"""Layout a demanding reader checks, in Chromium, at 390×844 (phone) and 1280×800
(desktop), in both languages (issue 23):

- inline code never breaks right after a hyphen ("passa -" / "-mixed_precision");
- tables: an identifier (``SHARD_GRAD_OP``) never breaks inside; a table wider than the
  phone scrolls inside its frame, which stays on the screen and shows a scroll cue;
- the needs table's rows are each at most a screen tall on a phone;
- the finder's column headings break between words only; on a desktop the method menu
  shows every label whole.

Measured from the text's line boxes (a word on two lines has two tops), not from the CSS.
"""

from __future__ import annotations

import pytest

from tests.browser.test_finder import open_finder

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

# Tables wider than their frame: the frame's right edge, whether it scrolls, and its cue.
WIDE_TABLES_JS = r"""() => [...document.querySelectorAll('article table')].map(table => {
  const frame = table.closest('.md-typeset__scrollwrap') || table.parentElement;
  const style = getComputedStyle(frame);
  return {
    head: table.querySelector('tr').textContent.trim().slice(0, 40),
    wider: table.scrollWidth > frame.clientWidth + 1,
    frameRight: frame.getBoundingClientRect().right,
    scrolls: ['auto', 'scroll'].includes(style.overflowX) && frame.scrollWidth > frame.clientWidth,
    cue: style.backgroundImage.includes('gradient') && style.backgroundAttachment.includes('local'),
    tableBackground: getComputedStyle(table).backgroundColor,
  };
})"""

# Each option's label, measured in the select's own font, against the room the select shows.
METHOD_LABELS_JS = r"""() => {
  const select = document.getElementById('finder-method');
  const style = getComputedStyle(select);
  const context = document.createElement('canvas').getContext('2d');
  context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 24;  // the arrow
  return [...select.options].filter(o => context.measureText(o.text).width > room).map(o => o.text);
}"""


@pytest.fixture
def sized(page):
    """``sized(size)``: the worker's reused page (tests/browser/conftest.py) at that viewport."""

    def open_page(size: str):
        width, height = SIZES[size]
        page.set_viewport_size({"width": width, "height": height})
        return page

    return open_page


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("lang", ROOTS)
def test_inline_code_never_breaks_after_a_hyphen(sized, site_server, lang, size):
    page = sized(size)
    for path in ("", "memory-formulas/", "gpu-finder/"):
        page.goto(site_server.url(ROOTS[lang] + path), wait_until="networkidle")
        assert page.locator("article code:not(pre code)").count(), path
        assert page.evaluate(BREAK_AFTER_HYPHEN_JS) == [], (path, size)


@pytest.mark.parametrize("lang", ROOTS)
def test_phone_tables_scroll_in_their_frame_with_a_cue(sized, site_server, lang):
    page = sized("phone")
    page.goto(site_server.url(ROOTS[lang]), wait_until="networkidle")
    page.wait_for_selector("article .md-typeset__scrollwrap table", state="attached")  # Material's script wraps them
    tables = page.evaluate(WIDE_TABLES_JS)
    wide = [t for t in tables if t["wider"]]
    assert wide, "no table wider than a phone: the sharding tables were (update the test)"
    for table in wide:
        assert table["frameRight"] <= 390, table
        assert table["scrolls"] and table["cue"], table
        assert table["tableBackground"] in ("rgba(0, 0, 0, 0)", "transparent"), table  # the cue shows through
    assert page.evaluate(SPLIT_WORDS_JS, "article table code") == []  # SHARD_GRA / D_OP


@pytest.mark.parametrize("lang", ROOTS)
def test_phone_needs_rows_fit_a_screen(sized, site_server, lang):
    page = sized("phone")
    page.goto(site_server.url(ROOTS[lang]), wait_until="networkidle")
    heights = page.eval_on_selector_all(".needs-table tbody tr",
                                        "rows => rows.map(r => [r.textContent.trim().slice(0, 30), r.getBoundingClientRect().height])")
    assert len(heights) >= 5
    assert [(row, h) for row, h in heights if h > 844] == []
    assert page.evaluate(SPLIT_WORDS_JS, ".needs-table th, .needs-table td") == []


# Cells whose text runs past their own box (into the next heading: "indiquéet").
OVERFLOWING_CELLS_JS = r"""() => [...document.querySelectorAll('#finder-table th, #finder-table td')]
  .filter(cell => cell.scrollWidth > cell.clientWidth + 1).map(cell => cell.textContent.trim().slice(0, 40))"""


@pytest.mark.parametrize("lang", ROOTS)
def test_phone_finder_headings_break_between_words(sized, site_server, lang):
    """The five-column table (training: time and cost beside the price): no heading runs into
    the next, no word splits in a heading or a cell, each row at most a third of the screen,
    and every select (Attention included) shows its labels whole."""
    page = sized("phone")
    open_finder(page, site_server, lang)
    assert page.locator("#finder-table thead th").count() == 5  # the default choice is a training run
    assert page.evaluate(SPLIT_WORDS_JS, "#finder-table thead th, #finder-table td") == []
    assert page.evaluate(OVERFLOWING_CELLS_JS) == []
    heights = page.eval_on_selector_all("#finder-table tbody tr", "rows => rows.map(r => r.getBoundingClientRect().height)")
    assert heights and max(heights) <= SIZES["phone"][1] / 3, heights
    assert page.evaluate(METHOD_LABELS_JS.replace("finder-method", "finder-attention")) == []  # was cut off


@pytest.mark.parametrize("lang", ROOTS)
def test_desktop_method_menu_shows_every_label(sized, site_server, lang):
    page = sized("desktop")
    open_finder(page, site_server, lang)
    assert page.locator("#finder-method option").count() >= 5
    assert page.evaluate(METHOD_LABELS_JS) == []
