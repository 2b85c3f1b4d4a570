"""The files that let the finder run ``vram`` in the reader's browser, from the site's own origin.

- ``assets/pyodide/``: Pyodide's runtime, from the npm package ``pyodide`` (exact version
  pinned in package-lock.json; ``npm ci`` puts it in ``node_modules/pyodide``): its loader and
  JavaScript runtime copied byte for byte (``PYODIDE_COPIED``), its WebAssembly packed
  (``pyodide.asm.wasm.zst``, below).
- ``assets/pyodide-stdlib.zip.zst``: the part of the package's standard library
  (``python_stdlib.zip``, 2.5 MB compressed) that Pyodide's start and the worker import,
  about a quarter of it: the members named in ``pyodide_stdlib.txt`` (beside this module;
  ``python -m hooks.finder.pyodide_stdlib`` writes it from what a run of the worker's steps
  imports), each compiled from the package's member (``verify/precompile.py``: ``<name>.pyc``,
  the bytecode the package's own CPython makes of it, without docstrings, each function's
  lines reduced to its first), stored (the packing compresses them together). The worker
  gives it to Pyodide as ``stdLibURL``.
- ``assets/pyodide-lock.json``: the package's lock file without its package list (its
  ``info``, which Pyodide checks against its ABI, and ``"packages": {}``): the calculator is
  standard library only, and the full list is 120 KB the finder never reads.
- ``assets/vram.zip.zst``: ``vram/<name>.pyc`` compiled (as above) from every ``vram/*.py``
  of the checkout, and ``configs/<model key>.json`` for every finder model's ``config.json``,
  the bytes of the checkout's file (stored; fixed timestamps, so the same checkout gives the
  same archive). The worker puts it on ``sys.path`` as it is (zipimport) and reads a model's
  config.json from it. Both archives are written by ``verify.archive.canonical_zip``, the
  writer the check uses: it accepts only that writer's bytes of the members it accepted.
- ``assets/fzstd/``: the npm package ``fzstd`` (pinned in package-lock.json), its ES module
  and licence byte for byte (``FZSTD_FILES``): the worker unpacks the ``.zst`` files with it.

Compiled, the worker's cold start no longer compiles 3 MB of Python source in WebAssembly
(``verify/precompile.py`` says what it cost): ``vram_bundle`` and ``stdlib_bundle`` are the
sources, ``vram_packed`` and ``packed_runtime`` what is published.

Packed (``pack``): one Zstandard frame (level ``PACK_LEVEL``) of the file, served as it is.
GitHub Pages compresses text and WebAssembly on the fly with gzip, and a zip not at all
(``bench/weight.py``): packed, these three files weigh a fifth less than gzip makes of them
(``bench/README.md``, the finder's first use). Unpacking gives the original bytes: the
WebAssembly is the package's file, each zip member compiled from the package's or the
checkout's file, or the checkout's file.

``verify/artifact.py`` checks the published copies of all of them against the packages and
the checkout, unpacked (compiling the sources again). Pure: no MkDocs import; the glue adds
them to the build's files.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

from hooks.cache import inputs_digest, stored
from hooks.data import load as data_module
from hooks.errors import RenderError
from verify import archive as zip_writer, precompile

PYODIDE_DIR = data_module.REPO_ROOT / "node_modules" / "pyodide"
PYODIDE_URI = "assets/pyodide"
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm")  # what the site ships of the package
PYODIDE_COPIED = ("pyodide.mjs", "pyodide.asm.mjs")  # as they are (Pyodide imports the runtime with import())
PACKAGE_WASM, PACKAGE_STDLIB, PACKAGE_LOCK = "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"
PACKED = ".zst"  # the suffix of a packed file: Zstandard
PACK_LEVEL = 19  # the smallest of the levels that need no --ultra window (22 saves 0.1 %, decodes alike)
WASM_URI = f"{PYODIDE_URI}/{PACKAGE_WASM}{PACKED}"
STDLIB_URI = f"assets/pyodide-stdlib.zip{PACKED}"
LOCK_URI = "assets/pyodide-lock.json"
STDLIB_MEMBERS = Path(__file__).with_name("pyodide_stdlib.txt")
BUNDLE_URI = f"assets/vram.zip{PACKED}"
VRAM_DIR = data_module.REPO_ROOT / "vram"
FZSTD_DIR = data_module.REPO_ROOT / "node_modules" / "fzstd"
FZSTD_FILES = {"assets/fzstd/index.mjs": "esm/index.mjs", "assets/fzstd/LICENSE": "LICENSE"}  # site URI: package file
# Development builds keep what they packed, by the SHA-256 of its inputs (publication builds pack)
PACK_STORE = data_module.REPO_ROOT / ".cache" / "packed"


def _package_file(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        where = folder.relative_to(data_module.REPO_ROOT) if folder.is_relative_to(data_module.REPO_ROOT) else folder
        raise RenderError(
            f"{where}/{name} not found: run `npm ci` (Pyodide and fzstd, pinned in package-lock.json; "
            "`make site` and `make serve` do it)"
        )
    return path


def pyodide_files(folder: Path = PYODIDE_DIR) -> dict[str, Path]:
    """Site URI -> file of the npm package, for each of ``PYODIDE_COPIED``. Raises RenderError
    (one line saying how to get it) when the package is not installed."""
    return {f"{PYODIDE_URI}/{name}": _package_file(folder, name) for name in PYODIDE_COPIED}


def fzstd_files(folder: Path = FZSTD_DIR) -> dict[str, Path]:
    """Site URI -> file of the npm package fzstd, for each of ``FZSTD_FILES``. Raises
    RenderError when the package is not installed."""
    return {uri: _package_file(folder, name) for uri, name in FZSTD_FILES.items()}


def pack(data: bytes) -> bytes:
    """``data`` as one Zstandard frame at ``PACK_LEVEL``, its size in the frame's header."""
    import zstandard

    return zstandard.ZstdCompressor(level=PACK_LEVEL, write_content_size=True).compress(data)


