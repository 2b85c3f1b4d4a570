"""Gate: the prose of every page is spelled right, in the page's language.

Hunspell with Debian's dictionaries (``apt-get install hunspell hunspell-it hunspell-fr``)
checks the text a reader reads: the article, the page title and description, image
alternatives and abbreviation titles. Code (``pre``, ``code``, ``kbd``, notebook code
cells), and anything marked with another ``lang`` or ``translate="no"`` is left out.
Words with digits or code characters (``bf16``, ``llama.cpp``, ``train.py``) and
command-line options (``--nproc_per_node``) are skipped.

Technical terms the dictionaries lack go into the project word lists:
``tests/spelling/words.txt`` (names and terms of every language), and
``tests/spelling/words.<lang>.txt`` (that language only). One word per line, as it is
written (``PyTorch``); a lower-case entry also accepts its capitalised form.

Terminology: one glossary per language, ``tests/spelling/glossary.<lang>.yaml`` (the
preferred term, then its forbidden variants). A variant anywhere in the prose of a page
of that language fails the gate (no hunspell needed), so a drifting term ("rank 0" in
French, "Una istanza" in Italian) never publishes.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from functools import cache, lru_cache
from html import escape as html_escape
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from tests.conftest import REPO_ROOT
from tests.site.test_gates_common import LANGUAGES, html_files, page_language

pytestmark = pytest.mark.slow

WORD_LISTS = REPO_ROOT / "tests" / "spelling"
DICTIONARIES = {"it": "it_IT", "fr": "fr_FR"}
# Elided forms written before an apostrophe (l'ottimizzatore, qu'il): not words on their own.
ELISIONS = {
    "it": {
        "l",
        "d",
        "c",
        "s",
        "m",
        "t",
        "v",
        "un",
        "dell",
        "dall",
        "nell",
        "sull",
        "all",
        "coll",
        "quell",
        "quest",
        "bell",
        "sant",
        "anch",
        "dov",
        "com",
        "cos",
        "nessun",
        "tutt",
        "senz",
        "buon",
        "ch",
        "dev",
    },
    "fr": {"l", "d", "j", "m", "n", "s", "t", "c", "qu", "jusqu", "lorsqu", "puisqu", "quoiqu", "presqu", "quelqu"},
}
SKIPPED = (
    "pre",
    "code",
    "kbd",
    "samp",
    "var",
    "script",
    "style",
    "svg",
    "math",
    "template",
    ".arithmatex",
    ".headerlink",
    ".highlight",
    ".jp-CodeCell .jp-InputArea",
    ".jp-OutputArea .jp-RenderedText",
    '[translate="no"]',
    ".notranslate",
)
CODE_LIKE = re.compile(r"[\d_/\\.@=#<>{}$%+*|~^`\[\]]")
EDGE = "\"'’‘“”«»()[]{}.,;:!?…–—-·¶*/"

HUNSPELL = shutil.which("hunspell")
needs_hunspell = (
    pytest.mark.spelling
)  # skipped without hunspell; a failure under REQUIRE_SPELLING=1 (tests/conftest.py)


@lru_cache(maxsize=64)
def prose(html: str, lang: str) -> str:
    """The text a reader reads on the page, without code and other-language passages (found
    once per content: the spelling and the glossary gates read every page)."""
    soup = BeautifulSoup(html, "html.parser")
    parts = [soup.title.get_text(" ") if soup.title else ""]
    description = soup.find("meta", attrs={"name": "description"})
    if description and description.get("content"):
        parts.append(str(description["content"]))
    article = soup.select_one("article") or soup.body or soup
    for el in article.find_all(lang=True):
        if not str(el["lang"]).lower().startswith(lang):
            el.decompose()
    parts += [str(el["alt"]) for el in article.find_all(alt=True)]  # plots in code cells too
    parts += [str(el["title"]) for el in article.find_all("abbr", attrs={"title": True})]
    for el in article.select(", ".join(SKIPPED)):
        el.decompose()
    parts.append(article.get_text(" "))
    return "\n".join(parts)


def tokens(text: str) -> list[str]:
    """Words of ``text``: apostrophes normalised to ', edge punctuation stripped, code-like tokens dropped."""
    words = []
    for raw in text.replace("’", "'").replace("ʼ", "'").split():
        if raw.startswith("--"):  # a command-line option written in prose
            continue
        word = raw.lstrip(EDGE).rstrip(EDGE.replace("'", ""))  # keep a final apostrophe: po'
        if word and not CODE_LIKE.search(word) and any(ch.isalpha() for ch in word):
            words.append(word)
    return words


