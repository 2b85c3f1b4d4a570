"""Start the Hugging Face rehearsal's workers without re-importing their stack (tests only).

Usage: ``python zygote.py SOCKET``. This process imports once what every worker of
``record_hf.py`` imports (torch, transformers and its Trainer, accelerate, DeepSpeed, PEFT:
about 6 CPU-seconds a process), then serves ``SOCKET``: each connection of
``forked_worker.py`` sends its argv, environment, working directory and its stdin, stdout
and stderr (file descriptors); the zygote forks a child that takes them over and runs
``record_hf.main()`` exactly as the worker process would have, writing its pid and then
its exit status back on the connection. The launchers (accelerate's ``launch_command``,
torchrun's agent) still start one worker process per rank with the environment they give
it (RANK, WORLD_SIZE, ACCELERATE_USE_FSDP…): ``forked_worker.py``, which waits for its
child and exits with its status.

Forking is safe here for the same reason as in fork_ranks.py: nothing has run a tensor
operation or started a thread before the fork (``main`` checks there is one thread). The
children are reaped with ``waitpid`` so that their CPU time is counted in the zygote's
(and the test session's) children's usage. A connection that sends ``{"quit": true}`` ends
the zygote once every child has exited.
"""

import array
import json
import os
import socket
import sys
import threading
import traceback

import torch  # noqa: F401  (imported once, before forking)
import torch.distributed  # noqa: F401
import torch.distributed.fsdp  # noqa: F401
import transformers  # noqa: F401
from transformers import AutoModelForCausalLM, Trainer  # noqa: F401
import accelerate  # noqa: F401
import accelerate.commands.launch  # noqa: F401
import deepspeed  # noqa: F401
import deepspeed.comm.torch  # noqa: F401
import peft  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_hf  # noqa: E402


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds = b"", []
    while not data.endswith(b"\n"):
        chunk, ancdata, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * array.array("i").itemsize))
        if not chunk:
            break
        data += chunk
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", payload[: len(payload) - len(payload) % array.array("i").itemsize]))
    return json.loads(data), fds


def run_child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = request["argv"]
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    code = 0
    try:
        record_hf.main()
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


def main() -> None:
    assert threading.active_count() == 1, threading.enumerate()
    path = sys.argv[1]
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


if __name__ == "__main__":
    main()
