"""Gates for the two languages of the built site (issue 6; cases 1 and 2 of shared/cases/site.md):

- the ``<link rel="alternate" hreflang>`` of each page, the sitemap's alternates and the
  language switcher name the same pages;
- each language has its own 404 page (language, text, navigation, search);
- case 1: built as a project site (``/REPO/``), every switcher link and every internal
  URL stays under the base path and reaches a file;
- case 2: one search index per language, each page once, French pages only in French.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

import material
import pytest
from bs4 import BeautifulSoup, Doctype

from hooks.workarounds.i18n_outputs import rebase_config, split_search_index
from tests.site.test_gates_common import (
    DEFAULT_SITE_URL,
    LANGUAGES,
    SUBPATH_SITE_URL,
    html_files,
    page_language,
    page_url,
    parsed,
    resolve,
    subpath_site,
)
from tests.site.test_gates_links import broken_links

SITEMAP_NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9", "x": "http://www.w3.org/1999/xhtml"}
EXPECTED_404 = {"it": "Pagina non trovata", "fr": "Page introuvable"}


def content_pages(site):
    return [p for p in html_files(site) if p.name != "404.html"]


def language_root(site, lang):
    return site if lang == LANGUAGES[0] else site / lang


def head_alternates(site, page, site_url=DEFAULT_SITE_URL):
    return {
        el["hreflang"]: resolve(site, page, el["href"], site_url)
        for el in parsed(page).select('link[rel="alternate"][hreflang]')
    }


def switcher(site, page, site_url=DEFAULT_SITE_URL):
    return {
        el["hreflang"]: resolve(site, page, el["href"], site_url)
        for el in parsed(page).select("a.md-select__link[hreflang]")
    }


def sitemap_alternates(site, site_url=DEFAULT_SITE_URL):
    """{page file: {lang: file}} from sitemap.xml (xhtml:link alternates)."""
    root = ET.parse(site / "sitemap.xml").getroot()
    home = site / "index.html"
    out = {}
    for url in root.findall("s:url", SITEMAP_NS):
        loc = url.find("s:loc", SITEMAP_NS).text
        page = resolve(site, home, loc, site_url).file
        out[page] = {
            link.get("hreflang"): resolve(site, home, link.get("href"), site_url).file
            for link in url.findall("x:link", SITEMAP_NS)
        }
    return out


@pytest.fixture(scope="module")
def project_site(tmp_path_factory):
    return subpath_site(tmp_path_factory)


# ---------------------------------------------------------------- alternates agree
@pytest.mark.slow
def test_hreflang_sitemap_and_switcher_agree(built_site):
    sitemap = sitemap_alternates(built_site)
    problems = []
    for page in content_pages(built_site):
        where = page.relative_to(built_site)
        head = {lang: t.file for lang, t in head_alternates(built_site, page).items()}
        links = {lang: t.file for lang, t in switcher(built_site, page).items()}
        if set(head) != set(LANGUAGES) or None in head.values():
            problems.append(f"{where}: hreflang alternates {head}")
        if links != head:
            problems.append(f"{where}: switcher {links} != hreflang {head}")
        if head.get(page_language(built_site, page)) != page:
            problems.append(f"{where}: its own-language alternate is not itself")
        if page not in sitemap:
            problems.append(f"{where}: not in sitemap.xml")
        elif sitemap[page] != head:
            problems.append(f"{where}: sitemap alternates {sitemap[page]} != hreflang {head}")
    assert not problems


@pytest.mark.slow
def test_translations_point_back(built_site):
    """A page's French alternate has the page as its Italian alternate, and vice versa."""
    for page in content_pages(built_site):
        for lang, target in head_alternates(built_site, page).items():
            back = head_alternates(built_site, target.file)[page_language(built_site, page)].file
            assert back == page or target.file.parent == language_root(built_site, lang), (page, lang)


# ----------------------------------------------------------------------- 404 pages
@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_language_has_its_own_404(built_site, lang):
    page = language_root(built_site, lang) / "404.html"
    assert page.exists(), f"no 404 page for {lang}"
    soup = parsed(page)
    assert soup.html["lang"] == lang
    assert soup.select_one("article h1").get_text(strip=True) == EXPECTED_404[lang]
    home = parsed(language_root(built_site, lang) / "index.html")
    assert soup.title.get_text().endswith(home.select_one(".md-header__topic .md-ellipsis").get_text(strip=True))
    nav = [resolve(built_site, page, a["href"]).file for a in soup.select("nav.md-nav--primary a.md-nav__link[href]")]
    assert nav and all(f is not None and page_language(built_site, f) == lang for f in nav), nav
    homes = {code: t.file for code, t in switcher(built_site, page).items()}
    assert homes == {code: language_root(built_site, code) / "index.html" for code in LANGUAGES}


