"""The code the finder's worker runs in the reader's browser is the reviewed code.

The attack: a pull request commits ``overrides/assets/vram.zip`` (or a file of
``assets/pyodide/``), a binary nobody reviews, holding a ``vram/job.py`` of its own. The theme's
folder is part of every build's files in every language pass, so the build kept that file
instead of generating the archive from ``vram/``, the strict build passed, and the check of the
site as uploaded accepted any bytes at ``assets/*vram*.zip`` and ``assets/pyodide/*``: the
published finder ran the planted calculator. Now the build refuses a file of ``docs/`` or the
theme at a path it generates (one line naming the file), and the artifact check refuses any
archive that is not exactly the checkout's ``vram/*.py`` and the models' ``config.json`` (the
oracle: the files themselves, read here), and any Pyodide file that is not the npm package's
(the oracle: ``node_modules/pyodide``, installed by ``npm ci`` from package-lock.json).
The WebAssembly and the two archives are published packed (Zstandard): the check unpacks
them as the worker does (one frame, nothing after it) and checks what comes out; fzstd, which
unpacks them in the worker, is the npm package's file (the oracle: ``node_modules/fzstd``).
The archives' Python is published compiled (``verify/precompile.py``): a ``.pyc`` of its own,
even a well-formed one (here compiled by this interpreter from a planted source), is refused,
and so is a source shipped beside or instead of its compiled module.
"""

from __future__ import annotations

import hashlib
import io
import warnings
import zipfile

import pytest
import zstandard

from hooks.finder.compute import model_config_files
from hooks.finder.pyodide_assets import (
    BUNDLE_URI,
    FZSTD_DIR,
    FZSTD_FILES,
    LOCK_URI,
    PACK_STORE,
    PYODIDE_COPIED,
    PYODIDE_DIR,
    PYODIDE_FILES,
    PYODIDE_URI,
    STDLIB_URI,
    WASM_URI,
    fzstd_files,
    lock_file,
    packed_runtime,
    stdlib_bundle,
    vram_packed,
)
from tests.conftest import REPO_ROOT
from verify import artifact
from verify.artifact import (
    CALCULATOR_BUNDLE,
    FZSTD_SHA256,
    LOCK_FILE,
    PYODIDE_SHA256,
    STDLIB_ARCHIVE,
    ArtifactError,
    check_calculator,
)
from verify.precompile import pyc

SNIPPETS, VRAM = REPO_ROOT / "snippets", REPO_ROOT / "vram"


def genuine() -> dict[str, bytes]:
    """What the build publishes (packed with the development builds' store: the same bytes)."""
    files = {f"{PYODIDE_URI}/{name}": (PYODIDE_DIR / name).read_bytes() for name in PYODIDE_COPIED}
    files |= packed_runtime(store=PACK_STORE)
    files[BUNDLE_URI] = vram_packed(model_config_files(), store=PACK_STORE)
    files[LOCK_URI] = lock_file()
    files |= {uri: path.read_bytes() for uri, path in fzstd_files().items()}
    return files


def unpack(packed: bytes) -> bytes:
    return zstandard.ZstdDecompressor().decompress(packed)


def pack(data: bytes) -> bytes:
    """A forged file packed as the build packs one (``hooks.finder.pyodide_assets.pack``: one
    Zstandard frame that says its size) but at zstd's fastest level: the check reads what the
    frame unpacks to, which the level does not change (the build's level 19 spent about 4
    CPU-seconds on the WebAssembly, 1 on the standard library, per forged file)."""
    return zstandard.ZstdCompressor(level=1, write_content_size=True).compress(data)


