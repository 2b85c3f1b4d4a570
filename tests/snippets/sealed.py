"""Comments are not behaviour (issue 33, hole 3): a rehearsed script never reads its own file,
and what it could read of itself otherwise holds the other language's comments.

A block's French and Italian texts differ only in their comments, which no tool reads
(``verify/readers.py``): the two behave differently only if the script reads its own text.
It can reach that text in two ways, and the rehearsals close both:

- **its file** (``open(__file__)``, ``open(sys.argv[0])``, ``linecache.getline(__file__, n)``,
  ``cat`` in a subprocess, a copy or a link made first: anything that opens the file). The
  loaders run each extracted script ``B`` as ``python B`` runs it (``__file__`` and
  ``sys.argv[0]`` are ``B``) but read its source from a sealed copy (``seal``: a folder named
  by ``REHEARSAL_SEALED``), and ``SelfReads`` watches ``B``'s inode with inotify for the whole
  run: any open of ``B``, by any process, through any path, fails the test;
- **its code objects** (``inspect.getsource``, ``traceback``, a frame's file name: what
  libraries also read, torch's ``traceback.extract_stack()`` for diagnostics among them): the
  code is compiled with the file name of a decoy that holds the *other language's* text of the
  same block (``seal(..., decoys=)``). A script whose behaviour depended on comments read this
  way behaves, in each language's run, as the other language's would: the runs' outputs, which
  the tests compare language against language, then differ.

Both hold for every path a rehearsal runs (every arm of a bound block is taken by a run:
``execute`` measures which, ``tests/snippets/arms.py`` checks it), whatever construct reads: a
list of constructs would be one short; and ``verify/block_names.py`` refuses, before anything
runs, a block using any name today's blocks do not need. The loader also takes the
rehearsal's own variables out of the block's environment while it runs (``TELLS``). Used by ``fork_ranks.py``, ``script_zygote.py``, ``record_hf.py`` and
``run_as_main`` (the converters run in-process).
"""

from __future__ import annotations

import builtins
import ctypes
import hashlib
import io
import os
import shutil
import struct
import sys
import types
from pathlib import Path
from typing import Any

ENV = "REHEARSAL_SEALED"
ARMS = "REHEARSAL_ARMS"  # a folder: each run of a script writes there what its own code executed (``Executions``)
# What tells a script it runs in a rehearsal: taken out of its environment while it runs (``execute``)
TELLS = ("REHEARSAL_", "PYTEST_", "SCRIPT_ZYGOTE")
HELPERS = Path(__file__).resolve().parent.parent  # tests/: the suite's own scripts keep every setting
_taken: dict[str, str] = {}  # the tells ``execute`` took out of os.environ while its script runs
_measuring: list[bool] = []  # while ``Executions.write`` writes its file (not the script's effect)


def setting(name: str) -> str | None:
    """A rehearsal's setting: from the environment, or taken out of it while a script runs."""
    return os.environ.get(name) or _taken.get(name)


IN_OPEN = 0x20
IN_Q_OVERFLOW = 0x4000
IN_NONBLOCK = os.O_NONBLOCK
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


def sealed_copy(folder: str | Path, script: str | Path) -> Path:
    return Path(folder) / hashlib.sha256(os.path.abspath(script).encode("utf-8")).hexdigest()


def decoy_path(folder: str | Path, script: str | Path) -> Path:
    """Where the text a script's code objects point at lives (a file named as the script)."""
    return sealed_copy(folder, script).with_suffix(".decoy") / Path(script).name


def code_filename(script: str) -> str:
    """The file name to compile ``script`` with: its decoy in a rehearsal that made one."""
    folder = setting(ENV)
    if folder and (decoy := decoy_path(folder, script)).is_file():
        return str(decoy)
    return script


def source_bytes(script: str, watch: bool = True) -> bytes:
    """The source of ``script``: its sealed copy when the rehearsal made one (and, with
    ``watch``, this process's ``watch_effects``), else the file."""
    folder = setting(ENV)
    if folder and (copy := sealed_copy(folder, script)).is_file():
        if watch:
            watch_effects(script, copy.with_suffix(".effects"))
        return copy.read_bytes()
    with io.open_code(script) as source:
        return source.read()


# What a script's run does beyond its output, in Python's audit events: start a process (which
# could read the file for it; DeepSpeed runs `numactl --hardware`), connect a socket of its own
# (torch.distributed's rendezvous and gloo are C++, not audited), call C through ctypes (which
# would bypass the other events), and write, move or remove a file (a block that read its own
# comments through its code objects, the decoy, could act only through a file elsewhere, which
# no output comparison sees; in the temporary folder, whose names are random, only that it
# wrote there is kept). Each language's run of a block must do the same (``effects``), as it
# must print the same.
EFFECTS = (
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.startfile",
    "socket.connect",
    "socket.sendto",
    "urllib.Request",
    "ctypes.dlopen",
    "ctypes.dlsym",
)
FILE_EFFECTS = ("os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod", "os.truncate")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _where(path, cwd: str) -> str:
    """A path as the same in every language's run: the run's own folder is ``.``, the temporary
    folder ``$TMP`` (a name made there at random is left out), anything else as it is."""
    real = os.path.realpath(os.fsdecode(path))
    tmp = os.path.realpath(__import__("tempfile").gettempdir())
    if real == cwd or real.startswith(cwd + os.sep):
        return "." + real[len(cwd) :]
    if real.startswith(tmp + os.sep):
        return "$TMP"
    return real