def word_list(lang: str) -> list[str]:
    words = []
    for name in ("words.txt", f"words.{lang}.txt"):
        path = WORD_LISTS / name
        if path.exists():
            words += [
                w.strip() for w in path.read_text(encoding="utf-8").splitlines() if w.strip() and not w.startswith("#")
            ]
    return words


def _hunspell(words: set[str], lang: str, personal: Path) -> set[str]:
    if not words:
        return set()
    assert HUNSPELL is not None  # the spelling tests skip without it
    result = subprocess.run(
        [HUNSPELL, "-d", DICTIONARIES[lang], "-p", str(personal), "-l", "-i", "utf-8"],
        input="\n".join(sorted(words)) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def misspelled(words: set[str], lang: str, workdir: Path) -> set[str]:
    """The words hunspell rejects, with the project word list; a word with an apostrophe
    or a hyphen passes if hunspell knows it whole, or if its parts pass (elided forms
    such as ``dell'`` from a fixed list)."""
    personal = workdir / f"words.{lang}.dic"
    personal.write_text("\n".join(word_list(lang)) + "\n", encoding="utf-8")
    rejected = set(_hunspell(words, lang, personal))
    # hunspell prints a rejected compound by its parts: map them back to the input words
    bad_words = {w for w in words if w in rejected or any(p in rejected for p in re.split(r"['\-]", w))}
    parts_of = {}
    for word in bad_words:
        *elided, last = word.split("'")
        if any(e.lower() not in ELISIONS[lang] for e in elided if e):
            continue
        parts_of[word] = [p for p in re.split(r"-", last) if p]
    still = _hunspell({p for ps in parts_of.values() for p in ps}, lang, personal)
    return {w for w in bad_words if w not in parts_of or any(p in still for p in parts_of[w])}


def misspellings(pages: dict[str, tuple[str, str]], workdir: Path) -> dict[str, list[str]]:
    """``{name: (html, lang)}`` -> ``{name: sorted misspelled words}`` (pages with none left out)."""
    words_of = {name: set(tokens(prose(html, lang))) for name, (html, lang) in pages.items()}
    bad = {
        lang: misspelled(
            set().union(*(words_of[n] for n, (_, page_lang) in pages.items() if page_lang == lang)), lang, workdir
        )
        for lang in {lang for _, lang in pages.values()}
    }
    return {name: sorted(words_of[name] & bad[lang]) for name, (_, lang) in pages.items() if words_of[name] & bad[lang]}


def site_pages(site: Path) -> dict[str, tuple[str, str]]:
    return {str(p.relative_to(site)): (p.read_text(encoding="utf-8"), page_language(site, p)) for p in html_files(site)}


@needs_hunspell
def test_prose_is_spelled_right(built_site, tmp_path):
    pages = site_pages(built_site)
    assert {lang for _, lang in pages.values()} == set(LANGUAGES)
    assert not misspellings(pages, tmp_path), "misspelled (fix the page, or add a technical term to tests/spelling/)"


@needs_hunspell
def test_a_typo_fails_and_code_is_not_checked(built_site, tmp_path):
    """Inject a typo into the prose of a copy of each home page: the gate names it; the
    same typo inside <code> is ignored."""
    typos = {
        "it": ("Attenzoine", "<p>Attenzoine: <code>Ortografiaa</code></p>"),
        "fr": ("Atentionn", "<p>Atentionn : <code>Orthographee</code></p>"),
    }
    pages = {}
    for lang, (_, snippet) in typos.items():
        page = built_site / ("" if lang == LANGUAGES[0] else lang) / "index.html"
        pages[lang] = (page.read_text(encoding="utf-8").replace("</article>", snippet + "</article>", 1), lang)
    found = misspellings(pages, tmp_path)
    for lang, (typo, _) in typos.items():
        assert found.get(lang) == [typo], found


def test_tokens():
    text = "L’ottimizzatore (AdamW) usa bf16, `x` e llama.cpp; c’est-à-dire un po’ di «ZeRO-3» train.py --tensor-parallel-size."
    assert tokens(text) == ["L'ottimizzatore", "AdamW", "usa", "e", "c'est-à-dire", "un", "po'", "di"]


# ------------------------------------------------------------------------- glossary
def glossary(lang: str) -> dict[str, list[str]]:
    """``{preferred term: [forbidden variants]}`` of ``tests/spelling/glossary.<lang>.yaml``."""
    return copy.deepcopy(_glossary(lang))


@cache
def _glossary(lang: str):  # read once per process: term_drift reads it for every page
    return yaml.safe_load((WORD_LISTS / f"glossary.{lang}.yaml").read_text(encoding="utf-8"))


def _normalised(text: str) -> str:
    return " ".join(text.replace("’", "'").replace("ʼ", "'").split())


def _term_pattern(term: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in _normalised(term).split(" ")]
    return re.compile(r"(?<![\w'])" + r"\s+".join(words) + r"(?![\w])", re.IGNORECASE)


def term_drift(pages: dict[str, tuple[str, str]], interface: dict[str, list[str]] | None = None) -> list[str]:
    """``{name: (html, lang)}`` -> "page: 'variant' (use 'term')" for every forbidden variant in
    prose, and in the page's interface texts (``{name: [text]}``: navigation, labels)."""
    problems: list[str] = []
    for name, (html, lang) in sorted(pages.items()):
        text = _normalised("\n".join([prose(html, lang), *(interface or {}).get(name, [])]))
        for term, variants in glossary(lang).items():
            problems.extend(
                f"{name}: {variant!r} (use {term!r})" for variant in variants if _term_pattern(variant).search(text)
            )
    return problems


@pytest.mark.parametrize("lang", LANGUAGES)
def test_glossary_is_well_formed(lang):
    terms = glossary(lang)
    assert terms and all(isinstance(v, list) and v for v in terms.values()), f"glossary.{lang}.yaml"
    for term, variants in terms.items():
        assert not any(_term_pattern(v).search(_normalised(term)) for v in variants), (term, variants)


def test_every_page_uses_the_glossary_terms(built_site):
    from tests.site.test_gates_i18n import interface_texts

    pages = site_pages(built_site)
    assert {lang for _, lang in pages.values()} == set(LANGUAGES)
    interface = {str(page.relative_to(built_site)): interface_texts(page) for page in html_files(built_site)}
    assert not term_drift(pages, interface), "a term drifted from tests/spelling/glossary.<lang>.yaml"


def test_a_drifting_term_fails_in_each_language(built_site):
    """A forbidden variant put into the prose of each home page is named; the same
    variant in <code> or in a passage of another language is not."""
    drift = {
        "it": "<p>Avvia una  istanza per scheda, <code>una istanza</code></p>",
        "fr": "<p>Sur le rank 0, <code>rank 0</code>, <span lang=\"en\">rank</span></p>",
    }
    pages = {}
    for lang, snippet in drift.items():
        page = built_site / ("" if lang == LANGUAGES[0] else lang) / "index.html"
        pages[lang] = (page.read_text(encoding="utf-8").replace("</article>", snippet + "</article>", 1), lang)
    assert term_drift(pages) == ["fr: 'rank' (use 'rang')", "it: 'una istanza' (use 'un’istanza')"]


def test_one_name_per_thing_in_prose_and_navigation(built_site):
    """The finder and the notebook have one name per language: a second name in the prose
    or in the navigation (reader case: three French names of the finder) is named."""
    drift = {
        "it": ("<p>Il cercatore e il notebook sulla memoria. Vedi Trova la GPU.</p>", ["Notebook: memoria per scheda"]),
        "fr": ("<p>Voir Trouvez le GPU, l’outil de recherche de GPU.</p>", ["Notebook\u00a0: mémoire par carte"]),
    }
    pages, interface = {}, {}
    for lang, (snippet, nav) in drift.items():
        page = built_site / ("" if lang == LANGUAGES[0] else lang) / "index.html"
        pages[lang] = (page.read_text(encoding="utf-8").replace("</article>", snippet + "</article>", 1), lang)
        interface[lang] = nav
    assert sorted(term_drift(pages, interface)) == [
        "fr: 'Voir Trouvez le GPU' (use 'Trouvez le GPU')",
        "fr: 'l’outil de recherche de GPU' (use 'Trouvez le GPU')",
        "fr: 'notebook : mémoire par carte' (use 'notebook de la mémoire')",
        "it: 'Vedi Trova la GPU' (use 'Trova la GPU')",
        "it: 'cercatore' (use 'Trova la GPU')",
        "it: 'notebook sulla memoria' (use 'notebook della memoria')",
        "it: 'notebook: memoria per scheda' (use 'notebook della memoria')",
    ]


@needs_hunspell
def test_interface_is_spelled_right(built_site, tmp_path):
    """Around the article (header, navigation, footer, buttons' labels, Material's strings),
    every page speaks its own language: an English word there is a misspelling."""
    from tests.site.test_gates_i18n import interface_texts

    pages = {}
    for page in html_files(built_site):
        lang = page_language(built_site, page)
        pages[str(page.relative_to(built_site))] = (
            "<html><body><article><p>" + " \n ".join(interface_texts(page)) + "</p></article></body></html>",
            lang,
        )
    assert not misspellings(pages, tmp_path), (
        "an interface string not in the page's language (or a term for tests/spelling/)"
    )


def test_notebook_markdown_cells_are_prose(built_site):
    """A notebook's Markdown cells (in JupyterLab's .jp-InputArea, like its code) are prose the
    gates read; its code cells and their text outputs are not."""
    page = built_site / "fr" / "memory-notebook" / "index.html"
    cell = (
        '<div class="jp-Cell jp-MarkdownCell"><div class="jp-InputArea"><div class="jp-RenderedMarkdown">'
        '<p>Voir Trouvez le GPU.</p></div></div></div>'
        '<div class="jp-Cell jp-CodeCell"><div class="jp-InputArea"><pre>x = 1  # notebook sur la mémoire</pre></div>'
        '<div class="jp-OutputArea"><div class="jp-RenderedText"><pre>notebook sur la mémoire</pre></div></div></div>'
    )
    html = page.read_text(encoding="utf-8").replace("</article>", cell + "</article>", 1)
    assert term_drift({"nb": (html, "fr")}) == ["nb: 'Voir Trouvez le GPU' (use 'Trouvez le GPU')"]


def finder_strings(site: Path) -> dict[str, tuple[str, str]]:
    """The finder's interface strings of each language (every label finder.js writes into the
    page: the result, the refusals, the errors; ``#finder-labels``), as one pseudo-page per
    language for the gates: ``{field}`` slots and code-like words left out as in prose."""
    import json

    pages = {}
    for lang in LANGUAGES:
        page = site / ("" if lang == LANGUAGES[0] else lang) / "gpu-finder" / "index.html"
        node = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select_one("#finder-labels")
        assert node is not None and node.string is not None, page
        texts = [value for value in json.loads(node.string).values() if isinstance(value, str) and len(value) > 1]
        body = "".join(f"<p>{re.sub(r'{[a-z_]+}', ' ', text)}</p>" for text in texts)
        pages[f"{lang}: finder strings"] = (f'<html lang="{lang}"><body><article>{body}</article></body></html>', lang)
    return pages


@needs_hunspell
def test_the_finders_strings_are_spelled_right(built_site, tmp_path):
    """What only the page's script shows (a refusal, an error, the ranking sentence) is read by
    the spelling gate too, not just the static page (issue 35)."""
    assert not misspellings(finder_strings(built_site), tmp_path), (
        "a finder string misspelled (snippets/data/finder.yaml)"
    )


def test_the_finders_strings_use_the_glossary(built_site):
    """The glossary's terms hold in the finder's strings ("Token da addestrare", "lecteur de
    config" were there before issue 35's reading), and a variant put into one is named."""
    pages = finder_strings(built_site)
    assert term_drift(pages) == []
    drifted = {
        name: (html.replace("</article>", "<p>Token da addestrare, tokens à entraîner</p></article>"), lang)
        for name, (html, lang) in pages.items()
    }
    assert sorted(term_drift(drifted)) == [
        "fr: finder strings: 'tokens à entraîner' (use 'nombre total de tokens d’entraînement')",
        "it: finder strings: 'token da addestrare' (use 'token totali dell’addestramento')",
    ]


# ------------------------------------------------------------------------- Italian percentages
# Italian puts an article before a percentage ("nell’82% dei casi", "più del 25%", "almeno
# l’80%"), elided before a figure read with a vowel (uno, otto, undici, ottanta…: Treccani,
# "elisione"); "in 82% dei casi", "più di 25%", "il 80%" or "l’25%" read as translated. The
# pages write the plain article before a placeholder; typography.yaml's rule elides it.
ARTICLES_IT = {"il", "lo", "del", "dello", "nel", "nello", "al", "allo", "dal", "dallo", "sul", "sullo", "col"}
ELIDED_IT = {"l", "dell", "nell", "all", "dall", "sull"}
_WORD_BEFORE_PERCENT = re.compile(r"(?<![\w'])([^\W\d_]+)('?)\s*(\d[\d.]*(?:,\d+)?)\s?%")


def percent_articles(pages: dict[str, tuple[str, str]]) -> list[str]:
    """``{name: (html, lang)}`` -> "page: 'words'" for each percentage of Italian prose after a
    word that is not its article, or after an article that does not agree with the figure."""
    from hooks.render.typography import read_with_vowel

    problems = []
    for name, (html, lang) in sorted(pages.items()):
        if lang != "it":
            continue
        for word, apostrophe, number in _WORD_BEFORE_PERCENT.findall(_normalised(prose(html, lang))):
            lower, vowel = word.lower(), read_with_vowel(number)
            if apostrophe:
                right = lower in ELIDED_IT and vowel
            else:
                right = lower in ARTICLES_IT and not (vowel and lower in {"il", "del", "nel", "al", "dal", "sul"})
            if not right:
                problems.append(f"{name}: {word}{apostrophe}{'' if apostrophe else ' '}{number}%")
    return problems


def test_italian_percentages_take_their_article(built_site):
    """Every Italian page, and the finder's strings (the run's source: "nell’82% dei casi")."""
    pages = {name: page for name, page in site_pages(built_site).items() if page[1] == "it"}
    pages.update(finder_strings(built_site))
    assert len(pages) > 4 and percent_articles(pages) == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_variant_of_the_glossary_is_caught(built_site, lang):
    """Each forbidden variant of the glossary, put into the prose of the language's home page,
    is named with its term: a variant the matcher cannot see (a typed apostrophe, a space) would
    let that drift publish."""
    terms = glossary(lang)
    page = built_site / ("" if lang == LANGUAGES[0] else lang) / "index.html"
    prose_of = "".join(f"<p>{html_escape(v)}.</p>" for variants in terms.values() for v in variants)
    html = page.read_text(encoding="utf-8").replace("</article>", prose_of + "</article>", 1)
    found = set(term_drift({lang: (html, lang)}))
    assert {f"{lang}: {v!r} (use {t!r})" for t, variants in terms.items() for v in variants} <= found


def test_a_percentage_without_its_article_is_named():
    body = (
        "<p>Contiene la misura in 82% dei casi, più di 25% dello step, almeno 80% di copertura, "
        "il 80% e l’25%; bene: nell’82%, del 25%, l’11%, allo 0%, (71% libero) e 57–80%.</p>"
    )
    html = f'<html lang="it"><body><article>{body}</article></body></html>'
    assert percent_articles({"p": (html, "it")}) == [
        "p: in 82%",
        "p: di 25%",
        "p: almeno 80%",
        "p: il 80%",
        "p: l'25%",
    ]