# -------------------------------------------------------- case 1: a project site
@pytest.mark.slow
def test_project_site_switcher_links_exist_under_the_base_path(project_site):
    base = SUBPATH_SITE_URL
    problems = []
    for page in html_files(project_site):
        links = {
            **switcher(project_site, page, base),
            **{f"head:{k}": v for k, v in head_alternates(project_site, page, base).items()},
        }
        for lang, target in links.items():
            if not target.url.startswith(base) or target.file is None:
                problems.append(f"{page.relative_to(project_site)} [{lang}] -> {target.url}")
    assert not problems


@pytest.mark.slow
def test_project_site_internal_urls_stay_under_the_base_path(project_site):
    assert not broken_links(project_site, SUBPATH_SITE_URL)


# ---------------------------------------------------- case 2: search per language
def search_index(site, lang):
    path = language_root(site, lang) / "search" / "search_index.json"
    assert path.exists(), f"no search index for {lang}: {path}"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGUAGES)
def test_search_index_per_language(built_site, lang):
    index = search_index(built_site, lang)
    root = language_root(built_site, lang)
    assert index["config"]["lang"] == [lang]
    pages = [doc["location"] for doc in index["docs"] if "#" not in doc["location"]]
    assert len(pages) == len(set(pages)), f"a page twice in the {lang} index: {pages}"
    for doc in index["docs"]:
        target = resolve(built_site, root / "index.html", doc["location"])
        assert target.file is not None, f"{lang} index: {doc['location']} reaches nothing"
        assert page_language(built_site, target.file) == lang, f"{lang} index holds {target.url}"
        if not target.fragment:
            assert parsed(target.file).html["lang"] == lang


@pytest.mark.slow
def test_search_indexes_cover_their_pages_in_their_language(built_site):
    """Every page of a language is in its index, with the title of that language's page."""
    other = {}
    for lang in LANGUAGES:
        root = language_root(built_site, lang)
        index = {doc["location"]: doc for doc in search_index(built_site, lang)["docs"]}
        for page in content_pages(built_site):
            if page_language(built_site, page) != lang:
                continue
            location = page_url(root, page)
            assert location in index, f"{page.relative_to(built_site)} missing from the {lang} index"
            soup = parsed(page)
            h1 = soup.select_one("article h1")
            titles = {soup.title.get_text(strip=True).split(" - ")[0]} if soup.title else set()
            titles |= {h1.get_text(" ", strip=True).rstrip("¶").strip()} if h1 else set()
            assert index[location]["title"] in titles, (
                f"{lang} index: {location} titled {index[location]['title']!r}, page: {titles}"
            )
            other.setdefault(location, []).append(index[location]["text"])
    shared = {
        loc
        for loc, texts in other.items()
        if len(texts) == len(LANGUAGES) and len(set(texts)) < len(texts) and texts[0]
    }
    assert not shared, f"the same text in two languages' indexes: {shared}"


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGUAGES)
def test_pages_search_their_own_language(built_site, lang):
    """Material fetches ``<__config.base>search/search_index.json``: it must be the page's language."""
    expected = language_root(built_site, lang) / "search" / "search_index.json"
    for page in html_files(built_site):
        if page_language(built_site, page) != lang:
            continue
        config = json.loads(parsed(page).select_one("script#__config").string)
        base = config["base"] if config["base"].endswith("/") else config["base"] + "/"
        assert resolve(built_site, page, base + "search/search_index.json").file == expected, page


# --------------------------------------------------- the hook's plain functions
def test_split_search_index():
    merged = {
        "config": {"lang": ["it", "fr"], "separator": "x"},
        "docs": [
            {"location": "", "title": "Guida", "text": "a"},
            {"location": "memory-formulas/#sharding", "title": "Sharding", "text": "b"},
            {"location": "fr/", "title": "Guide", "text": "c"},
            {"location": "fr/memory-formulas/#sharding", "title": "Sharding", "text": "d"},
            {"location": "fresh/", "title": "Nuova", "text": "e"},
        ],
    }
    split = split_search_index(merged, ["it", "fr"], "it")
    assert [d["location"] for d in split["it"]["docs"]] == ["", "memory-formulas/#sharding", "fresh/"]
    assert [d["location"] for d in split["fr"]["docs"]] == ["", "memory-formulas/#sharding"]
    assert split["fr"]["config"] == {"lang": ["fr"], "separator": "x"}
    assert merged["docs"][2]["location"] == "fr/"  # the input is left alone


@pytest.mark.parametrize(
    ("base", "expected"),
    [("..", "../fr/"), ("../..", "../../fr/"), ("/", "/fr/"), ("/REPO/", "/REPO/fr/"), (".", "./fr/")],
)
def test_rebase_config(base, expected):
    html = f'<script id="__config" type="application/json">{{"base": "{base}", "x": "<b>"}}</script>'
    out = rebase_config(html, "fr")
    config = json.loads(re.search(r">(.*)</script>", out).group(1))
    assert config == {"base": expected, "x": "<b>"}
    assert "<b>" not in out


