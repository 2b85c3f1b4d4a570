"""Gate: the typography of the built site, in both languages (reader case "French typography").

Read with BeautifulSoup (not the selectolax engine that writes it), over the whole page
(title, navigation, article, footer), outside code and passages in another language:

- French: no ordinary space or line break before ``: ; ! ?`` and », nor after «; every
  ``; ! ?`` » and every prose colon (one followed by a space) has its no-break space
  (so a source that forgets the space fails too); digit groups and a number's unit or %
  never at an ordinary space ("1 000 Go/s", "100 %").
- Italian: untouched by French rules: no no-break space before ``: ; ! ?``; a number's
  unit never at an ordinary space.
- The attributes a screen reader speaks or a browser shows (``alt``, ``aria-label``,
  ``title``) are read as text of their element's language, with the same rules.
- Code is left alone: no no-break space in any ``pre``/``code``.
- Sources: no hand-typed no-break space next to French punctuation (the render layer
  adds them from hooks/render/typography.yaml).
"""

from __future__ import annotations

import re
from functools import lru_cache

import pytest
from bs4 import BeautifulSoup, Comment, NavigableString

from tests.conftest import REPO_ROOT
from tests.site.test_gates_common import html_files, page_language, parsed

pytestmark = pytest.mark.slow

NBSP, NNBSP = "\u00a0", "\u202f"
CODE = "\x00"  # a code element or other opaque word, in the text read
BREAK = "\x01"  # the end of a run of text (a block boundary)
SKIP = {"code", "pre", "kbd", "samp", "var", "script", "style", "svg", "math", "template", "textarea"}
INLINE = {
    "a",
    "abbr",
    "b",
    "bdi",
    "bdo",
    "cite",
    "data",
    "del",
    "dfn",
    "em",
    "i",
    "ins",
    "mark",
    "q",
    "s",
    "small",
    "span",
    "strong",
    "sub",
    "sup",
    "time",
    "u",
}
# Units a reader sees after a number on these pages (typed here, not read from the rule set)
SPOKEN = ("alt", "aria-label", "title")  # attributes read aloud or shown as a tooltip
UNITS = r"(?:%|€|Go/s|Go|Gio|Mo|Mio|To|GB/s|GB|GiB|MB|MiB|TB|octets|byte|bit|bits)(?![^\W\d_])"


@lru_cache(maxsize=64)
def text_of(page_html: str, lang: str) -> str:
    """The text of a page in ``lang``: code as CODE, other-language passages and block
    boundaries as BREAK (read once per content)."""
    soup = BeautifulSoup(page_html, "html.parser")
    out: list[str] = []

    def walk(node, current: str) -> None:
        for child in node.children:
            if isinstance(child, Comment):
                continue
            if isinstance(child, NavigableString):
                out.append(str(child) if current == lang else BREAK)
                continue
            if child.name in SKIP or "clipboard-copy-txt" in (
                child.get("class") or []
            ):  # a notebook cell's copied code
                out.append(CODE)
                continue
            inner = (child.get("lang") or current).split("-")[0].lower()
            if inner == lang:
                out.extend(part for name in SPOKEN if child.get(name) for part in (BREAK, child[name], BREAK))
            block = child.name not in INLINE
            if block:
                out.append(BREAK)
            walk(child, inner)
            if block:
                out.append(BREAK)

    walk(soup, lang)
    return "".join(out)


def around(text: str, match: re.Match[str]) -> str:
    return text[max(0, match.start() - 30) : match.end() + 10].replace(CODE, "«code»").replace(BREAK, "|")


FRENCH_FAULTS = {
    "ordinary space before a high sign": re.compile(r"[ \t\r\n]+[:;!?»]"),
    "ordinary space after «": re.compile(r"«[ \t\r\n]"),
    "no space before ; ! ? »": re.compile(rf"(?<=[^\s{NBSP}{NNBSP}{BREAK};!?])[;!?»]"),
    "no space before a prose colon": re.compile(rf"(?<=[^\s{NBSP}{NNBSP}{BREAK}]):(?=\s)"),
    "no space after «": re.compile(r"«(?=[^\s])"),
    "ordinary space in a digit group": re.compile(r"(?<![\w.,])\d{1,3}[ \t\r\n]+\d{3}(?!\d)"),
    "ordinary space before a unit": re.compile(r"\d[ \t\r\n]+" + UNITS),
}
ITALIAN_FAULTS = {
    "no-break space before punctuation (a French rule)": re.compile(rf"[{NBSP}{NNBSP}][:;!?]"),
    "ordinary space before a unit": re.compile(r"\d[ \t\r\n]+" + UNITS),
}


