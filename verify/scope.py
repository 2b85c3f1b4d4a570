"""A process scope for the code under verification: a command and everything it starts, ended
and waited for before the verifier reads what it left.

``run_scoped(cmd, ...)`` runs ``cmd`` as the first process (PID 1) of a new PID namespace and
mount namespace, inside a user namespace (``unshare --user --map-root-user --mount --pid --fork
--kill-child --mount-proc``, util-linux, no privilege needed where the kernel allows
unprivileged user namespaces), through ``verify/scope_init.py``, which first makes every mount
read-only but the folders the step may write (``binds``), gives it an empty ``/tmp``,
``/var/tmp``, ``/dev/shm`` and home, and locks all of that in a nested user namespace of the
caller's own user: the step cannot change a file that a later step or the verifier runs or
reads (the runner's actions, ``$GITHUB_ENV``, the virtual environment, the checkout). The
kernel guarantees what a process group cannot: when the
namespace's first process ends, every other process of the namespace is killed, and the first
process is reaped only after all of them are gone (``pid_namespaces(7)``). A process that
calls ``setsid``, closes its streams and double-forks is still in the namespace; it cannot
leave it, and it cannot see a process outside it (``/proc`` is the namespace's own). So when
``run_scoped`` returns, nothing the command started runs any more: on a normal exit, on a
timeout (SIGTERM to the command's process group, then SIGKILL to the namespace's first
process after ``grace_s``) and on any exception in the caller (``finally``).

Raises ``ScopeError`` (one line) where no such namespace can be made (``unshare`` missing,
unprivileged user namespaces disabled: Ubuntu 24.04's AppArmor default; PUBLISHING.md says
what the GPU runner needs): the verification never runs code outside a scope.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

UNSHARE = ("unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--")
SCOPE_INIT = Path(__file__).resolve().with_name("scope_init.py")
MISSING_PROGRAM = 127  # unshare's status when it cannot execute the command (as a shell's)
TIMED_OUT = 124
DRAIN_S = 60.0  # from SIGKILL of the namespace's first process to its reaping: no load takes that long


class ScopeError(RuntimeError):
    """No PID namespace could be created for the scope."""


def check_scope() -> None:
    """Raise ScopeError unless a scope can be created here (runs ``true`` in one)."""
    if shutil.which(UNSHARE[0]) is None:
        raise ScopeError(
            "unshare (util-linux) is not installed: the code under verification cannot run in a scope of its own"
        )
    probe = subprocess.run(scoped(["true"], ()), capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        raise ScopeError(
            f"cannot create a confined scope for the code under verification ({reason}); "
            "allow unprivileged user namespaces (PUBLISHING.md, 'What the GPU runner must be')"
        )


def scoped(cmd: list[str], binds: tuple[tuple[Path, bool], ...]) -> list[str]:
    """The command line that runs ``cmd`` in a scope where, of ``/tmp``, ``/var/tmp`` and
    ``/dev/shm``, only the folders of the ``(folder, writable)`` pairs of ``binds`` are visible
    and where only the writable ones may be written."""
    resolved = sorted(((Path(folder).resolve(), writable) for folder, writable in binds), key=lambda b: len(b[0].parts))
    spec = {
        "uid": os.getuid(),
        "gid": os.getgid(),
        "binds": [[str(folder), writable] for folder, writable in resolved],  # a folder before what is inside it
    }
    return [*UNSHARE, sys.executable, "-I", "-S", str(SCOPE_INIT), json.dumps(spec), "--", *cmd]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc: no dependency)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _signal_group(group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def end_scope(proc: subprocess.Popen[str], grace_s: float) -> None:
    """End the scope ``proc`` (the ``unshare`` process) started, and wait until every process of
    it is gone: SIGTERM to its process group (torchrun's ranks may clean up), then after
    ``grace_s`` SIGKILL to the namespace's first process (the kernel then kills the rest and
    reaps the first process last), then wait for ``unshare``, which waits for it."""
    if proc.poll() is not None:
        return
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace_s)
        return
    except subprocess.TimeoutExpired:
        pass
    for first in _children(proc.pid):  # the namespace's PID 1, as this namespace numbers it
        with contextlib.suppress(ProcessLookupError):
            os.kill(first, signal.SIGKILL)
    try:
        proc.wait(DRAIN_S)
    except subprocess.TimeoutExpired:  # unshare itself stuck: its --kill-child ends the namespace
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()


def run_scoped(
    cmd: list[str],
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    grace_s: float = 10.0,
    binds: tuple[tuple[Path, bool], ...] = (),
    capture: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in a scope of its own (module docstring); stdout and stderr are captured as
    text (with ``capture`` False they go to this process's own, and come back empty).
    ``binds``: the ``(folder, writable)`` pairs the step may see under ``/tmp`` or write (each
    folder must exist); everything else is read-only to it. A timeout becomes status 124 (what
    it printed before is kept), a missing program 127, a scope that could not be confined 125
    (its one line in stderr). Every process of the scope is gone when this returns or raises.
    Raises ScopeError."""
    check_scope()
    if cwd is not None:  # the step's working folder, read-only unless a writable bind says otherwise
        binds = ((cwd, False), *binds)
    streams = subprocess.PIPE if capture else None
    proc = subprocess.Popen(
        scoped(cmd, binds),
        cwd=cwd,
        stdout=streams,
        stderr=streams,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        try:
            out, err = proc.communicate(timeout=timeout)
            return subprocess.CompletedProcess(cmd, proc.returncode, out or "", err or "")
        except subprocess.TimeoutExpired:
            end_scope(proc, grace_s)
            deadline = time.monotonic() + 5
            out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            return subprocess.CompletedProcess(
                cmd, TIMED_OUT, out or "", (err or "") + f"\ntimed out after {timeout:.0f} s; its scope was ended"
            )
    finally:
        end_scope(proc, 0)
