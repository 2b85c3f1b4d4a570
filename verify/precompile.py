"""How the finder's Python is compiled for the reader's browser: one definition, for the build
(``hooks/finder/pyodide_assets.py``) and for the check of the site as uploaded (``verify/artifact.py``).

Pyodide's worker spent most of its cold start compiling Python source: its own start imports
about 125 modules of the standard library and ``vram.job`` 37 more, and CPython compiled each
from its ``.py`` in WebAssembly, mostly before V8 had optimised the compiler (a CPU profile
of a cold start in Chromium 156: ``compile()`` under 55 % of the worker thread's samples; the
worker thread's CPU time to its first answer 2.1-2.4 s with sources, 0.8-0.9 s compiled, on
this project's 2-core machine). The site ships them compiled instead: each ``<name>.py`` of the two archives becomes
``<name>.pyc``, the bytecode the pinned Pyodide's own CPython (3.14, run under Node.js from
``node_modules/pyodide``) compiles from the file's bytes, so the worker imports it with no
compilation (``zipimport`` reads a ``.pyc`` before a ``.py``). Two things are left out of the
bytecode, as they weigh more than the source they replace:

- docstrings (what ``python -OO`` removes; assertions are kept, unlike ``-OO``): a module,
  class or function of the worker has ``__doc__`` None;
- line numbers beyond each code object's first line: a traceback in the worker names the
  line of the function's ``def`` (or 1 for a module's body), never None, and no column.

Nothing else changes: the code objects are what ``compile()`` makes of the file (with
``PYTHONHASHSEED=0``, so that the bytes are the same on every run), and a ``.pyc``'s header is
PEP 552's unchecked hash of the source it was compiled from. The check of the site compiles
the package's and the checkout's files again, with the same pinned Pyodide and this module,
and compares the bytes (``precompiled``).

``compile_archive`` runs inside Pyodide (standard library only, Python 3.11 to 3.14: the
line table format of ``first_line_table`` is CPython's since 3.11, ``InternalDocs/code_objects.md``);
``precompiled`` runs Node.js here.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import marshal
import zipfile
from pathlib import Path
from types import CodeType

PYC_FLAGS = 0b01  # PEP 552: hash-based, unchecked (the worker never has the source to check against)
NO_COLUMNS = 13  # the location table's entry kind "line only" (CPython's PY_CODE_LOCATION_INFO_NO_COLUMNS)
HASH_SEED = "0"  # PYTHONHASHSEED of the compiling interpreter: a frozenset constant's order is then fixed
# Where the worker finds each archive, the start of its modules' file names (co_filename):
# Pyodide mounts its standard library at /lib/python<major><minor>.zip (3.14: the lock file's
# info.python), the worker puts the calculator's at /home/pyodide/vram.zip (ARCHIVE in
# docs/assets/finder-worker.js).
STDLIB_PREFIX = "/lib/python314.zip/"
CALCULATOR_PREFIX = "/home/pyodide/vram.zip/"
# The files of the npm package pyodide that compile (Node.js loads the runtime and its whole
# standard library; the lock file is read too)
COMPILER_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")


class _DropDocstrings(ast.NodeTransformer):
    """Removes the docstring of each module, class and function (an empty body gets ``pass``)."""

    def _drop(self, node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.generic_visit(node)
        body = node.body
        first = body[0].value if body and isinstance(body[0], ast.Expr) else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            node.body = body[1:] or [ast.copy_location(ast.Pass(), body[0])]
        return node

    visit_Module = visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = _drop


def first_line_table(code: CodeType) -> CodeType:
    """``code`` and every code object among its constants, each with a location table that puts
    all its instructions on its first line (``co_firstlineno``), without columns: one entry
    (kind ``NO_COLUMNS``, line delta 0) per 8 code units at most."""
    units = len(code.co_code) // 2
    table = bytearray()
    while units > 0:
        length = min(8, units)
        table += bytes((0x80 | NO_COLUMNS << 3 | (length - 1), 0))  # the delta 0 as a signed varint
        units -= length
    consts = tuple(first_line_table(const) if isinstance(const, CodeType) else const for const in code.co_consts)
    return code.replace(co_linetable=bytes(table), co_consts=consts)


def pyc(source: bytes, filename: str) -> bytes:
    """The ``.pyc`` of ``source`` (a module's bytes) as the worker imports it from ``filename``:
    PEP 552's header (``importlib.util.MAGIC_NUMBER``, ``PYC_FLAGS``, the source's hash) and the
    module's code, compiled without docstrings, with ``first_line_table``. Raises SyntaxError."""
    tree = _DropDocstrings().visit(ast.parse(source, filename))
    code = first_line_table(compile(tree, filename, "exec", dont_inherit=True, optimize=0))
    header = importlib.util.MAGIC_NUMBER + PYC_FLAGS.to_bytes(4, "little") + importlib.util.source_hash(source)
    return header + marshal.dumps(code)