def faults(page_html: str, lang: str) -> list[str]:
    text = text_of(page_html, lang)
    rules = FRENCH_FAULTS if lang == "fr" else ITALIAN_FAULTS
    return [f"{name}: …{around(text, m)}…" for name, pattern in rules.items() for m in pattern.finditer(text)]


def site_faults(site) -> dict[str, list[str]]:
    found = {}
    for page in html_files(site):
        if problems := faults(page.read_text(encoding="utf-8"), page_language(site, page)):
            found[str(page.relative_to(site))] = problems
    return found


def test_every_page_has_its_language_typography(built_site):
    assert not site_faults(built_site)


def test_french_numbers_and_units_are_bound(built_site):
    """The French pages hold grouped numbers and percentages, all bound (reader case:
    "1 000 Go/s", "100 %")."""
    french = "".join(
        text_of(p.read_text(encoding="utf-8"), "fr")
        for p in html_files(built_site)
        if page_language(built_site, p) == "fr"
    )
    assert re.search(rf"\d{NNBSP}\d{{3}}{NBSP}Go/s", french), "no bound '1 000 Go/s'"
    assert re.search(rf"\d{NBSP}%", french), "no bound '100 %'"
    assert re.search(rf"\w{NBSP}:", french) and re.search(rf"\w{NNBSP}\?", french)


def test_the_gate_sees_each_fault():
    """Each fault, put into a page, is named; the same text in code is not."""
    page = '<html lang="{lang}"><head><title>T</title></head><body><p>{text} <code>a : b ?</code></p></body></html>'
    french_cases = {
        "Prix : 3": "ordinary space before a high sign",
        "Prix\n: 3": "ordinary space before a high sign",
        "une « x\u202f»": "ordinary space after «",
        "Pourquoi?": "no space before ; ! ? »",
        "Note: oui": "no space before a prose colon",
        "Au-delà de 1 000\u00a0Go/s": "ordinary space in a digit group",
        "à 100 %": "ordinary space before a unit",
        '<a href="#x">tableau </a>: voir': "ordinary space before a high sign",
        '<img alt="Graphique : x" src="a.png">': "ordinary space before a high sign",
        '<nav aria-label="Quand : FSDP ; ZeRO"></nav>': "ordinary space before a high sign",
    }
    for text, fault in french_cases.items():
        assert [f.split(":")[0] for f in faults(page.format(lang="fr", text=text), "fr")] == [fault], text
    assert faults(page.format(lang="fr", text="arXiv:1910.02054, à 10:30, Prix\u00a0: 3\u202f!"), "fr") == []
    assert [f.split(" (")[0] for f in faults(page.format(lang="it", text="Domanda\u202f?"), "it")] == [
        "no-break space before punctuation"
    ]
    assert faults(page.format(lang="it", text="Domanda: sì? Al 100%."), "it") == []


def test_code_holds_no_no_break_space(built_site):
    for page in html_files(built_site):
        for code in parsed(page).select("pre, code, kbd, div.clipboard-copy-txt"):
            assert NBSP not in code.get_text() and NNBSP not in code.get_text(), (page, code.get_text()[:80])


HAND_TYPED = re.compile(
    r"(?:\u00a0|\u202f|&nbsp;|&#160;|&#xa0;|&#8239;|&#x202f;)(?=[:;!?»])|«(?:\u00a0|\u202f|&nbsp;|&#160;|&#8239;)",
    re.IGNORECASE,
)
SOURCES = [
    "docs/**/*.md",
    "docs/**/*.ipynb",
    "snippets/data/**/*.yaml",
    "snippets/comments.yaml",
    "overrides/**/*.html",
    "mkdocs.yml",
]


def test_sources_type_no_no_break_space_by_hand():
    """The render layer adds the no-break spaces: a source never types one next to
    French punctuation (it would hide a missing rule, and drift from the rule set)."""
    found = [
        f"{path.relative_to(REPO_ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        for pattern in SOURCES
        for path in sorted(REPO_ROOT.glob(pattern))
        for text in [path.read_text(encoding="utf-8")]
        for m in HAND_TYPED.finditer(text)
    ]
    assert not found, f"hand-typed no-break spaces (write an ordinary space): {found}"
