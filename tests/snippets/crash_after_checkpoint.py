"""Kill rank 1 once, right after a checkpoint, to rehearse ``torchrun --max-restarts``
(tests only).

Usage: torchrun --max-restarts=1 ... crash_after_checkpoint.py SUFFIX SCRIPT [ARGS...].
In torchrun's first attempt (``TORCHELASTIC_RESTART_COUNT`` 0), rank 1 exits with
status 1 as soon as a ``torch.distributed.checkpoint.save`` into a folder whose path
ends with SUFFIX (e.g. ``epoch-1/optim``) has returned (the checkpoint is complete: ``save`` is collective and rank 0 has written
``.metadata``). torchrun then stops the other rank and starts both again; the script,
unmodified, must resume from that checkpoint. Later attempts run untouched.
"""

import os
import runpy
import sys

import torch.distributed.checkpoint as dcp

suffix, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0" and os.environ["RANK"] == "1":
    real_save = dcp.save

    def save_then_crash(state_dict, *args, checkpoint_id=None, **kwargs):
        result = real_save(state_dict, *args, checkpoint_id=checkpoint_id, **kwargs)
        if os.fspath(checkpoint_id).endswith(suffix):
            print(f"crash_after_checkpoint.py: rank 1 exits after saving {checkpoint_id}", file=sys.stderr, flush=True)
            os._exit(1)
        return result

    dcp.save = save_then_crash
runpy.run_path(script, run_name="__main__")
