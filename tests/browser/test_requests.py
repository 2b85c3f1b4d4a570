"""In Chromium, on the site built and served as a project site under /REPO/ (case 1):
every page loads with no failed request and no request leaving the site, its links
reach pages, the language switcher keeps the section, a missing French page shows the
French 404 page, and search answers in the page's language (case 2)."""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import site_pages

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def page_loads(every_page):
    """Every page, loaded once (``every_page``, tests/browser/conftest.py):
    {page path: (requests, links found in the rendered DOM, requests to other origins)}.

    Requests to any other origin were recorded and aborted, so nothing left the machine.
    """
    return {path: (load["requests"], load["links"], load["outside"]) for path, load in every_page.items()}


def test_every_page_was_loaded(page_loads, site_server):
    assert sorted(page_loads) == sorted(site_pages(site_server.root))
    assert "" in page_loads and "fr/" in page_loads and "404.html" in page_loads and "fr/404.html" in page_loads


def test_no_request_fails(page_loads):
    failed = {
        path: [(r.url, r.status or r.failure) for r in requests if r.failure or r.status is None or r.status >= 400]
        for path, (requests, _, _) in page_loads.items()
    }
    assert not {path: f for path, f in failed.items() if f}


def test_no_request_leaves_the_site(page_loads):
    assert not {path: outside for path, (_, _, outside) in page_loads.items() if outside}


def test_every_request_stays_under_the_base_path(page_loads, site_server):
    stray = {
        path: [r.url for r in requests if not urlsplit(r.url).path.startswith(site_server.prefix)]
        for path, (requests, _, _) in page_loads.items()
    }
    assert not {path: s for path, s in stray.items() if s}


def test_links_reach_pages(page_loads, site_server):
    """Every same-origin link of every rendered page answers 200 (fragments: tests/site)."""
    status = {}
    for _, links, _ in page_loads.values():
        for link in links:
            url = link.split("#")[0]
            if url.startswith(site_server.origin) and url not in status:
                try:
                    with urllib.request.urlopen(url, timeout=10) as response:
                        status[url] = response.status
                except urllib.error.HTTPError as exc:
                    status[url] = exc.code
    assert status
    assert not {url: code for url, code in status.items() if code != 200}


def test_switcher_keeps_the_section(page, site_server):
    """Switching language on memory-formulas/#<id> lands on fr/memory-formulas/#<id>, scrolled there."""
    page.goto(site_server.url("memory-formulas/"), wait_until="networkidle")
    section = page.eval_on_selector_all("article h2[id]", "els => els.map(e => e.id)")[-1]
    page.goto(site_server.url(f"memory-formulas/#{section}"), wait_until="networkidle")
    # Material's navigation.tracking may move the hash to the section in view (replaceState)
    # at any moment: the promise is the section of the moment of the click, kept across the switch
    page.evaluate(
        "window.addEventListener('click', () => sessionStorage.setItem('hash_at_click', location.hash), true)"
    )
    page.hover(".md-header__option .md-select")
    page.click('a.md-select__link[hreflang="fr"]')
    page.wait_for_url(lambda url: url.startswith(site_server.url("fr/memory-formulas/#")))
    hash_at_click = page.evaluate("sessionStorage.getItem('hash_at_click')")
    assert hash_at_click and hash_at_click.lstrip("#") in page.eval_on_selector_all(
        "article h2[id]", "els => els.map(e => e.id)"
    )
    assert page.evaluate("location.hash") == hash_at_click
    assert page.eval_on_selector("html", "e => e.lang") == "fr"
    assert page.eval_on_selector(hash_at_click, "e => e.getBoundingClientRect().top < innerHeight")


def test_switcher_follows_hash_changes(page, site_server):
    page.goto(site_server.url("fr/memory-formulas/"), wait_until="networkidle")
    section = page.eval_on_selector_all("article h2[id]", "els => els.map(e => e.id)")[0]
    page.click(f'article a.headerlink[href="#{section}"]')
    # hashchange is dispatched after the click returns: wait for it (a limit no load reaches), then check
    page.wait_for_function("() => location.hash !== ''", timeout=60_000)
    page.wait_for_function(
        "h => document.querySelector('a.md-select__link[hreflang=\"it\"]').getAttribute('href').endsWith(h)",
        arg=f"#{section}",
        timeout=60_000,
    )
    href = page.get_attribute('a.md-select__link[hreflang="it"]', "href")
    assert href.endswith(f"/REPO/memory-formulas/#{section}"), href


def test_alternate_links_survive_the_page_scripts(page, site_server):
    """lang-switch.js hides the hreflang links from Material for one moment only."""
    page.goto(site_server.url("memory-formulas/"), wait_until="networkidle")
    assert page.eval_on_selector_all('link[rel="alternate"][hreflang]', "els => els.map(e => e.hreflang)") == [
        "it",
        "fr",
    ]


@pytest.mark.parametrize(
    ("missing", "lang", "lands_on"),
    [
        ("no-such-page/", "it", "no-such-page/"),
        ("fr/no-such-page/", "fr", "fr/404.html"),
    ],
)
def test_a_missing_page_shows_the_404_of_its_language(page, site_server, missing, lang, lands_on):
    response = page.goto(site_server.url(missing), wait_until="networkidle")
    assert response.status == 404
    page.wait_for_url(site_server.url(lands_on))
    assert page.eval_on_selector("html", "e => e.lang") == lang
    nav = page.eval_on_selector_all("nav.md-nav--primary a.md-nav__link[href]", "els => els.map(a => a.href)")
    french = [link.startswith(site_server.url("fr/")) for link in nav]
    assert nav and all(french) == (lang == "fr") and any(french) == (lang == "fr")


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_search_answers_in_the_page_language(page, site_server, lang):
    root = site_server.url("fr/" if lang == "fr" else "")
    page.goto(root, wait_until="networkidle")
    # Material reads the query on keyup (not on input): type it as a reader does.
    page.click("input.md-search__input")  # the header search field (desktop width)
    page.keyboard.type("FSDP")
    page.wait_for_selector(".md-search-result__item a")
    results = page.eval_on_selector_all(".md-search-result__item a[href]", "els => els.map(a => a.href)")
    assert results
    in_french = [url.startswith(site_server.url("fr/")) for url in results]
    assert all(in_french) if lang == "fr" else not any(in_french), results
    pages = [url.split("#")[0] for url in results if "#" not in url]
    assert len(pages) == len(set(pages)), f"a page twice: {pages}"
