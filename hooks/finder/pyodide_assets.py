"""The files that let the finder run ``vram`` in the reader's browser, from the site's own origin.

- ``assets/pyodide/``: Pyodide's runtime, copied from the npm package ``pyodide`` (exact
  version pinned in package-lock.json; ``npm ci`` puts it in ``node_modules/pyodide``),
  only the files a standard-library-only program loads (``PYODIDE_FILES``).
- ``assets/vram.zip``: ``vram/<name>.py`` for every ``vram/*.py`` and ``configs/<model
  key>.json`` for every finder model's ``config.json``, each the bytes of the checkout's
  file (deflated, which unzipping undoes exactly; fixed timestamps, so the same checkout
  gives the same archive). The worker unpacks it into Pyodide's file
  system and imports ``vram`` from there.

Pure: no MkDocs import; the glue adds them to the build's files.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from hooks.data import load as data_module
from hooks.errors import RenderError

PYODIDE_DIR = data_module.REPO_ROOT / "node_modules" / "pyodide"
PYODIDE_URI = "assets/pyodide"
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
BUNDLE_URI = "assets/vram.zip"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: the archive depends on the files only
VRAM_DIR = data_module.REPO_ROOT / "vram"


def pyodide_files(folder: Path = PYODIDE_DIR) -> dict[str, Path]:
    """Site URI -> file of the npm package, for each of ``PYODIDE_FILES``. Raises RenderError
    (one line saying how to get it) when the package is not installed."""
    missing = [name for name in PYODIDE_FILES if not (folder / name).is_file()]
    if missing:
        raise RenderError(f"{folder.relative_to(data_module.REPO_ROOT) if folder.is_relative_to(data_module.REPO_ROOT) else folder}/"
                          f"{missing[0]} not found: run `npm ci` (Pyodide, pinned in package-lock.json; "
                          "`make site` and `make serve` do it)")
    return {f"{PYODIDE_URI}/{name}": folder / name for name in PYODIDE_FILES}


def vram_bundle(model_configs: dict[str, Path], vram_dir: Path = VRAM_DIR) -> bytes:
    """The bytes of ``assets/vram.zip`` (module docstring)."""
    members = [(f"vram/{path.name}", path) for path in sorted(vram_dir.glob("*.py"))]
    members += [(f"configs/{key}.json", path) for key, path in sorted(model_configs.items())]
    contents = tuple((name, path.read_bytes()) for name, path in members)
    if _last_bundle and _last_bundle[0] == contents:
        return _last_bundle[1]  # the other language's pass: the same bytes, deflated once
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in contents:
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    _last_bundle[:] = [contents, buffer.getvalue()]
    return _last_bundle[1]


_last_bundle: list = []  # [the members' names and bytes, the archive] of the last call in this process
