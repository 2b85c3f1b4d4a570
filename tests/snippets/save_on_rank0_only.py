"""Save an FSDP2-sharded model with torch.distributed.checkpoint from rank 0 only (tests only).

Run as 2 ranks (fork_ranks.py 2 save_on_rank0_only.py OUT). Rank 0 calls ``dcp.save``
under ``if rank == 0``, as the guide warns not to; rank 1 goes on with "training" (a
pause longer than the process-group timeout, then it leaves). If ``dcp.save`` were a
local write like ``torch.save``, rank 0 would finish: it must instead fail at the
process-group timeout, which this script reports as ``rank 0: dcp.save timed out`` and
exit status 3 (both ranks leave with ``os._exit``: a process group left with a timed-out
collective is slow to tear down).
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.fsdp import fully_shard

TIMEOUT_S = 3
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT_S))
rank = dist.get_rank()
model = torch.nn.Linear(8, 8)
fully_shard(model)
if rank == 0:
    start = time.monotonic()
    try:
        dcp.save(model.state_dict(), checkpoint_id=sys.argv[1])
    except RuntimeError:
        print(f"rank 0: dcp.save timed out after {time.monotonic() - start:.0f} s", flush=True)
        os._exit(3)  # at once: a process group left with a timed-out collective is slow to tear down
    print("rank 0: dcp.save returned", flush=True)
else:
    time.sleep(TIMEOUT_S + 2)
    os._exit(0)
