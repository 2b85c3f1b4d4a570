"""Under `make serve` (hooks/serve.py) a .py edit restarts `mkdocs serve` and any edit brings a
failed server back; inside one server process a build refuses code older than its files, and a
repeated error still prints its line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import psutil

from tests.snippets.launch import free_port


def _wait(predicate, timeout: float = 600.0) -> bool:
    """Poll ``predicate`` until it holds; ``timeout`` bounds a hang, never a speed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def _served(port: int, path: str = "/") -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.read().decode("utf-8")
    except OSError:
        return None


def _server_process(server: subprocess.Popen) -> int | None:
    """The pid of the ``mkdocs serve`` process that ``watchmedo`` (``server``) runs now."""
    try:
        children = psutil.Process(server.pid).children()
    except psutil.NoSuchProcess:
        return None
    return children[0].pid if children else None


def test_make_serve_follows_the_contributor(warm_repo_copy, tmp_path):
    """``make serve``'s command on a copy of the sources, through four edits: a server whose
    first build failed comes back on the fix of a page (not only on a ``.py`` edit: it waited
    for the code, and the port stayed refused); a page edit rebuilds without a restart; a
    ``.py`` edit restarts it, and a bug in a hook prints its traceback in the server's log
    (one line asked for ``mkdocs build --verbose``, which a server cannot run); a hook module
    that does not import prints its file, line and traceback, and its fix brings the server back.
    The copy holds the checkout's build caches, as a contributor's checkout built before does."""
    repo_copy = warm_repo_copy
    french = repo_copy / "docs" / "memory-formulas.fr.md"
    text = french.read_text(encoding="utf-8")
    french.unlink()
    port, log_path = free_port(), tmp_path / "serve.log"
    log = lambda: log_path.read_text(encoding="utf-8", errors="replace")  # noqa: E731
    with log_path.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "hooks.serve", f"--dev-addr=127.0.0.1:{port}"],
            cwd=repo_copy,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        assert _wait(lambda: "waiting for an edit" in log()), log()
        waiting = next(line for line in log().splitlines() if "waiting for an edit" in line)
        assert "docs/" in waiting and "mkdocs.yml" in waiting, waiting
        french.write_text(text, encoding="utf-8")  # the fix: a page, not code
        assert _wait(lambda: _served(port) is not None), log()[-3000:]
        first = _server_process(server)

        index = repo_copy / "docs" / "index.it.md"
        index.write_text(
            index.read_text(encoding="utf-8").replace("## Trova la GPU", "Una frase nuova.\n\n## Trova la GPU", 1),
            encoding="utf-8",
        )
        assert _wait(lambda: "Una frase nuova." in (_served(port) or "")), log()[-3000:]
        assert _server_process(server) == first, "a page edit restarted the server"

        logged = len(log())
        render = repo_copy / "hooks" / "render" / "markdown.py"
        code = render.read_text(encoding="utf-8")
        assert "    if lang not in LANGUAGES:\n" in code
        render.write_text(
            code.replace("    if lang not in LANGUAGES:\n", "    1 // 0\n    if lang not in LANGUAGES:\n", 1),
            encoding="utf-8",
        )
        assert _wait(lambda: "(traceback above)" in log()), log()[-3000:]
        after = log()[logged:]
        assert "Traceback (most recent call last)" in after and 'hooks/render/markdown.py", line' in after, after[
            -3000:
        ]
        assert "ZeroDivisionError: integer division or modulo by zero (traceback above)" in after
        assert _server_process(server) not in (None, first), "a .py edit did not restart the server"
        # that first build failed too: the server says so, then waits (read it before the next edit,
        # or its line, printed late, would be taken for the next edit's)
        assert _wait(lambda: "waiting for an edit" in log()[logged:]), log()[-3000:]

        # A hook module that does not import: its file, line and traceback, then the fix brings it back
        # (before: "INFO - Shutting down..." and "the server could not start", no file, no line).
        logged = len(log())
        typography = repo_copy / "hooks" / "render" / "typography.py"
        rules = typography.read_text(encoding="utf-8")
        typography.write_text(rules + "\ndef broken(:\n", encoding="utf-8")
        assert _wait(lambda: "waiting for an edit" in log()[logged:]), log()[-3000:]
        after = log()[logged:]
        line = rules.count("\n") + 2
        assert f'hooks/render/typography.py", line {line}' in after and "def broken(:" in after, after[-3000:]
        assert f"hooks.serve: hooks/render/typography.py:{line}: SyntaxError" in after, after[-3000:]
        render.write_text(code, encoding="utf-8")
        typography.write_text(rules, encoding="utf-8")
        assert _wait(lambda: "Una frase nuova." in (_served(port) or "")), log()[-3000:]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
    assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE


# The builds of one `mkdocs serve` process, with the logging the `mkdocs` command sets up
# (its DuplicateFilter included), and edits in between.
SERVE_LIKE = r'''
import json, logging, sys
from pathlib import Path
from mkdocs.__main__ import _enable_warnings
from mkdocs.commands.build import build
from mkdocs.config import load_config

handler = logging.StreamHandler(sys.stderr)
handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
logging.getLogger("mkdocs").addHandler(handler)
_enable_warnings()

def rebuild(n):
    try:
        build(load_config("mkdocs.yml", site_dir=f"site{n}"), serve_url="http://127.0.0.1:8000/")
    except BaseException as exc:  # `mkdocs serve` prints it and keeps serving
        return f"{type(exc).__name__}: {exc}"
    return "built"

french = Path("docs/memory-formulas.fr.md")
text = french.read_text()
french.unlink()
report = {"first": rebuild(0), "again": rebuild(1)}
french.write_text(text)
Path("hooks/render/markdown.py").write_text(Path("hooks/render/markdown.py").read_text() + "\n# an edit\n")
report["code_edited"] = rebuild(2)
print(json.dumps(report))
'''


def test_serve_process_repeats_errors_and_refuses_stale_code(repo_copy):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-c", SERVE_LIKE],
        cwd=repo_copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {
        "first": "Abort: Aborted with a BuildError!",
        "again": "Abort: Aborted with a BuildError!",
        "code_edited": "Abort: Aborted with a BuildError!",
    }, report
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR ")]
    missing = "docs/memory-formulas.fr.md: missing; every page needs every language"
    assert [missing in line for line in errors[:2]] == [True, True], errors
    assert (
        len(errors) == 3
        and "hooks/render/markdown.py: changed after this process imported the code; restart" in errors[2]
    ), errors
