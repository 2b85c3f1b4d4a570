"""Run a published script under torchrun with one fault injected on rank 1 (tests only).

Usage: torchrun ... inject_fault.py FAULT SCRIPT [ARGS...]. The script itself is not
modified: the fault is a patch of ``torch.distributed.all_reduce`` in rank 1's process,
which the script then imports.

- ``absent``: rank 1 joins the process group but never enters the collective (a hung
  or crashed peer), so the other ranks must hit the process-group timeout;
- ``corrupt``: rank 1 contributes a wrong value (a link that corrupts data), so every
  rank must see a wrong sum.
"""

import os
import runpy
import sys
import time

import torch.distributed as dist

fault, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
if int(os.environ["RANK"]) == 1:
    real_all_reduce = dist.all_reduce
    if fault == "absent":
        dist.all_reduce = lambda *args, **kwargs: time.sleep(3600)
    elif fault == "corrupt":
        dist.all_reduce = lambda tensor, *args, **kwargs: real_all_reduce(tensor.add_(1), *args, **kwargs)
    else:
        sys.exit(f"inject_fault.py: unknown fault {fault!r} (absent, corrupt)")
runpy.run_path(script, run_name="__main__")
