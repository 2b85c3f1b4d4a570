"""A torchrun rehearsal leaves nothing behind: its agent makes a ``torchelastic_*`` folder per
run (``tempfile.mkdtemp(prefix="torchelastic_")``, torch/distributed/elastic/multiprocessing/
api.py), which the rehearsals left in ``/tmp`` (hundreds on a machine that ran the suite). The
harness (``tests/snippets/launch.py``, ``run``) gives every command a ``TMPDIR`` of its own and
removes it; with the session's zygote too, whose processes are forked from one that already
asked ``tempfile`` once (``tempfile.gettempdir()`` keeps its first answer).

The oracle is the file system: the agent's folder is seen in the command's ``TMPDIR`` (so that
is where torchrun wrote it), that folder is gone afterwards, and the test's own ``TMPDIR``,
where a command that ignored the harness's would write, stays empty.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets.launch import torchrun

# one write of the whole line: two ranks share the pipe, and print() of several parts under
# PYTHONUNBUFFERED writes each part apart, so the ranks' lines could interleave ("0 1 /tmp/x")
WORKER = (
    "import os, sys, tempfile\n"
    "sys.stdout.write(os.environ['RANK'] + ' ' + tempfile.gettempdir() + '\\n')\n"
    "sys.stdout.flush()\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("forked", [False, True], ids=["spawned", "forked from the zygote"])
def test_a_torchrun_rehearsal_leaves_no_folder_behind(tmp_path, monkeypatch, request, forked):
    zygote = request.getfixturevalue("zygote") if forked else None  # the session's, started before
    outer = tmp_path / "outer-tmp"
    outer.mkdir()
    monkeypatch.setenv("TMPDIR", str(outer))  # where a launch that ignored the harness's folder would write
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    done = torchrun(script, nproc=2, cwd=tmp_path, zygote=zygote)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = sorted(line.split() for line in done.stdout.splitlines() if line.strip())
    assert ranks == [["0", done.tmp], ["1", done.tmp]]  # each worker's temporary folder is the run's
    assert [name for name in done.left if name.startswith("torchelastic_")], done.left  # the agent's, in it
    assert not Path(done.tmp).exists()
    assert list(outer.iterdir()) == []
