"""``make serve``: ``mkdocs serve``, restarted whenever a ``.py`` file of the code changes.

Why it exists: MkDocs loads a hook file once per process and Python keeps every module it
imported, so in a running ``mkdocs serve`` an edit to the calculator (``vram/``), the render
layer (``hooks/``) or the pipeline (``verify/``) would not show on the next rebuild, and
re-importing modules in place leaves old objects bound somewhere. Instead, this module
watches those folders with watchdog (the file watcher MkDocs itself uses) and restarts the
server: the new process imports the current code and builds the site (a few seconds).
Edits to pages, snippets, data files and ``overrides/`` never restart anything: ``mkdocs
serve`` rebuilds them in place, within the rebuild budget of ``make bench``.

Two guards for what happens inside the server process, called by ``hooks/mkdocs_glue.py``
at the start of every build:

- ``check_code_unchanged``: a build refuses to run with code older than its files (a plain
  ``mkdocs serve`` without this wrapper), with one line asking for a restart;
- ``forget_logged_errors``: MkDocs' ``DuplicateFilter`` drops a log message already printed
  by the process, so the same bad edit made twice under ``mkdocs serve`` would print only
  "Aborted with a BuildError!" the second time; its memory is cleared per build.

It can go when MkDocs reloads hook modules itself (MkDocs 2.0 drops this plugin system).

CLI: ``python -m hooks.serve [mkdocs serve options]`` (``make serve``).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from mkdocs.utils import DuplicateFilter
from typing import TYPE_CHECKING

from .data import relative, tree_stamp
from .errors import RenderError

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent

REPO_ROOT = Path(__file__).resolve().parent.parent
CODE_FOLDERS = tuple(REPO_ROOT / name for name in ("hooks", "vram", "verify"))
CHANGES = {"modified", "created", "deleted", "moved"}
STOP_GRACE_S = 10.0

_imported_stamp = tree_stamp(*CODE_FOLDERS, pattern="*.py")  # the code this process runs


def check_code_unchanged() -> None:
    """Raise RenderError naming a ``.py`` file of hooks/, vram/ or verify/ edited since this
    process imported the code (restart ``make serve``, which does it by itself)."""
    now = tree_stamp(*CODE_FOLDERS, pattern="*.py")
    if now == _imported_stamp:
        return
    changed = sorted({entry[0] for entry in set(now) ^ set(_imported_stamp)})
    raise RenderError(f"{relative(Path(changed[0]))}: changed after this process imported the code; "
                      "restart `mkdocs serve` (`make serve` restarts by itself)")


def forget_logged_errors() -> None:
    """Clear the memory of MkDocs' DuplicateFilter (``mkdocs`` CLI, logger ``mkdocs.commands.build``),
    so that an error repeated by a later build of the same process is printed again."""
    for log_filter in logging.getLogger("mkdocs.commands.build").filters:
        if isinstance(log_filter, DuplicateFilter):
            log_filter.msgs.clear()


class _CodeChanges:
    """Sets ``changed`` (and remembers the path) when a ``.py`` file is written, added, removed or
    moved: a watchdog event handler (its observers call ``dispatch``; watchdog is imported only
    by the restarter, never by a build)."""

    def __init__(self, changed: threading.Event):
        self.changed, self.path = changed, ""

    def dispatch(self, event: FileSystemEvent) -> None:
        paths = [str(event.src_path), str(getattr(event, "dest_path", "") or "")]
        if event.event_type in CHANGES and any(p.endswith(".py") and "__pycache__" not in p for p in paths):
            self.path = next(p for p in paths if p.endswith(".py"))
            self.changed.set()


class Restarter:
    """Runs ``command`` and runs it again after every change of a ``.py`` file under ``folders``.

    A child that exits by itself (a first build that fails on an import error) is started
    again after the next change. ``stop`` ends ``run`` (tests); Ctrl-C does in a terminal.
    """

    def __init__(self, command: Sequence[str], folders: Sequence[Path], cwd: Path, settle_s: float = 0.3):
        self.command, self.folders, self.cwd, self.settle_s = list(command), list(folders), cwd, settle_s
        self.changed, self.stop = threading.Event(), threading.Event()
        self.starts = 0

    def run(self) -> None:
        from watchdog.observers import Observer

        handler = _CodeChanges(self.changed)
        observer = Observer()
        for folder in self.folders:
            observer.schedule(handler, str(folder), recursive=True)
        observer.start()
        child = None
        try:
            while not self.stop.is_set():
                child = subprocess.Popen(self.command, cwd=self.cwd)
                self.starts += 1
                while not (self.changed.wait(0.2) or self.stop.is_set()):
                    if child.poll() is not None:
                        print(f"hooks.serve: mkdocs serve exited ({child.returncode}); waiting for an edit of "
                              f"{', '.join(f.name + '/' for f in self.folders)}", file=sys.stderr, flush=True)
                        while not (self.changed.wait(0.2) or self.stop.is_set()):
                            pass
                        break
                self.stop.wait(self.settle_s)  # an editor's save is several events: take them as one
                self.changed.clear()
                _end(child)
                if not self.stop.is_set():
                    print(f"hooks.serve: {relative(Path(handler.path))} changed: restarting mkdocs serve",
                          file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            pass
        finally:
            if child is not None:
                _end(child)
            observer.stop()
            observer.join()


def _end(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def main(argv: list[str] | None = None) -> int:
    command = [sys.executable, "-m", "mkdocs", "serve", *(sys.argv[1:] if argv is None else argv)]
    restarter = Restarter(command, CODE_FOLDERS, REPO_ROOT)
    signal.signal(signal.SIGTERM, lambda *_: restarter.stop.set())  # `kill`: stop the server too
    restarter.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
