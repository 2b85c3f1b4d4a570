"""French typography by the render layer (hooks/render/typography.py + hooks/render/typography.yaml).

Expected strings are typed here as a French typesetter writes them (U+00A0 before the
colon, U+202F before ; ! ? and inside « », U+202F between digit groups, U+00A0 between a
number and its unit: the Imprimerie nationale's rules and CLDR's French number format),
never produced by the code under test.
"""

from __future__ import annotations

import pytest
import yaml
from selectolax.lexbor import LexborHTMLParser

from hooks.errors import RenderError
from hooks.render.typography import rules, typeset_html, typeset_text

NBSP, NNBSP = "\u00a0", "\u202f"


def page(body: str, lang: str = "fr") -> str:
    return f'<!DOCTYPE html><html lang="{lang}"><head><title>T</title></head><body>{body}</body></html>'


def body_text(html: str) -> str:
    body = LexborHTMLParser(html).body
    assert body is not None
    return body.text(deep=True)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Une question : le modèle tient-il ?", f"Une question{NBSP}: le modèle tient-il{NNBSP}?"),
        ("Rarement ; pour le reste !", f"Rarement{NNBSP}; pour le reste{NNBSP}!"),
        ("une « bus error » ici", f"une «{NNBSP}bus error{NNBSP}» ici"),
        ("le délai d’expiration\n: cherchez", f"le délai d’expiration{NBSP}: cherchez"),  # a line break in the source
        ("Au-delà de 1 000 Go/s", f"Au-delà de 1{NNBSP}000{NBSP}Go/s"),
        ("une carte à 100 % et trois à 0 %.", f"une carte à 100{NBSP}% et trois à 0{NBSP}%."),
        ("16 octets par paramètre", f"16{NBSP}octets par paramètre"),
        ("2 500 000 paramètres", f"2{NNBSP}500{NNBSP}000 paramètres"),
        # no space in the source: nothing inserted (URLs, references, times stay as written)
        (
            "arXiv:1910.02054, https://example.org/?a=1&b=2, à 10:30",
            "arXiv:1910.02054, https://example.org/?a=1&b=2, à 10:30",
        ),
        ("ZeRO-3 128 cartes", "ZeRO-3 128 cartes"),  # not a number split in groups
        ("déjà juste\u00a0: rien", f"déjà juste{NBSP}: rien"),  # idempotent
    ],
)
def test_french_text(source, expected):
    assert typeset_text(source, "fr") == expected
    assert typeset_text(expected, "fr") == expected


def test_italian_keeps_its_punctuation_and_only_binds_units():
    source = "Una domanda: quanti GB? Sopra i 1.000 GB/s; al 100%. Sì !"
    assert typeset_text(source, "it") == f"Una domanda: quanti GB? Sopra i 1.000{NBSP}GB/s; al 100%. Sì !"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # Italian elides the article before a figure read with a vowel, as before a word
        # (Treccani, "elisione": l’8%, l’11 settembre, dell’800): uno, otto, undici, ottanta…,
        # ottocento…; mille, diciotto, venticinque and the rest keep the full article.
        ("nel 82% dei casi", "nell’82% dei casi"),
        ("almeno il 80% di copertura", "almeno l’80% di copertura"),
        ("Il 80% delle misure", "L’80% delle misure"),
        ("più del 8,5% dello step", "più dell’8,5% dello step"),
        ("il 11%, al 1% e dal 800", "l’11%, all’1% e dall’800"),
        ("il 11.000 e il 8.000", "l’11.000 e l’8.000"),
        ("più del 25%, il 18%, sul 100%, nel 2026, il 1.000", "più del 25%, il 18%, sul 100%, nel 2026, il 1.000"),
        ("delle 8 schede, gli 8 rank", "delle 8 schede, gli 8 rank"),  # not one of the articles
    ],
)
def test_italian_elides_an_article_before_a_number_read_with_a_vowel(source, expected):
    assert typeset_text(source, "it") == expected
    assert typeset_text(expected, "it") == expected
    assert typeset_text(source, "fr") == source  # French has no such rule


def test_a_language_without_rules_is_left_alone():
    assert typeset_text("Question : yes ?", "en") == "Question : yes ?"


