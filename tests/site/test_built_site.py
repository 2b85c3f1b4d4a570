"""The built site, both languages (issue 2): languages, switcher, code from snippets,
parity of structure, computed tables, no tracebacks or raw notebooks."""

from __future__ import annotations

import pytest
from pygments import lex
from pygments.lexers import get_lexer_for_filename
from pygments.token import Comment

from tests.conftest import REPO_ROOT
from tests.site.pages import code_blocks, italian_pages, snippet_includes, soup, source_page, switcher_target

pytestmark = pytest.mark.slow


def without_comments(code: str, filename: str) -> str:
    lexer = get_lexer_for_filename(filename, stripnl=False, ensurenl=False)
    kept = "".join(value for token, value in lex(code, lexer) if token not in Comment)
    return "\n".join(line.rstrip() for line in kept.splitlines())


@pytest.fixture(scope="module")
def page_pairs(built_site):
    """(italian file, french file) for every page of the site."""
    pairs = [(built_site / rel, built_site / "fr" / rel) for rel in italian_pages(built_site)]
    assert len(pairs) >= 2
    return pairs


def test_html_lang_per_language(page_pairs):
    for it_page, fr_page in page_pairs:
        if it_page.name == "404.html":
            continue  # the per-language 404 pages: tests/site/test_gates_*
        assert soup(it_page).html["lang"] == "it", it_page
        assert fr_page.exists(), f"{fr_page} missing"
        assert soup(fr_page).html["lang"] == "fr", fr_page


def test_switcher_links_to_the_same_page(page_pairs, built_site):
    for it_page, fr_page in page_pairs:
        if it_page.name == "404.html":
            continue
        assert switcher_target(it_page, built_site, "fr") == fr_page
        assert switcher_target(fr_page, built_site, "it") == it_page


def test_code_blocks_are_the_snippet_files(page_pairs, built_site):
    checked = 0
    for it_page, fr_page in page_pairs:
        stem = source_page(it_page.relative_to(built_site))
        if stem is None:
            continue
        includes = snippet_includes(stem, "it")
        assert includes == snippet_includes(stem, "fr"), f"{stem}: the two languages include different snippets"
        if not includes:
            continue
        it_blocks, fr_blocks = code_blocks(soup(it_page)), code_blocks(soup(fr_page))
        assert len(it_blocks) == len(includes) == len(fr_blocks), f"{stem}: every code block must come from a snippet"
        for name, it_code, fr_code in zip(includes, it_blocks, fr_blocks, strict=True):
            source = (REPO_ROOT / "snippets" / name).read_text(encoding="utf-8")
            assert it_code == source, f"{stem}: Italian block differs from snippets/{name}"
            assert without_comments(fr_code, name) == without_comments(source, name), (
                f"{stem}: French code differs from snippets/{name}"
            )
            checked += 1
    assert checked >= 8


def test_french_comments_are_french(built_site):
    codes = "\n".join(code_blocks(soup(built_site / "fr" / "index.html")))
    assert "# PyTorch pur, Hugging Face Trainer" in codes
    assert "PyTorch puro" not in codes


def structure(page):
    article = page.select_one("article")
    return {
        "anchors": [h["id"] for h in article.select("h1[id], h2[id], h3[id], h4[id]")],
        "code blocks": len(article.select("div.highlight")),
        "tables": len(article.select("table")),
        "admonitions": len(article.select(".admonition")),
        "images": len(article.select("img")),
    }


def test_both_languages_have_the_same_structure(page_pairs):
    for it_page, fr_page in page_pairs:
        if it_page.name == "404.html":
            continue
        assert structure(soup(it_page)) == structure(soup(fr_page)), it_page


def test_guide_keeps_its_sections(built_site):
    anchors = structure(soup(built_site / "index.html"))["anchors"]
    for anchor in (
        "more-than-one-card",
        "data-parallel",
        "fsdp-zero",
        "tensor-pipeline",
        "nvlink-pcie",
        "rent",
        "pitfalls",
        "faq",
        "find-gpu",
    ):
        assert anchor in anchors


@pytest.mark.parametrize(
    "lang,prefix,unit,header", [("it", "", "GB", "Per scheda, 8 schede"), ("fr", "fr/", "Go", "Par carte, 8 cartes")]
)
def test_memory_table_in_both_languages(built_site, lang, prefix, unit, header):
    page = soup(built_site / prefix / "index.html")
    table = next(t for t in page.select("article table") if "FULL_SHARD" in t.get_text())
    assert [th.get_text() for th in table.select("th")][-1] == header
    rows = {
        tr.select("td")[0].get_text().split(",")[0]: [
            td.get_text().replace("\u00a0", " ") for td in tr.select("td")[2:]
        ]
        for tr in table.select("tbody tr")
    }
    # ../shared/cases/memory.md: the guide's own table for 8B
    assert rows == {
        "DDP": [f"128 {unit}"] * 2,
        "ZeRO-1": [f"56 {unit}", f"44 {unit}"],
        "ZeRO-2": [f"44 {unit}", f"30 {unit}"],
        "ZeRO-3": [f"32 {unit}", f"16 {unit}"],
    }


def test_no_traceback_or_raw_notebook(built_site):
    for page in built_site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "Traceback (most recent call last)" not in text, page
        assert '"nbformat"' not in text and '"cell_type"' not in text, page


def test_no_placeholder_left(built_site):
    for page in built_site.rglob("*.html"):
        text = soup(page).get_text()
        assert "{{" not in text and "--8<--" not in text, page
