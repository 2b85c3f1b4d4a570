"""How the finder's Python is compiled for the reader's browser (verify/precompile.py).

- What the compiled module does is what its source does: imported from a zip the way the
  worker imports it (zipimport reading ``<name>.pyc``), a module compiled by ``pyc`` returns
  the same values and raises the same exceptions, assertions included, as the source imported
  by this interpreter (the oracle); only ``__doc__`` is None and each line number is its code
  object's first line (never None, so a warning or a traceback still formats).
- The header is PEP 552's: this interpreter's magic number, "hash-based, unchecked", the hash
  ``importlib.util.source_hash`` gives of the source (the oracle: importlib itself).
- The archives the build publishes (compiled by the pinned package under Node.js): Pyodide
  starts from them and the calculator answers jobs with the same JSON text as CPython's
  ``vram.job.answer_json`` (the oracle), importing every module compiled. (That another
  process compiling them again gives the same bytes, what lets the check of the site compare
  them, is tests/verify/test_artifact_calculator.py's genuine case.)
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import shutil
import subprocess
import sys
import traceback
import warnings
import zipfile

import pytest
import zstandard

from hooks.finder.compute import model_config_files
from hooks.finder.pyodide_assets import PACK_STORE, PYODIDE_DIR, STDLIB_URI, lock_file, packed_runtime, vram_packed
from verify.precompile import CALCULATOR_PREFIX, PYC_FLAGS, STDLIB_PREFIX, compile_archive, pyc

SOURCE = b'''"""A module's docstring."""
import warnings


def twice(x):
    """A function's docstring."""
    assert x >= 0, "negative"
    return 2 * x


def fails(x):
    y = x + 1
    raise ValueError(f"bad {y}")


def warns():
    warnings.warn("careful", UserWarning)
    return "warned"


class Box:
    """A class's docstring."""

    def only_a_docstring(self):
        """Nothing else."""


