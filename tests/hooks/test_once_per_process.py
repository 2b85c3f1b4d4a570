"""Work a build does once per process, not once per language pass (static-i18n runs every
MkDocs event again for each language): the check of mkdocs-jupyter's stylesheets and the
zipping and packing of assets/vram.zip.zst. What is reused is keyed by the exact input, so a changed input
is checked or built again; a failed check is never remembered."""

from __future__ import annotations

import io
import shutil
import zipfile

import pytest
import zstandard

from hooks.errors import RenderError
from hooks.finder.compute import model_config_files
from hooks.finder.pyodide_assets import VRAM_DIR, vram_bundle, vram_packed
from hooks.notebooks import styles


def test_the_package_stylesheets_are_checked_once_per_text_and_origin(monkeypatch):
    checked = []
    monkeypatch.setattr(styles, "check_stylesheet", lambda css, origin: checked.append((css, origin)))
    monkeypatch.setattr(styles, "_passed", set())
    files = styles.checked_stylesheets("http://127.0.0.1:8000")
    styles.checked_stylesheets("http://127.0.0.1:8000")  # the second language's pass
    assert sorted(checked) == sorted((css, "http://127.0.0.1:8000") for css in files.values())
    styles.checked_stylesheets("https://guide.example")  # another origin: checked again
    assert len(checked) == 2 * len(files)


def test_a_stylesheet_that_fails_is_checked_again(monkeypatch):
    calls = []

    def refuse(css, origin):
        calls.append(css)
        raise RenderError("loads 'https://fonts.example/x.woff2' (a font or stylesheet from another origin)")

    monkeypatch.setattr(styles, "check_stylesheet", refuse)
    monkeypatch.setattr(styles, "_passed", set())
    for _ in range(2):
        with pytest.raises(RenderError, match="mkdocs-jupyter's"):
            styles.checked_stylesheets("")
    assert len(calls) == 2


def test_the_bundle_is_reused_only_for_the_same_bytes(tmp_path, monkeypatch):
    from hooks.finder import pyodide_assets

    # the reuse, not the compilation (tests/verify/test_precompile.py), is tested here: a cheap stand-in
    monkeypatch.setattr(pyodide_assets, "compiled", lambda archive, prefix, folder=None: archive)
    configs = model_config_files()
    first, packed = vram_bundle(configs), vram_packed(configs)
    assert vram_bundle(configs) is first  # the other language's pass: not zipped again
    assert vram_packed(configs) is packed  # nor packed again
    vram_copy = tmp_path / "vram"
    shutil.copytree(VRAM_DIR, vram_copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert vram_bundle(configs, vram_copy) == first  # the same bytes elsewhere: the same archive
    edited = vram_copy / "units.py"
    edited.write_bytes(edited.read_bytes() + b"# edited\n")
    changed = vram_bundle(configs, vram_copy)
    assert zipfile.ZipFile(io.BytesIO(changed)).read("vram/units.py") == edited.read_bytes()
    assert (
        zstandard.ZstdDecompressor().decompress(vram_packed(configs, vram_copy)) == changed
    )  # compiled and packed again
