"""Typography of the built pages, per language, from one rule set (``hooks/render/typography.yaml``).

French puts a no-break space before ``: ; ! ?``, inside « », between the groups of a
number and between a number and its unit; Italian keeps a number with its unit and elides
an article before a number read with a vowel (``nel 82%`` -> ``nell’82%``: ``read_with_vowel``).
No well-kept Python library does French typography, so this is a small rule engine:
the YAML says which spaces become which no-break space; this module applies them.

``typeset_html(html, lang)`` parses a whole page (selectolax), typesets its text nodes
in the language each one is written in (the page's ``lang``, or the nearest element's
``lang``), and the attributes a reader hears or sees (``attributes`` of the rule set:
``alt``, ``aria-label``, ``title``, ``data-label``) the same way; it never touches other attributes, URLs (a rule only replaces whitespace that is
there, and a URL has none) or the text inside the ``skip`` elements (``code``, ``pre``,
``kbd``, ``script``...). A space split from its sign by an inline element
(``mot <em>x</em> :``) is handled across the two text nodes. The JSON islands of the
rule set (the finder's labels, prose the page's script displays) are typeset string by
string. ``typeset_text(text, lang)`` is the same rules on plain text.

Pure: no MkDocs import; the rule set is read again when the file changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import selectolax
from selectolax.lexbor import LexborHTMLParser

from hooks.cache import Memo, file_stamp, inputs_digest, stored
from hooks.data.load import parse_yaml, relative, validate
from hooks.errors import RenderError
from hooks.render.script_json import script_json

if TYPE_CHECKING:  # pydantic loads only when a file is validated (deferred imports)
    from hooks.data.schemas import TypographyFile, TypographyLanguage

RULES_FILE = Path(__file__).with_name("typography.yaml")
REPO_ROOT = Path(__file__).resolve().parents[2]
# what a typeset page depends on besides itself: this module, its rules and the JSON islands' writer
TYPESET_CODE = (Path(__file__), RULES_FILE, Path(__file__).with_name("script_json.py"))
STORE_DIR = REPO_ROOT / ".cache" / "typeset"  # typeset pages of development builds, by their inputs' SHA-256
SPACES = {"nbsp": "\u00a0", "nnbsp": "\u202f"}
WHITESPACE = r"[ \t\r\n\f\u00a0\u202f\u2009]+"  # what a rule replaces (no-break spaces too: one space, the right one)
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
}  # text on both sides is one run of text


@dataclass(frozen=True)
class Compiled:
    """One language's rules as regular expressions, applied in order to a text."""

    subs: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...]
    before: dict[str, str]  # sign -> the space that precedes it
    after: dict[str, str]  # sign -> the space that follows it
    unit_start: re.Pattern[str] | None  # whitespace then a unit, at the start of a text
    unit_space: str
    quick: re.Pattern[str]  # matches a page only if some rule may apply to it


def _compile(lang: TypographyLanguage, units: list[str]) -> Compiled:
    """``lang``: one language's rules, as ``TypographyLanguage`` of hooks/data/schemas.py validates them."""
    subs: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = []
    before = {sign: SPACES[space] for sign, space in lang.space_before.items()}
    after = {sign: SPACES[space] for sign, space in lang.space_after.items()}
    thousands, unit_space = lang.thousands, lang.units
    if before and all(len(sign) == 1 for sign in before):  # one pass for every sign: the space before each
        signs_class = "".join(re.escape(sign) for sign in before)  # run of spaces is followed by one sign only

        def space_before(m: re.Match[str], before: dict[str, str] = before) -> str:
            return before[m.string[m.end()]]

        subs.append((re.compile(WHITESPACE + f"(?=[{signs_class}])"), space_before))
    else:
        for sign, space in before.items():
            subs.append((re.compile(WHITESPACE + f"(?={re.escape(sign)})"), space))
    for sign, space in after.items():
        subs.append((re.compile(f"(?<={re.escape(sign)})" + WHITESPACE), space))
    if thousands:
        sep = SPACES[thousands]
        group = re.compile(r"(?<![\w.,\u00a0\u202f-])\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)")

        def grouped(m: re.Match[str], sep: str = sep) -> str:
            return re.sub(r"[ \u00a0\u202f]", sep, m.group(0))

        subs.append((group, grouped))
    if lang.elide_before_vowel_numbers:
        articles = "|".join(re.escape(a) for a in sorted(lang.elide_before_vowel_numbers, key=len, reverse=True))
        elided = {a.lower(): form for a, form in lang.elide_before_vowel_numbers.items()}

        def elide(m: re.Match[str], elided: dict[str, str] = elided) -> str:
            return _elide(m, elided)

        subs.append(
            (
                re.compile(
                    rf"(?<![\w’'])({articles})" + WHITESPACE + r"(?=(\d[\d.\u00a0\u202f]*(?:,\d+)?))", re.IGNORECASE
                ),
                elide,
            )
        )
    unit_start = None
    if unit_space and units:
        names = "|".join(re.escape(u) for u in sorted(units, key=len, reverse=True))
        unit = f"(?=(?:{names})(?![^\\W\\d_]))"
        subs.append((re.compile(r"(?<=\d)" + WHITESPACE + unit), SPACES[unit_space]))
        unit_start = re.compile(r"\A" + WHITESPACE + unit)
    signs = "".join(re.escape(s) for s in (*before, *after))
    quick = "|".join(p.pattern for p, _ in subs) or "(?!)"
    if signs:
        quick += f"|[{signs}]"
    return Compiled(tuple(subs), before, after, unit_start, SPACES[unit_space] if unit_space else "", re.compile(quick))


