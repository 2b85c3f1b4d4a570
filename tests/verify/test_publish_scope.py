"""A process the publication build leaves running cannot change the site after the build
returned (``make publish``: ``verify/publish.py``), rehearsed with a stand-in build.

The attack: the build (hooks, notebooks executed afresh: the checkout's code) starts a process
that double-forks, calls ``setsid``, closes its streams, waits until the build has returned,
then rewrites a number of a page, while or after the artifact check reads ``site/`` and before
the upload step reads it. The check allows the markup of the forged page as it allows the real
one: it checks structure, not numbers.

Here ``verify.publish.main`` runs (a process of its own, as ``make publish`` runs it) with a
stand-in build that writes the page and starts that attacker, and a stand-in check that reads
the page once the attacker is dead or says it rewrote (a flock held while it lives, a note when
it forged). Asserted: the attacker really detached (its own session, its parent gone), it is
dead before the check starts, the check read the page the build wrote, the page stays so, and
none of the attacker's writes outside ``site/`` landed (the upload action, ``$GITHUB_ENV``, the
home, the checkout: every mount of the scope is read-only but the site's folder). A control run
with the scope replaced by a plain process group (what ``make publish`` did before) shows the
attacker alive when the check reads, the forged number in the page it read, and every write
landed: the test's attacker is real.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.verify.test_gpu_run_scopes import DETACH_AND_NOTE, runner_files

PAGE = "<p>Una H100 per 9,7 ore: 23,40 €</p>\n"
FORGED = "<p>Una H100 per 9,7 ore: 2,34 €</p>\n"

# The stand-in build: write the page, start the attacker, return once it has detached.
BUILD = (
    r"""
import fcntl, json, os, sys, time
site, evidence, page, forged, targets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
index, note, lock_path = os.path.join(site, "index.html"), os.path.join(evidence, "note"), os.path.join(evidence, "lock")
with open(index, "w") as f:
    f.write(page)
build = os.getpid()
middle = os.fork()
if middle:
    os.waitpid(middle, 0)
    deadline = time.monotonic() + 60
    while not os.path.exists(note) and time.monotonic() < deadline:  # until the attacker is detached and noted
        time.sleep(0.01)
    sys.exit(0)  # the build returns
"""
    + DETACH_AND_NOTE
    + r"""
while True:  # until the build has returned
    try:
        os.kill(build, 0)
    except ProcessLookupError:
        break
    time.sleep(0.01)
with open(index, "w") as f:
    f.write(forged)
open(os.path.join(evidence, "forged"), "w").close()
time.sleep(600)
"""
)

# The stand-in check, in a fresh process after the build: what it read, and whether the attacker lived.
CHECK = r"""
import fcntl, hashlib, json, os, sys, time
site, evidence = sys.argv[1], sys.argv[2]

def alive():
    with open(os.path.join(evidence, "lock"), "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False

deadline = time.monotonic() + 60
while alive() and not os.path.exists(os.path.join(evidence, "forged")) and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps({"alive": alive(), "page": open(os.path.join(site, "index.html")).read()}))
"""

DRIVER = r"""
import sys
from pathlib import Path
import verify.publish as publish
import verify.scope as scope

site, evidence, build, check, page, forged, targets, mode = sys.argv[1:]
if mode == "process-group":  # what make publish did before: the build as a plain process
    scope.scoped = lambda cmd, binds: cmd

class StandIns(publish.Steps):
    def build(self, dest):
        return [sys.executable, "-c", build, str(dest), evidence, page, forged, targets]
    def build_writable(self, dest):  # where the test's attacker keeps its lock and notes
        return [*super().build_writable(dest), Path(evidence)]
    def check(self, dest, manifest, tar):
        return [sys.executable, "-c", check, str(dest), evidence]

sys.exit(publish.main([site, "--manifest", "m.json", "--tar", "a.tar"], StandIns()))
"""


def publish(tmp_path: Path, mode: str) -> dict:
    site, evidence = tmp_path / "site", tmp_path / "evidence"
    evidence.mkdir()
    files = runner_files(tmp_path)
    targets = {name: (str(path), "written by the publication build\n") for name, path in files.items()}
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                DRIVER,
                str(site),
                str(evidence),
                BUILD,
                CHECK,
                PAGE,
                FORGED,
                json.dumps(targets),
                mode,
            ],
            check=False,
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=300,
            env={**os.environ, "GITHUB_ENV": str(files["GITHUB_ENV"]), "HOME": str(files["home"].parent)},
        )
        written = {name: path.is_file() and "publication build" in path.read_text() for name, path in files.items()}
    finally:
        files["checkout"].unlink(missing_ok=True)
    assert run.returncode == 0, run.stderr[-3000:]
    note = json.loads((evidence / "note").read_text())
    return {"checked": json.loads(run.stdout.splitlines()[-1]), "note": note, "written": written, "site": site}


def test_a_detached_process_of_the_publication_build_is_dead_before_the_check_and_cannot_change_the_site(tmp_path):
    run = publish(tmp_path, "scope")
    assert run["note"]["sid"] == run["note"]["pid"], "the attacker ran, in a session of its own, its parent gone"
    assert not run["checked"]["alive"], "the attacker outlived the build"
    assert run["checked"]["page"] == PAGE
    refused = run["note"]["wrote"]
    assert not any(run["written"].values()) and True not in refused.values(), f"a file outside site/ changed: {refused}"
    page = run["site"] / "index.html"
    digest = hashlib.sha256(page.read_bytes()).hexdigest()
    time.sleep(1.0)  # the control's attacker rewrites within 10 ms of the build's return
    assert hashlib.sha256(page.read_bytes()).hexdigest() == digest and page.read_text() == PAGE


def test_control_without_the_scope_the_attacker_survives_and_forges_the_page(tmp_path):
    run = publish(tmp_path, "process-group")
    try:
        assert run["checked"]["alive"], "with a process group only, the detached attacker outlives the build"
        assert run["checked"]["page"] == FORGED, "the check read the forged number"
        assert all(run["written"].values()), f"unconfined, the attacker's writes land: {run['written']}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(run["note"]["pid"], signal.SIGKILL)  # it lives in this machine's namespace here
