"""Execute the site's notebooks once per change, with a cache keyed by what they depend on.

``executed_notebook(src, ...)`` returns the path of an executed copy of ``src`` under the
cache folder (``.cache/notebooks/`` of the repository, gitignored). The copy's name holds
a SHA-256 of:

- the notebook file itself (cells and metadata),
- every file the notebooks read or import: ``vram/**/*.py`` and ``snippets/data/**``
  (the calculator, the model configs, the card catalogue and the labels),
- the language, the kernel name, and the versions of Python and of the packages the
  code runs (``TOOLS``: torch, matplotlib...), so an upgrade runs the notebooks again.

Editing a Markdown page, a hook or a stylesheet changes none of these, so no notebook runs
again; editing the calculator or a data file, or the notebook, runs it on the next build
(also under ``mkdocs serve``: nothing is cached in memory). Each notebook keeps only its
newest executed copy; the other language's copy is a different notebook and stays.

Because the key is the content, not the checkout, an executed copy is valid for any
checkout with the same inputs: with ``store`` (the build uses ``machine_store()``:
``$GUIDE_NOTEBOOK_STORE``, else ``$XDG_CACHE_HOME/vramfarm-guide/notebooks``, else
``~/.cache/...``; ``GUIDE_NOTEBOOK_STORE=off`` disables it) a miss in ``.cache/notebooks``
is looked up there before running, and a run is saved there too. Throwaway copies of the
repository (tests, worktrees) then run nothing that any checkout on this machine ran.

The kernel is always ``kernel_name`` (the one configured in mkdocs.yml), whatever the
notebook's metadata names, so a notebook saved on a machine with another kernel still
runs. The kernel starts in the repository root with ``PYTHONPATH`` set to it (so it imports
this checkout's ``vram``) and ``GUIDE_LANG`` set to the page language (the code cells are
the same in every language; labels and alt text follow ``GUIDE_LANG``).

A cell that raises is a ``NotebookError`` naming the notebook, the cell and the exception;
nothing is cached for it. Pure: no MkDocs import.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

from .data import file_stamp
from .digest import hash_files
from .errors import RenderError

CACHE_SUBDIR = Path(".cache") / "notebooks"
DEPENDENCIES = (("vram", "**/*.py"), ("snippets/data", "**/*"))
TOOLS = ("torch", "matplotlib", "babel", "pyyaml", "ipykernel", "nbclient", "nbformat")
TIMEOUT_S = 300


class NotebookError(RenderError):
    """A notebook that cannot be read or executed (the message names it)."""


def dependency_files(repo_root: Path) -> list[Path]:
    """The files whose content is part of every notebook's cache key, sorted."""
    files = []
    for folder, pattern in DEPENDENCIES:
        files += [p for p in (repo_root / folder).glob(pattern)
                  if p.is_file() and "__pycache__" not in p.parts]
    return sorted(files)


@functools.cache  # a process does not see its packages change (importlib.metadata: ~1 ms a package)
def tool_versions() -> tuple[str, ...]:
    """``python=3.11.7``, ``torch=2.13.0``...: what the notebooks' code runs on."""
    versions = [f"python={platform.python_version()}"]
    for name in TOOLS:
        try:
            versions.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}=absent")
    return tuple(versions)


def cache_key(src: Path, repo_root: Path, lang: str, kernel_name: str) -> str:
    """SHA-256 of the notebook, its dependencies (path and bytes), language, kernel and tool versions."""
    digest = hashlib.sha256()
    for part in (f"lang={lang}", f"kernel={kernel_name}", *tool_versions()):
        digest.update(part.encode() + b"\0")
    digest.update(src.read_bytes() + b"\0")
    hash_files(digest, dependency_files(repo_root), repo_root)
    return digest.hexdigest()


def _error_cell(nb) -> tuple[int, str]:
    """(1-based index among code cells, first source line) of the cell that raised."""
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code_cells, start=1):
        if any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            return i, (cell.source.strip().splitlines() or [""])[0]
    return 0, ""


