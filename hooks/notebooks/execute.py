"""Execute the site's notebooks once per change, with a cache keyed by what they depend on.

``executed_notebook(src, ...)`` returns the path of an executed copy of ``src`` under the
cache folder (``.cache/notebooks/`` of the repository, gitignored). The copy's name holds
a SHA-256 of:

- the notebook file itself (cells and metadata),
- the files of the checkout that this notebook read when it last ran (its own reads, not
  every notebook's: a data edit runs again only the notebooks that read that file), path
  and bytes, and the names in each folder it listed. The kernel records them itself (an
  audit hook on ``open`` and folder listings, installed by an IPython start-up file,
  ``READS_HOOK``; an imported module counts as its ``.py``) into ``NAME.KEY.reads.json``
  beside the copy. A copy with no such record is keyed by every file the notebooks could
  read (``vram/**/*.py`` and ``snippets/data/**``),
- the language, the kernel name, and the versions of Python and of the packages the
  code runs (``TOOLS``: torch, matplotlib...), so an upgrade runs the notebooks again.

A notebook that starts reading another file has changed (or a file it read has), so it
runs again and records its new reads. Editing a Markdown page, a hook or a stylesheet
changes none of these, so no notebook runs again; editing the calculator or a data file
a notebook read, or the notebook, runs that notebook on the next build (also under
``mkdocs serve``: nothing is cached in memory). Each notebook keeps only its newest
executed copy; the other language's copy is a different notebook and stays.

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
nothing is cached for it. So is a run that read a file of the checkout outside ``READABLE``
(``snippets/`` and ``vram/``, one source for every language; ``readable``): a cell that read its notebook, the
other language's or a page (``docs/``) could compute and show otherwise in each language
(issue 33, hole 3; the names a cell may use are checked before it runs:
``hooks/notebooks/cell_names.py``). Pure: no MkDocs import.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hooks.cache import file_stamp, hash_files, package_versions
from hooks.errors import RenderError

CACHE_SUBDIR = Path(".cache") / "notebooks"
DEPENDENCIES = (("vram", "**/*.py"), ("snippets/data", "**/*"))
TOOLS = ("torch", "matplotlib", "babel", "pyyaml", "ipykernel", "nbclient", "nbformat")
TIMEOUT_S = 300
READABLE = ("snippets/", "vram/")  # what a notebook may read in the checkout: the same in every language
INSTALL_METADATA = (".egg-info", ".dist-info")  # `pip install -e .`'s record of the project (entry points)
build_log = logging.getLogger("mkdocs.hooks.guide.notebooks")  # the build's log (MkDocs prints this logger's INFO)


class NotebookError(RenderError):
    """A notebook that cannot be read or executed (the message names it)."""


def dependency_files(repo_root: Path) -> list[Path]:
    """The files whose content is part of every notebook's cache key, sorted."""
    files = []
    for folder, pattern in DEPENDENCIES:
        files += [p for p in (repo_root / folder).glob(pattern) if p.is_file() and "__pycache__" not in p.parts]
    return sorted(files)


@functools.cache  # a process does not see its packages change (importlib.metadata: ~1 ms a package)
def tool_versions() -> tuple[str, ...]:
    """``python=3.11.7 (main, ...)``, ``torch=2.13.0``...: what the notebooks' code runs on."""
    return package_versions(TOOLS)


def cache_key(src: Path, repo_root: Path, lang: str, kernel_name: str, reads: list[str] | None = None) -> str:
    """SHA-256 of the notebook, language, kernel, tool versions and what it reads: ``reads``
    (paths relative to ``repo_root`` as a run recorded them; a folder ends in ``/`` and counts
    by its names, ``__pycache__`` aside: bytecode is no input, its source is a read), or every
    dependency file when None."""
    digest = hashlib.sha256()
    for part in (f"lang={lang}", f"kernel={kernel_name}", *tool_versions()):
        digest.update(part.encode() + b"\0")
    digest.update(src.read_bytes() + b"\0")
    if reads is None:
        hash_files(digest, dependency_files(repo_root), repo_root)
        return digest.hexdigest()
    digest.update(b"reads\0")
    files = []
    for rel in sorted(set(reads)):
        path = repo_root / rel
        if rel.endswith("/"):
            names = (
                sorted(p.name for p in path.iterdir() if p.name != "__pycache__") if path.is_dir() else ["<missing>"]
            )
            digest.update(f"{rel}\0{'/'.join(names)}\0".encode())
        elif path.is_file():
            files.append(path)
        else:
            digest.update(f"{rel}\0<missing>\0".encode())
    hash_files(digest, files, repo_root)
    return digest.hexdigest()


