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
``hooks/notebooks/cell_names.py``). Outside the checkout a run may read only what an honest
run reads (``OUTSIDE_READABLE``, ``outside_readable``: Python's installation, matplotlib's
folders, the time-zone database, ``/proc``'s process table, the kernel's own temporary folder,
removed after the run); never a folder of executed notebooks (the machine's store holds every
language's copies), nor through a path that starts in the checkout and leaves it (``..``, a
link): ``refused_reads``, on the paths the kernel resolved as it read. The notebook's bytes are
read once (``source``): what the build checked is what runs. Pure: no MkDocs import.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

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


def cache_key(
    src: Path,
    repo_root: Path,
    lang: str,
    kernel_name: str,
    reads: list[str] | None = None,
    source: bytes | None = None,
) -> str:
    """SHA-256 of the notebook (``source``, its bytes as checked; None reads ``src``), language,
    kernel, tool versions and what it reads: ``reads``
    (paths relative to ``repo_root`` as a run recorded them; a folder ends in ``/`` and counts
    by its names, ``__pycache__`` aside: bytecode is no input, its source is a read), or every
    dependency file when None."""
    digest = hashlib.sha256()
    for part in (f"lang={lang}", f"kernel={kernel_name}", *tool_versions()):
        digest.update(part.encode() + b"\0")
    digest.update((src.read_bytes() if source is None else source) + b"\0")
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


# An IPython start-up file for the kernel: every file it opens, and every folder it lists,
# goes to $GUIDE_READS_LOG, one JSON list a line: [folder?, the path as the code wrote it
# (absolute: joined to the working folder, its ``..`` kept), the same path with its links and
# ``..`` resolved then (os.path.realpath)]. The log is opened, and the functions the hook calls
# are taken, before the hook is installed: writing to it opens nothing.
READS_HOOK = """\
def _guide_record_reads():
    import json, os, sys
    log = open(os.environ["GUIDE_READS_LOG"], "a", encoding="utf-8", buffering=1)
    dumps, fsdecode, getcwd, join, realpath = json.dumps, os.fsdecode, os.getcwd, os.path.join, os.path.realpath

    def hook(event, args):
        if event == "open" or event in ("os.listdir", "os.scandir"):
            path = args[0] if args else None
            if path is None and event != "open":
                path = "."
            if isinstance(path, (str, bytes, os.PathLike)):
                raw = join(getcwd(), fsdecode(path))
                log.write(dumps([event != "open", raw, realpath(raw)]) + "\\n")

    sys.addaudithook(hook)


_guide_record_reads()
del _guide_record_reads
"""


class Read(NamedTuple):
    """One line of a run's reads log (``READS_HOOK``)."""

    folder: bool  # a listing (os.listdir, os.scandir), not an open
    raw: str  # absolute, as the code wrote it (``..`` and links kept)
    real: str  # resolved by the kernel when it read (os.path.realpath)


def logged_reads(log: Path) -> list[Read]:
    """The reads ``log`` holds, in order (none if there is no log). Raises ValueError for a
    line the hook did not write (a run whose log cannot be trusted is refused)."""
    reads = []
    for number, line in enumerate(log.read_text(encoding="utf-8").splitlines() if log.is_file() else [], start=1):
        try:
            folder, raw, real = json.loads(line)
        except (ValueError, TypeError):
            raise ValueError(f"line {number} of {log.name} is no read the kernel's hook wrote") from None
        if not (isinstance(folder, bool) and isinstance(raw, str) and isinstance(real, str)):
            raise ValueError(f"line {number} of {log.name} is no read the kernel's hook wrote")
        reads.append(Read(folder, raw, real))
    return reads


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


def _checkout_read(read: Read, root: Path, installed: list[Path], caches: bool) -> str | None:
    """``read`` as ``recorded_reads`` counts it (relative to ``root``, a folder ending in ``/``),
    or None: outside the checkout, or no content of it (see ``recorded_reads``)."""
    import importlib.util

    path = Path(read.real)
    if path.suffix == ".pyc" and "__pycache__" in path.parts:
        try:
            path = Path(importlib.util.source_from_cache(str(path)))
        except ValueError:
            return None
    try:
        rel = path.resolve().relative_to(root)
    except ValueError:
        return None
    if (
        not rel.parts
        or (rel.parts[0] in {".cache", ".git"} and not caches)
        or "__pycache__" in rel.parts
        or any(rel.is_relative_to(folder) for folder in installed)
    ):
        return None
    return rel.as_posix() + ("/" if read.folder else "")


