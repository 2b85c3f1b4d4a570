"""Run train_fsdp2.py as one worker and record, after its first optimizer step, how its
parameters are laid out (tests only).

Usage: torchrun ... record_mesh.py RECORD_DIR train_fsdp2.py [ARGS...]. The script is not
modified: a global optimizer step hook writes ``RECORD_DIR/rank<N>.json`` once, with the
world size and, per parameter, its DTensor placements, mesh shape, and local and global
element counts.
"""

import json
import os
import sys
from pathlib import Path

import torch.distributed as dist
from torch.distributed.tensor import DTensor
from torch.optim.optimizer import register_optimizer_step_post_hook


KEPT: list[dict] = []  # the scripts' globals (main)


def main() -> None:
    from sealed import run_as_main  # tests/snippets/sealed.py (this script's folder is first on sys.path)

    record_dir, script = Path(sys.argv[1]), sys.argv[2]
    sys.argv = sys.argv[2:]
    written: list[str] = []

    def after_step(optimizer, *_):
        if written:
            return
        params = [p for group in optimizer.param_groups for p in group["params"]]
        record = {
            "world_size": dist.get_world_size(),
            "params": [
                {
                    "placements": [repr(p) for p in param.placements],
                    "mesh": list(param.device_mesh.shape),
                    "local": param.to_local().numel(),
                    "global": param.numel(),
                }
                for param in params
                if isinstance(param, DTensor)
            ],
            "plain": sum(not isinstance(param, DTensor) for param in params),
        }
        record_dir.mkdir(parents=True, exist_ok=True)
        (record_dir / f"rank{os.environ['RANK']}.json").write_text(json.dumps(record), encoding="utf-8")
        written.append(True)

    register_optimizer_step_post_hook(after_step)
    # the script's globals kept until the process ends, as python keeps them (freed on return, a DDP
    # model's gloo process group can deadlock in its destructor: tests/snippets/test_script_zygote.py)
    KEPT.append(run_as_main(script, sys.argv[1:]))  # sealed.py: sealed copy, decoy, arms measured


if __name__ == "__main__":
    main()
