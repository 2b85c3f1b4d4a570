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
  edited template (``overrides/``) is compiled again.

What stays beside its user, because only that module knows its key: the pruned notebook
stylesheets (``hooks/notebooks/weight.py``, ``.cache/notebook-css``), ``assets/finder.json``
(``hooks/finder/compute.py``, ``.cache/finder``), both named by the SHA-256 of every input and
read by development builds only, and mkdocs-jupyter's HTML cache folders
(``hooks/notebooks/pages.py``). Pure: no MkDocs import.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any

import jinja2


def file_stamp(path: Path) -> tuple[int, int]:
    """(mtime_ns, size) of ``path``: a changed stamp means the file was edited."""
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def tree_stamp(*folders: Path, pattern: str = "*") -> tuple:
    """(path, mtime_ns, size) of every file matching ``pattern`` under ``folders``: equal
    stamps mean nothing there was edited, added or removed."""
    return tuple(sorted((str(path), *file_stamp(path)) for folder in folders
                        for path in folder.rglob(pattern) if path.is_file()))


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


def hash_files(digest: hashlib._Hash, files: Iterable[Path], root: Path) -> None:
    """Update ``digest`` with each file's path relative to ``root`` (POSIX) and its bytes, in
    path order; ``files`` must lie under ``root`` (anything that is not a file is skipped)."""
    for path in sorted(files, key=lambda path: path.relative_to(root).as_posix()):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")


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


TEMPLATE_CACHE = InMemoryBytecodeCache()  # one per process: every build and language pass reuses it


def package_versions(names: Iterable[str]) -> tuple[str, ...]:
    """``python=<sys.version>`` then ``name=version`` of each of ``names`` (``name=absent`` when not
    installed): the libraries a cached result depends on, for its cache key."""
    import sys
    from importlib import metadata

    versions = [f"python={sys.version}"]
    for name in names:
        try:
            versions.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}=absent")
    return tuple(versions)