def rezipped(packed: bytes, change=lambda name, data: data, extra: dict[str, bytes] | None = None) -> bytes:
    """The packed archive with members changed or added, packed again (a zip's members deflated)."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(unpack(packed))) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            target.writestr(info, change(info.filename, source.read(info)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns about a duplicate name: the attack
            for name, data in (extra or {}).items():
                target.writestr(name, data)
    return pack(out.getvalue())


def refused(files: dict[str, bytes], *match: str) -> None:
    with pytest.raises(ArtifactError) as caught:
        check_calculator(files, VRAM, SNIPPETS)
    assert "\n" not in str(caught.value)
    for part in match:
        assert part in str(caught.value)


def test_the_pins_are_the_files_of_the_npm_package_the_build_copies():
    assert PYODIDE_URI == "assets/pyodide" and BUNDLE_URI == CALCULATOR_BUNDLE
    assert (STDLIB_URI, LOCK_URI, PYODIDE_FILES) == (STDLIB_ARCHIVE, LOCK_FILE, artifact.PYODIDE_FILES)
    assert f"{artifact.PYODIDE_DIR}pyodide.asm.wasm{artifact.PACKED}" == WASM_URI
    assert set(PYODIDE_COPIED) == set(PYODIDE_FILES) - set(artifact.PYODIDE_PACKED) and PYODIDE_COPIED
    assert set(PYODIDE_SHA256) == set(PYODIDE_FILES) | {"python_stdlib.zip", "pyodide-lock.json"}
    for name in PYODIDE_SHA256:
        assert hashlib.sha256((PYODIDE_DIR / name).read_bytes()).hexdigest() == PYODIDE_SHA256[name], (
            f"node_modules/pyodide/{name} changed (package-lock.json): update verify/artifact.py, PYODIDE_SHA256"
        )
    assert {artifact.FZSTD_DIR + name: file for name, (file, _) in FZSTD_SHA256.items()} == FZSTD_FILES
    for file, sha256 in FZSTD_SHA256.values():
        assert hashlib.sha256((FZSTD_DIR / file).read_bytes()).hexdigest() == sha256, (
            f"node_modules/fzstd/{file} changed (package-lock.json): update verify/artifact.py, FZSTD_SHA256"
        )


def test_the_archive_the_build_makes_and_the_npm_files_pass():
    check_calculator(genuine(), VRAM, SNIPPETS)


ADDED = "\n\ndef answer_json(text):\n    return '{\"error\": {\"code\": \"planted\"}}'\n"
PLANTED = pyc((VRAM / "job.py").read_bytes() + ADDED.encode(), "/home/pyodide/vram.zip/vram/job.py")
ATTACKS = {
    "a calculator of its own": (
        lambda b: rezipped(b, lambda n, d: PLANTED if n == "vram/job.pyc" else d),
        "vram/job.pyc",
    ),
    "a source beside the compiled module (zipimport reads either)": (
        lambda b: rezipped(b, extra={"vram/job.py": (VRAM / "job.py").read_bytes() + ADDED.encode()}),
        "vram/job.py",
    ),
    "a module that shadows the standard library": (
        lambda b: rezipped(b, extra={"json.py": b"raise SystemExit"}),
        "json.py",
    ),
    "a config the page does not name": (
        lambda b: rezipped(
            b,
            lambda n, d: (
                d.replace(b'"num_hidden_layers": 16', b'"num_hidden_layers": 1')
                if n == "configs/llama-3.2-1b.json"
                else d
            ),
        ),
        "configs/llama-3.2-1b.json",
    ),
    "a member twice (the last one wins when unpacked)": (
        lambda b: rezipped(b, extra={"vram/job.pyc": PLANTED}),
        "vram/job.pyc",
    ),
    "a member left out": (lambda b: _without(b, "vram/fit.pyc"), "vram/fit.pyc"),
    "not a zip": (lambda b: pack(b"\0"), "not a readable zip"),
    "not packed": (unpack, "not one Zstandard frame"),
    # fzstd unpacks a second frame too (the archive the worker reads would not be the one checked)
    "a second frame after the archive": (lambda b: b + pack(b"PK\5\6" + bytes(18)), "not one Zstandard frame"),
    "a frame that does not say its size": (
        lambda b: zstandard.ZstdCompressor(write_content_size=False).compress(unpack(b)),
        "unpacked size",
    ),
}


def _without(packed: bytes, name: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(unpack(packed))) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            if info.filename != name:
                target.writestr(info, source.read(info))
    return pack(out.getvalue())


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_an_archive_that_is_not_the_checkouts_calculator_is_refused(attack):
    make, named = ATTACKS[attack]
    files = genuine()
    files[BUNDLE_URI] = make(files[BUNDLE_URI])
    refused(files, BUNDLE_URI, named)


def test_the_standard_library_shipped_is_modules_of_the_packages_compiled():
    """The oracle: node_modules/pyodide/python_stdlib.zip itself (its SHA-256 pinned): each
    member published is a module of it, compiled (``x.pyc`` from ``x.py``), each once."""
    package = zipfile.ZipFile(PYODIDE_DIR / "python_stdlib.zip")
    sources = zipfile.ZipFile(io.BytesIO(stdlib_bundle())).namelist()
    shipped = zipfile.ZipFile(io.BytesIO(unpack(genuine()[STDLIB_URI]))).namelist()  # what is published
    assert shipped == [name + "c" for name in sources]
    assert len(sources) == len(set(sources)) and 50 < len(sources) < len(package.namelist()) / 2
    assert set(sources) <= set(package.namelist()) and all(name.endswith(".py") for name in sources)
    assert "json/__init__.py" in sources and "decimal.py" in sources  # what vram imports (json, decimal)


STDLIB_ATTACKS = {
    "a module of its own that shadows the standard library": (
        lambda b: rezipped(
            b, lambda n, d: pyc(b"raise SystemExit", "/lib/python314.zip/" + n[:-1]) if n == "json/__init__.pyc" else d
        ),
        "json/__init__.pyc",
    ),
    "a module the package does not have": (
        lambda b: rezipped(b, extra={"sitecustomize.pyc": pyc(b"import os", "sitecustomize.py")}),
        "sitecustomize.pyc",
    ),
    "a member twice": (lambda b: rezipped(b, extra={"decimal.pyc": pyc(b"x = 1", "decimal.py")}), "decimal.pyc"),
    "a module both compiled and as source": (lambda b: rezipped(b, extra={"decimal.py": b"x = 1"}), "decimal.py"),
    "a module of the package as its source": (
        lambda b: rezipped(b, extra={"colorsys.py": package_member("colorsys.py")}),
        "colorsys.py",
    ),
}


def package_member(name: str) -> bytes:
    return zipfile.ZipFile(PYODIDE_DIR / "python_stdlib.zip").read(name)


@pytest.mark.parametrize("attack", list(STDLIB_ATTACKS), ids=list(STDLIB_ATTACKS))
def test_a_standard_library_that_is_not_the_packages_is_refused(attack):
    make, named = STDLIB_ATTACKS[attack]
    files = genuine()
    files[STDLIB_URI] = make(files[STDLIB_URI])
    refused(files, STDLIB_URI, named)


def test_a_lock_file_with_packages_is_refused():
    files = genuine()
    files[LOCK_URI] = (PYODIDE_DIR / "pyodide-lock.json").read_bytes()  # the whole list: a package could be installed
    refused(files, LOCK_URI)


@pytest.mark.parametrize("name", ["pyodide.asm.wasm", "python_stdlib.zip", "pyodide.mjs", "pyodide.asm.js"])
def test_a_pyodide_file_that_is_not_the_npm_packages_is_refused(name):
    files = genuine()
    files[f"{PYODIDE_URI}/{name}"] = files.get(f"{PYODIDE_URI}/{name}", b"") + b"\n"
    refused(files, f"{PYODIDE_URI}/{name}", "PYODIDE_SHA256")


@pytest.mark.parametrize("name", ["pyodide.asm.wasm", "pyodide.asm.mjs", "python_stdlib.zip"])
def test_a_packed_pyodide_file_is_checked_unpacked(name):
    """Packed, the WebAssembly is checked as what it unpacks to: another WebAssembly (here one
    byte more), a file of the package the site ships as it is, or one it does not ship, is refused."""
    files = genuine()
    files[f"{PYODIDE_URI}/{name}.zst"] = pack((PYODIDE_DIR / name).read_bytes() + (b"\0" if "wasm" in name else b""))
    refused(files, f"{PYODIDE_URI}/{name}.zst", "PYODIDE_SHA256")


@pytest.mark.parametrize("name", ["index.mjs", "LICENSE", "index.js"])
def test_an_fzstd_file_that_is_not_the_npm_packages_is_refused(name):
    """fzstd unpacks the calculator's files in the worker: another script there could hand
    Pyodide any bytes. The oracle: node_modules/fzstd (FZSTD_SHA256, checked above)."""
    files = genuine()
    path = f"{artifact.FZSTD_DIR}{name}"
    files[path] = files.get(path, b"") + b"\n"
    refused(files, path, "FZSTD_SHA256")


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["overrides/assets/vram.zip.zst", "docs/assets/finder.json"])
def test_the_build_refuses_a_file_at_a_path_it_writes_itself(planted, warm_repo_copy, tmp_path, forked_build_site):
    """The attack as a pull request writes it: the strict build stops with one line naming the file.
    (A copy built once before: finder.json, generated before the calculator's archive, is read
    from its store rather than computed again.)"""
    repo_copy = warm_repo_copy
    (repo_copy / planted).parent.mkdir(parents=True, exist_ok=True)
    (repo_copy / planted).write_bytes(b"\0")
    result = forked_build_site(tmp_path / "site", config=repo_copy / "mkdocs.yml")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and f"{planted}: the build writes" in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
