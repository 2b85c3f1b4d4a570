"""The files that let the finder run ``vram`` in the reader's browser, from the site's own origin.

- ``assets/pyodide/``: Pyodide's runtime, copied from the npm package ``pyodide`` (exact
  version pinned in package-lock.json; ``npm ci`` puts it in ``node_modules/pyodide``),
  byte for byte: its loader, JavaScript runtime and WebAssembly (``PYODIDE_FILES``).
- ``assets/pyodide-stdlib.zip``: the part of the package's standard library
  (``python_stdlib.zip``, 2.5 MB compressed) that Pyodide's start and the worker import,
  about a quarter of it: the members named in ``pyodide_stdlib.txt`` (beside this module;
  ``python -m hooks.finder.pyodide_stdlib`` writes it from what a run of the worker's steps
  imports), each the package's member byte for byte. The worker passes it as ``stdLibURL``.
- ``assets/pyodide-lock.json``: the package's lock file without its package list (its
  ``info``, which Pyodide checks against its ABI, and ``"packages": {}``): the calculator is
  standard library only, and the full list is 120 KB the finder never reads.
- ``assets/vram.zip``: ``vram/<name>.py`` for every ``vram/*.py`` and ``configs/<model
  key>.json`` for every finder model's ``config.json``, each the bytes of the checkout's
  file (deflated, which unzipping undoes exactly; fixed timestamps, so the same checkout
  gives the same archive). The worker puts it on ``sys.path`` as it is (zipimport) and
  reads a model's config.json from it.

``verify/artifact.py`` checks the published copies of all of them against the package and
the checkout. Pure: no MkDocs import; the glue adds them to the build's files.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from hooks.cache import inputs_digest, stored
from hooks.data import load as data_module
from hooks.errors import RenderError

PYODIDE_DIR = data_module.REPO_ROOT / "node_modules" / "pyodide"
PYODIDE_URI = "assets/pyodide"
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm")
PACKAGE_STDLIB, PACKAGE_LOCK = "python_stdlib.zip", "pyodide-lock.json"  # the package's, trimmed for the site
STDLIB_URI = "assets/pyodide-stdlib.zip"
LOCK_URI = "assets/pyodide-lock.json"
STDLIB_MEMBERS = Path(__file__).with_name("pyodide_stdlib.txt")
BUNDLE_URI = "assets/vram.zip"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: the archive depends on the files only
VRAM_DIR = data_module.REPO_ROOT / "vram"


def _package_file(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        where = folder.relative_to(data_module.REPO_ROOT) if folder.is_relative_to(data_module.REPO_ROOT) else folder
        raise RenderError(
            f"{where}/{name} not found: run `npm ci` (Pyodide, pinned in package-lock.json; "
            "`make site` and `make serve` do it)"
        )
    return path


def pyodide_files(folder: Path = PYODIDE_DIR) -> dict[str, Path]:
    """Site URI -> file of the npm package, for each of ``PYODIDE_FILES``. Raises RenderError
    (one line saying how to get it) when the package is not installed."""
    return {f"{PYODIDE_URI}/{name}": _package_file(folder, name) for name in PYODIDE_FILES}


def stdlib_members(listing: Path = STDLIB_MEMBERS) -> list[str]:
    """The members of the package's ``python_stdlib.zip`` the site ships (``pyodide_stdlib.txt``:
    one path a line, ``#`` comments)."""
    lines = listing.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


STDLIB_STORE = data_module.REPO_ROOT / ".cache" / "pyodide-stdlib"  # the trimmed stdlib, by stdlib_digest


def stdlib_bundle(folder: Path = PYODIDE_DIR, listing: Path = STDLIB_MEMBERS, store: Path | None = None) -> bytes:
    """The bytes of ``assets/pyodide-stdlib.zip`` (module docstring). With a ``store`` folder (a
    development build: ``STDLIB_STORE``), kept there under ``stdlib_digest`` and read by the
    next build process. Raises RenderError naming a listed member the package does not hold (a
    Pyodide upgrade: run ``python -m hooks.finder.pyodide_stdlib``)."""
    key = ("stdlib", folder, listing.read_bytes(), store)
    if key not in _built:
        _built[key] = stored(
            store, stdlib_digest(folder, listing), lambda: _stdlib_zip(folder, listing), suffix=".zip", keep=4
        )
    return _built[key]


def stdlib_digest(folder: Path, listing: Path) -> str:
    """SHA-256 (hex) of what ``stdlib_bundle`` zips: the listing, the package's stdlib archive,
    this module (how it zips), and the versions of Python and zlib (how it compresses)."""
    import sys
    import zlib

    package = _package_file(folder, PACKAGE_STDLIB)
    return inputs_digest(
        "pyodide stdlib",
        (sys.version, zlib.ZLIB_RUNTIME_VERSION),
        ([listing], listing.parent),
        ([package], package.parent),
        ([Path(__file__)], Path(__file__).parent),
    )


def _stdlib_zip(folder: Path, listing: Path) -> bytes:
    names = stdlib_members(listing)
    with zipfile.ZipFile(_package_file(folder, PACKAGE_STDLIB)) as package:
        held = set(package.namelist())
        missing = [name for name in names if name not in held]
        if missing:
            raise RenderError(
                f"{listing.relative_to(data_module.REPO_ROOT)}: {missing[0]} is not in "
                f"node_modules/pyodide/{PACKAGE_STDLIB}: run `python -m hooks.finder.pyodide_stdlib`"
            )
        return _zip([(name, package.read(name)) for name in names])


def lock_file(folder: Path = PYODIDE_DIR) -> bytes:
    """The bytes of ``assets/pyodide-lock.json``: the package's lock file's ``info`` and no packages."""
    info = json.loads(_package_file(folder, PACKAGE_LOCK).read_bytes())["info"]
    return json.dumps({"info": info, "packages": {}}, sort_keys=True, separators=(",", ":")).encode()


def vram_bundle(model_configs: dict[str, Path], vram_dir: Path = VRAM_DIR) -> bytes:
    """The bytes of ``assets/vram.zip`` (module docstring)."""
    members = [(f"vram/{path.name}", path) for path in sorted(vram_dir.glob("*.py"))]
    members += [(f"configs/{key}.json", path) for key, path in sorted(model_configs.items())]
    contents = tuple((name, path.read_bytes()) for name, path in members)
    if _last_bundle and _last_bundle[0] == contents:
        return _last_bundle[1]  # the other language's pass: the same bytes, deflated once
    _last_bundle[:] = [contents, _zip(list(contents))]
    return _last_bundle[1]


_last_bundle: list = []  # [the members' names and bytes, the archive] of the last call in this process
_built: dict = {}  # the standard library's archive, by package folder and member list
