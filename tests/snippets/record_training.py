"""Run a published training script under torchrun and record, per rank, what it saw (tests only).

Usage: torchrun ... record_training.py RECORD_DIR SCRIPT [ARGS...]. The script is not
modified: ``DistributedSampler.__iter__`` is wrapped to note the sample indices each epoch
hands this rank; every ``DistributedDataParallel`` gets a communication hook that counts
the all-reduce rounds (one per backward that synchronises: the bucket marked last) and
then does DDP's default all-reduce (``default_hooks.allreduce_hook``); a global optimizer
step hook counts optimizer steps. After the script returns, the weights of its ``model``
global are hashed. Writes ``RECORD_DIR/rank<N>.json`` with ``epochs`` (lists of
indices), ``allreduce_rounds``, ``allreduce_buckets``, ``optimizer_steps``,
``weights_sha256`` and the ``TORCH_NCCL_ASYNC_ERROR_HANDLING`` torchrun gave the worker.
"""

import hashlib
import json
import os
import sys
from pathlib import Path

from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.data import DistributedSampler


KEPT: list[dict] = []  # the scripts' globals (main)


def weights_sha256(state_dict) -> str:
    digest = hashlib.sha256()
    for name, tensor in state_dict.items():
        digest.update(name.encode())
        digest.update(repr(tensor.detach().cpu().flatten().tolist()).encode())
    return digest.hexdigest()


def main() -> None:
    from sealed import run_as_main  # tests/snippets/sealed.py (this script's folder is first on sys.path)

    record_dir, script = Path(sys.argv[1]), sys.argv[2]
    sys.argv = sys.argv[2:]
    epochs: list[list[int]] = []
    original_iter = DistributedSampler.__iter__

    def recording_iter(self):
        indices = list(original_iter(self))
        epochs.append(indices)
        return iter(indices)

    DistributedSampler.__iter__ = recording_iter

    counts = {"allreduce_rounds": 0, "allreduce_buckets": 0, "optimizer_steps": 0}

    def counting_hook(process_group, bucket):
        counts["allreduce_buckets"] += 1
        counts["allreduce_rounds"] += bucket.is_last()
        return allreduce_hook(process_group, bucket)

    original_init = DistributedDataParallel.__init__

    def init_with_hook(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.register_comm_hook(None, counting_hook)

    DistributedDataParallel.__init__ = init_with_hook
    register_optimizer_step_post_hook(lambda *_: counts.__setitem__("optimizer_steps", counts["optimizer_steps"] + 1))
    # the script's globals kept until the process ends, as python keeps them (freed on return, a DDP
    # model's gloo process group can deadlock in its destructor: tests/snippets/test_script_zygote.py)
    namespace = run_as_main(script, sys.argv[1:])  # sealed.py: sealed copy, decoy, arms measured
    KEPT.append(namespace)
    model = namespace["model"]
    state = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
    record_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "epochs": epochs,
        **counts,
        "weights_sha256": weights_sha256(state),
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    }
    (record_dir / f"rank{os.environ['RANK']}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main()
