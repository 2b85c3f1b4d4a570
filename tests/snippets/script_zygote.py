"""Launch workers that run a script without re-importing torch and transformers (tests only).

``python script_zygote.py serve SOCKET MODULE,...``: imports those modules once (torch,
transformers' model code: several CPU-seconds a process), prints ``ready``, then serves
``SOCKET``; each connection sends a worker's argv, environment, working directory and its
stdin, stdout and stderr (file descriptors); the zygote forks a child that takes them over and
runs the script ``argv[0]`` with ``runpy`` as ``python SCRIPT ARGS`` would (its folder first
on ``sys.path``), writing its pid and then its exit status back on the connection. A
connection that sends ``{"quit": true}`` ends the zygote once every child has exited.

``python script_zygote.py worker SCRIPT [ARGS...]`` with ``SCRIPT_ZYGOTE`` (the socket) in the
environment: what a launcher starts as each worker in place of ``python SCRIPT ARGS``
(torchrun's agents still start one process per rank with the environment they give it, and
still rendezvous, watch and stop their workers). ``worker -m MODULE [ARGS...]`` runs a module
as ``python -m MODULE ARGS`` would (the working folder first on ``sys.path``): torchrun's
agent itself, ``-m torch.distributed.run``, forked after the zygote's import of torch.
Imports only the standard library; sends this process's argv, environment, working directory
and streams (and how its interpreter buffers them: the child's print() writes as this
process's would); passes on SIGTERM and SIGINT to the child; exits with the child's status,
or, when the child ended by the signal it was passed, by that signal (as a worker that ran
the script itself would: torchrun reports exitcode -15); 1 if the zygote went away.

Used by the session's zygote of the rehearsals and workers (``zygote`` in tests/conftest.py:
torch, transformers, accelerate, DeepSpeed, PEFT) and by the one of ``python -m vram``
(``vram_zygote`` in tests/vram/conftest.py). Forking is safe: nothing has run a tensor
operation or started a thread before the fork (checked). After the imports the zygote's
objects are frozen (``gc.freeze``): a child's collections skip them, and their pages stay
shared. Children are reaped with ``waitpid``, so their CPU time counts in the test session's
children's usage.
"""

import array
import contextlib
import gc
import json
import os
import signal
import socket
import sys
import threading
import traceback

try:  # run as a script (serve, worker): its folder is first on sys.path
    from sealed import execute  # the sealed copy, the decoy and the arms' measure in a rehearsal
except ImportError:  # imported by the tests
    from tests.snippets.sealed import execute

FDS = array.array("i", [0, 1, 2])


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds = b"", list[int]()
    while not data.endswith(b"\n"):
        chunk, ancdata, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * FDS.itemsize))
        if not chunk:
            break
        data += chunk
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", payload[: len(payload) - len(payload) % FDS.itemsize]))
    return json.loads(data), fds


def stream_settings(stream) -> dict:
    """How the interpreter set up ``stream`` (``python -u`` or PYTHONUNBUFFERED: written through)."""
    return {
        "write_through": stream.write_through,
        "line_buffering": stream.line_buffering,
        "encoding": stream.encoding,
        "errors": stream.errors,
    }


def python_stream(fd: int, settings: dict):
    """A text stream on ``fd`` set up as the worker's interpreter set up its own (``stream_settings``):
    a script's output is written, buffered and interleaved as it would have been there."""
    import io

    raw = io.FileIO(fd, "w", closefd=False)
    through = settings.get("write_through", False)
    return io.TextIOWrapper(
        raw if through else io.BufferedWriter(raw),
        encoding=settings.get("encoding", "utf-8"),
        errors=settings.get("errors", "strict"),
        line_buffering=settings.get("line_buffering", fd == 2),
        write_through=through,
    )


