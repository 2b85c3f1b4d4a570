"""Run a published training script under torchrun and record, per rank, what it saw (tests only).

Usage: torchrun ... record_training.py RECORD_DIR SCRIPT [ARGS...]. The script is not
modified: ``DistributedSampler.__iter__`` is wrapped to note the sample indices each epoch
hands this rank, and after the script returns, the weights of its ``model`` global are
hashed. Writes ``RECORD_DIR/rank<N>.json`` with ``epochs`` (lists of indices) and
``weights_sha256``.
"""

import hashlib
import json
import os
import runpy
import sys
from pathlib import Path

from torch.utils.data import DistributedSampler


def weights_sha256(state_dict) -> str:
    digest = hashlib.sha256()
    for name, tensor in state_dict.items():
        digest.update(name.encode())
        digest.update(repr(tensor.detach().cpu().flatten().tolist()).encode())
    return digest.hexdigest()


def main() -> None:
    record_dir, script = Path(sys.argv[1]), sys.argv[2]
    sys.argv = sys.argv[2:]
    epochs: list[list[int]] = []
    original_iter = DistributedSampler.__iter__

    def recording_iter(self):
        indices = list(original_iter(self))
        epochs.append(indices)
        return iter(indices)

    DistributedSampler.__iter__ = recording_iter
    namespace = runpy.run_path(script, run_name="__main__")
    model = namespace["model"]
    state = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
    record_dir.mkdir(parents=True, exist_ok=True)
    record = {"epochs": epochs, "weights_sha256": weights_sha256(state)}
    (record_dir / f"rank{os.environ['RANK']}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main()
