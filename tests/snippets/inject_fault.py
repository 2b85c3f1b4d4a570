"""Run a published script under torchrun with one fault injected on rank 1 (tests only).

Usage: torchrun ... inject_fault.py FAULT SCRIPT [ARGS...]. The script itself is not
modified: the fault is a patch of ``torch.distributed.all_reduce`` in rank 1's process,
which the script then imports.

- ``absent``: rank 1 joins the process group but never enters the collective (a hung
  or crashed peer), so the other ranks must hit the process-group timeout;
- ``corrupt``: rank 1 contributes a wrong value (a link that corrupts data), so every
  rank must see a wrong sum;
- ``world=N``: every rank's ``get_world_size`` answers N (a world too large to start
  here; the script must refuse it before any collective);
- ``stall`` (CUDA only): every rank queues a GPU kernel that spins for about a minute
  (``torch.cuda._sleep``) before its first all-reduce, so the collective cannot finish
  within the process-group timeout and NCCL's watchdog must act.
"""

import os
import sys
import time

import torch.distributed as dist

from sealed import run_as_main  # tests/snippets/sealed.py (this script's folder is first on sys.path)

fault, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
if fault == "absent":
    # The ranks start the script together (a barrier on torchrun's own store, bounded like a hang),
    # so that the script's short timeout measures the collective rank 1 never enters, not how
    # much later than rank 0 a loaded machine started rank 1 (its rendezvous has the same timeout).
    import datetime

    store = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        is_master=False,
        timeout=datetime.timedelta(seconds=600),
    )
    store.add("inject_fault.started", 1)
    while store.add("inject_fault.started", 0) < int(os.environ["WORLD_SIZE"]):
        time.sleep(0.01)
if fault.startswith("world="):
    dist.get_world_size = lambda *args, **kwargs: int(fault.removeprefix("world="))
elif fault == "stall":
    import torch

    real_all_reduce = dist.all_reduce

    def stalled_all_reduce(*args, **kwargs):
        dist.all_reduce = real_all_reduce
        torch.cuda._sleep(100_000_000_000)  # GPU clock cycles: about a minute
        return real_all_reduce(*args, **kwargs)

    dist.all_reduce = stalled_all_reduce
elif int(os.environ["RANK"]) == 1:
    real_all_reduce = dist.all_reduce
    if fault == "absent":
        dist.all_reduce = lambda *args, **kwargs: time.sleep(3600)
    elif fault == "corrupt":
        dist.all_reduce = lambda tensor, *args, **kwargs: real_all_reduce(tensor.add_(1), *args, **kwargs)
    else:
        sys.exit(f"inject_fault.py: unknown fault {fault!r} (absent, corrupt, world=N, stall)")
# the script's globals kept until the process ends, as python keeps them (freed on return, a DDP
# model's gloo process group can deadlock in its destructor: tests/snippets/test_script_zygote.py)
SCRIPT_GLOBALS = run_as_main(script, sys.argv[1:])  # sealed.py: sealed copy, decoy, arms measured
