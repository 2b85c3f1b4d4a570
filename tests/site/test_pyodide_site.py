"""The built site ships the finder's calculator unchanged: Pyodide's files as the pinned npm
package has them (assets/pyodide/, nothing else there; the WebAssembly packed), fzstd's as its
package has them, and the vram bundle of this checkout, compiled as the standard library is
(verify/precompile.py). The oracle for a packed file: what zstandard unpacks it to."""

from __future__ import annotations

import zstandard

from hooks.finder.compute import model_config_files
from hooks.finder.pyodide_assets import (
    PYODIDE_DIR,
    compiled,
    fzstd_files,
    pyodide_files,
    stdlib_bundle,
    vram_bundle,
)
from verify.precompile import CALCULATOR_PREFIX, STDLIB_PREFIX


def test_the_site_ships_pyodide_and_the_bundle_unchanged(built_site):
    assert PYODIDE_DIR.is_dir(), f"Pyodide missing: run `npm ci` at the repository root ({PYODIDE_DIR})"
    shipped = sorted(path.name for path in (built_site / "assets" / "pyodide").iterdir())
    assert shipped == ["pyodide.asm.mjs", "pyodide.asm.wasm.zst", "pyodide.mjs"]
    for uri, path in {**pyodide_files(), **fzstd_files()}.items():
        assert (built_site / uri).read_bytes() == path.read_bytes(), uri
    assert sorted(path.name for path in (built_site / "assets" / "fzstd").iterdir()) == ["LICENSE", "index.mjs"]

    def unpacked(uri: str) -> bytes:
        return zstandard.ZstdDecompressor().decompress((built_site / uri).read_bytes(), allow_extra_data=False)

    assert unpacked("assets/pyodide/pyodide.asm.wasm.zst") == (PYODIDE_DIR / "pyodide.asm.wasm").read_bytes()
    assert unpacked("assets/pyodide-stdlib.zip.zst") == compiled(stdlib_bundle(), STDLIB_PREFIX)
    assert unpacked("assets/vram.zip.zst") == compiled(vram_bundle(model_config_files()), CALCULATOR_PREFIX)
