"""A notebook Markdown cell's `[text](javascript:…)` (issue 19, hole 5): the cell check reads
the cell's source and has nothing to find without a `<`, and mkdocs-jupyter renders it as a
live link. The rendered page's links are checked: a link with a scheme must be http, https
or mailto. The cell is rendered here with Python-Markdown, as mkdocs-jupyter does."""

from __future__ import annotations

import json

import markdown
import pytest

from hooks.checks.active_content import check_notebook_cells
from hooks.checks.unchecked_by_mkdocs import check_notebook_links
from hooks.errors import RenderError

SITE = {"memory-notebook/", "index.html", ""}


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(document.cookie)",
        "JavaScript:alert(1)",
        "java\tscript:alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    ],
)
def test_a_script_link_in_a_markdown_cell_is_refused(tmp_path, href):
    cell = f"Vedi [la guida]({href})."
    notebook = tmp_path / "n.ipynb"
    notebook.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": cell, "metadata": {}}]}))
    check_notebook_cells(notebook)  # the source check sees no markup: why the rendered links are read
    html = markdown.markdown(cell)
    assert "<a href=" in html
    with pytest.raises(RenderError, match="a link's scheme is one of http, https, mailto"):
        check_notebook_links(html, "memory-notebook/", SITE)


@pytest.mark.parametrize("href", ["https://pytorch.org/docs/", "mailto:guide@example.org", "../", "#setup"])
def test_ordinary_links_pass(href):
    check_notebook_links(markdown.markdown(f"[x]({href})"), "memory-notebook/", SITE)
