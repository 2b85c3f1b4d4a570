"""Installing the project (`pip install --no-deps --no-build-isolation -e .`, the Makefile's last
install step, run on the GPU runner before any scope exists) runs none of the checkout's code:
setuptools builds it from pyproject.toml's declarations only. Allow-list: the standard backend
with no in-tree path, no setup.py, no dynamic metadata (setuptools' `attr:` imports a module of
the checkout to read it), no command classes or other setuptools settings than package discovery."""

from __future__ import annotations

import tomllib

from tests.conftest import REPO_ROOT

SETUPTOOLS_KEYS = {"packages"}  # [tool.setuptools]: package discovery only


def install_faults(root):
    faults = [f"{name}: setuptools would run it" for name in ("setup.py", "setup.cfg") if (root / name).exists()]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    build = pyproject.get("build-system", {})
    if set(build) != {"requires", "build-backend"} or build["build-backend"] != "setuptools.build_meta":
        faults.append(f"pyproject.toml: [build-system] {build} is not setuptools.build_meta without backend-path")
    if "dynamic" in pyproject.get("project", {}):
        faults.append("pyproject.toml: [project] dynamic metadata is read by running code")
    extra = set(pyproject.get("tool", {}).get("setuptools", {})) - SETUPTOOLS_KEYS
    faults += [f"pyproject.toml: [tool.setuptools] {key} is not package discovery" for key in sorted(extra)]
    return faults


def test_installing_the_project_runs_none_of_its_code():
    assert install_faults(REPO_ROOT) == []


def test_each_way_to_run_code_at_install_is_refused(tmp_path):
    text = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    cases = {
        "backend-path": text.replace(
            'build-backend = "setuptools.build_meta"', 'build-backend = "backend"\nbackend-path = ["."]'
        ),
        "dynamic": text.replace('version = "0.1.0"\n', 'dynamic = ["version"]\n')
        + '\n[tool.setuptools.dynamic]\nversion = {attr = "vram.__version__"}\n',
        "cmdclass": text + '\n[tool.setuptools.cmdclass]\nbuild_py = "hooks.build:BuildPy"\n',
    }
    for name, changed in cases.items():
        assert changed != text, name
        (tmp_path / "pyproject.toml").write_text(changed, encoding="utf-8")
        assert install_faults(tmp_path), name
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    assert install_faults(tmp_path) == []
    (tmp_path / "setup.py").write_text("import os\n", encoding="utf-8")
    assert install_faults(tmp_path) == ["setup.py: setuptools would run it"]
