"""train.py, extracted from the built site, trained on CPU with gloo on two ranks.

``record_training.py`` notes the indices the DistributedSampler gives each rank per epoch
and hashes each rank's final weights, without changing the script.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys

from pathlib import Path

import pytest
import torch

from tests.snippets.launch import RECORD_TRAINING, free_port, single_process, torchrun, zygote_worker
from tests.snippets.record_training import weights_sha256

pytestmark = pytest.mark.slow

EPOCHS = 2
SAMPLES = 4096  # the script's synthetic dataset
BATCH = 64  # its batch size per rank
ACCUMULATION = 4  # its default --accumulation-steps


def test_ranks_see_disjoint_samples_and_end_with_identical_weights(extracted, tmp_path, zygote):
    record_dir, checkpoints = tmp_path / "record", tmp_path / "checkpoints"
    run = torchrun(
        RECORD_TRAINING,
        record_dir,
        extracted / "train.py",
        "--out",
        checkpoints,
        "--epochs",
        str(EPOCHS),
        cwd=tmp_path,
        zygote=zygote,
    )  # each worker forked from the session's zygote
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = [json.loads((record_dir / f"rank{r}.json").read_text()) for r in (0, 1)]

    for epoch in range(EPOCHS):
        seen = [set(rank["epochs"][epoch]) for rank in ranks]
        assert len(ranks[0]["epochs"][epoch]) == len(seen[0]) == SAMPLES // 2
        assert seen[0].isdisjoint(seen[1])
        assert seen[0] | seen[1] == set(range(SAMPLES))
    assert ranks[0]["epochs"][0] != ranks[0]["epochs"][1], "set_epoch should reshuffle every epoch"

    assert ranks[0]["weights_sha256"] == ranks[1]["weights_sha256"]
    saved = torch.load(checkpoints / "checkpoint.pt", weights_only=True)
    assert weights_sha256(saved) == ranks[0]["weights_sha256"]

    # gradient accumulation with no_sync(): one all-reduce round per optimizer step, not
    # per micro-batch (2048 samples per rank per epoch / batch 64 = 32 micro-batches, an
    # optimizer step every ACCUMULATION of them)
    micro_batches = EPOCHS * (SAMPLES // 2) // BATCH
    for rank in ranks:
        assert rank["optimizer_steps"] == micro_batches // ACCUMULATION == 16
        assert rank["allreduce_rounds"] == rank["optimizer_steps"]
        assert rank["allreduce_buckets"] >= rank["allreduce_rounds"]

    # the guide: torchrun sets TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (tear down on a NCCL
    # error or timeout) for its workers unless the caller set it
    if "TORCH_NCCL_ASYNC_ERROR_HANDLING" not in os.environ:
        assert [rank["TORCH_NCCL_ASYNC_ERROR_HANDLING"] for rank in ranks] == ["1", "1"]

    # logs from rank 0 only: one line per epoch
    assert re.findall(r"^epoch (\d+): loss [\d.]+$", run.stdout, re.M) == [str(e) for e in range(EPOCHS)]
    assert list(checkpoints.iterdir()) == [checkpoints / "checkpoint.pt"]


def test_started_with_plain_python_it_says_how_to_launch(extracted, zygote):
    # forked from the session's zygote, which imported torch once, as ``python SCRIPT`` runs it
    env = {key: value for key, value in os.environ.items() if key not in ("LOCAL_RANK", "RANK", "WORLD_SIZE")} | zygote
    proc = subprocess.run(
        [sys.executable, *zygote_worker(zygote, extracted / "train.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode != 0
    assert proc.stderr.splitlines() == ["Start it with torchrun: torchrun --nproc_per_node=4 train.py"]


RECORD_GRADS = Path(__file__).with_name("record_grads.py")


def test_last_shorter_group_weighs_every_micro_batch_the_same(extracted, tmp_path, zygote):
    """One rank, one epoch: 4096 / 64 = 64 micro-batches, accumulation 5, so 12 groups of 5
    and a last group of 4. The gradient each optimizer step applies must be the gradient of
    the mean loss over all the samples of its group, computed here in one large batch on the
    weights the step saw (the oracle: autograd on the concatenated micro-batches) - for a
    full group and for the shorter last one, which dividing by 5 would scale by 4/5."""
    out = tmp_path / "grads.pt"
    env = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    done = single_process(
        RECORD_GRADS,
        env=env,
        args=[out, extracted / "train.py", "--epochs", "1", "--accumulation-steps", "5", "--out", tmp_path / "ck"],
        zygote=zygote,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = torch.load(out, weights_only=False)
    steps = record["steps"]
    assert [len(step["batches"]) for step in steps] == [5] * 12 + [4]
    for step in (steps[0], steps[-1]):
        module = copy.deepcopy(record["module"])
        with torch.no_grad():
            for param, weight in zip(module.parameters(), step["weights"]):
                param.copy_(weight)
        inputs = torch.cat([inputs for inputs, _ in step["batches"]])
        targets = torch.cat([targets for _, targets in step["batches"]])
        loss = torch.nn.functional.mse_loss(module(inputs), targets)
        expected = torch.autograd.grad(loss, list(module.parameters()))
        for got, want in zip(step["grads"], expected):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)
