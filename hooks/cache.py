"""The build's caches, in one place: how a build knows that nothing changed, and where it
keeps what it would otherwise compute again.

- ``file_stamp`` / ``tree_stamp``: a file's (or a folder's files') modification time and
  size; ``Memo`` keeps a value for the life of the process and reuses it only while its
  stamp is unchanged, so ``mkdocs serve`` shows an edited data file on the next rebuild
  (the parsed data files: ``hooks/data/load.py``; the finder's catalogue and JSON:
  ``hooks/finder/compute.py``; the interface strings: ``hooks/render/interface.py``; the
  executed notebooks' paths: ``hooks/notebooks/execute.py``).
- ``hash_files``: the one way the render layer fingerprints files by path and bytes (the
  notebooks' cache key, which names their executed copies in ``.cache/notebooks``).
- ``TEMPLATE_CACHE``: compiled theme templates kept in memory for the life of the process.
  MkDocs creates a new Jinja environment for every build, and the i18n plugin builds once
  per language, so each of Material's templates (about 80) would be compiled once per
  language, and again on every ``mkdocs serve`` rebuild. Jinja's bytecode cache (a
  documented extension point, ``jinja2.BytecodeCache``) lets the next environment reuse the
  compiled code: Jinja checks each entry against a checksum of the template's source, so an
  edited template (``overrides/``) is compiled again. A development build also keeps the
  compiled code in ``.cache/templates`` (``TemplateCache.use_folder``), each entry named by the
  SHA-256 of what the code was compiled from (the template's name, file and source, Jinja's
  and Python's versions, and every setting of the environment the compiler reads), so the next
  build process compiles nothing that did not change; a publication build reads none of it.

What stays beside its user, because only that module knows its key: the pruned notebook
stylesheets (``hooks/notebooks/weight.py``, ``.cache/notebook-css``), ``assets/finder.json``
(``hooks/finder/compute.py``, ``.cache/finder``), both named by the SHA-256 of every input and
read by development builds only, and mkdocs-jupyter's HTML cache folders
(``hooks/notebooks/pages.py``). ``committed_caches`` names what of ``.cache/`` git tracks: a
development build refuses to read a cache that a commit (a pull request) could have written,
since its entries are taken as the build's own work (compiled template code is executed).
Pure: no MkDocs import.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import hashlib
import os
import subprocess
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from stat import S_ISREG
from typing import Any

import jinja2


def file_stamp(path: Path) -> tuple[int, int]:
    """(mtime_ns, size) of ``path``: a changed stamp means the file was edited."""
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def tree_stamp(*folders: Path, pattern: str = "*") -> tuple:
    """(path, mtime_ns, size) of every file whose name matches ``pattern`` (``*``, ``*.py``: a
    name, not a path) under ``folders``: equal stamps mean nothing there was edited, added or
    removed. Raises ValueError for a pattern with a ``/``."""
    if "/" in pattern:
        raise ValueError(f"tree_stamp matches file names, not paths: {pattern!r}")
    found = []
    for folder in folders:  # os.walk: Path.rglob's walk and a Path per file cost ~5x more, on every page
        for parent, _, names in os.walk(folder):
            for name in fnmatch.filter(names, pattern):
                path = os.path.join(parent, name)
                try:
                    stat = os.stat(path)
                except OSError:  # a broken link, or removed meanwhile: not a file
                    continue
                if S_ISREG(stat.st_mode):
                    found.append((path, stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(found))


class Memo:
    """Values kept for the life of the process, each reused only while its stamp is unchanged.
    Values are shared: callers treat them as read-only."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[Any, Any]] = {}

    def get(self, key: Hashable, stamp: Any, compute: Callable[[], Any]) -> Any:
        """The value kept under ``key`` if it was computed for ``stamp``; otherwise ``compute()``,
        kept under ``key`` with ``stamp`` (an exception keeps nothing)."""
        entry = self._entries.get(key)
        if entry is None or entry[0] != stamp:
            entry = self._entries[key] = (stamp, compute())
        return entry[1]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def hash_files(digest: hashlib._Hash, files: Iterable[Path], root: Path) -> None:
    """Update ``digest`` with each file's path relative to ``root`` (POSIX) and its bytes, in
    path order; ``files`` must lie under ``root`` (anything that is not a file is skipped)."""
    for path in sorted(files, key=lambda path: path.relative_to(root).as_posix()):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")


def inputs_digest(label: str, parts: Iterable[str], *trees: tuple[Iterable[Path], Path]) -> str:
    """SHA-256 (hex) of ``label``, each of ``parts`` (versions, settings, a page's text) and,
    for each ``(files, root)`` of ``trees``, each file by its path relative to ``root`` and its
    bytes (``hash_files``): the key of a result in a ``stored`` folder."""
    digest = hashlib.sha256(label.encode() + b"\0")
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    for files, root in trees:
        digest.update(b"files\0")
        hash_files(digest, files, root)
    return digest.hexdigest()


