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
from hooks.finder.pyodide_assets import PYODIDE_DIR, PYODIDE_FILES, pyodide_files, vram_bundle
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
