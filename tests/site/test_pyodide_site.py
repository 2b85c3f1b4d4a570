"""The built site ships the finder's calculator unchanged: Pyodide's files as the pinned npm
package has them (assets/pyodide/, nothing else there) and the vram bundle of this checkout."""

from __future__ import annotations

from hooks.finder.compute import model_config_files
from hooks.finder.pyodide_assets import PYODIDE_DIR, PYODIDE_FILES, pyodide_files, vram_bundle


def test_the_site_ships_pyodide_and_the_bundle_unchanged(built_site):
    assert PYODIDE_DIR.is_dir(), f"Pyodide missing: run `npm ci` at the repository root ({PYODIDE_DIR})"
    shipped = sorted(path.name for path in (built_site / "assets" / "pyodide").iterdir())
    assert shipped == sorted(PYODIDE_FILES)
    for uri, path in pyodide_files().items():
        assert (built_site / uri).read_bytes() == path.read_bytes(), uri
    assert (built_site / "assets" / "vram.zip").read_bytes() == vram_bundle(model_config_files())
