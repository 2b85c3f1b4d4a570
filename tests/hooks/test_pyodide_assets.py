"""The files that run the calculator in the finder's browser (hooks/pyodide_assets.py).

- the vram bundle carries every ``vram/*.py`` and every finder model's config.json exactly
  (the bytes of each file are the UTF-8 of its JSON string);
- Pyodide is the npm package pinned in package-lock.json (the built site's copy:
  tests/site/test_pyodide_site.py);
- without ``npm ci`` the build stops with one line saying so.
"""

from __future__ import annotations

import json

import pytest

from hooks.errors import RenderError
from hooks.finder import model_config_files
from hooks.pyodide_assets import PYODIDE_DIR, PYODIDE_FILES, pyodide_files, vram_bundle
from tests.conftest import REPO_ROOT


def test_the_bundle_is_the_calculator_and_the_configs_byte_for_byte():
    configs = model_config_files()
    bundle = json.loads(vram_bundle(configs))
    sources = sorted((REPO_ROOT / "vram").glob("*.py"))
    assert sorted(bundle["sources"]) == [f"vram/{path.name}" for path in sources]
    for path in sources:
        assert bundle["sources"][f"vram/{path.name}"].encode("utf-8") == path.read_bytes(), path.name
    assert set(bundle["configs"]) == set(configs) and len(configs) >= 11
    for key, path in configs.items():
        assert bundle["configs"][key].encode("utf-8") == path.read_bytes(), key


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