def read_with_vowel(number: str) -> bool:
    """Whether an Italian reader says ``number`` (``82``, ``1.000``, ``8,5``: digits, group
    separators, a decimal comma) starting with a vowel: uno, otto, undici, ottanta…, ottocento…,
    and the same words before -mila or -milioni (``11.000``: undicimila); ``1.000`` is mille.
    Only the integer part counts."""
    digits = re.sub(r"\D", "", number.split(",", maxsplit=1)[0])
    if not digits:
        return False
    value, groups = int(digits), 0
    while value >= 1000:
        value, groups = value // 1000, groups + 1
    if value == 1:
        return groups == 0  # uno; but mille, un milione (never written with an article)
    return value in (8, 11) or 80 <= value <= 89 or 800 <= value <= 899


def _elide(match: re.Match[str], elided: dict[str, str]) -> str:
    """The article of ``match`` elided before its number when the number is read with a vowel,
    keeping a capital (``Il 80%`` -> ``L’80%``); otherwise the text as it was."""
    article = match.group(1)
    if not read_with_vowel(match.group(2)):
        return match.group(0)
    form = elided[article.lower()]
    return form[0].upper() + form[1:] if article[0].isupper() else form


_loaded = Memo()  # path -> (rule set, compiled rules), while the file is unchanged


def rules(path: Path = RULES_FILE) -> tuple[TypographyFile, dict[str, Compiled]]:
    """The rule set (validated by ``TypographyFile`` of hooks/data/schemas.py) and each language's
    compiled rules, read again when the file changes. Raises RenderError naming the file and key."""

    def parse() -> tuple[TypographyFile, dict[str, Compiled]]:
        where = relative(path)
        text = path.read_text(encoding="utf-8")
        rule_set = validate(parse_yaml(text, where), "typography", where, text)
        try:
            return rule_set, {code: _compile(lang, rule_set.units) for code, lang in rule_set.languages.items()}
        except re.error as exc:
            raise RenderError(f"{where}: a rule is not a valid pattern ({exc})") from None

    return _loaded.get(str(path), file_stamp(path), parse)


_SPACE_RE = re.compile(WHITESPACE)


def _may_change(text: str) -> bool:
    """Whether a rule may change ``text`` alone: every rule replaces whitespace beside a sign,
    a digit or a unit, so a text without whitespace, or with nothing else, stays as it is
    (most text nodes of a page: the spaces between tags)."""
    return bool(_SPACE_RE.search(text)) and not text.isspace()


def _apply(text: str, compiled: Compiled) -> str:
    for pattern, replacement in compiled.subs:
        text = pattern.sub(replacement, text)
    return text


def unit_space(lang: str) -> str:
    """The space the rule set puts between a number and its unit in ``lang`` (``units``: a
    no-break space), for text built after typesetting (the finder's answers, static and in
    the browser); an ordinary space in a language without that rule."""
    compiled = rules()[1].get(_primary(lang))
    return compiled.unit_space if compiled is not None and compiled.unit_space else " "