def test_code_pre_kbd_script_style_and_other_attributes_are_never_touched():
    html = page(
        '<p title="Titre : x" data-x="a ; b">Lancez <code>a : b ?</code> : puis <kbd>Ctrl !</kbd> !</p>'
        '<pre><code>print("x : y ?")\n</code></pre><script>var s = "a : b ?";</script>'
        '<style>a::after { content: " : "; }</style><a href="https://x.org/a ?b">lien</a>'
        '<div class="clipboard-copy-txt" id="cell-1">x = {"a" : 1} ; y ?</div>'
    )
    out = LexborHTMLParser(typeset_html(html, "fr"))
    assert out.css_first("p").attributes == {"title": f"Titre{NBSP}: x", "data-x": "a ; b"}
    assert out.css_first("p code").text() == "a : b ?"
    assert out.css_first("kbd").text() == "Ctrl !"
    assert out.css_first("pre").text() == 'print("x : y ?")\n'
    assert out.css_first("script").text() == 'var s = "a : b ?";'
    assert out.css_first("style").text() == 'a::after { content: " : "; }'
    assert out.css_first("a").attributes["href"] == "https://x.org/a ?b"
    assert out.css_first("p").text() == f"Lancez a : b ?{NBSP}: puis Ctrl !{NNBSP}!"
    assert out.css_first("#cell-1").text() == 'x = {"a" : 1} ; y ?'  # what a notebook's copy button copies


def test_spoken_attributes_follow_their_language():
    """alt, aria-label, title and data-label (a cell's heading, shown on a phone) are read aloud
    or shown: typeset in the language of their element (its own lang, or the nearest one), never
    inside code, never other attributes (data-md-color-scheme, href...)."""
    html = page(
        '<nav aria-label="Quand le modèle ne tient pas : FSDP"><img alt="Graphique : DDP ; ZeRO" src="a.png">'
        '<p lang="it"><abbr title="Domanda: 1 000 GB ?">x</abbr></p>'
        '<code title="a : b">c</code><a href="x" data-label="a : b" data-note="a : b" aria-label="« Trouvez le GPU »">y</a></nav>'
    )
    out = LexborHTMLParser(typeset_html(html, "fr"))
    assert out.css_first("nav").attributes["aria-label"] == f"Quand le modèle ne tient pas{NBSP}: FSDP"
    assert out.css_first("img").attributes["alt"] == f"Graphique{NBSP}: DDP{NNBSP}; ZeRO"
    assert out.css_first("img").attributes["src"] == "a.png"
    assert out.css_first("abbr").attributes["title"] == "Domanda: 1 000 GB ?".replace("0 GB", f"0{NBSP}GB")
    assert out.css_first("code").attributes["title"] == "a : b"
    assert out.css_first("a").attributes["data-label"] == f"a{NBSP}: b"
    assert out.css_first("a").attributes["data-note"] == "a : b"
    assert out.css_first("a").attributes["aria-label"] == f"«{NNBSP}Trouvez le GPU{NNBSP}»"


def test_a_space_split_from_its_sign_by_an_inline_element():
    """ "mot <em>x</em> :" is one run of text: the space before the colon is in another node."""
    out = typeset_html(
        page('<p>Voir <a href="#x">le tableau </a>: deux « <span lang="en">bus error</span> »</p>'), "fr"
    )
    assert body_text(out) == f"Voir le tableau{NBSP}: deux «{NNBSP}bus error{NNBSP}»"


def test_a_unit_after_a_superscript():
    """ "10<sup>9</sup> octets" (pymdownx.caret's 10^9^): the unit stays with its number."""
    out = typeset_html(page("<p>Go = 10<sup>9</sup> octets, Gio = 2<sup>30</sup> octets.</p>"), "fr")
    assert body_text(out) == f"Go = 109{NBSP}octets, Gio = 230{NBSP}octets."


def test_no_join_across_a_block_or_skipped_element():
    out = typeset_html(page("<p>fin </p><p>: début</p><p>a <code>b</code>: c</p>"), "fr")
    assert [p.text() for p in LexborHTMLParser(out).css("p")] == ["fin ", ": début", "a b: c"]


