"""train_fsdp2.py, extracted from the built site, on two gloo ranks (CPU): FSDP2 with a
``fully_shard`` per block and on the root, saved and resumed with
torch.distributed.checkpoint (DCP), and the DCP checkpoint turned back into one file by
the commands the guide shows (snippets/checkpoints/to_hf.sh).

Three runs of the published script on 2 ranks: A trains 2 epochs without a stop; B trains
1 epoch (a run interrupted right after its checkpoint); A and B on ranks forked after one
import of torch (tests/snippets/fork_ranks.py: torchrun's environment, real gloo ranks), then
torchrun with the same command and ``--epochs 2`` must resume from B's checkpoint and end
exactly where A ended, skipping a later checkpoint whose save was cut short.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

from tests.conftest import REPO_ROOT
from tests.snippets.hf_checks import check_dcp_to_hf
from tests.snippets.launch import HERE, PRELOAD_HF, fork_jobs, torchrun, zygote_worker

pytestmark = pytest.mark.slow

TO_HF = REPO_ROOT / "snippets" / "checkpoints" / "to_hf.sh"


@pytest.fixture(scope="module")
def runs(extracted, tmp_path_factory, zygote):
    root = tmp_path_factory.mktemp("fsdp2")
    script = extracted / "train_fsdp2.py"
    # A and the interrupted B: 2 gloo ranks each, forked after one import of torch (cheaper)
    # (and, in the same batch, the guide's mistake of saving under ``if rank == 0``)
    whole, first, rank0_only = fork_jobs(
        [
            (root, 2, script, ["--tiny", "--out", root / "a", "--epochs", "2"]),
            (root, 2, script, ["--tiny", "--out", root / "b", "--epochs", "1"]),
            (root, 2, HERE / "save_on_rank0_only.py", [root / "ckpt"]),
        ],
        root,
        preload=PRELOAD_HF,
        zygote=zygote,
    )
    # B resumed with the reader's launcher and the same command (its workers forked from the
    # session's zygote, which imported torch and transformers once), after a save of its second
    # epoch cut short (a folder without optim/.metadata): the script skips it
    (root / "b" / "epoch-2" / "optim").mkdir(parents=True)
    resumed = torchrun(script, "--tiny", "--out", root / "b", "--epochs", "2", cwd=root, zygote=zygote)
    for run in (whole, first, resumed):
        assert run.returncode == 0, run.stderr[-3000:]
    return {"root": root, "whole": whole, "first": first, "resumed": resumed, "rank0_only": rank0_only}


def state(folder: Path, tmp_path: Path) -> dict:
    out = tmp_path / f"{folder.parent.parent.name}-{folder.parent.name}-{folder.name}.pt"
    dcp_to_torch_save(folder, out)
    return torch.load(out, weights_only=False)


def assert_same(left: dict, right: dict, where: str = "") -> None:
    assert left.keys() == right.keys(), where
    for key in left:
        if isinstance(left[key], dict):
            assert_same(left[key], right[key], f"{where}.{key}")
        elif isinstance(left[key], torch.Tensor):
            assert torch.equal(left[key], right[key]), f"{where}.{key}"
        else:
            assert left[key] == right[key], f"{where}.{key}"


def test_resumed_run_ends_with_the_weights_of_an_uninterrupted_run(runs, tmp_path):
    a, b = runs["root"] / "a", runs["root"] / "b"
    assert_same(state(a / "epoch-2" / "model", tmp_path), state(b / "epoch-2" / "model", tmp_path), "model")
    assert_same(state(a / "epoch-2" / "optim", tmp_path), state(b / "epoch-2" / "optim", tmp_path), "optim")
    after_one = state(b / "epoch-1" / "model", tmp_path)
    after_two = state(b / "epoch-2" / "model", tmp_path)
    assert not torch.equal(after_one["model.embed_tokens.weight"], after_two["model.embed_tokens.weight"]), (
        "the second epoch changed nothing"
    )


def test_the_resumed_run_starts_from_the_checkpoint(runs):
    assert re.findall(r"^epoch (\d+):", runs["first"].stdout, re.M) == ["0"]
    assert re.findall(r"^resumed from (\S+)$", runs["resumed"].stdout, re.M) == [str(runs["root"] / "b" / "epoch-1")]
    assert re.findall(r"^epoch (\d+):", runs["resumed"].stdout, re.M) == ["1"]
    assert re.findall(r"^epoch (\d+):", runs["whole"].stdout, re.M) == ["0", "1"]


def test_each_epoch_says_how_many_tokens_a_gpu_trained_on_and_how_fast(runs):
    """The line a reader times their loop by: tokens per GPU and per second. Oracle: the script's
    data, 256 sequences of 32 tokens (33 drawn, shifted by one for the targets), dealt by
    DistributedSampler over 2 ranks: 128 x 32 tokens per rank and epoch; the rate is those tokens
    over the seconds the line prints."""
    found = re.findall(
        r"^epoch (\d+): loss [\d.]+; (\d+) tokens/s per GPU \((\d+) tokens in ([\d.]+) s\)$",
        runs["whole"].stdout,
        re.M,
    )
    assert [epoch for epoch, *_ in found] == ["0", "1"], runs["whole"].stdout
    for _, rate, tokens, seconds in found:
        assert int(tokens) == 256 // 2 * 32
        # the rate divides by the unrounded seconds: within what rounding to 0.01 s and to a
        # whole token/s allow, however fast or slow the run
        fastest, slowest = int(tokens) / (float(seconds) - 0.005), int(tokens) / (float(seconds) + 0.005)
        assert float(seconds) > 0.005 and slowest - 0.5 <= int(rate) <= fastest + 0.5


def test_every_block_and_the_root_are_sharded_and_kept_in_fp32(runs):
    """fully_shard splits every parameter along dim 0 across the 2 ranks: each tensor of
    the DCP checkpoint is stored as two chunks. MixedPrecisionPolicy computes in bf16 but
    the sharded parameters (what the optimizer updates) stay fp32. The names are the Hugging
    Face model's own (its state_dict: the 4 decoder layers of --tiny, embedding, norm, head)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    metadata = FileSystemReader(runs["root"] / "a" / "epoch-2" / "model").read_metadata().state_dict_metadata
    config = AutoConfig.from_pretrained(runs["root"] / "a" / "epoch-2")
    with torch.device("meta"):
        names = set(AutoModelForCausalLM.from_config(config).state_dict())
    assert set(metadata) == names
    blocks = {key.split(".")[2] for key in metadata if key.startswith("model.layers.")}
    assert blocks == {"0", "1", "2", "3"} and {"model.embed_tokens.weight", "lm_head.weight"} <= metadata.keys()
    for key, tensor in metadata.items():
        assert tensor.properties.dtype == torch.float32, key
        assert [chunk.offsets[0] for chunk in tensor.chunks] == [0, tensor.size[0] // 2], key


def to_hf_line(command: str) -> list[str]:
    commands = TO_HF.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()  # continuation lines joined
    (line,) = [line for line in commands if line.startswith(command)]
    return shlex.split(line)


def test_the_guides_merge_weights_line_gives_the_trained_weights(runs, tmp_path):
    """The line of to_hf.sh for Accelerate's sharded checkpoints, run with its own entry
    point on B's last DCP checkpoint: the same tensors as torch's dcp_to_torch_save."""
    checkpoint = runs["root"] / "b" / "epoch-2" / "model"
    expected = state(checkpoint, tmp_path)
    from accelerate.commands.merge import merge_command, merge_command_parser

    args = to_hf_line("accelerate merge-weights")
    parsed = merge_command_parser().parse_args(args[2:])
    parsed.checkpoint_directory, parsed.output_path = str(checkpoint), str(tmp_path / parsed.output_path)
    merge_command(parsed)
    assert_same(load_file(Path(parsed.output_path) / "model.safetensors"), expected, "merge-weights")


def test_dcp_to_hf_gives_a_folder_from_pretrained_loads_with_the_trained_logits(runs, extracted, tmp_path):
    """The guide's DCP -> Hugging Face line on B's last checkpoint of 2 gloo ranks
    (hf_checks.check_dcp_to_hf)."""
    check_dcp_to_hf(extracted, runs["root"] / "b" / "epoch-2", tmp_path)


def test_started_with_plain_python_it_says_how_to_launch(extracted, zygote):
    # forked from the session's zygote, which imported torch once, as ``python SCRIPT`` runs it
    env = {key: value for key, value in os.environ.items() if key not in ("LOCAL_RANK", "RANK", "WORLD_SIZE")} | zygote
    proc = subprocess.run(
        [sys.executable, *zygote_worker(zygote, extracted / "train_fsdp2.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode != 0
    assert proc.stderr.splitlines() == ["Start it with torchrun: torchrun --nproc_per_node=4 train_fsdp2.py"]


def test_saving_a_sharded_model_under_if_rank_0_hangs_until_the_timeout(runs):
    """The guide: dcp.save is collective; under ``if rank == 0`` rank 0 waits for the others
    until the process-group timeout (2 real gloo ranks, forked after one import)."""
    run = runs["rank0_only"]
    assert run.returncode == 3, run.stdout + run.stderr[-2000:]
    assert re.search(r"^rank 0: dcp\.save timed out after [3-9] s$", run.stdout, re.M), run.stdout
    assert not (runs["root"] / "ckpt" / ".metadata").exists()
