"""Gate: every page parses as HTML without errors, and every internal link, asset and
anchor of every page (both languages, 404 pages included) resolves in the built site.

Links out (no network here: their form and their host are checked): every link to another
origin is a plain https ``<a>`` to an allowed host (the papers, each named framework's
documentation, the rental service's pages configured in mkdocs.yml ``extra.rental_links``);
nothing else names another origin; both languages link the papers and framework pages a
reader needs."""

from __future__ import annotations

import re
from collections import Counter

import html5lib
import pytest

from tests.conftest import REPO_ROOT
from tests.site.test_gates_common import DEFAULT_SITE_URL, html_files, ids, parsed, resolve

pytestmark = pytest.mark.slow

# Attributes that make the browser fetch or navigate to a URL.
URL_ATTRIBUTES = {
    "a": "href",
    "link": "href",
    "script": "src",
    "img": "src",
    "source": "src",
    "iframe": "src",
    "video": "src",
    "audio": "src",
    "embed": "src",
    "object": "data",
}


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
    page.write_text(
        html.replace("</article>", '<a href="no-such-page/">x</a><a href="#no-such-id">y</a></article>', 1),
        encoding="utf-8",
    )
    problems = broken_links(site)
    assert any("no-such-page/" in p for p in problems), problems
    assert any("no-such-id" in p for p in problems), problems


# ------------------------------------------------------------------------- links out
# Hosts a page may link to (never load from: tests/site/test_self_contained.py): the papers,
# the documentation of each framework the guide names, nccl-tests' definitions.
# And the theme's credit in the footer ("Made with Material for MkDocs").
OUTBOUND_HOSTS = {
    "arxiv.org",
    "docs.pytorch.org",
    "huggingface.co",
    "www.deepspeed.ai",
    "github.com",
    "squidfunk.github.io",
    "buildkite.com",  # a cited measurement's page outside git (measurements.yaml: vLLM's benchmark runs)
}
# What a reader needs to follow from both languages: the papers whose figures the guide
# uses, and the documentation of each API it paraphrases.
NEEDED_LINKS = {
    "https://arxiv.org/abs/1910.02054": "memory-formulas/",  # ZeRO (Rajbhandari et al.)
    "https://arxiv.org/abs/2205.05198": "memory-formulas/",  # activations (Korthikanti et al.)
    "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md": "memory-formulas/",
    "https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html": "",
    "https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html": "",
    "https://docs.pytorch.org/docs/stable/elastic/run.html": "",
    "https://www.deepspeed.ai/docs/config-json/": "",
    "https://huggingface.co/docs/transformers/main_classes/trainer": "",
    "https://huggingface.co/docs/accelerate/usage_guides/fsdp": "",
    # torchtune's status (issue 35): its maintainers' announcement
    "https://github.com/meta-pytorch/torchtune/issues/2883": "",
}


def site_extra() -> dict:
    """``extra`` of mkdocs.yml, as MkDocs reads it (environment included)."""
    from mkdocs.config import load_config

    return dict(load_config(str(REPO_ROOT / "mkdocs.yml"))["extra"])


def rental_links() -> dict[str, str]:
    """``extra.rental_links`` of mkdocs.yml."""
    return dict(site_extra()["rental_links"])


def outbound_link_problems(site, site_url: str = DEFAULT_SITE_URL) -> list[str]:
    """Every link to another origin that is not https, has credentials, a port or a host
    outside OUTBOUND_HOSTS and the rental service's configured pages; and every tag other
    than <a> that names another origin."""
    from urllib.parse import urlsplit

    # and the hosts of the settings: the rental service's pages and the guide's repository
    allowed = OUTBOUND_HOSTS | {
        urlsplit(url).hostname for url in [*rental_links().values(), site_extra()["repository"]]
    }
    problems = []
    for page in html_files(site):
        for tag, href in page_urls(parsed(page)):
            if href.startswith(("mailto:", "tel:", "data:", "javascript:")):
                continue
            target = resolve(site, page, href, site_url)
            if target.same_origin:
                continue
            where = f"{page.relative_to(site)}: <{tag}> {href!r}"
            parts = urlsplit(href)
            if tag != "a":
                problems.append(f"{where}: loads from another origin")
            elif parts.scheme != "https" or parts.username or parts.password or parts.port:
                problems.append(f"{where}: not a plain https link")
            elif parts.hostname not in allowed:
                problems.append(f"{where}: host {parts.hostname!r} is not in the allow-list")
    return problems


def test_links_out_are_https_to_allowed_hosts(built_site):
    assert not outbound_link_problems(built_site)


@pytest.mark.parametrize("root", ["", "fr/"])
def test_papers_and_framework_docs_are_linked_in_both_languages(built_site, root):
    missing = []
    for url, path in NEEDED_LINKS.items():
        page = built_site / root / path / "index.html"
        hrefs = {a["href"] for a in parsed(page).select("article a[href]")}
        if url not in hrefs:
            missing.append(f"{root}{path}: {url}")
    assert not missing