def run_child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    import builtins
    import io
    import runpy
    import types

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdout, sys.stderr = (
        python_stream(fd, request.get("streams", {}).get(name, {})) for fd, name in ((1, "stdout"), (2, "stderr"))
    )
    os.environ.clear()
    os.environ.update(request["env"])
    import tempfile

    tempfile.tempdir = None  # gettempdir() kept the zygote's answer: the worker's TMPDIR, as `python` would
    os.chdir(request["cwd"])
    module = request["argv"][1] if request["argv"][0] == "-m" else None
    sys.argv = request["argv"][1:] if module else request["argv"]  # runpy puts the module's file first, as -m does
    sys.path[0] = request["cwd"] if module else os.path.dirname(os.path.abspath(sys.argv[0]))
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    code = 0
    # The script runs in a fresh __main__ module kept in sys.modules until os._exit, as in
    # `python script.py` / `python -m`: runpy.run_path's temporary module would free the script's
    # objects on return, and a DDP model's process group freed that way can deadlock (its gloo
    # threads wait for the GIL the freeing thread holds; a real interpreter never frees them so).
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    try:
        if module:
            runpy._run_module_as_main(module, alter_argv=True)  # type: ignore[attr-defined]  # what `python -m` runs (argv[0]: its file); private, so not in typeshed
        else:
            main.__dict__.update(
                __file__=sys.argv[0], __cached__=None, __spec__=None, __loader__=None, __builtins__=builtins
            )
            execute(sys.argv[0], main.__dict__)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
    os._exit(code)


def reap(block: bool) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(path: str, modules: list[str]) -> None:
    import importlib

    for module in modules:
        importlib.import_module(module)
    assert threading.active_count() == 1, threading.enumerate()
    # what the imports made lives as long as the zygote: out of the collector's reach (the
    # children's collections then skip those objects instead of visiting and copying their pages)
    gc.freeze()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    server.settimeout(0.5)
    print("ready", flush=True)
    while True:
        reap(block=False)
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        request, fds = receive(conn)
        if request.get("quit"):
            conn.close()
            break
        if os.fork() == 0:
            server.close()
            run_child(conn, request, fds)
        for fd in fds:
            os.close(fd)
        conn.close()
    server.close()
    reap(block=True)


def worker(argv: list[str]) -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(os.environ["SCRIPT_ZYGOTE"])
    argv = argv if argv[0] == "-m" else [os.path.abspath(argv[0]), *argv[1:]]
    request = {
        "argv": argv,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "streams": {"stdout": stream_settings(sys.stdout), "stderr": stream_settings(sys.stderr)},
    }
    conn.sendmsg([json.dumps(request).encode() + b"\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, FDS)])
    replies = conn.makefile("r", encoding="utf-8")
    child = json.loads(replies.readline())["pid"]

    forwarded = []

    def forward(signum, _frame):
        forwarded.append(signum)
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    line = replies.readline()
    if line:
        return json.loads(line)["exit"]
    if forwarded:  # the child ended by the signal passed on, without a status: end as it did
        signal.signal(forwarded[0], signal.SIG_DFL)
        os.kill(os.getpid(), forwarded[0])
    return 1


@contextlib.contextmanager
def serving(modules: list[str], env: dict[str, str], cwd):
    """A zygote that imported ``modules``, serving while the block runs, with ``env`` (the
    workers' environment, for what an import reads) and ``SCRIPT_ZYGOTE`` set there; yields
    ``{"SCRIPT_ZYGOTE": socket}`` for the launcher's environment. Then told to quit once its
    children have exited, and waited for (their CPU time counts in the caller's)."""
    import subprocess
    import tempfile

    # a short path: a Unix socket's name holds at most 107 bytes, a deep --basetemp may not fit
    with tempfile.TemporaryDirectory(prefix="zyg") as sockets:
        path = os.path.join(sockets, "zygote.sock")
        server = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "serve", path, ",".join(modules)],
            cwd=cwd,
            stdout=subprocess.PIPE,
            text=True,
            env={**env, "SCRIPT_ZYGOTE": path},
        )
        assert server.stdout is not None  # stdout=PIPE
        try:
            for line in server.stdout:
                if line == "ready\n":
                    break
            assert server.poll() is None, "the zygote did not start"
            yield {"SCRIPT_ZYGOTE": path}
        finally:
            if server.poll() is None:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                    conn.connect(path)
                    conn.sendall(b'{"quit": true}\n')
                server.stdout.read()
            server.wait(timeout=600)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], [module for module in sys.argv[3].split(",") if module])
    else:
        assert sys.argv[1] == "worker", sys.argv
        sys.exit(worker(sys.argv[2:]))