def test_lang_attributes_choose_the_rules():
    html = page('<p>Italien : <span lang="it">domanda: sì ?</span> et <q lang="en">Why ?</q></p>')
    assert body_text(typeset_html(html, "fr")) == f"Italien{NBSP}: domanda: sì ? et Why ?"
    italian_page = page('<p>Domanda: sì ? <span lang="fr">Question : oui ?</span></p>', lang="it")
    assert body_text(typeset_html(italian_page, "it")) == f"Domanda: sì ? Question{NBSP}: oui{NNBSP}?"


def test_the_title_and_the_finder_labels_are_typeset():
    html = (
        '<!DOCTYPE html><html lang="fr"><head><title>Notebook : mémoire</title></head><body>'
        '<script type="application/json" id="finder-labels">{"why": "Ce qui l’occupe : {parts}", "n": 3, '
        '"x": ["« a »"]}</script><script type="application/json" id="__config">{"a": "b : c"}</script></body></html>'
    )
    out = LexborHTMLParser(typeset_html(html, "fr"))
    assert out.css_first("title").text() == f"Notebook{NBSP}: mémoire"
    import json

    assert json.loads(out.css_first("#finder-labels").text()) == {
        "why": f"Ce qui l’occupe{NBSP}: {{parts}}",
        "n": 3,
        "x": [f"«{NNBSP}a{NNBSP}»"],
    }
    assert json.loads(out.css_first("#__config").text()) == {"a": "b : c"}  # not an island of the rule set


def test_a_page_with_nothing_to_do_is_returned_as_is():
    html = page("<p>Niente da fare qui</p>", lang="it")
    assert typeset_html(html, "it") is html


def test_a_broken_rule_set_names_the_file_and_key(tmp_path):
    bad = tmp_path / "typography.yaml"
    bad.write_text("skip: [code]\nunits: []\nlanguages:\n  fr:\n    space_before: {':': wide}\n", encoding="utf-8")
    with pytest.raises(RenderError, match=r"typography\.yaml: languages\.fr\.space_before\.:: "):
        rules(bad)


@pytest.mark.parametrize("sign", ["\u2009", "", " :", "\u00a0"])
def test_a_sign_is_visible_characters(tmp_path, sign):
    """A rule puts a space beside a sign by replacing the whitespace there; a sign that is or
    holds whitespace would make a rule of spaces beside spaces (and the typesetter skips text
    nodes without anything but whitespace)."""
    bad = tmp_path / "typography.yaml"
    bad.write_text(
        yaml.safe_dump(
            {"skip": ["code"], "units": [], "languages": {"fr": {"space_before": {sign: "nbsp"}}}}, allow_unicode=True
        ),
        encoding="utf-8",
    )
    with pytest.raises(RenderError, match=r"typography\.yaml: languages\.fr\.space_before"):
        rules(bad)


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        (
            "fr",
            "Mémoire par carte : 80 Go ; « ZeRO » ?",
            f"Mémoire par carte{NBSP}: 80{NBSP}Go{NNBSP}; «{NNBSP}ZeRO{NNBSP}»{NNBSP}?",
        ),
        ("fr", "1 000 Go/s et 100 %", f"1{NNBSP}000{NBSP}Go/s et 100{NBSP}%"),
        ("fr", " : début", f"{NBSP}: début"),
        ("fr", "rien à faire", "rien à faire"),
        ("it", "Memoria: 16 GB", f"Memoria: 16{NBSP}GB"),
        ("it", "8 schede !", "8 schede !"),
    ],
)
def test_a_search_text_without_markup_gets_the_pages_typography(lang, text, expected):
    """The search index's plain texts take a short path (no HTML parse); expected spaces typed
    from hooks/render/typography.yaml's rules (fr: no-break space before ':' and units, thin one
    before ';' '?' and inside « », between thousands; it: only number and unit)."""
    from hooks.render.typography import typeset_search_index

    index = {"config": {}, "docs": [{"location": "", "title": text, "text": text}]}
    assert typeset_search_index(index, lang)["docs"][0] == {"location": "", "title": expected, "text": expected}