def execute(src: Path, dest: Path, repo_root: Path, lang: str, kernel_name: str, timeout_s: int = TIMEOUT_S) -> None:
    """Run every cell of ``src`` with ``kernel_name`` and write the executed notebook to ``dest``.

    Raises NotebookError naming ``src`` (relative to ``repo_root``) for an unreadable
    notebook, a missing kernel, a cell that raises, a timeout or a dead kernel.
    """
    # Imported here: a build whose notebooks all come from the cache never loads them.
    import nbformat
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    name = _display_name(src, repo_root)
    try:
        nb = nbformat.read(src, as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types for a broken file
        raise NotebookError(f"{name}: not a readable notebook ({type(exc).__name__}: {exc})") from None
    env = {**os.environ, "GUIDE_LANG": lang, "PYTHONPATH": os.pathsep.join(
        [str(repo_root), *filter(None, [os.environ.get("PYTHONPATH")])]), "MPLBACKEND": "Agg"}
    client = NotebookClient(nb, kernel_name=kernel_name, timeout=timeout_s, allow_errors=False,
                            resources={"metadata": {"path": str(repo_root)}})
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        # The kernel's own stderr (start-up warnings) goes to a log beside the cache, not the build log.
        with open(dest.parent / "kernel-stderr.log", "ab") as kernel_log:
            client.execute(env=env, stderr=kernel_log)
    except CellExecutionError as exc:
        index, first_line = _error_cell(nb)
        raise NotebookError(f"{name}: code cell {index} ({first_line!r}) raised {exc.ename}: {exc.evalue}") from None
    except CellTimeoutError:
        raise NotebookError(f"{name}: a cell ran longer than {timeout_s} s") from None
    except DeadKernelError as exc:
        raise NotebookError(f"{name}: the kernel died ({exc}); see {dest.parent / 'kernel-stderr.log'}") from None
    except NoSuchKernel:
        raise NotebookError(f"{name}: kernel {kernel_name!r} is not installed (mkdocs.yml: mkdocs-jupyter kernel_name)") from None
    partial = dest.with_suffix(".partial")
    nbformat.write(nb, partial)
    partial.replace(dest)


def _display_name(src: Path, repo_root: Path) -> str:
    try:
        return src.resolve().relative_to(repo_root.resolve()).as_posix()
    except ValueError:
        return str(src)


def machine_store() -> Path | None:
    """The machine-wide store of executed notebooks (see the module docstring), or None if off."""
    configured = os.environ.get("GUIDE_NOTEBOOK_STORE")
    if configured == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "vramfarm-guide" / "notebooks"


def _copy_into(src: Path, dest: Path) -> None:
    """Copy ``src`` to ``dest`` atomically (a reader never sees half a notebook)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
    shutil.copyfile(src, partial)
    partial.replace(dest)


def executed_notebook(src: Path, repo_root: Path, lang: str, kernel_name: str, cache_dir: Path | None = None,
                      timeout_s: int = TIMEOUT_S, store: Path | None = None) -> tuple[Path, bool]:
    """(path of the executed copy of ``src``, True if it was executed now, False if cached).

    ``store``: a folder shared by the checkouts of this machine, looked up on a miss and
    filled after a run (best effort: a store that cannot be written is skipped). Older
    copies of the same notebook in ``cache_dir`` are removed. Raises NotebookError.
    """
    cache_dir = cache_dir or repo_root / CACHE_SUBDIR
    key = cache_key(src, repo_root, lang, kernel_name)
    name = f"{src.stem}.{key[:20]}.ipynb"
    dest = cache_dir / name
    ran = False
    if not dest.is_file():
        if store is not None and (store / name).is_file():
            _copy_into(store / name, dest)
        else:
            execute(src, dest, repo_root, lang, kernel_name, timeout_s)
            ran = True
            if store is not None:
                try:
                    _copy_into(dest, store / name)
                except OSError:
                    pass
        for old in cache_dir.glob(f"{src.stem}.*.ipynb"):
            if old != dest and old.name[len(src.stem) + 1:].count(".") == 1:
                old.unlink(missing_ok=True)
    return dest, ran


def notebook_language(src: Path, languages: tuple[str, ...]) -> str:
    """``page.fr.ipynb`` -> ``fr``. Raises NotebookError for a name without a known language."""
    suffixes = src.suffixes
    lang = suffixes[-2].lstrip(".") if len(suffixes) >= 2 else ""
    if lang not in languages:
        raise NotebookError(f"{src.name}: a notebook's name ends in .<language>.ipynb ({', '.join(languages)})")
    return lang


_executed: dict[tuple, tuple[tuple, dict[Path, Path]]] = {}  # per call: (stamps of the inputs, result)


def executed_notebooks(docs_dir: Path, repo_root: Path, languages: tuple[str, ...], kernel_name: str,
                       cache_dir: Path | None = None, store: Path | None = None) -> dict[Path, Path]:
    """Every notebook of ``docs_dir`` (all languages) -> its executed copy, running the stale ones in parallel.

    Keys are resolved source paths. Raises NotebookError for the first notebook (in name
    order) that fails. While no notebook or dependency file changes (size and mtime) and
    every executed copy is still there, a process answers a second call without hashing.
    """
    sources = sorted(p.resolve() for p in docs_dir.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    langs = [notebook_language(src, languages) for src in sources]
    call = (docs_dir, repo_root, languages, kernel_name, cache_dir, store)
    stamp = tuple((str(path), *file_stamp(path)) for path in [*sources, *dependency_files(repo_root)])
    known = _executed.get(call)
    if known and known[0] == stamp and all(dest.is_file() for dest in known[1].values()):
        return dict(known[1])  # the other language's pass of the same build: nothing was edited since
    with ThreadPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
        futures = [pool.submit(executed_notebook, src, repo_root, lang, kernel_name, cache_dir, TIMEOUT_S, store)
                   for src, lang in zip(sources, langs)]
        executed = {src: future.result()[0] for src, future in zip(sources, futures)}
    _executed[call] = (stamp, executed)
    return dict(executed)