def compile_archive(data: bytes, prefix: str) -> bytes:
    """The zip ``data`` with each ``<name>.py`` member replaced by ``<name>.pyc`` (``pyc``, its
    file name ``prefix + name``: where the worker finds the archive), in the same order; the
    other members as they are. Members stored, without timestamps that matter: only the names
    and bytes are read back."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            content = source.read(info)
            name = info.filename
            if name.endswith(".py"):
                content, name = pyc(content, prefix + name), name + "c"
            target.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), content)
    return out.getvalue()


RUNNER = """
import { loadPyodide } from %(pyodide)s;
import fs from "fs";
const jobs = JSON.parse(fs.readFileSync(%(jobs)s, { encoding: "utf8" }));
const pyodide = await loadPyodide({ indexURL: %(index)s, env: { PYTHONHASHSEED: %(seed)s } });
pyodide.FS.writeFile("/home/pyodide/finder_precompile.py", fs.readFileSync(%(module)s));
for (const job of jobs) {
  pyodide.FS.writeFile("/home/pyodide/in.zip", fs.readFileSync(job.input));
  pyodide.globals.set("prefix", job.prefix);
  pyodide.runPython(`
from pathlib import Path
import finder_precompile
Path("out.zip").write_bytes(finder_precompile.compile_archive(Path("in.zip").read_bytes(), prefix))
`);
  fs.writeFileSync(job.output, pyodide.FS.readFile("/home/pyodide/out.zip"));
}
"""


class PrecompileError(Exception):
    """Node.js is missing or failed (one line, saying which)."""


_done: dict[tuple[object, ...], list[bytes]] = {}  # the results of this process, by the SHA-256 of the inputs


def precompiled(archives: list[tuple[bytes, str]], pyodide_dir: Path) -> list[bytes]:
    """Each ``(zip, prefix)`` of ``archives`` through ``compile_archive``, run by the Pyodide of
    ``pyodide_dir`` (the npm package, its whole standard library) under Node.js, in one process;
    the same inputs (archives, package files, this module) are compiled once per process.
    Raises PrecompileError when ``node`` is not installed or fails."""
    import hashlib
    import json
    import shutil
    import subprocess
    import tempfile

    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    compiler = [pyodide_dir / name for name in COMPILER_FILES]
    try:
        stamps = tuple((str(path.resolve()), path.stat().st_mtime_ns, path.stat().st_size) for path in compiler)
    except OSError as exc:
        raise PrecompileError(f"{exc.filename}: not found; run `npm ci`") from None
    key = (tuple((digest(data), prefix) for data, prefix in archives), stamps, digest(Path(__file__).read_bytes()))
    if key in _done:
        return _done[key]

    node = shutil.which("node")
    if node is None:
        raise PrecompileError(
            "node not found: the finder's Python is compiled by the pinned Pyodide under Node.js (the one `npm ci` uses)"
        )
    with tempfile.TemporaryDirectory(prefix="finder-precompile-") as tmp:
        folder = Path(tmp)
        jobs = []
        for index, (data, prefix) in enumerate(archives):
            (folder / f"{index}.zip").write_bytes(data)
            jobs.append(
                {"input": str(folder / f"{index}.zip"), "output": str(folder / f"{index}.pyc.zip"), "prefix": prefix}
            )
        (folder / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
        script = folder / "precompile.mjs"
        script.write_text(
            RUNNER
            % {
                "pyodide": json.dumps((pyodide_dir / "pyodide.mjs").resolve().as_uri()),
                "index": json.dumps(str(pyodide_dir.resolve()) + "/"),
                "jobs": json.dumps(str(folder / "jobs.json")),
                "module": json.dumps(str(Path(__file__).resolve())),
                "seed": json.dumps(HASH_SEED),
            },
            encoding="utf-8",
        )
        run = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=600, check=False)
        if run.returncode != 0:
            # the error's own line (Node prints the minified line it was thrown from before it)
            lines = [line.strip() for line in run.stderr.splitlines() if "Error" in line and len(line) < 400]
            last = (lines or ["no message"])[-1]
            raise PrecompileError(f"node failed compiling the finder's Python with {pyodide_dir}: {last}")
        _done[key] = [Path(job["output"]).read_bytes() for job in jobs]
    return _done[key]