@pytest.mark.parametrize("root", ["", "fr/"])
def test_the_rental_catalogue_and_api_are_linked_from_the_settings(built_site, root):
    """The catalogue and the API the guide tells readers to use are links to the addresses
    of mkdocs.yml's extra.rental_links (a setting, not prose)."""
    hrefs = {a["href"] for a in parsed(built_site / root / "index.html").select("article a[href]")}
    links = rental_links()
    assert {"catalogue", "rental-api"} <= set(links) and {links["catalogue"], links["rental-api"]} <= hrefs
    assert (
        "][" not in parsed(built_site / root / "index.html").select_one("article").get_text()
    )  # no unresolved reference


@pytest.mark.parametrize("root", ["", "fr/"])
def test_sources_and_the_command_line_link_into_the_repository_setting(built_site, root):
    """The data files a page cites and the calculator's command line are links into the
    repository of mkdocs.yml's extra.repository (issue 35: bare file names before), each to a
    file of the checkout."""
    base = site_extra()["repository"].rstrip("/")
    calculator = "vram/README.md#the-command-line-and-its-contracts"  # the calculator's contract
    for path, needed in (
        ("gpu-finder/", ("snippets/data/gpus.yaml", calculator)),
        ("memory-formulas/", ("snippets/data/gpus.yaml", "snippets/data/interconnects.yaml", calculator)),
        ("", (calculator,)),
    ):
        article = parsed(built_site / root / path / "index.html").select_one("article")
        hrefs = {a["href"] for a in article.select("a[href]")}
        for target in needed:
            assert f"{base}/blob/main/{target}" in hrefs, (root + path, target)
            file, _, anchor = target.partition("#")
            assert (REPO_ROOT / file).is_file()
            headings = re.findall(r"(?m)^#+ (.+)$", (REPO_ROOT / file).read_text(encoding="utf-8")) if anchor else []
            assert not anchor or anchor in {
                re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings
            }
        assert "][source:" not in article.get_text()  # no unresolved reference


@pytest.mark.parametrize(
    "markdown, message",
    [
        (
            "[x][source:snippets/data/nope.yaml]",
            "[source:snippets/data/nope.yaml]: snippets/data/nope.yaml is not a file",
        ),
        ("[x][source:../etc/passwd]", "is not a file or folder of the repository"),
    ],
)
def test_a_source_link_to_no_file_of_the_checkout_stops_the_build(markdown, message):
    from hooks.errors import RenderError
    from hooks.render.links_out import source_definitions

    with pytest.raises(RenderError, match=re.escape(message)):
        source_definitions({"repository": "https://github.com/o/r"}, markdown)
    assert source_definitions(
        {"repository": "https://github.com/o/r/"}, "[v][source:vram] [c][source:README.md#calculator]"
    ) == (
        "\n[source:vram]: <https://github.com/o/r/tree/main/vram>"
        "\n[source:README.md#calculator]: <https://github.com/o/r/blob/main/README.md#calculator>"
    )
    with pytest.raises(
        RenderError, match=re.escape("mkdocs.yml: extra.repository: 'http://github.com/o/r' is not a plain https URL")
    ):
        source_definitions({"repository": "http://github.com/o/r"}, "[c][source:README.md]")


@pytest.mark.parametrize(
    "links, message",
    [
        (
            {"catalogue": "http://vramfarm.example/servers"},
            "catalogue: 'http://vramfarm.example/servers' is not a plain https URL",
        ),
        ({"catalogue": "https://user@vramfarm.example/"}, "is not a plain https URL"),
        ({"catalogue": "https://vramfarm.example/a b"}, "is not a plain https URL"),
        ({"Catalogue": "https://vramfarm.example/"}, "rental_links.Catalogue: a name is"),
        ({}, "extra.rental_links: expected a mapping"),
    ],
)
def test_a_bad_rental_link_setting_is_one_line_naming_the_key(links, message):
    from hooks.errors import RenderError
    from hooks.render.links_out import link_definitions

    with pytest.raises(RenderError, match=re.escape(message)):
        link_definitions({"rental_links": links})
    assert (
        link_definitions({"rental_links": {"catalogue": "https://vramfarm.example/s"}})
        == "\n[catalogue]: <https://vramfarm.example/s>"
    )


def test_the_link_gate_sees_a_bad_link_out(built_site, tmp_path):
    import shutil

    site = tmp_path / "site"
    shutil.copytree(built_site, site)
    page = site / "index.html"
    bad = (
        '<a href="http://arxiv.org/abs/1">a</a><a href="https://evil.example/x">b</a>'
        '<a href="https://user@github.com/x">c</a><img src="https://arxiv.org/x.png" alt="x">'
    )
    page.write_text(page.read_text(encoding="utf-8").replace("</article>", bad + "</article>", 1), encoding="utf-8")
    found = " ".join(outbound_link_problems(site))
    for part in ("http://arxiv.org/abs/1", "evil.example", "user@github.com", "x.png"):
        assert part in found, (part, found)
