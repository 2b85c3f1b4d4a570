"""Run train.py (one rank) and keep, for every optimizer step, the weights before it, the
gradients it applies and the micro-batches that made them (tests only).

Usage: python record_grads.py OUT.pt train.py [ARGS...] with torchrun's variables for one
rank in the environment. The script is not modified: ``DataLoader.__iter__`` is wrapped to
note each micro-batch, a global optimizer step pre-hook copies weights and gradients. Writes
``OUT.pt`` (torch.save): ``{"steps": [{"weights", "grads", "batches"}], "module": the
trained model without its DDP wrapper}``.
"""

import sys

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.utils.data import DataLoader


KEPT: list[dict] = []  # the scripts' globals (main)


def main() -> None:
    from sealed import run_as_main  # tests/snippets/sealed.py (this script's folder is first on sys.path)

    out, script = sys.argv[1], sys.argv[2]
    sys.argv = sys.argv[2:]
    pending: list = []
    steps: list = []
    original_iter = DataLoader.__iter__

    def recording_iter(self):
        for batch in original_iter(self):
            pending.append([t.clone() for t in batch])
            yield batch

    def before_step(optimizer, *_):
        params = [p for group in optimizer.param_groups for p in group["params"]]
        steps.append(
            {
                "weights": [p.detach().clone() for p in params],
                "grads": [p.grad.clone() for p in params],
                "batches": list(pending),
            }
        )
        pending.clear()

    DataLoader.__iter__ = recording_iter
    register_optimizer_step_pre_hook(before_step)
    # the script's globals kept until the process ends, as python keeps them (freed on return, a DDP
    # model's gloo process group can deadlock in its destructor: tests/snippets/test_script_zygote.py)
    namespace = run_as_main(script, sys.argv[1:])  # sealed.py: sealed copy, decoy, arms measured
    KEPT.append(namespace)
    torch.save({"steps": steps, "module": namespace["model"].module}, out)


if __name__ == "__main__":
    main()
