"""The notebook and the finder in the built site, and the build's behaviour around them.

- case 4: the notebook renders as a page in both languages (cells, output images with
  alt text in the page's language, lang, navigation of its language), never as raw JSON
  or a download link; the finder's JSON is one file both languages read.
- case 3: a cell that raises fails ``mkdocs build --strict`` naming the notebook, with
  no traceback.
- case 6: a serve rebuild (the config loaded again in the same process, as ``mkdocs
  serve`` does) shows an edit to the calculator and to a data file, and editing a
  Markdown page does not execute any notebook again.

The copies of the repository reuse this checkout's executed notebooks through the
machine store (hooks/notebooks/execute.py), as their inputs are the same.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
import yaml
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell

from tests.conftest import REPO_ROOT, build_site
from tests.finder.answers import finder_text

pytestmark = pytest.mark.slow

PAGES = {"it": "memory-notebook/index.html", "fr": "fr/memory-notebook/index.html"}
NAV = {
    "it": ["Guida", "Come si calcola", "Trova la GPU", "Notebook della memoria"],
    "fr": ["Guide", "Méthode de calcul", "Trouvez le GPU", "Notebook de la mémoire"],
}
ALT_WORD = {"it": "schede", "fr": "cartes"}


def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_notebook_is_a_page_of_its_language(built_site, lang):
    path = built_site / PAGES[lang]
    text = path.read_text(encoding="utf-8")
    assert text.lstrip().lower().startswith("<!doctype html"), "the notebook was copied as raw JSON"
    assert '"nbformat"' not in text and "Traceback" not in text
    page = soup(path)
    assert page.html["lang"] == lang
    nav = [a.get_text(" ", strip=True) for a in page.select("nav.md-nav--primary > ul > li > a")]
    assert nav == NAV[lang]
    article = page.select_one("article")
    assert len(article.select(".jp-Cell.jp-CodeCell")) >= 3 and len(article.select(".jp-MarkdownCell")) >= 4
    images = article.select('.jp-OutputArea img[src$=".png"]')
    assert len(images) == 2
    for img in images:
        assert ALT_WORD[lang] in img["alt"], img["alt"]
    assert article.select("details table"), "the plotted values as a table: the plot's text alternative"
    assert not page.select('a[href$=".ipynb"], a[download]'), "a download link instead of the page"
    assert page.select_one("h1").get_text(strip=True).startswith("Memoria" if lang == "it" else "Mémoire")


def test_no_notebook_file_is_published(built_site):
    assert not list(built_site.rglob("*.ipynb"))


def test_code_is_the_same_on_both_notebook_pages(built_site):
    """The code cells read the same to Python in both languages (each notebook carries its
    language's comments: hooks/notebooks/translated.py), and what the copy buttons copy is,
    byte for byte, the source of that language's notebook, which the build executed."""
    pages = {lang: soup(built_site / PAGES[lang]) for lang in PAGES}
    code = {
        lang: [pre.get_text() for pre in page.select(".jp-CodeCell .jp-InputArea pre")] for lang, page in pages.items()
    }
    assert [ast.dump(ast.parse(cell)) for cell in code["it"]] == [ast.dump(ast.parse(cell)) for cell in code["fr"]]
    assert len(code["it"]) >= 3
    assert not any("import base64" in cell for cell in code["it"]), "the set-up cell is shown"
    assert "fully_shard" in "".join(code["it"]) and "figure(" in code["it"][0], "the page does not open with the plot"
    copied = {
        lang: [div.get_text() for div in page.select(".jp-CodeCell div.clipboard-copy-txt")]
        for lang, page in pages.items()
    }
    for lang in PAGES:
        shown_sources = [
            cell.source
            for cell in nbformat.read(REPO_ROOT / "docs" / f"memory-notebook.{lang}.ipynb", as_version=4).cells
            if cell.cell_type == "code" and "setup" not in cell.metadata.get("tags", [])
        ]
        assert copied[lang] == shown_sources, lang
    assert copied["it"] != copied["fr"]  # French comments in what a French reader copies


COMMENTS = {
    "it": "# la memoria di ogni scheda come la riporta nvidia-smi (gpus.yaml: memory_mib), in GB",
    "fr": "# la mémoire de chaque carte selon nvidia-smi (gpus.yaml : memory_mib), en Go",
}


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_notebook_code_comments_are_in_the_page_language(built_site, lang):
    page = soup(built_site / PAGES[lang])
    comments = [span.get_text() for span in page.select(".jp-CodeCell .jp-InputArea pre span.c1")]
    assert COMMENTS[lang] in comments
    other = COMMENTS["fr" if lang == "it" else "it"]
    assert other not in comments
    if lang == "fr":
        catalogue = {
            entry["it"]: entry["fr"]
            for entry in yaml.safe_load((REPO_ROOT / "snippets" / "comments.yaml").read_text(encoding="utf-8"))
        }
        assert all(comment.removeprefix("# ") in catalogue.values() for comment in comments), comments


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_figures_are_drawn_at_twice_the_width_they_are_shown(built_site, lang):
    """Each figure is a PNG twice as wide as the page shows it (640 CSS px: sharp on a
    phone's and a high-density screen), so its 14-point text is legible at both widths."""
    import base64
    import io

    from PIL import Image

    for img in soup(built_site / PAGES[lang]).select('article img[src^="data:image/png;base64,"]'):
        png = Image.open(io.BytesIO(base64.b64decode(img["src"].split(",", 1)[1])))
        assert img["width"] == "640" and png.width == 1280, (img["width"], png.size)


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_table_of_contents_lists_the_sections_with_the_same_anchors(built_site, lang):
    page = soup(built_site / PAGES[lang])
    toc = [(a["href"], a.get_text(" ", strip=True)) for a in page.select("nav.md-nav--secondary a.md-nav__link")]
    assert [href for href, _ in toc][:2] == ["#per-card", "#evidence"], toc
    assert not any("{" in title for _, title in toc), toc
    for href, _ in toc:
        heading = page.select_one(f"article {href}")
        assert heading is not None and heading.name in {"h2", "h3"}, href
        assert "{" not in heading.get_text() and heading.select_one("a.anchor-link")["href"] == href


# Material's own strings for the copy button, in each language (its partials/languages/*.html)
COPY_STRINGS = {"it": ("Copia", "Copiato"), "fr": ("Copier dans le presse-papier", "Copié dans le presse-papier")}


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_copy_buttons_speak_the_page_language(built_site, lang):
    text = (built_site / PAGES[lang]).read_text(encoding="utf-8")
    assert "Copy to Clipboard" not in text and "Copied!" not in text
    page = soup(built_site / PAGES[lang])
    buttons = page.select("clipboard-copy")
    assert buttons and {b["aria-label"] for b in buttons} == {COPY_STRINGS[lang][0]}
    assert {b.select_one(".notice").get_text() for b in buttons} == {COPY_STRINGS[lang][1]}


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_the_evidence_is_a_measurement_of_fsdp2(built_site, lang):
    """The evidence section names what it measured (FSDP2's tensors on rank 0), not a
    simulation that holds by construction; its table lists 1 to 8 cards."""
    page = soup(built_site / PAGES[lang])
    section = page.select_one("article #evidence").find_parent(class_="jp-Cell")
    text = " ".join(cell.get_text(" ") for cell in [section, *section.find_next_siblings(class_="jp-Cell")])
    assert "FSDP2" in text and "fake" in text
    assert "simul" not in text.lower()
    rows = [tr for tr in page.select("article details table tbody tr") if len(tr.select("td")) == 3]
    assert [tr.select_one("td").get_text() for tr in rows] == [str(n) for n in range(1, 9)]


def test_both_languages_read_one_finder_json(built_site):
    """One copy of the finder's data for both languages: finder.json (what the form needs) and
    finder-results.json (the answers, fetched when a choice needs one), together finder_json's."""
    data = json.loads(finder_text())
    results = data.pop("results")
    assert json.loads((built_site / "assets" / "finder.json").read_text(encoding="utf-8")) == data
    assert json.loads((built_site / "assets" / "finder-results.json").read_text(encoding="utf-8")) == results
    assert not (built_site / "fr" / "assets" / "finder.json").exists()
    assert not (built_site / "fr" / "assets" / "finder-results.json").exists()
    for page, prefix in (("gpu-finder/index.html", "../"), ("fr/gpu-finder/index.html", "../../")):
        form = soup(built_site / page).select_one("form#finder-form")
        assert form["data-json"] == prefix + "assets/finder.json"
        assert (built_site / page).parent.joinpath(form["data-json"]).resolve() == (
            built_site / "assets" / "finder.json"
        ).resolve()


@pytest.mark.parametrize("lang, prefix, unit", [("it", "", "GB"), ("fr", "fr/", "Go")])
def test_finder_page_without_javascript_shows_the_default_result(built_site, lang, prefix, unit):
    page = soup(built_site / prefix / "gpu-finder" / "index.html")
    rows = [tr.select_one("th").get_text() for tr in page.select("#finder-table tbody tr")]
    assert rows == ["B200"]
    # The default: Llama 3.1 8B, AdamW as the guide's scripts build it (foreach on CUDA), one
    # card, PyTorch AMP: 16 bytes per parameter (8,030,261,248, the published total) and, at
    # the step, the foreach temporary of 4 more (tests/vram/test_optimizer_step.py): 160.6 GB,
    # more than the H200's usable 148.6 GB.
    assert round(20 * 8_030_261_248 / 1e9, 1) == 160.6
    assert f"160,6\u00a0{unit}" in page.select_one("#finder-status").get_text()
    assert page.select_one("form#finder-form").has_attr("hidden")


def test_a_failing_cell_fails_the_build_naming_the_notebook(warm_repo_copy, tmp_path):
    """On a copy holding the checkout's build caches (the Italian notebook is not run again);
    the cell that raises comes first (code cell 1), before the set-up cell's imports. It uses only
    names a notebook may use (``verify/block_names.py``: ``RuntimeError`` is none), so it runs."""
    repo_copy = warm_repo_copy
    path = repo_copy / "docs" / "memory-notebook.fr.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(1, new_code_cell("assert 6 * 7 == 43, 'tensors and calculator disagree'"))
    nbformat.write(nb, path)
    result = build_site(tmp_path / "out", config=repo_copy / "mkdocs.yml")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert any(
        "docs/memory-notebook.fr.ipynb: code cell 1 " in line
        and "AssertionError: tensors and calculator disagree" in line
        for line in errors
    ), result.stderr[-3000:]
    assert not (tmp_path / "out" / "fr" / "memory-notebook" / "index.html").exists()


SERVE = textwrap.dedent('''
    """What `mkdocs serve` does on every change: load the config again, build again.

    argv: repository, output folder; one build after each edit below."""
    import json, logging, sys
    from pathlib import Path
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    cache = root / ".cache" / "notebooks"
    errors = []  # what the build logs as errors (the exception itself only says "Aborted")
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: errors.append(record.getMessage())
    logging.getLogger("mkdocs").addHandler(handler)

    def rebuild():
        build(load_config(str(root / "mkdocs.yml"), site_dir=str(out)))
        finder = json.loads((out / "assets" / "finder.json").read_text(encoding="utf-8"))
        return {
            "executed": sorted(p.name for p in cache.glob("*.ipynb")),
            "mtimes": sorted(p.stat().st_mtime_ns for p in cache.glob("*.ipynb")),
            "a6000": next(g for g in finder["gpus"] if g["key"] == "a6000")["name"],
            "index": (out / "index.html").read_text(encoding="utf-8"),
            "notebook": (out / "fr" / "memory-notebook" / "index.html").read_text(encoding="utf-8"),
        }

    def edit(rel, old, new):
        path = root / rel
        text = path.read_text(encoding="utf-8")
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    steps = [rebuild()]
    edit("docs/index.it.md", "## Trova la GPU", "Una frase nuova.\\n\\n## Trova la GPU")
    steps.append(rebuild())
    edit("snippets/data/gpus.yaml", "name: RTX A6000 48GB\\n", "name: RTX A6000 Ada 48GB\\n")
    steps.append(rebuild())
    # any change to a calculator module (here a line appended: no test depends on its text)
    path = root / "vram" / "activations.py"
    path.write_text(path.read_text(encoding="utf-8") + "\\nEDITED_UNDER_SERVE = 1\\n", encoding="utf-8")
    try:
        rebuild()
        steps.append("built with stale code")
    except MkDocsException:
        steps.append(" ".join(errors))
    print(json.dumps(steps))
''')


def _serve(repo: Path, out: Path, script: Path) -> list:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, str(script), str(repo), str(out)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_serve_rebuild_shows_data_and_markdown_edits_runs_no_notebook_and_restarts_for_code(warm_repo_copy, tmp_path):
    """On a copy holding the checkout's build caches (its executed notebooks, their HTML):
    as a contributor's checkout that was built before starts ``mkdocs serve``."""
    script = tmp_path / "serve_twice.py"
    script.write_text(SERVE, encoding="utf-8")
    first, after_markdown, after_data, after_code = _serve(warm_repo_copy, tmp_path / "site", script)
    # A Markdown edit shows, and no notebook runs again.
    assert "Una frase nuova." in after_markdown["index"] and "Una frase nuova." not in first["index"]
    assert after_markdown["executed"] == first["executed"] and after_markdown["mtimes"] == first["mtimes"]
    # The data file's edit shows in the JSON and in the notebook, which ran again with it.
    assert after_data["a6000"] == "RTX A6000 Ada 48GB" and first["a6000"] == "RTX A6000 48GB"
    # the notebook writes each card's memory as nvidia-smi reports it: 49,140 MiB = 51.5 GB
    assert "RTX A6000 Ada 48GB (51" in after_data["notebook"] and "RTX A6000 Ada" not in first["notebook"]
    assert set(after_data["executed"]).isdisjoint(first["executed"]), "the notebooks did not run again"
    # A calculator edit is never built with the code this process imported: the build names
    # the file and asks for the restart that `make serve` (hooks/serve.py) does by itself
    # (tests/build_speed/test_serve_reload.py: a .py edit restarts the server).
    assert "vram/activations.py" in after_code and "restart" in after_code, after_code


@pytest.mark.parametrize("index_path", ["search/search_index.json", "fr/search/search_index.json"])
def test_search_finds_notebook_code_once_and_no_cell_interface(built_site, index_path):
    """Search results showed "In [2]: Copied!" (English in both languages) and each code cell
    twice (its hidden copy text); the code is indexed once, without the cells' interface."""
    docs = json.loads((built_site / index_path).read_text(encoding="utf-8"))["docs"]
    text = " ".join(doc["text"] for doc in docs if doc["location"].startswith("memory-notebook/"))
    assert text.count('MODEL = "llama-3.1-8b"') == 1  # the first line of the notebook's first shown cell
    for noise in ("Copied!", "Copier", "Copia", "In [", "In&nbsp;["):
        assert noise not in text, noise
