"""Under `make serve` (hooks/serve.py) a .py edit restarts `mkdocs serve`; inside one server
process a build refuses code older than its files, and a repeated error still prints its line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import psutil

from hooks.serve import Restarter

CHILD = "import os, sys, time; open(sys.argv[1], 'a').write(f'{os.getpid()}\\n'); time.sleep(120)"


def _wait(predicate, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_a_py_edit_restarts_the_server_and_other_edits_do_not(tmp_path):
    code, pids = tmp_path / "code", tmp_path / "pids"
    code.mkdir()
    (code / "module.py").write_text("x = 1\n")
    restarter = Restarter([sys.executable, "-c", CHILD, str(pids)], [code], tmp_path, settle_s=0.1)
    thread = threading.Thread(target=restarter.run, daemon=True)
    thread.start()
    try:
        started = lambda n: pids.exists() and len(pids.read_text().split()) == n  # noqa: E731
        assert _wait(lambda: started(1))
        (code / "notes.txt").write_text("not code\n")
        time.sleep(1.0)
        assert started(1), "a non-.py edit restarted the server"
        (code / "module.py").write_text("x = 2\n")
        assert _wait(lambda: started(2)), "a .py edit did not restart the server"
        first, second = map(int, pids.read_text().split())
        assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE
        assert psutil.Process(second).is_running()
    finally:
        restarter.stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert not psutil.pid_exists(second) or psutil.Process(second).status() == psutil.STATUS_ZOMBIE


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
Path("hooks/render.py").write_text(Path("hooks/render.py").read_text() + "\n# an edit\n")
report["code_edited"] = rebuild(2)
print(json.dumps(report))
'''


def test_serve_process_repeats_errors_and_refuses_stale_code(repo_copy):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-c", SERVE_LIKE], cwd=repo_copy, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"first": "Abort: Aborted with a BuildError!", "again": "Abort: Aborted with a BuildError!",
                      "code_edited": "Abort: Aborted with a BuildError!"}, report
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR ")]
    missing = "docs/memory-formulas.fr.md: missing; every page needs every language"
    assert [missing in line for line in errors[:2]] == [True, True], errors
    assert len(errors) == 3 and "hooks/render.py: changed after this process imported the code; restart" in errors[2], errors