FROZEN = {"a", "b"}
'''


def imported(tmp_path, name: str, archive: bytes):
    """Module ``name`` imported from ``archive`` as the worker does (zipimport on sys.path)."""
    path = tmp_path / f"{name}.zip"
    path.write_bytes(archive)
    sys.path.insert(0, str(path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(path))
        sys.modules.pop(name, None)


def one_member(name: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(name, data)
    return out.getvalue()


def test_a_compiled_module_does_what_its_source_does(tmp_path):
    source = imported(tmp_path, "src_mod", one_member("src_mod.py", SOURCE))
    built = imported(tmp_path, "pyc_mod", compile_archive(one_member("pyc_mod.py", SOURCE), str(tmp_path) + "/"))
    assert built.__file__.endswith("pyc_mod.pyc")  # imported compiled, not from a source
    assert built.twice(21) == source.twice(21) == 42 and built.FROZEN == source.FROZEN
    for module in (source, built):
        with pytest.raises(AssertionError, match="negative"):
            module.twice(-1)  # assertions kept (python -OO would drop them)
        with pytest.raises(ValueError, match="bad 3"):
            module.fails(2)
    assert source.__doc__ and source.twice.__doc__ and source.Box.__doc__
    assert built.__doc__ is built.twice.__doc__ is built.Box.__doc__ is None
    assert built.Box().only_a_docstring() is None


def test_line_numbers_are_each_function_s_first_line_and_still_format(tmp_path):
    built = imported(tmp_path, "lines_mod", compile_archive(one_member("lines_mod.py", SOURCE), "/x/"))
    code = built.fails.__code__
    assert {line for _, _, line in code.co_lines()} == {code.co_firstlineno} == {11}  # def fails(x): line 11
    assert set(code.co_positions()) == {(11, 11, None, None)}
    try:
        built.fails(0)
    except ValueError:
        text = traceback.format_exc()
    assert 'File "/x/lines_mod.py", line 11, in fails' in text
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert built.warns() == "warned"
    assert caught[0].lineno == 16 and warnings.formatwarning(  # def warns(): line 16
        caught[0].message, caught[0].category, caught[0].filename, caught[0].lineno
    ).startswith("/x/lines_mod.py:16: UserWarning: careful")


def test_the_header_is_pep_552_s_unchecked_hash_of_the_source():
    data = pyc(SOURCE, "m.py")
    assert data[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(data[4:8], "little") == PYC_FLAGS == 0b01
    assert data[8:16] == importlib.util.source_hash(SOURCE)


def test_an_archive_keeps_its_order_and_its_other_members():
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("pkg/b.py", b"x = 1\n")
        out.writestr("configs/m.json", b'{"a": 1}')
        out.writestr("pkg/a.py", b"y = 2\n")
    result = zipfile.ZipFile(io.BytesIO(compile_archive(archive.getvalue(), "/p/")))
    assert result.namelist() == ["pkg/b.pyc", "configs/m.json", "pkg/a.pyc"]
    assert result.read("configs/m.json") == b'{"a": 1}'
    assert result.read("pkg/a.pyc") == pyc(b"y = 2\n", "/p/pkg/a.py")


RUN = """
import { loadPyodide } from %(mjs)s;
import fs from "fs";
const pyodide = await loadPyodide({ indexURL: %(index)s, stdLibURL: %(stdlib)s, lockFileURL: %(lock)s });
pyodide.FS.writeFile("/home/pyodide/vram.zip", fs.readFileSync(%(vram)s));
pyodide.globals.set("jobs", fs.readFileSync(%(jobs)s, { encoding: "utf8" }));
console.log(pyodide.runPython(`
import json, sys, zipimport
sys.path.insert(0, "/home/pyodide/vram.zip")
import vram.job
calculator = zipimport.zipimporter("/home/pyodide/vram.zip")
answers = []
for job in json.loads(jobs):
    job["config"] = calculator.get_data("configs/" + job.pop("model") + ".json").decode()
    answers.append(vram.job.answer_json(json.dumps(job)))
json.dumps({"answers": answers, "compiled": sorted(m.__spec__.origin for m in list(sys.modules.values())
    if getattr(m, "__spec__", None) is not None and ".zip/" in (m.__spec__.origin or ""))})
`));
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None or not (PYODIDE_DIR / "pyodide.mjs").exists(), reason="npm ci")
def test_pyodide_runs_the_published_archives_and_answers_as_cpython(tmp_path):
    from vram.job import answer_json

    configs = model_config_files()
    unpack = zstandard.ZstdDecompressor().decompress
    (tmp_path / "stdlib.zip").write_bytes(unpack(packed_runtime(store=PACK_STORE)[STDLIB_URI]))  # as published
    (tmp_path / "vram.zip").write_bytes(unpack(vram_packed(configs, store=PACK_STORE)))
    (tmp_path / "lock.json").write_bytes(lock_file())
    jobs = [
        {"kind": "training", "model": "llama-3.1-8b", "seq_len": 4096},
        {"kind": "serving", "model": "qwen3-8b", "context": 8192, "concurrent": 4},
        {"kind": "training", "model": "llama-3.1-8b", "seq_len": -3},  # refused: one error, the same text
    ]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    names = {"stdlib": "stdlib.zip", "vram": "vram.zip", "lock": "lock.json", "jobs": "jobs.json"}
    script = tmp_path / "run.mjs"
    script.write_text(
        RUN
        % (
            {key: json.dumps(str(tmp_path / name)) for key, name in names.items()}
            | {
                "mjs": json.dumps((PYODIDE_DIR / "pyodide.mjs").resolve().as_uri()),
                "index": json.dumps(f"{PYODIDE_DIR}/"),
            }
        ),
        encoding="utf-8",
    )
    run = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    for job, answer in zip(jobs, result["answers"], strict=True):
        config = configs[job["model"]].read_text(encoding="utf-8")
        assert answer == answer_json(
            json.dumps({key: value for key, value in job.items() if key != "model"} | {"config": config})
        )
    assert '"error"' in result["answers"][-1] and '"error"' not in result["answers"][0]
    origins = result["compiled"]
    assert f"{CALCULATOR_PREFIX}vram/job.pyc" in origins and f"{STDLIB_PREFIX}json/__init__.pyc" in origins
    assert not [origin for origin in origins if origin.endswith(".py")]  # nothing compiled from a source
