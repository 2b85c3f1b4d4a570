"""Two machines (docs #two-machines): the guide's line, snippets/launch/two_machines.sh, run as
two "machines" of 2 ranks each on 127.0.0.1 (two torchrun agents meeting at one c10d
rendezvous), on the published train_fsdp2.py. The agents and each worker they start are
forked from one process that imported torch and transformers once (``script_zygote.py
worker``; the launch, rendezvous and the ranks' environment stay torchrun's).

What distribution means is asserted: 4 ranks in one world; HSDP, every parameter a DTensor
on a 2 x 2 mesh, replicated across the machines and sharded (dim 0) within one, half of it
on each rank; and the same training as one machine with the same 4 ranks (FSDP over all 4,
the script's reference launch): the same samples per step (DistributedSampler over 4
ranks), so the weights after one epoch (4 steps) agree within ``ATOL`` (bf16 compute,
gradients reduced in fp32 in another order: within a machine, then across) and rank 0's
printed loss within ``LOSS_TOL``. Two machines that never met would each see a world of 2 and fail.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

from tests.conftest import REPO_ROOT
from tests.snippets.launch import HERE, PRELOAD_HF, SCRIPT_ZYGOTE, fork_ranks_cmd, free_port, run

pytestmark = pytest.mark.slow

RECORD_MESH = HERE / "record_mesh.py"
LINE = REPO_ROOT / "snippets" / "launch" / "two_machines.sh"
# measured: the largest difference is about 1e-9; one AdamW step (lr 1e-3) moves a weight by
# up to 1e-3, so two runs that trained on other samples would differ far beyond these
ATOL, LOSS_TOL = 1e-6, 1e-4


def machine_command(port: int, record, script, out) -> list[str]:
    """The guide's line for 2 ranks per machine on this host: the endpoint is 127.0.0.1. The
    agent (``torch.distributed.run``, run as ``-m`` runs it) and each worker it starts
    (``script_zygote.py worker``) are forked from the session's zygote, which imported torch
    and transformers once (the agents' code, their rendezvous and the workers' environment
    are torchrun's own)."""
    (words,) = [
        shlex.split(line, comments=True)
        for line in LINE.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()
        if line.startswith("torchrun")
    ]
    assert "--nnodes=2" in words and "--rdzv-backend=c10d" in words and words[-1] == "train_fsdp2.py"
    args = []
    for word in words[1:-1]:
        if word.startswith("--nproc_per_node="):
            word = "--nproc_per_node=2"
        elif word.startswith("--rdzv-endpoint="):
            assert word == "--rdzv-endpoint=$MASTER_IP:29500"
            word = f"--rdzv-endpoint=127.0.0.1:{port}"
        args.append(word)
    return [
        sys.executable,
        str(SCRIPT_ZYGOTE),
        "worker",
        "-m",
        "torch.distributed.run",
        *args,
        str(SCRIPT_ZYGOTE),
        "worker",
        str(RECORD_MESH),
        str(record),
        str(script),
        "--tiny",
        "--out",
        str(out),
        "--epochs",
        "1",
    ]


@pytest.fixture(scope="module")
def machines(extracted, tmp_path_factory, zygote):
    root = tmp_path_factory.mktemp("two-machines")
    script = extracted / "train_fsdp2.py"
    port = free_port()
    commands = [machine_command(port, root / "hsdp-record", script, root / "hsdp") for _ in range(2)]
    # agents and workers forked from the session's zygote (tests/conftest.py: torch and transformers imported once)
    with ThreadPoolExecutor(3) as pool:
        nodes = [pool.submit(run, command, zygote, 300, root) for command in commands]
        # the reference: the 4 ranks on one machine, forked after one import of torch (fork_ranks.py:
        # torchrun's environment for each; 4 torchrun workers would import torch 4 times)
        one = pool.submit(
            run,
            fork_ranks_cmd(
                PRELOAD_HF,
                "4",
                RECORD_MESH,
                root / "fsdp-record",
                script,
                "--tiny",
                "--out",
                root / "fsdp",
                "--epochs",
                "1",
                zygote=zygote,
            ),
            zygote,
            300,
            root,
        )
        nodes, one = [node.result() for node in nodes], one.result()
    for launched in (*nodes, one):
        assert launched.returncode == 0, launched.stderr[-3000:]
    return root, nodes, one


def records(folder) -> list[dict]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("rank*.json"))]


def test_two_machines_make_one_world_of_four_with_hsdp(machines):
    root, _, _ = machines
    ranks = records(root / "hsdp-record")
    assert len(ranks) == 4 and [rank["world_size"] for rank in ranks] == [4] * 4
    for rank in ranks:
        assert rank["plain"] == 0 and rank["params"]
        for param in rank["params"]:
            assert param["mesh"] == [2, 2]
            assert param["placements"] == ["Replicate()", "Shard(dim=0)"]
            assert param["local"] * 2 == param["global"]
    for rank in records(root / "fsdp-record"):  # one machine: FSDP over the 4 ranks
        assert rank["world_size"] == 4
        assert all(param["mesh"] == [4] and param["placements"] == ["Shard(dim=0)"] for param in rank["params"])


def test_two_machines_train_as_one_machine_with_the_same_ranks(machines, tmp_path):
    root, nodes, one = machines
    states = []
    for name in ("hsdp", "fsdp"):
        dcp_to_torch_save(root / name / "epoch-1" / "model", tmp_path / f"{name}.pt")
        states.append(torch.load(tmp_path / f"{name}.pt", weights_only=False))
    hsdp, fsdp = states
    assert set(hsdp) == set(fsdp)
    for key in fsdp:
        torch.testing.assert_close(hsdp[key], fsdp[key], atol=ATOL, rtol=0)
    losses = [re.findall(r"^epoch 0: loss ([\d.]+);", launched.stdout, re.M) for launched in (*nodes, one)]
    printed = [float(value) for found in losses for value in found]
    assert len(printed) == 2  # rank 0 of the two machines, and of the one machine
    assert abs(printed[0] - printed[1]) <= LOSS_TOL
