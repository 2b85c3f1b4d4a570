"""The files that run the calculator in the finder's browser (hooks/finder/pyodide_assets.py).

- the vram archive carries every ``vram/*.py`` and every finder model's config.json exactly
  (each member's bytes are the file's), and the same checkout gives the same archive;
- Pyodide and fzstd are the npm packages pinned in package-lock.json (the built site's copy:
  tests/site/test_pyodide_site.py);
- a packed file is one Zstandard frame that says its size and unpacks to the bytes packed (the
  oracle: zstandard's decompressor, as verify/artifact.py unpacks), and the archives store their
  members, so that packing compresses them together: the standard library packed, compiled,
  weighs less than its sources deflated one by one, the zip this site shipped before (zlib's
  own compressor, at the level zipfile uses), and no more than its sources packed;
- what is published is the sources compiled (verify/precompile.py; tests/verify/test_precompile.py
  runs them): each ``x.py`` becomes ``x.pyc``, in the same order, a model's config.json stays
  the checkout's bytes;
- without ``npm ci`` the build stops with one line saying so.
"""

from __future__ import annotations

import importlib.util
import io
import json
import zipfile
import zlib

import pytest
import zstandard

from hooks.errors import RenderError
from hooks.finder.compute import model_config_files
from hooks.finder.pyodide_assets import (
    PACK_STORE,
    PYODIDE_DIR,
    STDLIB_URI,
    fzstd_files,
    pack,
    packed_runtime,
    pyodide_files,
    stdlib_bundle,
    vram_bundle,
    vram_packed,
)
from tests.conftest import REPO_ROOT
from verify.precompile import PYC_FLAGS


def test_the_bundle_is_the_calculator_and_the_configs_byte_for_byte():
    configs = model_config_files()
    archive = zipfile.ZipFile(io.BytesIO(vram_bundle(configs)))
    sources = sorted((REPO_ROOT / "vram").glob("*.py"))
    expected = [f"vram/{path.name}" for path in sources] + [f"configs/{key}.json" for key in sorted(configs)]
    assert archive.namelist() == expected and len(configs) >= 11
    for path in sources:
        assert archive.read(f"vram/{path.name}") == path.read_bytes(), path.name
    for key, path in configs.items():
        assert archive.read(f"configs/{key}.json") == path.read_bytes(), key
    assert vram_bundle(configs) == vram_bundle(configs)  # the same checkout, the same archive


def test_the_bundled_configs_are_those_models_yaml_names_as_the_catalogue_reads_them():
    """model_config_files reads models.yaml alone (not the whole catalogue): the same paths as
    the checked catalogue's, and as the file itself writes them (read with plain PyYAML)."""
    import yaml

    from hooks.data import load
    from hooks.finder.compute import load_catalogue

    data = load.DATA_DIR  # the frozen test catalogue (tests/conftest.py)
    written = yaml.safe_load((data / "models.yaml").read_text(encoding="utf-8"))["models"]
    configs = model_config_files()
    assert configs == {key: data / "models" / entry["config"] for key, entry in written.items()}
    assert configs == load_catalogue().config_files


@pytest.mark.parametrize("name", ["pyodide", "fzstd"])
def test_the_worker_s_npm_packages_are_pinned_exactly_in_the_lock_file(name):
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    package = json.loads((REPO_ROOT / "package.json").read_text())
    version = package["dependencies"][name]
    assert version[0].isdigit() and all(part.isdigit() for part in version.split("."))  # no range
    entry = lock["packages"][f"node_modules/{name}"]
    assert entry["version"] == version and entry["integrity"].startswith("sha512-")


@pytest.mark.parametrize("files, name", [(pyodide_files, "pyodide.mjs"), (fzstd_files, "index.mjs")])
def test_without_npm_ci_the_build_says_what_to_run(tmp_path, files, name):
    with pytest.raises(RenderError, match=rf"{name.replace('.', '[.]')} not found: run `npm ci`") as raised:
        files(tmp_path)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("data", [b"", b"x", bytes(range(256)) * 300])
