"""A notebook page's weight (hooks/notebooks/weight.py): plots as PNG files with their alt
text, lazy below the first; a stylesheet pruned to the rules the page's elements match.
Expected values are typed here (a PNG's size from its header, which rules a page uses)."""

from __future__ import annotations

import base64
import hashlib
import re
import struct
import zlib

import pytest
from bs4 import BeautifulSoup

from hooks.errors import RenderError
from hooks.notebooks.weight import own_stylesheet, plots_as_files, used_rules
from tests.conftest import REPO_ROOT  # noqa: F401  (the repository on sys.path)


def png(width: int, height: int) -> bytes:
    """A valid PNG of one grey row repeated (zlib, as the format says)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\0" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_plots_become_files_with_alt_size_and_lazy_loading():
    first, second = png(1280, 1120), png(1280, 640)
    page = (
        f'<p>a</p><img alt="Grafico : DDP" src="data:image/png;base64,{base64.b64encode(first).decode()}" width="640"/>'
        f'<img alt="Deux" src="data:image/png;base64,{base64.b64encode(second).decode()}" width="640"/>'
        '<img alt="logo" src="../logo.svg">'
    )
    written = {}
    out = plots_as_files(page, written.__setitem__, lambda uri: "../" + uri)
    assert "data:" not in out
    imgs = BeautifulSoup(out, "html.parser").find_all("img")
    names = [f"assets/notebook/plots/{hashlib.sha256(d).hexdigest()[:20]}.png" for d in (first, second)]
    assert written == dict(zip(names, (first, second), strict=True))
    assert [(i["src"], i["alt"], i.get("width"), i.get("height"), i.get("loading")) for i in imgs] == [
        ("../" + names[0], "Grafico : DDP", "640", "560", None),  # the first plot, at the top: not lazy
        ("../" + names[1], "Deux", "640", "320", "lazy"),
        ("../logo.svg", "logo", None, None, None),
    ]  # not a plot: left alone


@pytest.mark.parametrize(
    "src, message",
    [
        ("data:image/png;base64,!!!", "not base64"),
        ("data:image/png;base64," + base64.b64encode(b"GIF89a....").decode(), "not a PNG"),
    ],
)
def test_a_bad_plot_is_refused(src, message):
    with pytest.raises(RenderError, match=message):
        plots_as_files(f'<img alt="x" src="{src}">', lambda *a: None, str)


def test_only_the_rules_a_page_uses_are_kept():
    css = """
.jupyter-wrapper { --jp-a: red; --jp-b: blue }
.jupyter-wrapper .jp-CodeCell .jp-InputPrompt { color: var(--jp-a) }
.jupyter-wrapper .jp-FileBrowser { color: green }
.jupyter-wrapper button:hover, .jupyter-wrapper .jp-Toolbar { color: black }
.jupyter-wrapper a:not(.jp-x) { text-decoration: none }
.jupyter-wrapper [data-jp-theme-scrollbars=true] ::-webkit-scrollbar { width: 1px }
@media print { .jupyter-wrapper .jp-CodeCell { display: none } .jupyter-wrapper .jp-Panel { display: none } }
@media print { .jp-Panel { display: none } }
@font-face { font-family: x; src: local(x) }
"""
    page = '<div class="jupyter-wrapper"><div class="jp-CodeCell"><div class="jp-InputPrompt">In</div></div><a href="#">x</a><button>b</button></div>'
    kept = used_rules(css, page)
    import tinycss2

    def selectors(rules):
        for rule in rules:
            if rule.type == "qualified-rule":
                yield tinycss2.serialize(rule.prelude).strip()
            elif rule.type == "at-rule" and rule.content is not None and rule.lower_at_keyword == "media":
                yield from selectors(tinycss2.parse_rule_list(rule.content, True, True))

    assert list(selectors(tinycss2.parse_stylesheet(kept, True, True))) == [
        ".jupyter-wrapper",
        ".jupyter-wrapper .jp-CodeCell .jp-InputPrompt",
        ".jupyter-wrapper button:hover, .jupyter-wrapper .jp-Toolbar",
        ".jupyter-wrapper a:not(.jp-x)",
        ".jupyter-wrapper .jp-CodeCell",
    ]
    assert "@media print" in kept and kept.count("@media") == 1 and "@font-face" in kept
    assert "jp-FileBrowser" not in kept and "scrollbar" not in kept and "jp-Panel" not in kept


def test_the_page_links_one_pruned_stylesheet_and_a_changed_copy_stays_inline():
    css = ".jp-CodeCell { color: red }\n.jp-Panel { color: blue }\n"
    page = f'<style type="text/css">\n{css}</style><div class="jp-CodeCell">x</div>'
    written, checked = {}, []
    out = own_stylesheet(
        page, {"assets/notebook/index.css": css}, written.__setitem__, lambda uri: "../" + uri, checked.append
    )
    ((uri, data),) = written.items()
    assert re.fullmatch(r"assets/notebook/page\.[0-9a-f]{16}\.css", uri) and checked == [data.decode()]
    assert out == f'<link rel="stylesheet" href="../{uri}"><div class="jp-CodeCell">x</div>'
    assert "jp-CodeCell" in data.decode() and "jp-Panel" not in data.decode()
    changed = page.replace("blue }", "blue } ")
    assert (
        own_stylesheet(changed, {"assets/notebook/index.css": css}, written.__setitem__, str, checked.append) == changed
    )


def test_notebook_code_cells_are_focusable():
    """A cell's long line scrolls sideways: the keyboard must reach it (axe's scrollable-region-focusable)."""
    from hooks.notebooks.html import focusable_cells
    from hooks.render.code_blocks import notebook_cells

    cell = '<div class="highlight-ipynb hl-python"><pre><span class="n">x</span>\n</pre></div>'
    out = focusable_cells(cell)
    assert out == '<div class="highlight-ipynb hl-python"><pre tabindex="0"><span class="n">x</span>\n</pre></div>'
    assert list(notebook_cells(out)) == [(0, len(out))]


def test_a_kept_stylesheet_is_reused_under_its_digest_and_never_by_a_publication_build(tmp_path, monkeypatch):
    """The pruned stylesheet is kept in .cache under the SHA-256 of its inputs: a development
    build reads it back; a publication build (no cache folder) computes the rules, so a file
    there that adds a rule (body { display: none }) never reaches a published page."""
    from hooks.notebooks import weight

    css = ".jp-CodeCell { color: red }\n@media print { .jp-CodeCell { color: black } }\n.jp-Panel { color: blue }\n"
    page = '<div class="jp-CodeCell">x</div>'
    first = weight._cached_rules([css], page, tmp_path)
    (kept,) = list(tmp_path.glob("*.css"))
    assert kept.read_text() == first and "jp-Panel" not in first and "@media print" in first
    assert weight._cached_rules([css], page, None) == first  # computed: the same rules
    kept.write_text(first + "body { display: none }\n")  # what anyone who writes the checkout can do
    assert weight._cached_rules([css], page, tmp_path) == first + "body { display: none }\n"  # read back
    assert weight._cached_rules([css], page, None) == first  # a publication build: computed
    assert weight._cached_rules([css], page + "<p>y</p>", tmp_path) == first  # another page: another key
    assert len(list(tmp_path.glob("*.css"))) == 2
    monkeypatch.setattr(weight, "_tool_versions", lambda: b"python=3.11.7\0tinycss2=0.0")
    weight._cached_rules([css], page, tmp_path)
    assert len(list(tmp_path.glob("*.css"))) == 3, "a library's version is part of the key"