def _packer_versions() -> tuple[str, ...]:
    """What decides the packed bytes besides the input: Python, zstandard and its libzstd."""
    import zstandard

    return (sys.version, zstandard.__version__, ".".join(map(str, zstandard.ZSTD_VERSION)), str(PACK_LEVEL))


def stdlib_members(listing: Path = STDLIB_MEMBERS) -> list[str]:
    """The members of the package's ``python_stdlib.zip`` the site ships (``pyodide_stdlib.txt``:
    one path a line, ``#`` comments)."""
    lines = listing.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def stdlib_bundle(folder: Path = PYODIDE_DIR, listing: Path = STDLIB_MEMBERS) -> bytes:
    """The standard library's archive the worker gives Pyodide (module docstring), unpacked.
    Raises RenderError naming a listed member the package does not hold (a Pyodide upgrade:
    run ``python -m hooks.finder.pyodide_stdlib``)."""
    names = stdlib_members(listing)
    with zipfile.ZipFile(_package_file(folder, PACKAGE_STDLIB)) as package:
        held = set(package.namelist())
        missing = [name for name in names if name not in held]
        if missing:
            where = (
                listing.relative_to(data_module.REPO_ROOT) if listing.is_relative_to(data_module.REPO_ROOT) else listing
            )
            raise RenderError(
                f"{where}: {missing[0]} is not in node_modules/pyodide/{PACKAGE_STDLIB}: "
                "run `python -m hooks.finder.pyodide_stdlib`"
            )
        return zip_writer.canonical_zip([(name, package.read(name)) for name in names])


def compiled(archive: bytes, prefix: str, folder: Path = PYODIDE_DIR) -> bytes:
    """``archive`` (a zip of sources) with each ``.py`` member compiled by the package's CPython
    (``verify.precompile``: ``<name>.pyc``, its code's file name ``prefix + name``), the other
    members as they are, written by ``verify.archive.canonical_zip`` (the archive the check accepts).
    Raises RenderError (one line) when Node.js is missing or fails."""
    try:
        (result,) = precompile.precompiled([(archive, prefix)], folder)
    except precompile.PrecompileError as exc:
        raise RenderError(str(exc)) from None
    with zipfile.ZipFile(io.BytesIO(result)) as members:
        return zip_writer.canonical_zip([(info.filename, members.read(info)) for info in members.infolist()])


def _writer_files() -> tuple[list[Path], Path]:
    """What decides an archive's bytes besides its members and the compiler, as ``inputs_digest``
    takes files: this module and the zip writer (``verify/archive.py``)."""
    return [Path(__file__), Path(zip_writer.__file__)], data_module.REPO_ROOT


def _compiler_digest(folder: Path) -> str:
    """SHA-256 of what decides a compiled archive besides its sources: the package's files that
    compile (``precompile.COMPILER_FILES``) and ``verify/precompile.py``, once per process while
    none of them changes."""
    files = [_package_file(folder, name) for name in precompile.COMPILER_FILES] + [Path(precompile.__file__)]
    stamp = (folder, *((path.stat().st_mtime_ns, path.stat().st_size) for path in files))
    if stamp not in _compilers:
        _compilers[stamp] = inputs_digest("pyodide compiler", (), (files[:-1], folder), (files[-1:], files[-1].parent))
    return _compilers[stamp]