def test_a_packed_file_is_one_frame_that_says_its_size_and_unpacks_to_the_bytes(data):
    packed = pack(data)
    assert zstandard.frame_content_size(packed) == len(data)
    assert zstandard.ZstdDecompressor().decompress(packed, allow_extra_data=False) == data


def test_the_archives_store_their_members_and_packed_weigh_less_than_deflated_one_by_one():
    configs = model_config_files()
    for archive in (zipfile.ZipFile(io.BytesIO(vram_bundle(configs))), zipfile.ZipFile(io.BytesIO(stdlib_bundle()))):
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_STORED}
    members = zipfile.ZipFile(io.BytesIO(stdlib_bundle()))
    # a raw deflate stream per member, as a deflated zip holds them (zipfile's default level)
    deflated = 0
    for info in members.infolist():
        compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        deflated += len(compressor.compress(members.read(info)) + compressor.flush())
    packed = packed_runtime(store=PACK_STORE)[STDLIB_URI]
    published = zipfile.ZipFile(io.BytesIO(zstandard.ZstdDecompressor().decompress(packed)))
    assert {info.compress_type for info in published.infolist()} == {zipfile.ZIP_STORED}
    assert len(packed) < 0.9 * deflated, (len(packed), deflated)
    assert len(packed) < 1.02 * len(pack(stdlib_bundle()))  # compiled, about the weight of the sources


def test_what_is_published_is_the_sources_compiled_in_order():
    configs = model_config_files()
    for sources, packed in (
        (stdlib_bundle(), packed_runtime(store=PACK_STORE)[STDLIB_URI]),
        (vram_bundle(configs), vram_packed(configs, store=PACK_STORE)),
    ):
        source = zipfile.ZipFile(io.BytesIO(sources))
        published = zipfile.ZipFile(io.BytesIO(zstandard.ZstdDecompressor().decompress(packed)))
        expected = [name + "c" if name.endswith(".py") else name for name in source.namelist()]
        assert published.namelist() == expected
        magic = {published.read(name)[:4] for name in expected if name.endswith(".pyc")}
        assert len(magic) == 1 and magic != {importlib.util.MAGIC_NUMBER}  # one compiler: Pyodide's 3.14, not this 3.11
        for name in source.namelist():
            if name.endswith(".py"):  # PEP 552: hash-based, unchecked
                assert published.read(name + "c")[4:8] == PYC_FLAGS.to_bytes(4, "little"), name
            else:
                assert published.read(name) == source.read(name), name


def test_every_standard_library_module_vram_imports_ships_in_the_trimmed_library():
    """hooks/finder/pyodide_stdlib.txt lists what a run of the worker imported; a new import in
    vram/ must be there too (or the worker fails in the reader's browser): every module a
    vram/*.py imports that is a file of the package's python_stdlib.zip is listed, unless the
    interpreter has it frozen (stat, os: their source is never read). The oracle: the package's
    zip itself and Python's own list of frozen modules. Run `python -m hooks.finder.pyodide_stdlib`
    to update the list."""
    import _imp
    import ast

    from hooks.finder.pyodide_assets import PACKAGE_STDLIB, stdlib_members

    imported = set()
    for path in (REPO_ROOT / "vram").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module)
    package = set(zipfile.ZipFile(PYODIDE_DIR / PACKAGE_STDLIB).namelist())
    listed = set(stdlib_members())
    assert listed <= package and "json/__init__.py" in listed
    for name in sorted(imported):
        files = [f"{name.replace('.', '/')}{tail}" for tail in (".py", "/__init__.py")]
        in_package = [f for f in files if f in package]
        if in_package and not _imp.is_frozen(name):
            assert set(in_package) & listed, f"{name}: run `python -m hooks.finder.pyodide_stdlib`"
