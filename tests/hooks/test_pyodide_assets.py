"""The files that run the calculator in the finder's browser (hooks/finder/pyodide_assets.py).

- the vram archive carries every ``vram/*.py`` and every finder model's config.json exactly
  (each member's bytes are the file's), and the same checkout gives the same archive;
- Pyodide is the npm package pinned in package-lock.json (the built site's copy:
  tests/site/test_pyodide_site.py);
- without ``npm ci`` the build stops with one line saying so.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from hooks.errors import RenderError
from hooks.finder.compute import model_config_files
from hooks.finder.pyodide_assets import PYODIDE_DIR, pyodide_files, vram_bundle
from tests.conftest import REPO_ROOT


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


def test_pyodide_is_pinned_exactly_in_the_lock_file():
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    package = json.loads((REPO_ROOT / "package.json").read_text())
    version = package["dependencies"]["pyodide"]
    assert version[0].isdigit() and all(part.isdigit() for part in version.split("."))  # no range
    entry = lock["packages"]["node_modules/pyodide"]
    assert entry["version"] == version and entry["integrity"].startswith("sha512-")


def test_without_npm_ci_the_build_says_what_to_run(tmp_path):
    with pytest.raises(RenderError, match=r"pyodide\.mjs not found: run `npm ci`") as raised:
        pyodide_files(tmp_path)
    assert "\n" not in str(raised.value)


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