CODE_DIRS = ("hooks", "vram", "verify")  # the checkout's own code: every .py a computation can import


def code_files(root: Path) -> list[Path]:
    """Every ``.py`` of ``CODE_DIRS`` under ``root`` (the checkout): what a cached computation runs."""
    return [path for folder in CODE_DIRS for path in (root / folder).rglob("*.py") if "__pycache__" not in path.parts]


_tree_digests = Memo()  # (what, folder) -> its files' SHA-256, while tree_stamp says none changed


def code_digest(root: Path) -> str:
    """SHA-256 (hex) of ``code_files(root)`` (each by its path relative to ``root`` and its bytes):
    hashed once per process while no ``.py`` there is edited, added or removed (``tree_stamp``),
    so the keys of every store that covers the checkout's code share one reading of it."""
    stamp = tree_stamp(*(root / folder for folder in CODE_DIRS), pattern="*.py")
    return _tree_digests.get(("code", root), stamp, lambda: inputs_digest("code", (), (code_files(root), root)))


def tree_digest(folder: Path) -> str:
    """SHA-256 (hex) of every file under ``folder`` (by its path relative to ``folder`` and its
    bytes), hashed once per process while none is edited, added or removed (``tree_stamp``)."""
    return _tree_digests.get(
        ("tree", folder), tree_stamp(folder), lambda: inputs_digest("tree", (), (folder.rglob("*"), folder))
    )


def stored(folder: Path | None, key: str, compute: Callable[[], bytes], *, suffix: str, keep: int) -> bytes:
    """``compute()``'s bytes, kept in ``folder`` as ``<key><suffix>`` and read from there by the
    next build process that asks with the same ``key``, the SHA-256 of every input of the
    computation (``inputs_digest``), so an edited input reads another entry. With no folder (a
    publication build: anyone who writes the checkout writes ``.cache/``) always computed. A
    file is written under a temporary name, then renamed (concurrent builds share the folder);
    the ``keep`` newest files of ``suffix`` stay; an unwritable folder computes every time.
    Raises what ``compute`` raises."""
    path = folder / f"{key}{suffix}" if folder is not None else None
    if path is not None:
        try:
            return path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            pass  # not computed yet (or pruned by a concurrent build): computed below
    content = compute()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            temporary.write_bytes(content)
            temporary.replace(path)
            entries = sorted(path.parent.glob(f"*{suffix}"), key=_modified, reverse=True)
            for old in entries[keep:]:
                old.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only checkout computes it every time
    return content


