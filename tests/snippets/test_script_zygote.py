"""A worker forked from script_zygote.py behaves as ``python SCRIPT`` would where the
rehearsals look: its output streams are buffered as that interpreter's (``-u`` and
PYTHONUNBUFFERED write through, so a print() of text and newline interleaves across ranks
as it does under torchrun), its exit status is the script's, and a SIGTERM from the launcher
ends it with -15 (torchrun's ``exitcode: -15``). The oracle is a plain ``python`` process
running the same script. The zygote here imports nothing: these are the zygote's own rules."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.snippets.launch import SCRIPT_ZYGOTE
from tests.snippets.script_zygote import serving

STREAMS = '''import sys
for stream in (sys.stdout, sys.stderr):
    print(type(stream.buffer).__name__, stream.write_through, stream.line_buffering, stream.encoding, stream.errors,
          file=stream)
sys.exit(int(sys.argv[1]))
'''
ASLEEP = '''import pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text("asleep")
time.sleep(3600)
'''


@pytest.fixture(scope="module")
def bare_zygote(tmp_path_factory):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    with serving([], env, tmp_path_factory.mktemp("bare-zygote")) as zygote:
        yield env, zygote


@pytest.mark.parametrize("flags, unbuffered", [([], ""), (["-u"], ""), ([], "1")])
def test_streams_and_exit_status_are_the_interpreters(bare_zygote, tmp_path, flags, unbuffered):
    env, zygote = bare_zygote
    script = tmp_path / "streams.py"
    script.write_text(STREAMS, encoding="utf-8")
    run_env = {**env, **zygote, **({"PYTHONUNBUFFERED": unbuffered} if unbuffered else {})}
    plain, forked = (
        subprocess.run(
            [sys.executable, *flags, *prefix, str(script), "3"],
            capture_output=True,
            text=True,
            env=run_env,
            timeout=120,
        )
        for prefix in ([], [str(SCRIPT_ZYGOTE), "worker"])
    )
    assert (
        (forked.returncode, forked.stdout, forked.stderr)
        == (plain.returncode, plain.stdout, plain.stderr)
        == (3, plain.stdout, plain.stderr)
    )
    assert plain.stdout.startswith("FileIO True" if flags or unbuffered else "BufferedWriter False"), plain.stdout


def test_a_sigterm_ends_the_worker_as_it_ends_python(bare_zygote, tmp_path):
    env, zygote = bare_zygote
    script = tmp_path / "asleep.py"
    script.write_text(ASLEEP, encoding="utf-8")
    statuses = []
    for prefix in ([], [str(SCRIPT_ZYGOTE), "worker"]):
        ready = tmp_path / f"ready{len(statuses)}"
        process = subprocess.Popen([sys.executable, *prefix, str(script), str(ready)], env={**env, **zygote})
        deadline = time.monotonic() + 120  # bounds a hang: the script starts in well under a second
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        statuses.append(process.wait(timeout=120))
    assert statuses == [-signal.SIGTERM, -signal.SIGTERM]


def test_a_module_runs_as_python_dash_m_runs_it(bare_zygote, tmp_path):
    """``worker -m MODULE`` (how the rehearsals fork torchrun's agent): the module found from
    the working folder, run as ``__main__`` with its file as ``sys.argv[0]``, as ``python -m``."""
    env, zygote = bare_zygote
    (tmp_path / "probe_module.py").write_text(
        "import os, sys\nprint(__name__, sys.argv, sys.path[0] in ('', os.getcwd()), flush=True)\nsys.exit(sys.argv[1])\n",
        encoding="utf-8",
    )
    plain, forked = (
        subprocess.run(
            [sys.executable, *prefix, "-m", "probe_module", "stop", "here"],
            capture_output=True,
            text=True,
            env={**env, **zygote},
            cwd=tmp_path,
            timeout=120,
        )
        for prefix in ([], [str(SCRIPT_ZYGOTE), "worker"])
    )
    assert (forked.returncode, forked.stdout, forked.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert (
        plain.stdout == f"__main__ {[str(tmp_path / 'probe_module.py'), 'stop', 'here']} True\n"
        and plain.returncode == 1
    )


# No function or class of its own (as train.py): nothing ties the script's globals into a
# cycle, so a module freed on return frees ``held`` at once, and its finalizer writes. Under
# ``python`` the finalizer never runs (atexit=False: finalizers are shut down at exit first).
HELD = '''import argparse, os, sys, weakref
held = argparse.Namespace()
weakref.finalize(held, os.write, 1, b"freed while the process ran on\\n").atexit = False
os.write(1, f'{__name__} {sys.modules["__main__"].__dict__.get("held") is held}\\n'.encode())
'''  # one write(2) per rank, under PIPE_BUF: two ranks' lines never interleave (print wrote its parts apart)


def test_a_scripts_objects_live_until_the_process_ends(zygote, tmp_path):
    """As under ``python SCRIPT``, the script's module stays ``sys.modules["__main__"]`` and its
    objects are never freed while the process runs on: not in a worker forked from the zygote,
    not in a rank of fork_ranks.py (runpy.run_path's temporary module freed them on return, and
    freeing a DDP model's gloo process group so hung a rank of test_languages_run_alike)."""
    from tests.snippets.launch import fork_ranks_cmd, zygote_worker

    script = tmp_path / "held.py"
    script.write_text(HELD, encoding="utf-8")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert (plain.returncode, plain.stdout) == (0, "__main__ True\n")
    for cmd, ranks in (
        ([sys.executable, *zygote_worker(zygote, script)], 1),
        (fork_ranks_cmd("2", script, zygote=zygote), 2),
    ):
        run = subprocess.run(
            cmd, capture_output=True, text=True, env={**os.environ, **zygote}, cwd=tmp_path, timeout=120
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout == plain.stdout * ranks, cmd