def recorded_reads(log: Path, repo_root: Path, caches: bool = False) -> list[str]:
    """The checkout's files and folders a run read (from its log), relative to ``repo_root``:
    a module's cached bytecode counts as its source; caches, the repository metadata and
    this environment's folders don't (``environment_folders``: a virtual environment inside the
    checkout is no content of it; the packages of ``TOOLS`` count by their versions, wherever
    the environment lives). With ``caches``, reads in ``.cache`` and ``.git`` count too (what
    ``readable`` judges: an executed copy in ``.cache`` holds a language's comments). Raises
    ValueError for a log the kernel's hook did not write (``logged_reads``)."""
    root = repo_root.resolve()
    installed = environment_folders(root)
    found = {_checkout_read(read, root, installed, caches) for read in logged_reads(log)}
    return sorted(rel for rel in found if rel is not None)


def readable(read: str) -> bool:
    """Whether a notebook may read ``read`` (a path relative to the checkout, as
    ``recorded_reads`` gives it): a file of ``READABLE``, or the metadata an editable install of
    the project keeps at the root (``importlib.metadata`` reads its entry points)."""
    top = read.split("/", 1)[0]
    return read.startswith(READABLE) or (read != top and top.endswith(INSTALL_METADATA))


# What a notebook may read outside the checkout (``outside_readable``), found by recording an
# honest run of docs/memory-notebook.*.ipynb (tests/notebooks/test_notebook_reads.py): Python's
# installation (the standard library, site-packages: what it imports), matplotlib's
# configuration and cache folders and the font folders it scans when its cache is cold, the
# time-zone database (babel, under TZ=UTC), the process table (ipykernel ends its children
# through psutil; torch reads its own memory map) and the kernel's own temporary folder.
OUTSIDE_READABLE = (
    "Python's installation, matplotlib's configuration, cache and font folders, the time-zone "
    "database, /proc's process table, the kernel's temporary folder"
)
PROCESS_TABLE = re.compile(r"/proc(/stat|/\d+/(stat|maps))?")  # /proc/self/maps resolves to /proc/PID/maps


def python_folders() -> list[Path]:
    """The folders of this interpreter's installation that its imports read: the standard
    library and site-packages (``sysconfig``, ``site``) and the zip archives of ``sys.path``."""
    import site
    import sys
    import sysconfig

    paths = sysconfig.get_paths()
    folders = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    folders += site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    folders += [entry for entry in sys.path if entry.endswith(".zip")]
    return [Path(os.path.realpath(folder)) for folder in folders]


def matplotlib_folders() -> list[Path]:
    """matplotlib's configuration and cache folders (``MPLCONFIGDIR``, else the XDG ones) and
    the font folders it scans for its font cache (``font_manager``), as matplotlib names them;
    none without matplotlib."""
    try:
        import matplotlib
        from matplotlib import font_manager
    except ImportError:
        return []
    fonts = [
        *font_manager.X11FontDirectories,
        *font_manager.OSXFontDirectories,
        *font_manager.MSUserFontDirectories,
    ]
    folders = [matplotlib.get_configdir(), matplotlib.get_cachedir(), *fonts]
    return [Path(os.path.realpath(folder)) for folder in folders]


def outside_readable(kernel_tmp: Path) -> list[Path]:
    """The folders outside the checkout a notebook's run may read (``OUTSIDE_READABLE``),
    resolved; ``kernel_tmp``: the kernel's temporary folder (its TMPDIR and IPython's)."""
    import zoneinfo

    return [
        *python_folders(),
        *matplotlib_folders(),
        *(Path(os.path.realpath(folder)) for folder in zoneinfo.TZPATH),
        Path(os.path.realpath(kernel_tmp)),
    ]


def _within(path: Path, folders: list[Path]) -> bool:
    return any(path == folder or path.is_relative_to(folder) for folder in folders)


