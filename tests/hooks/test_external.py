"""No external loaders (../shared/cases/integrity.md, "Runtime"): a page never loads a script,
stylesheet or font from another origin, and data in a <script> never swallows the page.

The oracle for "the page's scripts still load" is html5lib, an independent implementation
of the HTML5 parsing algorithm: the elements it finds are the ones a browser creates.
"""

from __future__ import annotations

import html5lib
import pytest

from hooks.checks.external_loads import check_no_external_loads, strip_inert_mathjax
from hooks.errors import RenderError
from hooks.finder.page import finder_form
from hooks.render.script_json import script_json
from hooks.render.typography import typeset_html

SITE = "https://vramfarm.github.io"
NAMESPACE = {"h": "http://www.w3.org/1999/xhtml"}


def scripts_a_browser_creates(page: str) -> list[str]:
    tree = html5lib.parse(page)
    return [script.get("src") or f"inline:{script.get('id')}" for script in tree.iterfind(".//h:script", NAMESPACE)]


def page(body: str) -> str:
    return f'<!DOCTYPE html><html lang="fr"><head><title>t</title></head><body>{body}<script src="after.js"></script></body></html>'


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_finder_label_cannot_swallow_the_page(data_dir, lang):
    """A label that would open a comment or a script is refused by the data's schema (text
    only, hooks/data/schemas.py ``plain_text``), in one line naming the file and the key; what
    a label may hold (a ``-->``, ``&``, French quotes) leaves the page's
    scripts as they are once the label is in the form's JSON island."""
    path = data_dir / "finder.yaml"
    text = path.read_text(encoding="utf-8")
    old = "legend: {it: La tua scelta, fr: Votre choix}"
    assert old in text, "update this test: the legend label changed"
    path.write_text(text.replace(old, 'legend: {it: "<!--<script>", fr: "<!--<script> « x »"}'), encoding="utf-8")
    with pytest.raises(RenderError, match=r"finder\.yaml: labels\.legend\.it: .*'<' would start HTML markup"):
        finder_form({"assets": "../assets"}, lang)
    path.write_text(text.replace(old, 'legend: {it: "--> & ]]>", fr: "--> « x » & ]]>"}'), encoding="utf-8")
    form = finder_form({"assets": "../assets"}, lang)
    built = typeset_html(page(form), lang)  # the French typography rewrites the JSON island: it must stay safe
    assert scripts_a_browser_creates(built)[-1] == "after.js"
    assert scripts_a_browser_creates(built)[:2] == ["inline:finder-labels", "../assets/finder.js"]
    check_no_external_loads(built, SITE)


def test_script_json_round_trips_and_hides_markup():
    value = {"label": "<!--<script></script> & \u2028 « ok »"}
    text = script_json(value)
    assert "<" not in text and ">" not in text and "&" not in text
    assert __import__("json").loads(text) == value


@pytest.mark.parametrize(
    "html, message",
    [
        (
            '<script src="https://unpkg.com/mermaid@11/dist/mermaid.min.js"></script>',
            r"loads a script from 'https://unpkg\.com/mermaid",
        ),
        ('<script src="//cdn.example.org/x.js"></script>', r"loads a script from '//cdn\.example\.org/x\.js'"),
        ('<script src=""> </script>', r'has a <script src=""> \(an empty source\)'),
        (
            '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
            r"loads a stylesheet from 'https://fonts\.googleapis",
        ),
        (
            '<link rel="preload" as="font" href="https://fonts.gstatic.com/r.woff2">',
            r"loads a preload from 'https://fonts\.gstatic",
        ),
        (
            "<style>@font-face { src: url(https://fonts.gstatic.com/r.woff2) }</style>",
            r"a style loads 'https://fonts\.gstatic\.com/r\.woff2'",
        ),
        (
            "<style>@import 'https://cdn.example.org/a.css';</style>",
            r"a style loads 'https://cdn\.example\.org/a\.css'",
        ),
        (
            '<p style="background: url(\'http://example.org/x.png\')">x</p>',
            r"a style loads 'http://example\.org/x\.png'",
        ),
        ('<img src="https://example.org/x.png" alt="x">', r"loads <img src> from 'https://example\.org/x\.png'"),
        (
            '<img srcset="a.png 1x, https://example.org/x.png 2x" alt="x">',
            r"loads <img srcset> from 'https://example\.org/x\.png'",
        ),
        ('<iframe src="https://www.youtube.com/embed/x"></iframe>', r"loads <iframe src>"),
        (
            '<pre class="mermaid"><code>graph TD; A--&gt;B</code></pre>',
            r"has a Mermaid diagram: Material's JavaScript would load Mermaid from unpkg\.com",
        ),
        (
            '<script type="application/json" id="x">{"a": "<!--<script>"}</script>',
            r"an inline script \(x\) holds '<!--' or '<script'",
        ),
        (
            '<svg><script href="https://cdn.example.org/x.js"></script></svg>',
            r"loads <script href> from 'https://cdn\.example\.org/x\.js'",
        ),
        (
            '<table background="https://example.org/bg.png"><tr><td>x</td></tr></table>',
            r"loads <table background> from",
        ),
        (
            '<svg><filter id="f"><feImage href="https://example.org/x.png"/></filter></svg>',
            r"loads <feImage href> from",
        ),
        (
            "<style>p { background: image-set('https://example.org/x.png' 1x) }</style>",
            r"a style loads 'https://example\.org/x\.png'",
        ),
    ],
)
def test_external_loads_are_refused(html, message):
    with pytest.raises(RenderError, match=message):
        check_no_external_loads(page(html), SITE)


def test_local_inline_and_same_origin_resources_and_plain_links_pass():
    check_no_external_loads(
        page(
            '<link rel="stylesheet" href="../assets/guide.css"><link rel="canonical" href="https://elsewhere.org/x/">'
            '<a href="https://squidfunk.github.io/mkdocs-material/">Material</a><img src="data:image/png;base64,AAAA" alt="">'
            f'<script src="{SITE}/assets/x.js"></script><style>.a {{ background: url("data:image/svg+xml,%3csvg/%3e") }}</style>'
            '<script type="application/json" id="__config">{"base": ".."}</script>'
        ),
        SITE,
    )


NOTEBOOK_HEAD = (
    '<style>.jp-x { color: red }</style>\n<!-- Load mathjax -->\n<script src=""> </script>\n'
    '<!-- MathJax configuration -->\n<script type="text/x-mathjax-config">\n    init_mathjax = function() {};\n'
    '</script>\n<!-- End of mathjax configuration -->\n<div class="jp-Notebook">cells</div>'
)


def test_the_empty_mathjax_script_of_notebook_pages_goes():
    out = strip_inert_mathjax(NOTEBOOK_HEAD)
    assert 'src=""' not in out and "x-mathjax-config" not in out
    assert out.startswith("<style>.jp-x { color: red }</style>") and out.endswith(
        '<div class="jp-Notebook">cells</div>'
    )
    check_no_external_loads(page(out), SITE)