def typeset_text(text: str, lang: str) -> str:
    """``text`` with ``lang``'s typography (unchanged for a language without rules)."""
    compiled = rules()[1].get(_primary(lang))
    return _apply(text, compiled) if compiled else text


def _primary(lang: str | None) -> str:
    return (lang or "").split("-")[0].lower()


_TRAILING_SPACE, _LEADING_SPACE = re.compile(WHITESPACE + r"\Z"), re.compile(r"\A" + WHITESPACE)
BREAK = None  # between two texts that are not one run (a block boundary, a skipped element)


def _skipped(node, skip: set[str]) -> bool:
    if node.tag in skip:
        return True
    classes = (node.attributes.get("class") or "").split() if node.is_element_node else []
    return any(f".{name}" in skip for name in classes)


def _text_runs(root, page_lang: str, skip: set[str]) -> list:
    """Text nodes in document order with their language; BREAK where the run of text ends."""
    out: list = []
    stack = [(root, page_lang)]
    while stack:
        node, lang = stack.pop()
        if node is BREAK:
            out.append(BREAK)
            continue
        if node.is_text_node:
            out.append((node, lang))
            continue
        if not node.is_element_node and not node.is_document_node:
            continue
        if _skipped(node, skip):
            out.append(BREAK)
            continue
        inner = _primary(node.attributes.get("lang")) or lang if node.is_element_node else lang
        block = node.tag not in INLINE
        children = list(node.iter(include_text=True))
        if block:
            stack.append((BREAK, lang))
        stack.extend((child, inner) for child in reversed(children))
        if block:
            stack.append((BREAK, lang))
    return out


def _join_runs(texts: list, compiled_of: dict[str, Compiled]) -> None:
    """A space at the end of one text node and a sign at the start of the next (or the
    reverse for « ; or a number, then a space and a unit: ``10<sup>9</sup> octets``): the
    space becomes the no-break one. ``texts``: [lang, text] or BREAK."""
    for i in range(1, len(texts)):
        prev, cur = texts[i - 1], texts[i]
        if prev is BREAK or cur is BREAK or prev[0] != cur[0] or prev[0] not in compiled_of:
            continue
        compiled = compiled_of[prev[0]]
        head = cur[1][:1]
        if head in compiled.before and (stripped := _TRAILING_SPACE.sub("", prev[1])) != prev[1]:
            prev[1] = stripped + compiled.before[head]
        tail = prev[1][-1:]
        if tail in compiled.after and (stripped := _LEADING_SPACE.sub("", cur[1])) != cur[1]:
            cur[1] = compiled.after[tail] + stripped
        if compiled.unit_start and tail.isdigit() and (unit := compiled.unit_start.match(cur[1])):
            cur[1] = compiled.unit_space + cur[1][unit.end() :]


def _typeset_json(value, compiled: Compiled):
    if isinstance(value, str):
        return _apply(value, compiled)
    if isinstance(value, list):
        return [_typeset_json(v, compiled) for v in value]
    if isinstance(value, dict):
        return {k: _typeset_json(v, compiled) for k, v in value.items()}
    return value


def _language_of(node, page_lang: str, skip: set[str]) -> str | None:
    """The language ``node``'s text is written in (its own or nearest ``lang``), None
    when it sits in a skipped element (code is not prose)."""
    found = None
    while node is not None and node.is_element_node:
        if _skipped(node, skip):
            return None
        if found is None and (own := node.attributes.get("lang")):
            found = _primary(own)
        node = node.parent
    return found or _primary(page_lang)


def _typeset_attributes(tree, page_lang: str, rule_set: TypographyFile, compiled_of: dict[str, Compiled]) -> bool:
    """Typeset the spoken attributes (``rule_set.attributes``) in place; True if any changed."""
    names = rule_set.attributes
    if not names:
        return False
    skip, changed = set(rule_set.skip), False
    for node in tree.css(", ".join(f"[{name}]" for name in names)):
        if not any(_may_change(node.attributes.get(name) or "") for name in names):
            continue  # most data-label values: one word, nothing a rule could change
        lang = _language_of(node, page_lang, skip)
        if lang not in compiled_of:
            continue
        for name in names:
            value = node.attributes.get(name)
            if value and (typeset := _apply(value, compiled_of[lang])) != value:
                node.attrs[name] = typeset
                changed = True
    return changed


