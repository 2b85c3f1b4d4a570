"""The typography pass never changes a byte of code: shown over the real build.

The site is built once with ``hooks.render.typography.typeset_html`` and ``typeset_search_index``
wrapped: every page they receive (both languages, the notebook pages, the 404 pages) and
every search-index entry is compared before and after. What must not change: the text of
``code``, ``pre``, ``kbd``, ``samp``, ``textarea``, ``script`` and ``style`` elements (the
finder's labels excepted: prose the rule set typesets on purpose), the text a notebook cell's
copy button copies (``.clipboard-copy-txt``), and every attribute of every element
(``data-*``, Material's copy-button targets) but the spoken ones (``alt``, ``aria-label``,
``title``) and a table cell's ``data-label`` (its column's heading, shown on a phone): prose,
typeset on purpose, outside code elements. The code of the pages holds text the French
rules would change if they reached it (asserted below), so a pass that touched code would be
seen. selectolax reads both sides; the oracle is equality of the text, element by element.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

PROBE = r"""
import json, sys
from selectolax.lexbor import LexborHTMLParser
import hooks.render.typography as typography

PROTECTED = "code, pre, kbd, samp, textarea, script, style, .clipboard-copy-txt"
CODE_TAGS = {"code", "pre", "kbd", "samp", "textarea", "script", "style"}
SPOKEN = {"alt", "aria-label", "title", "data-label"}  # data-label: the heading a phone shows
seen = {"pages": [], "index_entries": 0, "code": [], "violations": []}


def protected(html):
    tree = LexborHTMLParser(html)
    texts = [node.text(deep=True) for node in tree.css(PROTECTED) if node.attributes.get("id") != "finder-labels"]
    # an attribute written without a value reads as None, once serialized as "": the same to HTML
    # the attributes a reader hears or sees (alt, aria-label, title, data-label) are prose the rule set
    # typesets on purpose, except on code elements
    attributes = [(node.tag, sorted((name, value or "") for name, value in node.attributes.items()
                                    if name not in SPOKEN or node.tag in CODE_TAGS))
                  for node in tree.css("*")]
    return texts, attributes


typeset_html, typeset_search_index = typography.typeset_html, typography.typeset_search_index


def checked_html(html, lang, store=None):
    out = typeset_html(html, lang, store=store)
    before, after = protected(html), protected(out)
    title = LexborHTMLParser(html).css_first("title")
    seen["pages"].append([lang, title.text() if title else "?"])
    seen["code"] += before[0]
    if before != after:
        diff = next((f"{x!r} -> {y!r}" for x, y in zip(before[0] + before[1], after[0] + after[1]) if x != y), f"{len(before[1])} -> {len(after[1])} elements")
        seen["violations"].append(f"{lang} page {seen['pages'][-1][1]!r}: {diff[:300]}")
    return out


def checked_index(index, lang):
    out = typeset_search_index(index, lang)
    for old, new in zip(index["docs"], out["docs"]):
        seen["index_entries"] += 1
        for key in ("title", "text"):
            if protected(old.get(key) or "")[0] != protected(new.get(key) or "")[0]:
                seen["violations"].append(f"{lang} search entry {old.get('location')!r}: code changed")
    return out


typography.typeset_html, typography.typeset_search_index = checked_html, checked_index
from mkdocs.__main__ import cli
try:
    cli(["build", "--strict", "-q", "-d", sys.argv[1]], standalone_mode=False)
finally:
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        json.dump(seen, out)
"""


def test_typography_changes_no_code_no_attribute_and_no_copied_text(tmp_path):
    report = tmp_path / "seen.json"
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "site"), str(report)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(report.read_text(encoding="utf-8"))
    assert seen["violations"] == []
    langs = {lang for lang, _ in seen["pages"]}
    assert langs == {"it", "fr"} and len(seen["pages"]) >= 10 and seen["index_entries"] > 20
    from hooks.render.typography import typeset_text

    # the test can fail: the code it watched holds text French typography would change
    assert any(typeset_text(code, "fr") != code for code in seen["code"])
