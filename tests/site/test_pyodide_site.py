"""The built site ships the finder's calculator unchanged: Pyodide's files as the pinned npm
package has them (assets/pyodide/, nothing else there; the WebAssembly packed), fzstd's as its
package has them, and the standard library and vram archives the build compiles (pyodide_assets,
verify/precompile.py; checked against a fresh compilation by tests/verify/test_artifact.py).
The oracle for a packed file: what zstandard unpacks it to."""

from __future__ import annotations

import io
import zipfile

import zstandard

from hooks.finder.compute import model_config_files
from hooks.finder.pyodide_assets import (
    PACK_STORE,
    PYODIDE_DIR,
    STDLIB_URI,
    fzstd_files,
    packed_runtime,
    pyodide_files,
    stdlib_bundle,
    vram_bundle,
    vram_packed,
)


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
    configs = model_config_files()
    for uri, packed, sources in (
        ("assets/pyodide-stdlib.zip.zst", packed_runtime(store=PACK_STORE)[STDLIB_URI], stdlib_bundle()),
        ("assets/vram.zip.zst", vram_packed(configs, store=PACK_STORE), vram_bundle(configs)),
    ):
        assert unpacked(uri) == zstandard.ZstdDecompressor().decompress(packed), uri
        names = zipfile.ZipFile(io.BytesIO(sources)).namelist()  # the checkout's files, each compiled
        assert zipfile.ZipFile(io.BytesIO(unpacked(uri))).namelist() == [
            n + "c" if n.endswith(".py") else n for n in names
        ]