_typeset: dict[
    tuple[str, str], tuple[dict, str | None]
] = {}  # (lang, html) -> (the rules, the page typeset; None: unchanged)
KEEP = 256  # pages and fragments kept: a `mkdocs serve` rebuild typesets only what changed


def typeset_html(html: str, lang: str, store: Path | None = None) -> str:
    """A whole page with the typography of ``lang`` (and of any ``lang=`` inside it). Returns ``html`` itself when no rule applies. Raises RenderError for a
    broken rule set, or a JSON island that is not JSON. The result of the same ``html`` and
    ``lang`` under the same rules (the rule file unchanged) is kept for the process; with a
    ``store`` folder (a development build: ``STORE_DIR``) also on disk, under the SHA-256 of
    the page, the language, ``TYPESET_CODE`` and selectolax's version, for the next
    build process (``hooks.cache.stored``)."""
    rule_set, compiled_of = rules()
    kept = _typeset.get((lang, html))
    if kept is None or kept[0] is not compiled_of:
        if len(_typeset) >= KEEP:
            _typeset.clear()
        if store is None:
            out = _typeset_page(html, lang, rule_set, compiled_of)
        else:
            key = inputs_digest("typeset", [lang, html, selectolax.__version__], (TYPESET_CODE, REPO_ROOT))
            typeset = stored(
                store, key, lambda: _typeset_page(html, lang, rule_set, compiled_of).encode(), suffix=".html", keep=KEEP
            ).decode()
            out = html if typeset == html else typeset
        kept = _typeset[(lang, html)] = (compiled_of, None if out is html else out)
    return html if kept[1] is None else kept[1]


def _typeset_page(html: str, lang: str, rule_set: TypographyFile, compiled_of: dict[str, Compiled]) -> str:
    if not any(c.quick.search(html) for c in compiled_of.values()):
        return html
    tree = LexborHTMLParser(html)
    changed = False
    for island in tree.css('script[type="application/json"][id]'):
        compiled = compiled_of.get(_primary(lang))
        if island.attributes.get("id") not in rule_set.json_islands or compiled is None or island.first_child is None:
            continue
        try:
            data = json.loads(island.text())
        except ValueError as exc:
            raise RenderError(f"<script id={island.attributes.get('id')}>: not JSON ({exc})") from None
        typeset = _typeset_json(data, compiled)
        if typeset != data:
            island.first_child.replace_with(script_json(typeset))
            changed = True
    changed = _typeset_attributes(tree, lang, rule_set, compiled_of) or changed
    runs = _text_runs(tree.root, _primary(lang), set(rule_set.skip))
    texts = [BREAK if run is BREAK else [run[1], run[0].text_content or ""] for run in runs]
    for entry in texts:
        if entry is not BREAK and entry[0] in compiled_of and _may_change(entry[1]):
            entry[1] = _apply(entry[1], compiled_of[entry[0]])
    _join_runs(texts, compiled_of)
    for run, entry in zip(runs, texts, strict=True):
        if run is not BREAK and entry[1] != (run[0].text_content or ""):
            run[0].replace_with(entry[1])
            changed = True
    return tree.html if changed and tree.html is not None else html


def typeset_fragment(fragment: str, lang: str) -> str:
    """An HTML fragment (no ``<html>``/``<body>``) with the typography of ``lang``."""
    if "<" not in fragment and "&" not in fragment:
        return typeset_text(fragment, lang)  # one text node: what the page's rules would do to it
    page = f'<!DOCTYPE html><html lang="{lang}"><head></head><body>{fragment}</body></html>'
    out = typeset_html(page, lang)
    if out is page:
        return fragment
    body = LexborHTMLParser(out).body
    # The serializer writes U+00A0 as &nbsp; (a literal "&nbsp;" text would be &amp;nbsp;):
    # a search index wants the character, which its separator treats as a space.
    inner = "".join(child.html or "" for child in body.iter(include_text=True)) if body else fragment
    return inner.replace("&nbsp;", "\u00a0")


def typeset_search_index(index: dict, lang: str) -> dict:
    """A Material search index (``{"config", "docs": [{"title", "text", ...}]}``) whose
    titles and texts have the typography of the pages they come from (search results
    show them). The input is left alone."""
    docs = [
        {**doc, **{key: typeset_fragment(doc[key], lang) for key in ("title", "text") if isinstance(doc.get(key), str)}}
        for doc in index.get("docs", [])
    ]
    return {**index, "docs": docs}
