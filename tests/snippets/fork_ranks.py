"""Run a published script as N gloo ranks on this machine, cheaply (tests only).

Usage: python fork_ranks.py N SCRIPT [ARGS...]. One process imports torch once, then forks N
children (copy-on-write: no N-fold import cost or memory); each child gets the
environment torchrun gives a worker (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) and runs the unmodified script as ``python SCRIPT`` would (in a
``__main__`` module kept until the rank exits). Exits with the first non-zero exit status of
a child. For world sizes where N torchrun workers would
cost more than the test is worth (32 ranks on 2 cores).

``--preload=MODULE,...`` before the other arguments imports those modules too before forking
(``transformers`` and the model code a script builds: each rank would import them again).

Usage: python fork_ranks.py --jobs JOBS_JSON. Several such runs after the same one import:
JOBS_JSON is a list of ``{"world": N, "script": ..., "args": [...], "cwd": ..., "stdout": path,
"stderr": path}``; each job is a child forked from the importing process (its own working
folder, its output in those two files) that forks the job's N ranks as above, two jobs at a
time. Exits 0 once every job has ended; each job's exit status is written to
``JOBS_JSON.status.json`` (a list, in the jobs' order).
"""

import builtins
import gc
import json
import os
import socket
import sys
import types

from sealed import execute  # tests/snippets/sealed.py (this script's folder is first on sys.path)

import torch  # noqa: F401  (imported once, before forking)
import torch.distributed  # noqa: F401
import torch.distributed.checkpoint  # noqa: F401
import torch.distributed.fsdp  # noqa: F401


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_rank(rank: int, world: int, port: int, script: str, args: list[str]) -> int:
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    sys.argv = [script, *args]
    # The script runs in a fresh __main__ module kept in sys.modules until the rank's os._exit,
    # as in `python script.py` (script_zygote.py does the same): runpy.run_path's temporary
    # module would free the script's objects on return, and a DDP model's gloo process group
    # freed that way can deadlock (its threads wait for the GIL the freeing thread holds).
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=script, __cached__=None, __spec__=None, __loader__=None, __builtins__=builtins)
    sys.modules["__main__"] = main
    try:
        execute(script, main.__dict__)  # in a rehearsal: the sealed copy, the decoy, its arms measured
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    return 0


def main() -> int:
    if sys.argv[1].startswith("--preload="):
        import importlib

        for module in sys.argv.pop(1).removeprefix("--preload=").split(","):
            importlib.import_module(module)
    # what the imports made lives as long as this process: out of the collector's reach (the
    # ranks' collections then skip those objects instead of visiting and copying their pages)
    gc.freeze()
    if sys.argv[1] == "--jobs":
        return run_jobs(sys.argv[2])
    return run_world(int(sys.argv[1]), sys.argv[2], sys.argv[3:])


def run_jobs(jobs_path: str, parallel: int = 2) -> int:
    with open(jobs_path, encoding="utf-8") as f:
        jobs = json.load(f)
    statuses: list[int | None] = [None] * len(jobs)
    running: dict[int, int] = {}  # pid -> job index
    pending = list(range(len(jobs)))
    while pending or running:
        while pending and len(running) < parallel:
            index = pending.pop(0)
            job = jobs[index]
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    os.chdir(job["cwd"])
                    for fd, name in ((1, "stdout"), (2, "stderr")):
                        out = os.open(job[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                        os.dup2(out, fd)
                        os.close(out)
                    code = run_world(int(job["world"]), job["script"], list(job["args"]))
                finally:
                    os._exit(code)
            running[pid] = index
        pid, wait_status = os.wait()
        statuses[running.pop(pid)] = os.waitstatus_to_exitcode(wait_status)
    with open(jobs_path + ".status.json", "w", encoding="utf-8") as f:
        json.dump(statuses, f)
    return 0


def run_world(world: int, script: str, args: list[str]) -> int:
    port = free_port()
    children = []
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            code = run_rank(rank, world, port, script, args)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        children.append(pid)
    status = 0
    for pid in children:
        _, wait_status = os.waitpid(pid, 0)
        status = status or os.waitstatus_to_exitcode(wait_status)
    return status


if __name__ == "__main__":
    sys.exit(main())