def watch_effects(script: str, log: Path) -> None:
    """In this process, append to ``log`` every audit event of ``EFFECTS``, every write, move or
    removal of a file (``FILE_EFFECTS``, an ``open`` for writing: its path by ``_where``, each
    once), and the Python stack of every open of ``script`` (the inotify watch, ``SelfReads``,
    is what decides about opens: this says who). Tests read it with ``effects``."""
    target = os.path.realpath(script)
    cwd = os.path.realpath(os.getcwd())
    descriptor = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    busy: list[int] = []
    written: set[str] = set()

    def note(line: str) -> None:
        if line not in written:
            written.add(line)
            os.write(descriptor, line.encode())

    def hook(event: str, args: tuple) -> None:
        if busy or _measuring or (event != "open" and event not in EFFECTS and event not in FILE_EFFECTS):
            return
        busy.append(1)
        try:
            if event in EFFECTS:
                os.write(descriptor, f"{event} {str(args)[:200]}\n".encode())
            elif event in FILE_EFFECTS:
                if isinstance(args[0], (str, bytes, os.PathLike)):
                    note(f"{event} {_where(args[0], cwd)}\n")
            elif isinstance(args[0], (str, bytes, os.PathLike)):
                if isinstance(args[2], int) and args[2] & WRITE_FLAGS:
                    note(f"write {_where(args[0], cwd)}\n")
                if os.path.realpath(os.fsdecode(args[0])) == target:
                    import traceback

                    frames = traceback.StackSummary.extract(traceback.walk_stack(None), lookup_lines=False)
                    text = "".join(f"  {frame.filename}:{frame.lineno} {frame.name}\n" for frame in list(frames)[1:16])
                    os.write(descriptor, f"opened {script} (pid {os.getpid()}):\n{text}".encode())
        finally:
            busy.clear()

    sys.addaudithook(hook)


def effects(folder: Path, script: Path) -> list[str]:
    """What ``watch_effects`` logged for ``script`` in the sealed ``folder``, in order (every
    process of its run appends to it)."""
    log = sealed_copy(folder, script).with_suffix(".effects")
    return log.read_text(encoding="utf-8").splitlines() if log.is_file() else []


class Executions:
    """What a script's own code executed, measured while it runs: ``sys.settrace`` with opcode
    events on the frames of the code objects compiled from the script (``filename``) only, every
    other frame left at once (no line or opcode events there), counting how many times each
    instruction ran. ``tests/snippets/arms.py`` compiles the block itself and matches the
    instructions' source positions with the branches of its AST."""

    def __init__(self, filename: str):
        self.filename = filename
        self.counts: dict[types.CodeType, dict[int, int]] = {}
        self.previous: Any = None  # the trace function in place before start()

    def start(self) -> None:
        filename, codes = self.filename, self.counts

        def call(frame, event, arg):  # every Python call of the process: as little as possible
            if frame.f_code.co_filename != filename:
                return None
            frame.f_trace_lines = False
            frame.f_trace_opcodes = True
            counts = codes.setdefault(frame.f_code, {})

            def local(frame, event, arg):
                if event == "opcode":
                    counts[frame.f_lasti] = counts.get(frame.f_lasti, 0) + 1
                return local

            return local

        self.previous = sys.gettrace()
        sys.settrace(call)

    def stop(self) -> None:
        sys.settrace(self.previous)

    def write(self, folder: str, script: str, source: bytes, test: str | None) -> None:
        """One file per run in ``folder``: the script's name, its AST's SHA-256 (lines and
        columns included: the same for every language's block, whose comments alone differ), the
        test that started the run, and per code object (``code_key``) each instruction's offset
        and how many times it ran."""
        import json
        import tempfile

        record = {
            "script": os.path.basename(script),
            "ast": ast_sha256(source),
            "test": (test or "").rsplit(" (", 1)[0],
            "code": {code_key(code): counts for code, counts in self.counts.items()},
        }
        _measuring.append(True)
        try:
            handle, part = tempfile.mkstemp(
                dir=folder, prefix=f"{os.path.basename(script)}.{os.getpid()}.", suffix=".part"
            )
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                json.dump(record, f)
            os.rename(part, part.removesuffix(".part") + ".json")
        finally:
            _measuring.clear()


def ast_sha256(source: str | bytes) -> str:
    """A block's AST with lines and columns: the same for every language's text of it."""
    import ast

    return hashlib.sha256(ast.dump(ast.parse(source), include_attributes=True).encode()).hexdigest()


