"""The files that let the finder run ``vram`` in the reader's browser, from the site's own origin.

- ``assets/pyodide/``: Pyodide's runtime, copied from the npm package ``pyodide`` (exact
  version pinned in package-lock.json; ``npm ci`` puts it in ``node_modules/pyodide``),
  only the files a standard-library-only program loads (``PYODIDE_FILES``).
- ``assets/vram-bundle.json``: ``{"sources": {"vram/<name>.py": text}, "configs":
  {model key: config.json text}}``: every ``vram/*.py`` and every finder model's
  ``config.json``, each text exactly as in the checkout (the worker writes the sources
  into Pyodide's file system and imports them; JSON strings carry the text unchanged).

Pure: no MkDocs import; the glue adds them to the build's files.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import data as data_module
from .errors import RenderError

PYODIDE_DIR = data_module.REPO_ROOT / "node_modules" / "pyodide"
PYODIDE_URI = "assets/pyodide"
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
BUNDLE_URI = "assets/vram-bundle.json"
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


def vram_bundle(model_configs: dict[str, Path], vram_dir: Path = VRAM_DIR) -> str:
    """The JSON text of ``assets/vram-bundle.json`` (module docstring)."""
    sources = {f"vram/{path.name}": path.read_text(encoding="utf-8") for path in sorted(vram_dir.glob("*.py"))}
    configs = {key: path.read_text(encoding="utf-8") for key, path in model_configs.items()}
    return json.dumps({"sources": sources, "configs": configs}, sort_keys=True, ensure_ascii=False)
