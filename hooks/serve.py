"""``make serve``: ``mkdocs serve`` under watchdog's ``watchmedo auto-restart``, restarted
whenever a ``.py`` file of the code changes, and brought back by the next edit after a build fails.

Why it exists: MkDocs loads a hook file once per process and Python keeps every module it
imported, so in a running ``mkdocs serve`` an edit to the calculator (``vram/``), the render
layer (``hooks/``) or the pipeline (``verify/``) would not show on the next rebuild, and
re-importing modules in place leaves old objects bound somewhere. ``watchmedo auto-restart``
(watchdog, the file watcher MkDocs itself uses) watches those folders and restarts the server:
the new process imports the current code and builds the site (a few seconds). Edits to pages,
snippets, data files and ``overrides/`` never restart a running server: ``mkdocs serve``
rebuilds them in place, within the rebuild budget of ``make bench``.

A server whose start fails (its first build, the configuration, a hook that cannot be
imported) would exit, and ``mkdocs serve`` only watches files once it is up: ``serve_or_wait``
then says why (``start_failure``: a hook that does not import or a bug shows its traceback,
file and line; a failed build has already printed its one line) and waits for an edit of any
file a build reads (``WATCHED``) and exits, and ``watchmedo`` starts it again. An address
already in use is no file's fault: ``make serve`` checks the port before it starts
(``address_in_use``) and stops, naming the port and how to choose another
(``make serve PORT=8001``), instead of waiting for an edit that cannot fix it. Inside the
server, a bug in the render layer logs its traceback (``hooks/mkdocs_glue.py``'s error
boundary while ``serving()``).

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

import errno
import logging
import os
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path

from mkdocs.utils import DuplicateFilter

from hooks.cache import tree_stamp
from hooks.data.load import relative
from hooks.errors import RenderError

REPO_ROOT = Path(__file__).resolve().parent.parent
CODE_FOLDERS = tuple(REPO_ROOT / name for name in ("hooks", "vram", "verify"))
# What a build reads besides the code: an edit of any of them may fix a failed start.
# The rule files of hooks/ (hooks/render/typography.yaml, interface.yaml) too: mkdocs.yml's
# `watch:` lists them for a running server.
WATCHED = (
    *(REPO_ROOT / name for name in ("docs", "snippets", "overrides")),
    REPO_ROOT / "mkdocs.yml",
    *sorted(path for path in (REPO_ROOT / "hooks").rglob("*.yaml")),
)
DEFAULT_ADDRESS = ("127.0.0.1", 8000)  # mkdocs serve's default dev_addr
CHANGES = {"modified", "created", "deleted", "moved"}
SETTLE_S = 0.3  # an editor's save is several events: take them as one
_SERVING = threading.Event()

_imported_stamp = tree_stamp(*CODE_FOLDERS, pattern="*.py")  # the code this process runs


def check_code_unchanged() -> None:
    """Raise RenderError naming a ``.py`` file of hooks/, vram/ or verify/ edited since this
    process imported the code (restart ``make serve``, which does it by itself)."""
    now = tree_stamp(*CODE_FOLDERS, pattern="*.py")
    if now == _imported_stamp:
        return
    changed = sorted({entry[0] for entry in set(now) ^ set(_imported_stamp)})
    raise RenderError(
        f"{relative(Path(changed[0]))}: changed after this process imported the code; "
        "restart `mkdocs serve` (`make serve` restarts by itself)"
    )


def forget_logged_errors() -> None:
    """Clear the memory of MkDocs' DuplicateFilter (``mkdocs`` CLI, logger ``mkdocs.commands.build``),
    so that an error repeated by a later build of the same process is printed again."""
    for log_filter in logging.getLogger("mkdocs.commands.build").filters:
        if isinstance(log_filter, DuplicateFilter):
            log_filter.msgs.clear()


def set_serving(serving: bool) -> None:
    """Record whether this process runs ``mkdocs serve`` (MkDocs' ``on_startup`` event)."""
    if serving:
        _SERVING.set()
    else:
        _SERVING.clear()


def serving() -> bool:
    """Whether this process is a live server (its log is the contributor's only view of a bug)."""
    return _SERVING.is_set()


def watchmedo_command(serve_args: Sequence[str]) -> list[str]:
    """``watchmedo auto-restart`` over the ``.py`` files of the code, running ``serve_or_wait``."""
    return [
        sys.executable,
        "-m",
        "watchdog.watchmedo",
        "auto-restart",
        "--recursive",
        "--ignore-directories",
        *(f"--directory={folder}" for folder in CODE_FOLDERS),
        "--patterns=**/*.py",
        "--ignore-patterns=**/__pycache__/**",
        f"--debounce-interval={SETTLE_S}",
        "--signal=SIGINT",
        "--kill-after=10",
        "--",
        sys.executable,
        "-m",
        "hooks.serve",
        "--server",
        *serve_args,
    ]


def wait_for_edit(paths: Sequence[Path] = WATCHED, on_watching=lambda: None) -> str:
    """Block until a file under ``paths`` (folders, recursively, or files) is written, added,
    removed or moved; return its path once the editor's save has settled. ``on_watching`` runs
    once the watcher is up (a message saying so, printed earlier, would let an edit made at
    once go unseen)."""
    from watchdog.observers import Observer

    edited: list[str] = []
    done = threading.Event()

    class Handler:
        def dispatch(self, event) -> None:
            if event.event_type in CHANGES and not event.is_directory and "__pycache__" not in str(event.src_path):
                edited.append(str(event.src_path))
                done.set()

    observer = Observer()
    handler = Handler()
    for path in paths:
        if path.is_dir():
            observer.schedule(handler, str(path), recursive=True)  # type: ignore[arg-type]  # watchdog calls dispatch() only
    files = [path for path in paths if not path.is_dir()]
    for folder in {path.parent for path in files}:
        observer.schedule(_Only(handler, files), str(folder), recursive=False)  # type: ignore[arg-type]  # as above
    observer.start()
    on_watching()
    try:
        done.wait()
        threading.Event().wait(SETTLE_S)
    finally:
        observer.stop()
        observer.join()
    return edited[0]


class _Only:
    """Passes on the events of ``files`` only (watchdog watches folders)."""

    def __init__(self, handler, files: Sequence[Path]):
        self.handler, self.files = handler, {str(path) for path in files}

    def dispatch(self, event) -> None:
        if str(event.src_path) in self.files or str(getattr(event, "dest_path", "")) in self.files:
            self.handler.dispatch(event)


def dev_address(serve_args: Sequence[str], config_file: Path = REPO_ROOT / "mkdocs.yml") -> tuple[str, int]:
    """(host, port) ``mkdocs serve SERVE_ARGS`` listens on: ``-a``/``--dev-addr`` HOST:PORT, else
    ``dev_addr`` of ``config_file``, else MkDocs' default, 127.0.0.1:8000."""
    value = None
    for i, arg in enumerate(serve_args):
        if arg.startswith("--dev-addr="):
            value = arg.partition("=")[2]
        elif arg in ("-a", "--dev-addr") and i + 1 < len(serve_args):
            value = serve_args[i + 1]
        elif arg.startswith("-a") and len(arg) > 2:
            value = arg[2:]
    if value is None and config_file.is_file():
        from verify.languages import read_mkdocs_yml  # mkdocs.yml's tags (!ENV) read as nothing

        value = read_mkdocs_yml(config_file).get("dev_addr")
    host, _, port = (value or "").rpartition(":")
    return (host or DEFAULT_ADDRESS[0], int(port)) if port.isdigit() else DEFAULT_ADDRESS


def address_in_use(host: str, port: int) -> bool:
    """Whether another program listens on ``host:port`` (binding as MkDocs' server does fails)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # http.server's allow_reuse_address
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def address_in_use_message(host: str, port: int) -> str:
    return (
        f"hooks.serve: cannot serve on {host}:{port}: the address is already in use (another `make serve`, "
        f"or another program); stop it, or choose another port: `make serve PORT={port + 1}`"
    )


def start_failure(exc: BaseException) -> tuple[str, bool]:
    """What to print when ``mkdocs serve`` could not start with ``exc``, and whether an edit can fix it.

    A failed build (MkDocs' ``Abort``: it has printed the one line naming the file) adds
    nothing; an address in use cannot be fixed by an edit; anything else (a hook module
    that does not import, a bug) is its traceback, ending with the file and line."""
    from mkdocs.exceptions import Abort

    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return "", False
    if isinstance(exc, Abort):
        return "", True
    shown = "".join(traceback.format_exception(exc)).rstrip()
    return f"{shown}\nhooks.serve: {failure_place(exc)}: {type(exc).__name__}: {exc}", True


def failure_place(exc: BaseException) -> str:
    """``FILE:LINE`` of ``exc``: a syntax error's own, else the deepest frame of this repository."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{relative(Path(exc.filename))}:{exc.lineno}"
    frames = [
        frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename.startswith(f"{REPO_ROOT}{os.sep}")
    ] or traceback.extract_tb(exc.__traceback__)[-1:]
    return f"{relative(Path(frames[-1].filename))}:{frames[-1].lineno}" if frames else "mkdocs serve"


def serve_or_wait(serve_args: Sequence[str]) -> int:
    """Run ``mkdocs serve SERVE_ARGS`` in this process; if it cannot start, wait for an edit of
    a file a build reads and return 3 (``watchmedo`` then starts it again). SIGINT (a restart,
    Ctrl-C) ends it at once."""
    from mkdocs.__main__ import cli

    interrupted = threading.Event()

    def on_interrupt(signum, frame):
        interrupted.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        cli.main(["serve", *serve_args], prog_name="mkdocs", standalone_mode=False)
        return 0
    except Exception as exc:  # noqa: BLE001 (said below: the next edit may fix it)
        if interrupted.is_set():
            return 0
        shown, an_edit_can_fix_it = start_failure(exc)
        if not an_edit_can_fix_it:
            print(address_in_use_message(*dev_address(serve_args)), file=sys.stderr, flush=True)
            os.kill(os.getppid(), signal.SIGTERM)  # watchmedo: restarting cannot free the port
            return 2
        if shown:
            print(shown, file=sys.stderr, flush=True)
    folders = ", ".join(f"{relative(path)}/" if path.is_dir() else relative(path) for path in WATCHED)
    try:
        edited = wait_for_edit(
            on_watching=lambda: print(
                f"hooks.serve: the server could not start; waiting for an edit of {folders} "
                "(or of the code, which restarts it)",
                file=sys.stderr,
                flush=True,
            )
        )
    except KeyboardInterrupt:
        return 0
    print(f"hooks.serve: {relative(Path(edited))} changed: starting mkdocs serve again", file=sys.stderr, flush=True)
    return 3


def main(argv: list[str] | None = None) -> int:  # noqa: RET503 (os.execv does not return)
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--server"]:
        return serve_or_wait(args[1:])
    address = dev_address(args)
    if address_in_use(*address):
        print(address_in_use_message(*address), file=sys.stderr, flush=True)
        return 2
    command = watchmedo_command(args)
    os.execv(command[0], command)  # SIGTERM and Ctrl-C reach watchmedo, which stops the server


if __name__ == "__main__":
    sys.exit(main())