# An IPython start-up file for the kernel: every file of the checkout it opens, and every
# folder it lists, goes to $GUIDE_READS_LOG (one absolute path a line; a folder with a
# trailing /). The log is opened before the hook is installed: writing to it opens nothing.
READS_HOOK = """\
def _guide_record_reads():
    import os, sys
    log = open(os.environ["GUIDE_READS_LOG"], "a", encoding="utf-8", buffering=1)

    def hook(event, args):
        if event == "open" or event in ("os.listdir", "os.scandir"):
            path = args[0] if args else None
            if path is None and event != "open":
                path = "."
            if isinstance(path, (str, bytes, os.PathLike)):
                path = os.path.abspath(os.fsdecode(path))
                log.write(path + ("/" if event != "open" else "") + "\\n")

    sys.addaudithook(hook)


_guide_record_reads()
del _guide_record_reads
"""


def environment_folders(root: Path) -> list[Path]:
    """The folders of this Python environment (its prefixes and site-packages) that lie inside
    ``root`` (resolved), relative to it: a virtual environment in the checkout. The kernel runs
    this environment's interpreter (the ``python3`` kernel is the build's own unless a user
    installed another under that name; its packages would then lie outside the checkout)."""
    import site
    import sys

    candidates = {sys.prefix, sys.exec_prefix, sys.base_prefix, *site.getsitepackages(), site.getusersitepackages()}
    folders = []
    for candidate in candidates:
        folder = Path(candidate).resolve()
        if folder != root and folder.is_relative_to(root):
            folders.append(folder.relative_to(root))
    return folders


def recorded_reads(log: Path, repo_root: Path, caches: bool = False) -> list[str]:
    """The checkout's files and folders a run read (from its log), relative to ``repo_root``:
    a module's cached bytecode counts as its source; caches, the repository metadata and
    this environment's folders don't (``environment_folders``: a virtual environment inside the
    checkout is no content of it; the packages of ``TOOLS`` count by their versions, wherever
    the environment lives). With ``caches``, reads in ``.cache`` and ``.git`` count too (what
    ``readable`` judges: an executed copy in ``.cache`` holds a language's comments)."""
    import importlib.util

    root, found = repo_root.resolve(), set()
    installed = environment_folders(root)
    for line in log.read_text(encoding="utf-8").splitlines() if log.is_file() else []:
        folder = line.endswith("/")
        path = Path(line.rstrip("/"))
        if path.suffix == ".pyc" and "__pycache__" in path.parts:
            try:
                path = Path(importlib.util.source_from_cache(str(path)))
            except ValueError:
                continue
        try:
            rel = path.resolve().relative_to(root)
        except ValueError:
            continue
        if (
            not rel.parts
            or (rel.parts[0] in {".cache", ".git"} and not caches)
            or "__pycache__" in rel.parts
            or any(rel.is_relative_to(folder) for folder in installed)
        ):
            continue
        found.add(rel.as_posix() + ("/" if folder else ""))
    return sorted(found)


