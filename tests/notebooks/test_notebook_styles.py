"""mkdocs-jupyter's stylesheets are files of the site, linked by the notebook pages instead of
copied into each (hooks/notebook_styles.py). The reference is the installed mkdocs-jupyter
package's own files, read here independently of the code under test."""

from __future__ import annotations

import re
from importlib import resources
from urllib.parse import urljoin

import pytest

from hooks.errors import RenderError
from hooks.external import check_stylesheet
from hooks.notebook_styles import link_stylesheets

PACKAGE = resources.files("mkdocs_jupyter").joinpath("templates", "mkdocs_html", "assets")
NOTEBOOK_PAGES = ("memory-notebook/index.html", "fr/memory-notebook/index.html")


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_notebook_pages_link_the_package_stylesheets(built_site, page):
    html = (built_site / page).read_text(encoding="utf-8")
    index_css = PACKAGE.joinpath("index.css").read_text(encoding="utf-8")
    assert index_css[:2000] not in html  # not inlined any more
    links = re.findall(r'<link rel="stylesheet" href="([^"]*assets/notebook/[^"]+)">', html)
    assert [link.rsplit("/", 1)[1] for link in links] == ["index.css", "theme-light.css"]
    for link in links:
        served = built_site / urljoin(page, link)
        assert served.read_bytes() == PACKAGE.joinpath(served.name).read_bytes()
    assert len(html) < 600_000  # it held 1,021,716 characters with the stylesheets inlined


def test_a_style_that_differs_in_one_byte_stays_inline():
    css = ".jp-Cell { color: red; }\n"
    page = f'<div><style type="text/css">\n{css} </style></div>'
    assert link_stylesheets(page, {"assets/notebook/index.css": css}, lambda uri: "../" + uri) == page
    exact = f'<div><style type="text/css">\n{css}</style></div>'
    assert link_stylesheets(exact, {"assets/notebook/index.css": css}, lambda uri: "../" + uri) == \
        '<div><link rel="stylesheet" href="../assets/notebook/index.css"></div>'


@pytest.mark.parametrize("css", ["@import 'https://cdn.example/x.css';", ".a { background: url(https://cdn.example/a.png) }",
                                 ".a { background: URL( \"//cdn.example/a.png\" ) }"])
def test_a_stylesheet_that_loads_from_another_origin_is_refused(css):
    with pytest.raises(RenderError, match="cdn.example"):
        check_stylesheet(css, "https://guide.example")


def test_the_package_stylesheets_load_nothing_from_elsewhere():
    for name in ("index.css", "theme-light.css", "theme-dark.css"):
        check_stylesheet(PACKAGE.joinpath(name).read_text(encoding="utf-8"), "https://guide.example")
