"""mkdocs-jupyter's stylesheets are files of the site, linked by the notebook pages instead of
copied into each (hooks/notebooks/styles.py). The reference is the installed mkdocs-jupyter
package's own files, read here independently of the code under test."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from urllib.parse import urljoin

import pytest

from hooks.checks.external_loads import check_stylesheet
from hooks.errors import RenderError
from hooks.notebooks.styles import link_stylesheets

PACKAGE = resources.files("mkdocs_jupyter").joinpath("templates", "mkdocs_html", "assets")
NOTEBOOK_PAGES = ("memory-notebook/index.html", "fr/memory-notebook/index.html")


@lru_cache(maxsize=8)
def _rules(css: str) -> tuple[str, ...]:
    """The selectors of ``css``'s rules, read with tinycss2 (once per content: both pages read the package's)."""
    import tinycss2

    return tuple(
        tinycss2.serialize(r.prelude).strip()
        for r in tinycss2.parse_stylesheet(css, True, True)
        if r.type == "qualified-rule"
    )


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_notebook_pages_link_only_the_rules_they_use(built_site, page):
    """JupyterLab's stylesheet is not inlined (584 KB a page) nor linked whole (575 KB): the
    page links one stylesheet of the package's rules it uses, each rule byte for byte a rule
    of the package's files (read here with tinycss2), and among them those of its cells."""
    html = (built_site / page).read_text(encoding="utf-8")
    index_css = PACKAGE.joinpath("index.css").read_text(encoding="utf-8")
    assert index_css[:2000] not in html  # not inlined any more
    links = re.findall(r'<link rel="stylesheet" href="([^"]*assets/notebook/[^"]+)">', html)
    assert len(links) == 1 and re.fullmatch(r"page\.[0-9a-f]{16}\.css", links[0].rsplit("/", 1)[1]), links
    served = (built_site / urljoin(page, links[0])).read_text(encoding="utf-8")

    package = set(_rules(index_css)) | set(_rules(PACKAGE.joinpath("theme-light.css").read_text(encoding="utf-8")))
    kept = list(_rules(served))
    assert kept and set(kept) <= package
    assert len(served) < len(index_css) / 10
    assert any(".jp-CodeCell" in selector for selector in kept)
    defined = set(re.findall(r"(--jp-[\w-]+)\s*:", served))
    used = set(re.findall(r"var\(\s*(--jp-[\w-]+)", served))
    assert used and used <= defined  # the variables the kept rules use are kept with them
    assert not any("jp-FileBrowser" in selector for selector in kept)  # JupyterLab's panels: not on a page
    assert len(html) < 120_000  # 1,021,716 characters with the stylesheets inlined, 425,600 with the plots inlined


def test_a_style_that_differs_in_one_byte_stays_inline():
    css = ".jp-Cell { color: red; }\n"
    page = f'<div><style type="text/css">\n{css} </style></div>'
    assert link_stylesheets(page, {"assets/notebook/index.css": css}, lambda uri: "../" + uri) == page
    exact = f'<div><style type="text/css">\n{css}</style></div>'
    assert (
        link_stylesheets(exact, {"assets/notebook/index.css": css}, lambda uri: "../" + uri)
        == '<div><link rel="stylesheet" href="../assets/notebook/index.css"></div>'
    )


@pytest.mark.parametrize(
    "css",
    [
        "@import 'https://cdn.example/x.css';",
        ".a { background: url(https://cdn.example/a.png) }",
        ".a { background: URL( \"//cdn.example/a.png\" ) }",
    ],
)
def test_a_stylesheet_that_loads_from_another_origin_is_refused(css):
    with pytest.raises(RenderError, match=r"cdn\.example"):
        check_stylesheet(css, "https://guide.example")


def test_the_package_stylesheets_load_nothing_from_elsewhere():
    for name in ("index.css", "theme-light.css", "theme-dark.css"):
        check_stylesheet(PACKAGE.joinpath(name).read_text(encoding="utf-8"), "https://guide.example")


def test_the_mermaid_loader_of_nbconverts_template_is_removed():
    """nbconvert's own lab template (its mermaid_js macro, rendered here by Jinja) imports
    Mermaid from cdnjs when a page has a diagram; no page may, so the loader goes."""
    import jinja2
    import nbconvert
    from jupyter_core.paths import jupyter_path

    from hooks.checks.external_loads import strip_inert_mermaid

    folders = list(jupyter_path("nbconvert", "templates", "lab"))
    assert nbconvert.__version__
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folders))
    page = env.from_string(
        '{% from "mermaidjs.html.j2" import mermaid_js %}<p>a</p>\n{{ mermaid_js() }}\n<p>b</p>'
    ).render()
    assert "cdnjs.cloudflare.com" in page and "jp-Mermaid" in page
    stripped = strip_inert_mermaid(page)
    assert "cdnjs" not in stripped and "Mermaid" not in stripped
    assert stripped.split() == ["<p>a</p>", "<p>b</p>"]


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_notebook_pages_name_no_cdn(built_site, page):
    html = (built_site / page).read_text(encoding="utf-8")
    assert "cdnjs" not in html and "jp-Mermaid" not in html


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_notebook_plots_are_image_files_with_alt_text(built_site, page):
    """No plot inlined as base64: each is a PNG of the site, with its alt text and its size,
    lazy below the first."""
    from bs4 import BeautifulSoup

    html = (built_site / page).read_text(encoding="utf-8")
    assert "data:image" not in html
    imgs = BeautifulSoup(html, "html.parser").select("article .jp-OutputArea img")
    assert len(imgs) >= 2
    for i, img in enumerate(imgs):
        served = built_site / urljoin(page, img["src"])
        assert served.suffix == ".png" and served.read_bytes().startswith(b"\x89PNG"), img["src"]
        assert len(img["alt"]) > 40 and img["width"] == "640" and int(img["height"]) > 0
        assert img.get("loading") == (None if i == 0 else "lazy")
