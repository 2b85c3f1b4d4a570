"""Page content carries no script, style or event handler (hooks/checks/active_content.py).

What the browser would do with each refused piece is the HTML standard's (WHATWG HTML:
event handler content attributes, the base element, javascript: URLs with ASCII tab and
newline removed by the URL parser); html5lib, an independent HTML5 parser, confirms that
the attribute or element is really there as the browser sees it.
"""

from __future__ import annotations

import json

import html5lib
import markdown
import pytest

from hooks.checks.active_content import check_notebook_cells, check_page_content
from hooks.errors import RenderError
from tests.conftest import REPO_ROOT

EXTENSIONS = ["attr_list", "md_in_html", "pymdownx.highlight", "pymdownx.superfences"]

REFUSED = {
    "inline script that rewrites a code block": (
        '<script>document.querySelector("code").textContent = "x"</script>',
        "an inline <script>",
    ),
    "svg script from another origin": (
        '<svg><script href="https://evil.example/a.js"></script></svg>',
        "an inline <script>",
    ),
    "script file elsewhere": (
        '<script src="https://evil.example/a.js"></script>',
        "not a script file of the site's assets/",
    ),
    "event handler": ('<img src="x.png" onerror="alert(1)" alt="">', r"an event handler \(onerror=\)"),
    "event handler after a slash": ('<img/onerror=alert(1) src=x>', r"an event handler \(onerror=\)"),
    "event handler glued to a quote": ('<img src="x"onerror=alert(1)>', r"an event handler \(onerror=\)"),
    "style element hiding a token": ("<style>.highlight .nf { display: none }</style>", "a <style> element"),
    "style attribute": ('<p style="display:none">x</p>', "a style= attribute"),
    "base href": ('<base href="https://evil.example/">', "a <base> element"),
    "meta refresh": ('<meta http-equiv="refresh" content="0;url=https://evil.example/">', "a <meta> element"),
    "preload from elsewhere": (
        '<link rel="preload" as="script" href="https://evil.example/a.js">',
        "a <link rel='preload'",
    ),
    "iframe srcdoc": ('<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>', "an? <iframe> element"),
    "javascript URL with a tab": ('<a href="java\tscript:alert(1)">x</a>', "a script URL in href="),
    "javascript URL in entities": ('<a href="&#106;avascript&#58;alert(1)">x</a>', "a script URL in href="),
    "svg animation to a javascript URL": (
        '<svg><a><animate attributeName="href" values="javascript:alert(1)"/><text>x</text></a></svg>',
        "a script URL in values=",
    ),
    "svg xlink": ('<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>', "a script URL in xlink:href="),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_active_content_in_a_page_is_refused(name):
    snippet, message = REFUSED[name]
    with pytest.raises(RenderError, match=message):
        check_page_content(f"<p>Testo.</p>\n{snippet}\n<p>Altro testo.</p>")


def test_raw_html_of_a_markdown_page_reaches_the_page_as_written():
    html = markdown.markdown(
        'Testo.\n\n<div markdown="1">\n\n*x*\n\n</div>\n\n<style>code {display: none}</style>\n', extensions=EXTENSIONS
    )
    assert "<style>code {display: none}</style>" in html
    with pytest.raises(RenderError, match="the page holds a <style> element"):
        check_page_content(html)


def test_the_browser_sees_the_hidden_handlers():
    """html5lib (the HTML standard's tokenizer) finds the handler where a naive reader would not."""
    for snippet in ('<img/onerror=alert(1) src=x>', '<img src="x"onerror=alert(1)>'):
        [img] = html5lib.parse(snippet, namespaceHTMLElements=False).iter("img")
        assert img.get("onerror") == "alert(1)"


def test_text_tables_forms_and_the_sites_own_assets_pass():
    check_page_content(
        markdown.markdown(
            "Testo con `<script>` in codice, *enfasi* e [un link](altro.md#sezione).\n\n"
            "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            '<details markdown="1"><summary>Dettagli</summary>\n\n```bash\necho "onclick=x"  # commento\n```\n\n</details>\n\n'
            '<div class="finder" id="finder"><link rel="stylesheet" href="../assets/finder.css"><form class="finder-form" hidden>'
            '<select id="m"><option value="a">A</option></select></form>'
            '<script type="application/json" id="finder-labels">{"a": "\\u003c"}</script>'
            '<script src="../assets/finder.js" defer></script></div>\n',
            extensions=EXTENSIONS,
        )
    )


def notebook(tmp_path, cells):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def code_cell(data):
    return {
        "cell_type": "code",
        "source": "x",
        "outputs": [{"output_type": "display_data", "data": data, "metadata": {}}],
    }


def test_notebook_outputs_and_markdown_cells_are_checked(tmp_path):
    with pytest.raises(RenderError, match="the text/html output of cell 2 holds an inline <script>"):
        check_notebook_cells(
            notebook(
                tmp_path,
                [
                    {"cell_type": "markdown", "source": "# Titolo"},
                    code_cell({"text/html": ["<p>x</p>", "<script>alert(1)</script>"]}),
                ],
            )
        )
    with pytest.raises(RenderError, match="cell 1 has an output of type application/javascript"):
        check_notebook_cells(notebook(tmp_path, [code_cell({"application/javascript": "alert(1)", "text/plain": "x"})]))
    with pytest.raises(RenderError, match="Markdown cell 1 holds a <style> element"):
        check_notebook_cells(
            notebook(tmp_path, [{"cell_type": "markdown", "source": ["<style>code {display: none}</style>"]}])
        )
    check_notebook_cells(
        notebook(
            tmp_path,
            [
                code_cell(
                    {
                        "text/html": '<figure><img src="data:image/png;base64,AA" alt="x"></figure>',
                        "image/png": "AA",
                        "text/plain": "<Figure>",
                    }
                )
            ],
        )
    )


def test_the_guides_notebooks_pass():
    for path in sorted((REPO_ROOT / "docs").glob("*.ipynb")):
        check_notebook_cells(path)


TROJAN = 'access = "user"\nif access != "user\u202e \u2066# admin?\u2069 \u2066":\n    print("admin")\n'


def test_code_a_reader_cannot_read_as_it_runs_is_refused(tmp_path):
    """Trojan Source (CVE-2021-42574): the bidirectional overrides make the line show as a
    comparison followed by a comment; Python runs a comparison with a longer string. Python
    itself is the oracle that the code runs otherwise than it reads."""
    from hooks.checks.active_content import check_code_shows_what_runs

    script = tmp_path / "trojan.py"
    script.write_text(TROJAN, encoding="utf-8")
    assert (
        __import__("subprocess").run([__import__("sys").executable, str(script)], capture_output=True, text=True).stdout
        == "admin\n"
    )  # reads as "not admin", runs as admin
    page = markdown.markdown(
        f"```python\n{TROJAN}```\n",
        extensions=EXTENSIONS,
        extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}},
    )
    with pytest.raises(RenderError, match=r"holds U\+202E \(a format character, RIGHT-TO-LEFT OVERRIDE\) on line 2"):
        check_code_shows_what_runs(page)
    with pytest.raises(RenderError, match=r"holds U\+200B \(a format character, ZERO WIDTH SPACE\)"):
        check_code_shows_what_runs(
            page.replace("\u202e", "").replace("\u2066", "").replace("\u2069", "").replace("admin?", "admin?&#x200b;")
        )
    check_code_shows_what_runs(markdown.markdown('```python\nx = "é € « » ’"  # tab\tok\n```\n', extensions=EXTENSIONS))
    with pytest.raises(RenderError, match=r"code cell 1 holds U\+202E"):
        check_notebook_cells(notebook(tmp_path, [{"cell_type": "code", "source": TROJAN, "outputs": []}]))