def refused_reads(log: Path, repo_root: Path, allowed: list[Path], denied: list[Path]) -> list[str]:
    """Why each read of the run that ``log`` records is refused, in the order of the reads
    (one line each, without the notebook's name): in the checkout, a file outside ``READABLE``
    (``readable``); outside it, a path that starts in the checkout (``..``, a link: the
    checkout's content is judged in the checkout), one under ``denied`` (the executed
    notebooks' folders: every language's copies) or one under none of ``allowed``
    (``outside_readable``). Both the path the kernel resolved and the one resolved now
    (a link changed since) are judged. Raises ValueError for a log the hook did not write."""
    root = repo_root.resolve()
    starts = [Path(os.path.abspath(repo_root)).parts, root.parts]
    installed = environment_folders(root)
    refused: list[str] = []
    for read in logged_reads(log):
        raw = Path(read.raw)
        slash = "/" if read.folder else ""
        for real in dict.fromkeys([Path(read.real), Path(os.path.realpath(read.raw))]):
            inside = _checkout_read(read._replace(real=str(real)), root, installed, caches=True)
            if inside is not None:
                why = (
                    None
                    if readable(inside)
                    else f"read {inside}, outside {' and '.join(READABLE)} "
                    "(hooks/notebooks/execute.py READABLE: what every language reads alike)"
                )
            elif real == root or real.is_relative_to(root):
                why = None  # the checkout's caches of bytecode, its environment: recorded_reads
            elif any(raw.parts[: len(start)] == start for start in starts):
                shown = Path(*next(raw.parts[len(s) :] for s in starts if raw.parts[: len(s)] == s)).as_posix()
                why = f"read {shown}{slash}, which leaves the checkout (through .. or a link) for {real}{slash}"
            elif _within(real, denied):
                why = f"read {real}{slash}, in a folder of executed notebooks (every language's copies)"
            elif _within(real, allowed) or PROCESS_TABLE.fullmatch(real.as_posix()):
                why = None
            else:
                why = (
                    f"read {real}{slash}, outside the checkout and what a notebook may read there "
                    f"({OUTSIDE_READABLE}: hooks/notebooks/execute.py OUTSIDE_READABLE)"
                )
            if why and why not in refused:
                refused.append(why)
    return refused


def _error_cell(nb) -> tuple[int, str]:
    """(1-based index among code cells, first source line) of the cell that raised."""
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code_cells, start=1):
        if any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            return i, (cell.source.strip().splitlines() or [""])[0]
    return 0, ""


def execute(
    src: Path,
    dest: Path,
    repo_root: Path,
    lang: str,
    kernel_name: str,
    timeout_s: int = TIMEOUT_S,
    source: bytes | None = None,
    kernel_tmp: Path | None = None,
) -> None:
    """Run every cell of ``src`` with ``kernel_name`` and write the executed notebook to ``dest``;
    the kernel records what it reads in ``dest``'s ``.reads.log`` (``READS_HOOK``).

    ``source``: the notebook's bytes as the build checked them (read once: an editor saving in
    between changes nothing that runs); None reads ``src`` now. ``kernel_tmp``: the kernel's
    temporary folder (its ``TMPDIR``, IPython's folder), which the caller removes; None makes
    one and removes it. The kernel runs with ``TZ=UTC`` (no machine's time zone is an input).
    Raises NotebookError naming ``src`` (relative to ``repo_root``) for an unreadable
    notebook, a missing kernel, a cell that raises, a timeout or a dead kernel.
    """
    if kernel_tmp is None:
        with tempfile.TemporaryDirectory(prefix="guide-kernel-") as folder:
            execute(src, dest, repo_root, lang, kernel_name, timeout_s, source, Path(folder))
        return
    # Imported here: a build whose notebooks all come from the cache never loads them.
    import nbformat
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    name = display_name(src, repo_root)
    try:
        nb = nbformat.reads((src.read_bytes() if source is None else source).decode("utf-8"), as_version=4)
    except Exception as exc:  # noqa: BLE001 (nbformat raises several unrelated types for a broken file)
        raise NotebookError(f"{name}: not a readable notebook ({type(exc).__name__}: {exc})") from None
    ipython_dir = kernel_tmp / "ipython"
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
        "TMPDIR": str(kernel_tmp),
        "TZ": "UTC",
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