def readable(read: str) -> bool:
    """Whether a notebook may read ``read`` (a path relative to the checkout, as
    ``recorded_reads`` gives it): a file of ``READABLE``, or the metadata an editable install of
    the project keeps at the root (``importlib.metadata`` reads its entry points)."""
    top = read.split("/", 1)[0]
    return read.startswith(READABLE) or (read != top and top.endswith(INSTALL_METADATA))


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

    name = display_name(src, repo_root)
    try:
        nb = nbformat.read(src, as_version=4)
    except Exception as exc:  # noqa: BLE001 (nbformat raises several unrelated types for a broken file)
        raise NotebookError(f"{name}: not a readable notebook ({type(exc).__name__}: {exc})") from None
    ipython_dir = dest.parent / f"ipython-{os.getpid()}-{threading.get_ident()}"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-guide-reads.py").write_text(READS_HOOK, encoding="utf-8")
    reads_log = dest.with_name(dest.name + ".reads.log")
    reads_log.unlink(missing_ok=True)
    env = {
        **os.environ,
        "GUIDE_LANG": lang,
        "PYTHONPATH": os.pathsep.join([str(repo_root), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "MPLBACKEND": "Agg",
        "IPYTHONDIR": str(ipython_dir),
        "GUIDE_READS_LOG": str(reads_log),
    }
    client = NotebookClient(
        nb,
        kernel_name=kernel_name,
        timeout=timeout_s,
        allow_errors=False,
        resources={"metadata": {"path": str(repo_root)}},
    )
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
        raise NotebookError(
            f"{name}: kernel {kernel_name!r} is not installed (mkdocs.yml: mkdocs-jupyter kernel_name)"
        ) from None
    finally:
        shutil.rmtree(ipython_dir, ignore_errors=True)
    partial = dest.with_suffix(".partial")
    nbformat.write(nb, partial)
    partial.replace(dest)


def display_name(src: Path, repo_root: Path) -> str:
    """``src`` as a message names it: relative to ``repo_root`` (``docs/NAME.fr.ipynb``) if inside."""
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


def _key20(manifest: Path, stem: str) -> str:
    return manifest.name[len(stem) + 1 :].split(".")[0]


def _recorded_copy(src: Path, folder: Path, repo_root: Path, lang: str, kernel_name: str) -> tuple[Path, Path] | None:
    """(executed copy, its reads record) in ``folder`` whose record still gives its key, or None."""
    for manifest in sorted(folder.glob(f"{src.stem}.*.reads.json")) if folder.is_dir() else []:
        key20 = _key20(manifest, src.stem)
        copy = folder / f"{src.stem}.{key20}.ipynb"
        try:
            reads = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (
            isinstance(reads, list)
            and all(isinstance(r, str) for r in reads)
            and copy.is_file()
            and cache_key(src, repo_root, lang, kernel_name, reads)[:20] == key20
        ):
            return copy, manifest
    return None


def why_run(src: Path, cache_dir: Path, repo_root: Path) -> str:
    """Why ``src`` runs again, as the build's log says it: the files its newest executed copy
    recorded reading (``NAME.KEY.reads.json``) that were modified after that copy was written,
    else the notebook itself, else what no file says (a new tool version, a removed copy)."""
    records = (
        sorted(cache_dir.glob(f"{src.stem}.*.reads.json"), key=lambda p: p.stat().st_mtime)
        if cache_dir.is_dir()
        else []
    )
    if not records:
        return "no executed copy yet"
    newest = records[-1]
    since = newest.stat().st_mtime
    try:
        reads = json.loads(newest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        reads = []
    changed = sorted(
        rel
        for rel in reads
        if isinstance(rel, str)
        and not rel.endswith("/")
        and (not (repo_root / rel).is_file() or (repo_root / rel).stat().st_mtime > since)
    )
    if changed:
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        return f"it reads {changed[0]}, which changed{more}"
    if src.stat().st_mtime > since:
        return "the notebook changed"
    return "its executed copy no longer matches (a tool version or a listed folder changed)"


def executed_notebook(
    src: Path,
    repo_root: Path,
    lang: str,
    kernel_name: str,
    cache_dir: Path | None = None,
    timeout_s: int = TIMEOUT_S,
    store: Path | None = None,
) -> tuple[Path, bool]:
    """(path of the executed copy of ``src``, True if it was executed now, False if cached).

    Looked up, in ``cache_dir`` then in ``store`` (a folder shared by the checkouts of this
    machine), by the reads each copy recorded; a copy without a record by the key of every
    dependency file. A run is saved in both (best effort: a store that cannot be written is
    skipped). Older copies of the same notebook in ``cache_dir`` are removed. Raises NotebookError.
    """
    cache_dir = cache_dir or repo_root / CACHE_SUBDIR
    ran = False
    found: tuple[Path, Path | None] | None = _recorded_copy(src, cache_dir, repo_root, lang, kernel_name)
    if found is None:
        broad = cache_dir / f"{src.stem}.{cache_key(src, repo_root, lang, kernel_name)[:20]}.ipynb"
        if broad.is_file():
            found = broad, None
    if found is None and store is not None and (stored := _recorded_copy(src, store, repo_root, lang, kernel_name)):
        found = cache_dir / stored[0].name, cache_dir / stored[1].name
        _copy_into(stored[0], found[0])
        _copy_into(stored[1], found[1])
    if found is None:
        build_log.info(f"executing {display_name(src, repo_root)} ({lang}): {why_run(src, cache_dir, repo_root)}")
        running = cache_dir / f"{src.stem}.running-{os.getpid()}-{threading.get_ident()}.ipynb"
        execute(src, running, repo_root, lang, kernel_name, timeout_s)
        ran = True
        log = running.with_name(running.name + ".reads.log")
        reads = recorded_reads(log, repo_root)
        unreadable = [read for read in recorded_reads(log, repo_root, caches=True) if not readable(read)]
        log.unlink(missing_ok=True)
        if unreadable:
            running.unlink(missing_ok=True)
            raise NotebookError(
                f"{display_name(src, repo_root)}: the notebook read {unreadable[0]}, outside "
                f"{' and '.join(READABLE)} (hooks/notebooks/execute.py READABLE: what every language reads alike)"
            )
        key20 = cache_key(src, repo_root, lang, kernel_name, reads)[:20]
        found = cache_dir / f"{src.stem}.{key20}.ipynb", cache_dir / f"{src.stem}.{key20}.reads.json"
        found[1].write_text(json.dumps(reads, indent=0) + "\n", encoding="utf-8")
        running.replace(found[0])
        if store is not None:
            try:
                _copy_into(found[0], store / found[0].name)
                _copy_into(found[1], store / found[1].name)
            except OSError:
                pass
    dest = found[0]
    for old in cache_dir.glob(f"{src.stem}.*"):
        rest = old.name[len(src.stem) + 1 :]
        if rest.startswith("running-"):  # another build's run in progress
            continue
        if old not in found and ((rest.count(".") == 1 and rest.endswith(".ipynb")) or rest.endswith(".reads.json")):
            old.unlink(missing_ok=True)
    return dest, ran


def notebook_language(src: Path, languages: tuple[str, ...]) -> str:
    """``page.fr.ipynb`` -> ``fr``. Raises NotebookError for a name without a known language."""
    suffixes = src.suffixes
    lang = suffixes[-2].lstrip(".") if len(suffixes) >= 2 else ""
    if lang not in languages:
        raise NotebookError(f"{src.name}: a notebook's name ends in .<language>.ipynb ({', '.join(languages)})")
    return lang


def notebook_sources(docs_dir: Path) -> list[Path]:
    """Every notebook of ``docs_dir`` (all languages; Jupyter's checkpoints aside), resolved, sorted."""
    return sorted(p.resolve() for p in docs_dir.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


_executed: dict[tuple, tuple[tuple, dict[Path, Path]]] = {}  # per call: (stamps of the inputs, result)


def executed_notebooks(
    docs_dir: Path,
    repo_root: Path,
    languages: tuple[str, ...],
    kernel_name: str,
    cache_dir: Path | None = None,
    store: Path | None = None,
) -> dict[Path, Path]:
    """Every notebook of ``docs_dir`` (all languages) -> its executed copy, running the stale ones in parallel.

    Keys are resolved source paths. Raises NotebookError for the first notebook (in name
    order) that fails. While no notebook or dependency file changes (size and mtime) and
    every executed copy is still there, a process answers a second call without hashing.
    """
    sources = notebook_sources(docs_dir)
    langs = [notebook_language(src, languages) for src in sources]
    call = (docs_dir, repo_root, languages, kernel_name, cache_dir, store)
    stamp = tuple((str(path), *file_stamp(path)) for path in [*sources, *dependency_files(repo_root)])
    known = _executed.get(call)
    if known and known[0] == stamp and all(dest.is_file() for dest in known[1].values()):
        return dict(known[1])  # the other language's pass of the same build: nothing was edited since
    with ThreadPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
        futures = [
            pool.submit(executed_notebook, src, repo_root, lang, kernel_name, cache_dir, TIMEOUT_S, store)
            for src, lang in zip(sources, langs, strict=True)
        ]
        executed = {src: future.result()[0] for src, future in zip(sources, futures, strict=True)}
    _executed[call] = (stamp, executed)
    return dict(executed)