def code_key(code: types.CodeType) -> str:
    """A code object's name in ``Executions``' files: its qualified name and the SHA-256 of its
    instructions' positions (two lambdas of one line differ in their columns)."""
    return f"{code.co_qualname}:{hashlib.sha256(repr(list(code.co_positions())).encode()).hexdigest()[:16]}"


def execute(script: str, namespace: dict, watch: bool = True) -> None:
    """Run ``script``'s code in ``namespace`` as the loaders do: its source from
    ``source_bytes`` (the sealed copy in a rehearsal), compiled with ``code_filename`` (the
    decoy); unless it is one of the suite's own scripts (``tests/``: a wrapper, a launcher), its
    arms measured (``Executions``) when the rehearsal names a folder for them (``ARMS``), and without
    the environment variables that would tell it runs in a rehearsal (``TELLS``, given back when
    it returns)."""
    source = source_bytes(script, watch)
    filename = code_filename(script)
    helper = os.path.realpath(script).startswith(str(HELPERS) + os.sep)
    arms, test = None if helper else setting(ARMS), setting("PYTEST_CURRENT_TEST")
    taken = {}
    if not helper:
        taken = {name: os.environ.pop(name) for name in list(os.environ) if name.startswith(TELLS)}
        _taken.update(taken)
    code = compile(source, filename, "exec", dont_inherit=True)  # as python runs it: no future flag of this module
    executions = Executions(filename) if arms else None
    try:
        if executions and arms:
            executions.start()
        try:
            exec(code, namespace)
        finally:
            if executions and arms:
                executions.stop()
                executions.write(arms, script, source, test)
    finally:
        os.environ.update(taken)
        for name in taken:
            _taken.pop(name, None)


def run_as_main(script: str, argv: list[str] | None = None, watch: bool = True) -> dict:
    """Run ``script`` in this process as ``python script ARGV`` runs it (a fresh ``__main__``),
    its source from ``source_bytes``; returns its globals. ``SystemExit`` propagates. ``watch``:
    False in a test's own process (an audit hook cannot be removed)."""
    saved_argv, saved_main = sys.argv, sys.modules.get("__main__")
    sys.argv = [script, *(argv or [])]
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=script, __cached__=None, __spec__=None, __loader__=None, __builtins__=builtins)
    sys.modules["__main__"] = main
    try:
        execute(script, main.__dict__, watch)
        return main.__dict__
    finally:
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def seal(scripts: list[Path], folder: Path, decoys: dict[Path, Path] | None = None) -> dict[str, str]:
    """Copy each of ``scripts`` to ``folder`` (before the watch starts), and give each the decoy
    ``decoys[script]`` (the other language's text of the block; without one, its own text with
    every comment blanked); the environment that makes the loaders use them."""
    folder.mkdir(parents=True, exist_ok=True)
    for script in scripts:
        shutil.copyfile(script, sealed_copy(folder, script))
        decoy = decoy_path(folder, script)
        decoy.parent.mkdir(parents=True, exist_ok=True)
        if decoys and script in decoys:
            shutil.copyfile(decoys[script], decoy)
        else:
            decoy.write_bytes(blank_comments(Path(script).read_bytes()))
    return {ENV: str(folder)}


def blank_comments(source: bytes) -> bytes:
    """``source`` with the text of every comment replaced by spaces (lines and columns kept)."""
    import tokenize

    lines = source.decode("utf-8").splitlines(keepends=True)
    for token in tokenize.tokenize(io.BytesIO(source).readline):
        if token.type == tokenize.COMMENT:
            (row, start), (_, end) = token.start, token.end
            line = lines[row - 1]
            lines[row - 1] = line[:start] + "#" + " " * (end - start - 1) + line[end:]
    return "".join(lines).encode("utf-8")


class SelfReads:
    """``with SelfReads(paths) as reads: ...`` then ``reads.opened()``: the paths (of ``paths``)
    that any process opened inside the block (inotify ``IN_OPEN`` on each file's inode)."""

    def __init__(self, paths: list[Path]):
        self.paths = [Path(path) for path in paths]
        self.found: set[Path] = set()

    def __enter__(self) -> SelfReads:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(IN_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.watches = {}
        for path in self.paths:
            wd = libc.inotify_add_watch(self.fd, os.fsencode(path), IN_OPEN)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")
            self.watches[wd] = path
        return self

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _, length = EVENT.unpack_from(data, offset)
                if mask & IN_Q_OVERFLOW:  # more events than the queue holds: count every file as opened
                    self.found.update(self.paths)
                elif mask & IN_OPEN and wd in self.watches:
                    self.found.add(self.watches[wd])
                offset += EVENT.size + length

    def __exit__(self, *exc) -> None:
        self._drain()
        os.close(self.fd)

    def opened(self) -> list[Path]:
        return sorted(self.found)


if __name__ == "__main__":
    # ``python sealed.py SCRIPT ARGS``: what ``python SCRIPT ARGS`` does, through ``execute``
    # (for a launcher that starts the script itself: torchrun without the session's zygote)
    import importlib

    loader = importlib.import_module("sealed")  # this file as the suite's scripts import it (one copy)
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[1]))
    loader.run_as_main(sys.argv[1], sys.argv[2:])
