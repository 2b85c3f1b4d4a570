"""Gate: every page parses as HTML without errors, and every internal link, asset and
anchor of every page (both languages, 404 pages included) resolves in the built site."""

from __future__ import annotations

from collections import Counter

import html5lib
import pytest

from tests.site.test_gates_common import DEFAULT_SITE_URL, html_files, ids, parsed, resolve

pytestmark = pytest.mark.slow

# Attributes that make the browser fetch or navigate to a URL.
URL_ATTRIBUTES = {"a": "href", "link": "href", "script": "src", "img": "src", "source": "src",
                  "iframe": "src", "video": "src", "audio": "src", "embed": "src", "object": "data"}


def html_errors(markup: str | bytes) -> list[str]:
    """Parse errors html5lib reports (line:column code), empty for well-formed HTML."""
    parser = html5lib.HTMLParser(strict=False)
    parser.parse(markup)
    return [f"{line}:{col} {code} {data or ''}".rstrip() for (line, col), code, data in parser.errors]


def page_urls(soup):
    """(tag, url) for every URL a page fetches or links to; srcset gives one per candidate."""
    for tag, attr in URL_ATTRIBUTES.items():
        for el in soup.find_all(tag, attrs={attr: True}):
            yield tag, el[attr]
    for el in soup.find_all(attrs={"srcset": True}):
        for candidate in el["srcset"].split(","):
            if candidate.strip():
                yield el.name, candidate.split()[0]


def broken_links(site, site_url: str = DEFAULT_SITE_URL) -> list[str]:
    """Every internal URL of every page that reaches no file, or no id in its target."""
    problems = []
    for page in html_files(site):
        for tag, href in page_urls(parsed(page)):
            if href.startswith(("mailto:", "tel:", "data:", "javascript:")):
                continue
            target = resolve(site, page, href, site_url)
            where = f"{page.relative_to(site)}: <{tag}> {href!r}"
            if target.same_origin and not target.internal:
                problems.append(f"{where} -> {target.url} is outside the site's base path")
            if not target.internal:
                continue
            if target.file is None:
                problems.append(f"{where} -> nothing at {target.url}")
            elif target.fragment and target.file.suffix == ".html" and target.fragment not in ids(target.file):
                problems.append(f"{where} -> no id {target.fragment!r} in {target.file.relative_to(site)}")
    return problems


def test_html_parses_without_errors(built_site):
    errors = {str(page.relative_to(built_site)): html_errors(page.read_bytes()) for page in html_files(built_site)}
    assert not {page: errs for page, errs in errors.items() if errs}


def test_the_parser_reports_broken_html():
    assert html_errors("<!doctype html><html lang=it><title>x</title><p>ok</p></html>") == []
    assert html_errors("<!doctype html><title>x</title><p><b>bold</p></i><td>")


def test_internal_links_assets_and_anchors_resolve(built_site):
    assert html_files(built_site), "no HTML pages built"
    assert not broken_links(built_site)


def test_ids_are_unique_per_page(built_site):
    duplicated = {}
    for page in html_files(built_site):
        counts = Counter(el["id"] for el in parsed(page).find_all(id=True))
        if dups := sorted(i for i, n in counts.items() if n > 1):
            duplicated[str(page.relative_to(built_site))] = dups
    assert not duplicated


def test_the_link_gate_sees_a_broken_link_and_anchor(built_site, tmp_path):
    """Copy one page, break a link and an anchor: the gate reports both."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(built_site, site)
    page = site / "index.html"
    html = page.read_text(encoding="utf-8")
    page.write_text(html.replace("</article>", '<a href="no-such-page/">x</a><a href="#no-such-id">y</a></article>', 1),
                    encoding="utf-8")
    problems = broken_links(site)
    assert any("no-such-page/" in p for p in problems), problems
    assert any("no-such-id" in p for p in problems), problems