# ------------------------------------------- no English in either language's interface
MATERIAL_LANGUAGES = Path(material.__file__).parent / "templates" / "partials" / "languages"
# English that other tools write (not in Material's en.html): mkdocs-jupyter's copy button,
# Python-Markdown's permalink and footnote titles, Material's footer line.
OTHER_ENGLISH = ("Made with", "Permanent link", "Copy to Clipboard", "Copied!", "Jump back to footnote")
INTERFACE_ATTRIBUTES = ("aria-label", "title", "placeholder", "alt")


def material_strings(lang: str) -> dict[str, str]:
    """Material's interface strings for ``lang`` (its partials/languages/<lang>.html)."""
    text = (MATERIAL_LANGUAGES / f"{lang}.html").read_text(encoding="utf-8")
    return {
        key: json.loads(f'"{value}"')
        for key, value in re.findall(r'^\s*"([\w.]+)": "((?:[^"\\]|\\.)*)",?$', text, re.MULTILINE)
    }


def interface_texts(page) -> list[str]:
    """What a page says around its article, and its attributes' texts everywhere (the
    headings' permalinks, buttons), without passages marked with another language (read
    once per content: the English and the spelling gates read every page)."""
    return list(_interface_texts(page.read_text(encoding="utf-8")))


@lru_cache(maxsize=64)
def _interface_texts(html: str) -> tuple[str, ...]:
    soup = BeautifulSoup(html, "html.parser")
    assert soup.html is not None
    lang = str(soup.html["lang"])
    for el in soup.select("[lang]"):
        if el is not soup.html and not str(el["lang"]).startswith(lang):
            el.decompose()
    texts = [
        " ".join(str(el[attr]).split()) for el in soup.find_all(True) for attr in INTERFACE_ATTRIBUTES if el.get(attr)
    ]
    config = soup.select_one("script#__config")
    texts += list(json.loads(config.string or "")["translations"].values()) if config else []
    for el in soup.select("script, style, article, svg"):
        el.decompose()
    texts += [" ".join(s.split()) for s in soup.find_all(string=True) if s.strip() and not isinstance(s, Doctype)]
    return tuple(texts)


@pytest.mark.slow
def test_no_english_interface_string(built_site):
    english = material_strings("en")
    problems = []
    for page in html_files(built_site):
        lang = page_language(built_site, page)
        own = material_strings(lang)
        untranslated = {
            value for key, value in english.items() if not key.startswith("search.config") and own.get(key) != value
        }
        problems.extend(
            f"{page.relative_to(built_site)}: {text!r}"
            for text in interface_texts(page)
            if text in untranslated or any(phrase in text for phrase in OTHER_ENGLISH)
        )
    assert not problems


def test_the_english_check_sees_english():
    """Material's English strings and the other tools' phrases are what the check looks for."""
    assert material_strings("en")["top"] == "Back to top" and material_strings("fr")["top"] != "Back to top"
    assert material_strings("it")["clipboard.copy"] == "Copia"


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGUAGES)
def test_powers_are_superscripts(built_site, lang):
    """Reader case: the formulas page shows 10⁹, not a literal "10^9^" (pymdownx.caret)."""
    for page in html_files(language_root(built_site, lang)):
        if page_language(built_site, page) != lang:
            continue
        article = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select_one("article")
        for el in article.select("pre, code, script, style, .clipboard-copy-txt") if article else []:
            el.decompose()
        assert article is None or not re.search(r"\^\S", article.get_text()), page
    formulas = parsed(language_root(built_site, lang) / "memory-formulas" / "index.html").select_one("article")
    assert {"9", "30"} <= {sup.get_text() for sup in formulas.select("sup")}


@pytest.mark.slow
def test_404_links_work_wherever_the_page_is_served(project_site):
    """GitHub Pages serves the 404 page at the missing URL, at any depth: built as a project
    site, every link and asset of both 404 pages reaches a file under /REPO/ when the page
    is served at /REPO/a/b/c/ or /REPO/fr/a/b/c/."""
    from urllib.parse import unquote, urljoin, urlsplit

    from tests.site.test_gates_links import page_urls

    base = urlsplit(SUBPATH_SITE_URL)
    problems = []
    for lang in LANGUAGES:
        page = language_root(project_site, lang) / "404.html"
        served_at = SUBPATH_SITE_URL + ("" if lang == LANGUAGES[0] else f"{lang}/") + "a/b/c/"
        urls = [href for _, href in page_urls(parsed(page)) if not href.startswith(("mailto:", "data:", "javascript:"))]
        assert urls, page
        for href in urls:
            parts = urlsplit(urljoin(served_at, href))
            if parts.netloc != base.netloc:
                continue  # another site (Material's home page in the footer)
            rel = unquote(parts.path[len(base.path) :]) if parts.path.startswith(base.path) else None
            target = None if rel is None else project_site / rel
            if target is not None and (rel == "" or rel.endswith("/")):
                target = target / "index.html"
            if target is None or not target.is_file():
                problems.append(f"{page.relative_to(project_site)}: {href!r} -> {parts.path}")
    assert not problems