def _modified(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # removed by a concurrent build meanwhile
        return 0


class InMemoryBytecodeCache(jinja2.BytecodeCache):
    """A ``jinja2.BytecodeCache`` in a dict: bucket key -> marshalled code."""

    def __init__(self) -> None:
        self._store: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = self._store.get(bucket.key)
        if data is not None:
            bucket.bytecode_from_string(data)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._store[bucket.key] = bucket.bytecode_to_string()

    def clear(self) -> None:
        self._store.clear()

    def __len__(self) -> int:
        return len(self._store)


class TemplateCache(InMemoryBytecodeCache):
    """Compiled templates in memory and, once ``use_folder`` names one, in a folder of files.

    An entry's key is the SHA-256 of everything the compiled code depends on (``compiled_from``),
    so an entry is never replaced by different code: concurrent builds can share the folder (a
    file is written under a temporary name, then renamed), and a changed template, Jinja,
    Python or environment setting reads another entry. Jinja still checks each entry's source
    checksum and its own format version when it loads one, and compiles again on any mismatch."""

    KEEP = 400  # files kept in the folder (about 60 per theme version): the newest

    def __init__(self) -> None:
        super().__init__()
        self.folder: Path | None = None

    def use_folder(self, folder: Path | None) -> None:
        """Keep compiled templates in ``folder`` too (None: in memory only, as a publication build does)."""
        self.folder = folder

    def get_bucket(self, environment, name, filename, source):  # jinja2.BytecodeCache's signature
        key = compiled_from(environment, name, filename, source)
        bucket = jinja2.bccache.Bucket(environment, key, self.get_source_checksum(source))
        self.load_bytecode(bucket)
        return bucket

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if bucket.key not in self._store and self.folder is not None:
            with contextlib.suppress(OSError):  # not compiled yet (or pruned by a concurrent build)
                self._store[bucket.key] = (self.folder / f"{bucket.key}.jinja").read_bytes()
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 (a damaged entry, which Jinja reads with pickle and marshal: compiled again)
            self._store.pop(bucket.key, None)
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if len(self._store) >= 2 * self.KEEP:  # a long `mkdocs serve` session editing templates
            self._store.clear()
        super().dump_bytecode(bucket)
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"{bucket.key}.jinja"
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_bytes(self._store[bucket.key])
            temporary.replace(path)
            entries = list(self.folder.glob("*.jinja"))
            if len(entries) > self.KEEP:
                for old in sorted(entries, key=lambda entry: entry.stat().st_mtime_ns)[: len(entries) - self.KEEP]:
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only checkout compiles them every time


_calls: dict[tuple, tuple[list, list]] = {}  # filters and tests (name, id, mark) -> (how each is called, the functions)


def environment_settings(environment: jinja2.Environment) -> bytes:
    """What Jinja's compiler reads from ``environment`` besides the template: the syntax, the
    extensions and policies, whether it is async or finalizes, and how each filter and test is
    called (a filter that takes the context is compiled into a call that passes it)."""
    from jinja2.utils import _PassArg

    syntax = tuple(
        getattr(environment, name)
        for name in (
            "block_start_string",
            "block_end_string",
            "variable_start_string",
            "variable_end_string",
            "comment_start_string",
            "comment_end_string",
            "line_statement_prefix",
            "line_comment_prefix",
            "trim_blocks",
            "lstrip_blocks",
            "newline_sequence",
            "keep_trailing_newline",
            "optimized",
            "is_async",
        )
    )
    policies = sorted(
        (key, value)
        for key, value in environment.policies.items()
        if isinstance(value, (str, int, float, bool, type(None)))
    )
    # Jinja compiles a filter's call by its jinja_pass_arg (_PassArg.from_obj): the same functions
    # with the same marks describe alike, so each table is described once per build, not per template
    key = tuple(
        (name, id(function), getattr(function, "jinja_pass_arg", None))
        for table in (environment.filters, environment.tests)
        for name, function in table.items()
    )
    known = _calls.get(key)
    if known is None:
        calls = [
            sorted((name, str(_PassArg.from_obj(function))) for name, function in table.items())  # type: ignore[type-var]  # Jinja's two tables' callables join to "function", which from_obj's TypeVar refuses
            for table in (environment.filters, environment.tests)
        ]
        if len(_calls) >= 16:
            _calls.clear()
        # the functions are kept with their description: an id is not reused while its object lives
        known = _calls[key] = (calls, [*environment.filters.values(), *environment.tests.values()])
    calls = known[0]
    finalize = environment.finalize and (
        getattr(environment.finalize, "__qualname__", "?"),
        str(_PassArg.from_obj(environment.finalize)),
    )
    described = (
        syntax,
        sorted(environment.extensions),
        policies,
        calls,
        finalize,
        f"{environment.code_generator_class.__module__}.{environment.code_generator_class.__qualname__}",
    )
    return repr(described).encode()


def compiled_from(environment: jinja2.Environment, name: str, filename: str | None, source: str) -> str:
    """The cache key of a template's compiled code: the SHA-256 (hex) of Jinja's and Python's
    versions, the environment's settings (``environment_settings``), the template's name and
    file (the code names it in tracebacks), whether it autoescapes, and its source."""
    import sys

    autoescape = environment.autoescape(name) if callable(environment.autoescape) else environment.autoescape
    digest = hashlib.sha256(b"jinja template\0")
    for part in (f"jinja2={jinja2.__version__}", sys.version, repr((name, filename, bool(autoescape)))):
        digest.update(part.encode() + b"\0")
    digest.update(environment_settings(environment) + b"\0" + source.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def committed_caches(root: Path, caches: str = ".cache") -> list[str]:
    """The files under ``root/caches`` that the git repository of ``root`` tracks, as git names
    them ([] when ``root`` is not a git checkout or git is missing: nothing there came from a commit)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--", caches], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return (
        [name for name in listed.stdout.decode("utf-8", "replace").split("\0") if name]
        if listed.returncode == 0
        else []
    )


TEMPLATE_CACHE = TemplateCache()  # one per process: every build and language pass reuses it


def package_versions(names: Iterable[str]) -> tuple[str, ...]:
    """``python=<sys.version>`` then ``name=version`` of each of ``names`` (``name=absent`` when not
    installed): the libraries a cached result depends on, for its cache key. Each version is read
    once per process (importlib.metadata searches every folder of sys.path on each call),
    which is also the version whose modules the process has imported."""
    import sys

    return (f"python={sys.version}", *(f"{name}={_version(name)}" for name in names))


@functools.cache
def _version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"