def _recorded_copy(
    src: Path, folder: Path, repo_root: Path, lang: str, kernel_name: str, source: bytes | None = None
) -> tuple[Path, Path] | None:
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
            and cache_key(src, repo_root, lang, kernel_name, reads, source)[:20] == key20
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
    source: bytes | None = None,
) -> tuple[Path, bool]:
    """(path of the executed copy of ``src``, True if it was executed now, False if cached).

    ``source``: the notebook's bytes as the build checked them; the key and the run use these,
    never the file again (None: read ``src`` once, now). Looked up, in ``cache_dir`` then in
    ``store`` (a folder shared by the checkouts of this machine), by the reads each copy
    recorded; a copy without a record by the key of every dependency file. A run is saved in
    both (best effort: a store that cannot be written is skipped), unless it read what
    ``refused_reads`` refuses: then nothing is kept and NotebookError names the first such
    read. Older copies of the same notebook in ``cache_dir`` are removed. Raises NotebookError.
    """
    cache_dir = cache_dir or repo_root / CACHE_SUBDIR
    source = src.read_bytes() if source is None else source
    ran = False
    found: tuple[Path, Path | None] | None = _recorded_copy(src, cache_dir, repo_root, lang, kernel_name, source)
    if found is None:
        broad = cache_dir / f"{src.stem}.{cache_key(src, repo_root, lang, kernel_name, source=source)[:20]}.ipynb"
        if broad.is_file():
            found = broad, None
    if (
        found is None
        and store is not None
        and (stored := _recorded_copy(src, store, repo_root, lang, kernel_name, source))
    ):
        found = cache_dir / stored[0].name, cache_dir / stored[1].name
        _copy_into(stored[0], found[0])
        _copy_into(stored[1], found[1])
    if found is None:
        build_log.info(f"executing {display_name(src, repo_root)} ({lang}): {why_run(src, cache_dir, repo_root)}")
        running = cache_dir / f"{src.stem}.running-{os.getpid()}-{threading.get_ident()}.ipynb"
        log = running.with_name(running.name + ".reads.log")
        denied = [Path(os.path.realpath(folder)) for folder in (cache_dir, store, machine_store()) if folder]
        try:
            with tempfile.TemporaryDirectory(prefix="guide-kernel-") as kernel_tmp:
                execute(src, running, repo_root, lang, kernel_name, timeout_s, source, Path(kernel_tmp))
                allowed = outside_readable(Path(kernel_tmp))
                refused = [f"the notebook {why}" for why in refused_reads(log, repo_root, allowed, denied)]
            reads = recorded_reads(log, repo_root)
        except ValueError as exc:  # a log the kernel's hook did not write
            refused, reads = [f"what the run read cannot be judged ({exc})"], []
        finally:
            log.unlink(missing_ok=True)
        ran = True
        if refused:
            running.unlink(missing_ok=True)
            raise NotebookError(f"{display_name(src, repo_root)}: {refused[0]}")
        key20 = cache_key(src, repo_root, lang, kernel_name, reads, source)[:20]
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
    sources: dict[Path, bytes] | None = None,
) -> dict[Path, Path]:
    """Every notebook of ``docs_dir`` (all languages) -> its executed copy, running the stale ones in parallel.

    ``sources``: each notebook (resolved path) -> its bytes as the build checked them
    (``hooks/notebooks/pages.py``); exactly these run, whatever the files hold by then (under
    ``mkdocs serve`` an editor may save between the check and the run). None reads every
    notebook of ``docs_dir`` once, now. Keys are resolved source paths. Raises NotebookError
    for the first notebook (in name order) that fails. While no notebook's bytes or dependency
    file changes (size and mtime) and every executed copy is still there, a process answers a
    second call without running anything.
    """
    if sources is None:
        sources = {src: src.read_bytes() for src in notebook_sources(docs_dir)}
    paths = sorted(sources)
    langs = [notebook_language(src, languages) for src in paths]
    call = (docs_dir, repo_root, languages, kernel_name, cache_dir, store)
    stamp = (
        *((str(src), hashlib.sha256(sources[src]).hexdigest()) for src in paths),
        *((str(path), *file_stamp(path)) for path in dependency_files(repo_root)),
    )
    known = _executed.get(call)
    if known and known[0] == stamp and all(dest.is_file() for dest in known[1].values()):
        return dict(known[1])  # the other language's pass of the same build: nothing was edited since
    with ThreadPoolExecutor(max_workers=max(1, min(len(paths), os.cpu_count() or 1))) as pool:
        futures = [
            pool.submit(executed_notebook, src, repo_root, lang, kernel_name, cache_dir, TIMEOUT_S, store, sources[src])
            for src, lang in zip(paths, langs, strict=True)
        ]
        executed = {src: future.result()[0] for src, future in zip(paths, futures, strict=True)}
    _executed[call] = (stamp, executed)
    return dict(executed)
