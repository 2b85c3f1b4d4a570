"""Notebook pages with static-i18n and mkdocs-jupyter: the MkDocs-facing half of ``hooks/notebooks/execute.py``.

(That MkDocs treats ``.ipynb`` files as pages at all is ``hooks/workarounds/ipynb_pages.py``.)

- ``use_executed_notebooks``: every notebook is read once and its cells are checked first
  (``hooks/notebooks/cell_names.py``: the names they use), then those bytes run (never the file
  read again: an editor's save in between under ``mkdocs serve`` runs at the next build), and every notebook page is rendered from its executed copy
  (``hooks/notebooks/execute.py``: executed once per change, cached), and mkdocs-jupyter gets one
  HTML cache folder per language and checkout: it evicts, after each language pass, what
  that pass did not use, so one shared folder never hits (and its writes are not atomic).
  A publication build uses neither cache: it executes every notebook in a folder of its own
  and mkdocs-jupyter renders without its cache (``publication_dir``).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

from hooks.checks.same_code import STORE_DIR as BLOCK_NAMES_STORE
from hooks.errors import RenderError
from hooks.notebooks.cell_names import check_notebook_names
from hooks.notebooks.execute import display_name, executed_notebooks, machine_store, notebook_sources
from verify.languages import LANGUAGES


def jupyter_kernel(config) -> str:
    """The kernel configured for mkdocs-jupyter (``kernel_name``), python3 if unset."""
    plugin = config.plugins.get("mkdocs-jupyter")
    return (plugin.config.get("kernel_name") if plugin else "") or "python3"


def use_executed_notebooks(files, config, lang: str, publication: bool = False):
    """Point every notebook page at its executed copy (all languages run at once, in parallel);
    a ``publication`` build reuses no executed copy or HTML of the checkout or the machine.

    Every notebook is first checked by ``check_notebook_names`` (the names its cells use), so
    none that it refuses runs or is shown from a cache. Raises RenderError naming the notebook,
    the cell and the line, or NotebookError (a RenderError) naming the notebook whose cell raised."""
    notebooks = [f for f in files if f.src_uri.endswith(".ipynb") and f.abs_src_path]
    if not notebooks:
        return files
    root = Path(os.path.abspath(os.path.dirname(config.config_file_path)))  # -f ../mkdocs.yml from docs/ too
    # Every notebook executed_notebooks runs, all languages, read once: the bytes checked here are
    # the bytes that run (under mkdocs serve an editor may save a notebook between the two).
    sources = {
        source: notebook_bytes(source, display_name(source, root)) for source in notebook_sources(Path(config.docs_dir))
    }
    for source, text in sources.items():
        check_notebook_names(
            source, display_name(source, root), store=None if publication else BLOCK_NAMES_STORE, source=text
        )
    trusted = not publication
    executed = executed_notebooks(
        Path(config.docs_dir),
        root,
        LANGUAGES,
        jupyter_kernel(config),
        cache_dir=None if trusted else publication_dir() / "notebooks",
        store=machine_store() if trusted else None,
        sources=sources,
    )
    for file in notebooks:
        file.abs_src_path = str(executed[Path(file.abs_src_path).resolve()])
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None:
        jupyter.config["cache"] = trusted
        jupyter.config["cache_dir"] = str((root / ".cache" if trusted else publication_dir()) / "mkdocs-jupyter" / lang)
    return files


def notebook_bytes(source: Path, name: str) -> bytes:
    """The bytes of the notebook ``source`` (``name``: as a message shows it); RenderError if unreadable."""
    try:
        return source.read_bytes()
    except OSError as exc:
        raise RenderError(f"{name}: not a readable notebook ({exc})") from None


@functools.cache
def publication_dir() -> Path:
    """A folder of this process, removed at exit: a publication build executes every notebook
    in it and trusts no executed copy or rendered HTML that a checkout or the machine holds
    (``.cache/`` can be committed with ``git add -f``; the machine store outlives a build)."""
    folder = Path(tempfile.mkdtemp(prefix="guide-publication-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
