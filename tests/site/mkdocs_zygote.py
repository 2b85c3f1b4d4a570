"""Run many ``python -m mkdocs build`` commands without re-importing MkDocs' stack (tests only).

A cold ``python -m mkdocs build`` of this site spends about 1 CPU-second importing MkDocs,
Material, the i18n and Jupyter plugins, nbconvert, Markdown's and pymdownx's extensions,
pydantic, Babel… before it reads a file. ``tests/site/test_build_errors.py`` runs about 30
builds of broken copies of the repository; this process imports those libraries once and
forks a child per build, which runs ``mkdocs`` as ``python -m mkdocs`` would in a fresh
interpreter: the request's argv, environment and working directory (first on ``sys.path``,
as ``-m`` puts it), stdout and stderr written to the request's files, an uncaught exception
printed as Python prints it, exit status as the process's.

Nothing of the project (``hooks``, ``vram``, ``verify``) is imported before the fork
(``main`` checks it): each build imports the copy's own code and reads the copy's own data,
so a broken copy is built exactly as a fresh process would build it. Forking is safe because
nothing here started a thread (``main`` checks there is one).

Protocol (``ZygoteBuilder`` in this file is the client): one JSON line per request on stdin,
``{"argv", "env", "cwd", "stdout", "stderr"}``; replies on stdout ``{"pid": N}`` then
``{"exit": status}`` (negative: killed by that signal, as ``subprocess`` reports it). The
children are reaped with ``waitpid``, so their CPU time counts in the caller's children.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path

PRELOAD = (
    "mkdocs.__main__",
    "mkdocs.commands.build",
    "mkdocs.config.defaults",
    "mkdocs.structure.nav",
    "mkdocs.structure.pages",
    "mkdocs.contrib.search.search_index",
    "mkdocs.utils.templates",
    "material.plugins.search.plugin",
    "mkdocs_static_i18n.plugin",
    "mkdocs_jupyter.plugin",
    "mkdocs_jupyter.convert",
    "nbconvert",
    "nbclient",
    "nbformat",
    "jupyter_client",
    "jupytext",
    "markdown",
    "markdown.extensions.abbr",
    "markdown.extensions.admonition",
    "markdown.extensions.attr_list",
    "markdown.extensions.def_list",
    "markdown.extensions.footnotes",
    "markdown.extensions.md_in_html",
    "markdown.extensions.tables",
    "markdown.extensions.toc",
    "markdown.extensions.codehilite",
    "markdown.extensions.fenced_code",
    "pymdownx.caret",
    "pymdownx.details",
    "pymdownx.highlight",
    "pymdownx.inlinehilite",
    "pymdownx.superfences",
    "pymdownx.tabbed",
    "pymdownx.snippets",
    "pygments.formatters.html",
    "pygments.lexers.python",
    "pygments.lexers.shell",
    "pygments.styles.default",
    "pydantic",
    "pydantic.main",
    "pydantic.root_model",
    "pydantic.functional_validators",
    "pydantic.json_schema",
    "pydantic.plugin._schema_validator",
    "material.templates",
    "mistune.plugins.url",
    "mistune.plugins.def_list",
    "mistune.plugins.task_lists",
    "pygments.lexers.data",
    "runpy",
    "babel.numbers",
    "babel.dates",
    "babel.support",
    "selectolax.lexbor",
    "bs4",
    "tinycss2",
    "jinja2",
    "yaml",
    "jsonschema",
    "tornado.ioloop",
    "zmq",
)
PROJECT = ("hooks", "vram", "verify", "snippets", "tests")


def run_child(request: dict) -> None:
    """In the forked child: become ``python -m mkdocs`` with the request's argv; never returns."""
    stdin = os.open(os.devnull, os.O_RDONLY)
    stdout = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    stderr = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    # the child's standard streams, open for its whole life
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = request["argv"]  # runpy puts mkdocs/__main__.py first, as -m does
    sys.path[0] = request["cwd"]
    importlib.invalidate_caches()
    import runpy

    code = 0
    try:
        runpy.run_module("mkdocs", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 (as the interpreter does: any exception ends the child with its traceback)
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in PROJECT)
    assert not loaded, f"the zygote must not import the project's code: {loaded}"
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print goes to stderr, never into the replies
    requests = sys.stdin
    replies.write(json.dumps({"ready": True}) + "\n")
    for line in requests:
        request = json.loads(line)
        assert threading.active_count() == 1, threading.enumerate()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            replies.close()
            run_child(request)
        replies.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n")


class ZygoteBuilder:
    """The client: ``build(argv, env, cwd, out_dir)`` -> ``subprocess.CompletedProcess`` with
    the text of stdout and stderr, as ``subprocess.run(argv, capture_output=True, text=True)``
    returns it. ``argv`` is a ``python -m mkdocs …`` command line."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert self.process.stdin is not None and self.process.stdout is not None  # PIPE
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        assert json.loads(self.stdout.readline()) == {"ready": True}, "the mkdocs zygote did not start"

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, logs: Path) -> subprocess.CompletedProcess:
        assert argv[1:3] == ["-m", "mkdocs"], argv
        logs.mkdir(parents=True, exist_ok=True)
        out, err = logs / "mkdocs.stdout", logs / "mkdocs.stderr"
        request = {"argv": ["-m", *argv[3:]], "env": env, "cwd": str(cwd), "stdout": str(out), "stderr": str(err)}
        self.stdin.write(json.dumps(request) + "\n")
        self.stdin.flush()
        started = json.loads(self.stdout.readline())
        assert "pid" in started, f"the mkdocs zygote failed: {started}"
        limit = threading.Timer(600, os.kill, (started["pid"], signal.SIGKILL))  # as subprocess.run(timeout=600)
        limit.start()
        try:
            ended = json.loads(self.stdout.readline())
        finally:
            limit.cancel()
        assert "exit" in ended, f"the mkdocs zygote failed: {ended}"
        assert ended["exit"] != -signal.SIGKILL, f"{argv}: no result after 600 s"
        replies = [started, ended]
        return subprocess.CompletedProcess(
            argv, replies[1]["exit"], out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8")
        )

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(timeout=600)


if __name__ == "__main__":
    main()