def packed_runtime(
    folder: Path = PYODIDE_DIR, listing: Path = STDLIB_MEMBERS, store: Path | None = None
) -> dict[str, bytes]:
    """``WASM_URI`` and ``STDLIB_URI`` -> their bytes: the package's WebAssembly and
    ``stdlib_bundle`` compiled (``compiled``), packed. Made once per process for the same
    inputs; with a ``store`` folder (a development build: ``PACK_STORE``), kept there under the
    SHA-256 of the inputs (the package's files, the listing, this module, the zip writer, the compiler,
    ``_packer_versions``) and read by the next build process. Raises RenderError as
    ``stdlib_bundle`` and ``compiled`` do, or when the package is missing."""
    wasm, package = _package_file(folder, PACKAGE_WASM), _package_file(folder, PACKAGE_STDLIB)
    key = (folder, listing.read_bytes(), store, *(path.stat().st_mtime_ns for path in (wasm, package)))
    if key not in _built:
        module = ([Path(__file__)], Path(__file__).parent)
        compiler = _compiler_digest(folder)  # the WebAssembly and the package's standard library among them
        wasm_key = inputs_digest("pyodide wasm", (*_packer_versions(), compiler), module)
        stdlib_key = inputs_digest(
            "pyodide stdlib", (*_packer_versions(), compiler), ([listing], listing.parent), _writer_files()
        )
        _built[key] = {
            WASM_URI: stored(store, wasm_key, lambda: pack(wasm.read_bytes()), suffix=".wasm.zst", keep=2),
            STDLIB_URI: stored(
                store,
                stdlib_key,
                lambda: pack(compiled(stdlib_bundle(folder, listing), precompile.STDLIB_PREFIX, folder)),
                suffix=".zip.zst",
                keep=4,
            ),
        }
    return _built[key]


def lock_file(folder: Path = PYODIDE_DIR) -> bytes:
    """The bytes of ``assets/pyodide-lock.json``: the package's lock file's ``info`` and no packages."""
    info = json.loads(_package_file(folder, PACKAGE_LOCK).read_bytes())["info"]
    return json.dumps({"info": info, "packages": {}}, sort_keys=True, separators=(",", ":")).encode()


def vram_bundle(model_configs: dict[str, Path], vram_dir: Path = VRAM_DIR) -> bytes:
    """The calculator's archive (module docstring), unpacked."""
    return _vram(model_configs, vram_dir)[0]


def vram_packed(
    model_configs: dict[str, Path], vram_dir: Path = VRAM_DIR, store: Path | None = None, folder: Path = PYODIDE_DIR
) -> bytes:
    """The bytes of ``BUNDLE_URI``: ``vram_bundle`` compiled (``compiled``), packed; with a
    ``store`` folder (a development build: ``PACK_STORE``), kept there under the SHA-256 of the
    archive, the compiler, this module and the zip writer. Raises RenderError as ``compiled`` does."""
    bundle, packed = _vram(model_configs, vram_dir)
    if store not in packed:
        key = inputs_digest(
            "vram bundle",
            (*_packer_versions(), _compiler_digest(folder), hashlib.sha256(bundle).hexdigest()),
            _writer_files(),
        )
        packed[store] = stored(
            store,
            key,
            lambda: pack(compiled(bundle, precompile.CALCULATOR_PREFIX, folder)),
            suffix=".vram.zst",
            keep=4,
        )
    return packed[store]


def _vram(model_configs: dict[str, Path], vram_dir: Path) -> tuple[bytes, dict]:
    """(the archive, its packed bytes by store) for the checkout's files as they are now."""
    members = [(f"vram/{path.name}", path) for path in sorted(vram_dir.glob("*.py"))]
    members += [(f"configs/{key}.json", path) for key, path in sorted(model_configs.items())]
    contents = tuple((name, path.read_bytes()) for name, path in members)
    if not (_last_bundle and _last_bundle[0] == contents):  # else the other language's pass: the same bytes
        _last_bundle[:] = [contents, zip_writer.canonical_zip(list(contents)), {}]
    return _last_bundle[1], _last_bundle[2]


_last_bundle: list = []  # [the members' names and bytes, the archive, its packed bytes by store] of the last call
_built: dict = {}  # the packed WebAssembly and standard library, by package folder, member list and store
_compilers: dict = {}  # _compiler_digest by package folder and its files' modification times
