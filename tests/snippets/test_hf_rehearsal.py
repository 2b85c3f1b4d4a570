"""train_hf.py, extracted from the built site, run by every accelerate / Trainer launch line of
the guide (snippets/launch/accelerate.sh, snippets/launch/configs.sh), really distributed on
CPU: 2 processes over gloo, a tiny Qwen3 built from a config (``--tiny``, no download).

Each line runs unchanged but for the number of processes (2, not 4), a free port, the
tiny model's arguments and the worker wrapper ``record_hf.py`` (what the Trainer did, per
rank). What distribution means is asserted, not an exit status: the world size the script
sees is 2 on both ranks; under FSDP2 every parameter is a DTensor sharded (``Shard(0)``) over
a mesh of 2 with half of its elements on each rank; under ZeRO-3 every parameter's local
partition is half of it; under ZeRO-2 the fp32 optimizer partition is half of the model; under
DDP and LoRA the model is wrapped in DistributedDataParallel. And the loss after each of
``STEPS`` optimizer steps equals the loss of a single-process reference (the same line with
one process and twice the micro-batch: the same samples per step) within ``TOLERANCE``.

Two copies that each train alone (the fallback a launch on CPU gives without a process group)
see world size 1 and fail. On CPU accelerate itself turns FSDP and DeepSpeed into DDP
(``record_hf.py`` says how the rehearsal lets them run): README, "The Hugging Face path".
"""

from __future__ import annotations

import json
import os
import runpy
import shlex
import socket
import subprocess
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.snippets.launch import CPU_REHEARSAL, HANG_LIMIT_S, free_port, run, torchrun_cmd

pytestmark = pytest.mark.slow

SNIPPETS = REPO_ROOT / "snippets"
FORKED_WORKER = Path(__file__).with_name("forked_worker.py")  # record_hf.py, forked from the zygote
LAUNCH_HF = Path(__file__).with_name("launch_hf.py")
ZYGOTE = Path(__file__).with_name("zygote.py")
STEPS, MICRO_BATCH = 3, 4
TINY = ["--tiny", "--max_steps", str(STEPS), "--logging_steps", "1", "--learning_rate", "1e-2", "--seq_len", "32"]
# Losses of the distributed run vs the single-process reference. bf16 compute reduces in a
# different order on 2 ranks: under DeepSpeed and DDP/autocast the logged loss is an fp32
# mean (observed differences < 1e-3); FSDP2 with MixedPrecisionPolicy(param_dtype=bf16)
# returns a bf16 loss, whose spacing near 5.5 is 2^-5 = 0.03125 (one step either way).
TOLERANCE = {"DDP": 2e-3, "LORA": 2e-3, "ZERO2": 2e-3, "ZERO3": 2e-3, "TRAINER_ZERO3": 2e-3, "FSDP2": 0.032}


def shell_commands(path: Path) -> list[list[str]]:
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    return [words for words in (shlex.split(line, comments=True) for line in text.splitlines()) if words]


def the_line(path: Path, *needles: str) -> list[str]:
    (found,) = [words for words in shell_commands(path) if all(needle in words for needle in needles)]
    return found


def with_processes(args: list[str], n: int) -> list[str]:
    if "--num_processes" in args:
        at = args.index("--num_processes")
        return args[:at] + ["--num_processes", str(n)] + args[at + 2:]
    return ["--num_processes", str(n), *args]


class Launches:
    """Builds the jobs of the guide's lines for the extracted files and reads their records."""

    def __init__(self, extracted: Path, root: Path):
        self.extracted, self.root = extracted, root

    def rebased(self, args: list[str]) -> list[str]:
        return [str(self.extracted / arg) if (self.extracted / arg).is_file() else arg for arg in args]

    def worker(self, name: str, script_args: list[str], micro_batch: int) -> list[str]:
        return [str(FORKED_WORKER), str(self.root / name / "record"), str(self.extracted / "train_hf.py"),
                *self.rebased(script_args), *TINY, "--per_device_train_batch_size", str(micro_batch),
                "--output_dir", str(self.root / name / "out")]

    def job(self, name: str, words: list[str], processes: int, extra: list[str] = (), env: dict | None = None) -> dict:
        """The line as a job of launch_hf.py on ``processes`` processes: each rank gets
        2 * MICRO_BATCH / processes samples per step, so every run sees the same samples."""
        script = words.index("train_hf.py")
        worker = [*self.worker(name, words[script + 1:], MICRO_BATCH * 2 // processes), *extra]
        if words[:2] == ["accelerate", "launch"]:
            launch = with_processes(self.rebased(words[2:script]), processes)
            if processes > 1 and not any(flag in launch for flag in ("--config_file", "--use_deepspeed", "--multi_gpu")):
                # what accelerate infers from more than one GPU (commands/launch.py,
                # _validate_launch_command); without GPUs it starts one process
                launch.append("--multi_gpu")
            args = [*launch, "--main_process_port", str(free_port()), *worker]
            launcher = "accelerate"
        else:
            assert words[0] == "torchrun"
            args = torchrun_cmd(*worker, nproc=processes)[3:]
            launcher = "torchrun"
        (self.root / name).mkdir(parents=True, exist_ok=True)
        return {"name": name, "launcher": launcher, "args": args, "log": str(self.root / name / "log.txt"),
                "env": env or {}}

    def log(self, name: str) -> str:
        return (self.root / name / "log.txt").read_text(encoding="utf-8", errors="replace")

    def records(self, name: str) -> list[dict]:
        folder = self.root / name / "record"
        return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("rank*.json"))]


ACCELERATE_SH, CONFIGS_SH = SNIPPETS / "launch" / "accelerate.sh", SNIPPETS / "launch" / "configs.sh"


def guide_lines() -> dict[str, list[str]]:
    """name -> words of the guide's line."""
    deepspeed = the_line(CONFIGS_SH, "--use_deepspeed")
    zero2 = [("ds_zero2.json" if word == "ds_zero3.json" else word) for word in deepspeed]
    return {"DDP": the_line(ACCELERATE_SH, "train_hf.py"), "LORA": the_line(CONFIGS_SH, "--lora"),
            "FSDP2": the_line(CONFIGS_SH, "--config_file"), "ZERO3": deepspeed,
            "ZERO2": zero2,  # the line's comment: "ZeRO-2, ZeRO-3 or a variant with offload"
            "TRAINER_ZERO3": the_line(CONFIGS_SH, "torchrun")}


# which single-process run is the reference of which line (the same launch with 1 process)
REFERENCE = {"DDP": "DDP", "LORA": "LORA", "FSDP2": "FSDP2", "ZERO3": "ZERO3", "ZERO2": "ZERO2", "TRAINER_ZERO3": "TRAINER_ZERO3"}
# the ZeRO-3 lines also leave a checkpoint (the Trainer's checkpoint-STEPS); the Trainer's own
# line trains the tiny model with its output layer untied from the embedding (record_hf.py)
CHECKPOINTS = {"ZERO3": "tied", "TRAINER_ZERO3": "untied"}
SAVE = ["--save_strategy", "steps", "--save_steps", str(STEPS)]


@pytest.fixture(scope="module")
def launches(extracted, tmp_path_factory) -> tuple[Launches, dict[str, int]]:
    """Every line on 2 processes and each reference on 1, from one launcher process."""
    launches = Launches(extracted, tmp_path_factory.mktemp("hf"))
    jobs = []
    for name, words in guide_lines().items():
        extra = SAVE if name in CHECKPOINTS else []
        env = {"RECORD_HF_UNTIED": "1"} if CHECKPOINTS.get(name) == "untied" else {}
        jobs.append(launches.job(name, words, 2, extra, env))
        if REFERENCE[name] == name:
            jobs.append(launches.job(f"{name}-reference", words, 1, env=env))
    (launches.root / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    env = {"HF_HOME": str(launches.root / "hf-home"), "TOKENIZERS_PARALLELISM": "false",
           "HF_ZYGOTE": str(launches.root / "zygote.sock")}
    with zygote(env, launches.root):
        done = run([sys.executable, str(LAUNCH_HF), str(launches.root / "jobs.json")], env, 1200, launches.root)
    assert done.returncode == 0, done.stderr[-3000:]
    return launches, json.loads(done.stdout.splitlines()[-1])


@contextmanager
def zygote(env: dict, cwd: Path):
    """zygote.py serving env["HF_ZYGOTE"] while the block runs; then told to quit once its
    children have exited, and waited for (their CPU time counts in this session's)."""
    server = subprocess.Popen([sys.executable, str(ZYGOTE), env["HF_ZYGOTE"]], cwd=cwd, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, **CPU_REHEARSAL, **env})
    try:
        for line in server.stdout:  # DeepSpeed's import logs its accelerator on stdout first
            if line == "ready\n":
                break
        assert server.poll() is None, "the zygote did not start"
        yield
    finally:
        if server.poll() is None:
            with socket.socket(socket.AF_UNIX) as conn:
                conn.connect(env["HF_ZYGOTE"])
                conn.sendall(b'{"quit": true}\n')
            server.stdout.read()
        server.wait(timeout=HANG_LIMIT_S)


@pytest.fixture(params=list(REFERENCE))
def line(request, launches):
    name = request.param
    found, status = launches
    for key in (name, f"{REFERENCE[name]}-reference"):
        assert status[key] == 0, f"{key}: {found.log(key)[-3000:]}"
    return name, found.records(name), found.records(f"{REFERENCE[name]}-reference")[0], found.log(name)


def test_two_processes_see_world_size_two(line):
    name, ranks, _, log = line
    assert len(ranks) == 2
    assert [rank["world_size"] for rank in ranks] == [2, 2]
    # the script says it on rank 0, once
    kind = ranks[0]["distributed_type"]
    assert log.count("world_size=") == 1
    assert f"world_size=2 distributed_type={kind}" in log


def test_the_launch_distributes_as_the_guide_says(line):
    name, ranks, _, _ = line
    for rank in ranks:
        if name in ("DDP", "LORA"):
            assert rank["distributed_type"] == "MULTI_CPU" and rank["wrapper"] == "DistributedDataParallel"
        elif name == "FSDP2":
            assert rank["distributed_type"] == "FSDP"
            assert rank["dtensors"] and len(rank["dtensors"]) == len(rank["trainable"])
            for shard in rank["dtensors"].values():
                assert shard["placements"] == ["Shard(dim=0)"] and shard["mesh_size"] == 2
                assert shard["local"] * 2 == shard["global"]
        else:
            assert rank["distributed_type"] == "DEEPSPEED" and rank["wrapper"] == "DeepSpeedEngine"
            zero = rank["zero"]
            assert zero["stage"] == (2 if name == "ZERO2" else 3)
            if zero["stage"] == 3:
                assert zero["params"] and len(zero["params"]) == len(rank["trainable"])
                for param in zero["params"].values():
                    assert param["partition"] * 2 == param["ds_numel"]
            else:
                assert 2 * zero["fp32_partition"] == pytest.approx(zero["model_params"], abs=2)


def test_lora_trains_only_the_adapters(launches):
    found, status = launches
    assert status["LORA"] == 0, found.log("LORA")[-3000:]
    for rank in found.records("LORA"):
        assert rank["trainable"] and all("lora_" in param for param in rank["trainable"])
    assert not any("lora_" in param for param in found.records("DDP")[0]["trainable"])


def test_loss_matches_a_single_process_reference(line):
    name, ranks, reference, _ = line
    assert reference["world_size"] == 1
    losses = [rank["losses"] for rank in ranks]
    assert losses[0] == losses[1]  # the Trainer logs the mean over ranks
    assert len(losses[0]) == len(reference["losses"]) == STEPS
    assert losses[0] == pytest.approx(reference["losses"], abs=TOLERANCE[name])


TO_HF = SNIPPETS / "checkpoints" / "to_hf.sh"


@contextmanager
def argv(args: list[str]):
    saved = sys.argv
    sys.argv = args
    try:
        yield
    finally:
        sys.argv = saved


def convert(extracted: Path, checkpoint: Path, out: Path, *options: str) -> None:
    """The guide's line ``python zero_to_hf.py CHECKPOINT OUT`` (to_hf.sh), on this checkpoint,
    run as ``python`` runs it (runpy, ``__main__``) in this process."""
    (words,) = [words for words in shell_commands(TO_HF) if words[:2] == ["python", "zero_to_hf.py"]]
    assert words[2:] == ["checkpoints/checkpoint-500", "hf_model"]
    script = extracted / "zero_to_hf.py"
    with argv([str(script), str(checkpoint), str(out), *options]), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runpy.run_path(str(script), run_name="__main__")


@pytest.fixture(scope="module", params=list(CHECKPOINTS))
def checkpoint(request, launches) -> tuple[str, Path]:
    found, status = launches
    assert status[request.param] == 0, found.log(request.param)[-3000:]
    return request.param, found.root / request.param / "out" / f"checkpoint-{STEPS}"


def test_zero3_checkpoint_becomes_a_folder_from_pretrained_loads(checkpoint, extracted, tmp_path):
    """A real ZeRO-3 checkpoint (2 gloo ranks) of a tied and of an untied model, through the
    guide's command: the folder holds config.json and bf16 safetensors; from_pretrained
    reports no missing, unexpected or mismatched key; the weights are those the Trainer saved
    from the trained model (its gathered 16-bit model.safetensors, the guide's claim that
    from_pretrained loads checkpoint-N as it is) and give the same logits. With --dtype
    fp32 the weights are DeepSpeed's own fp32 master copy (get_fp32_state_dict_from_zero_checkpoint)."""
    import torch
    from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    name, folder = checkpoint
    tied = CHECKPOINTS[name] == "tied"
    convert(extracted, folder, tmp_path / "bf16")
    convert(extracted, folder, tmp_path / "fp32", "--dtype", "fp32")
    tokens = torch.arange(32).unsqueeze(0)
    trainer_saved = AutoModelForCausalLM.from_pretrained(folder)  # the Trainer's own folder
    master = get_fp32_state_dict_from_zero_checkpoint(str(folder))
    for dtype in ("bf16", "fp32"):
        out = tmp_path / dtype
        assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
        model, info = AutoModelForCausalLM.from_pretrained(out, output_loading_info=True)
        assert {key: list(value) for key, value in info.items()} == {
            "missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}
        assert model.config.tie_word_embeddings is tied
        assert (model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()) is tied
        state = model.state_dict()
        if dtype == "bf16":
            assert {tensor.dtype for tensor in load_file(out / "model.safetensors").values()} == {torch.bfloat16}
            saved = load_file(folder / "model.safetensors")
            assert set(saved) <= set(state) and len(saved) >= len(state) - tied
            for key, tensor in saved.items():
                assert torch.equal(state[key], tensor), key
            with torch.no_grad():
                assert torch.equal(model(tokens).logits, trainer_saved(tokens).logits)
        else:
            assert set(master) == set(state)
            for key, tensor in master.items():
                assert state[key].dtype == torch.float32 and torch.equal(state[key], tensor), key


def test_zero_to_fp32_with_safe_serialization_stops_on_a_tied_model(checkpoint, tmp_path):
    """The page: DeepSpeed's zero_to_fp32 with --safe_serialization stops with an error on a
    model whose output layer shares the embedding, and leaves its folder empty (DeepSpeed
    0.19's own function, on the real tied checkpoint); the untied one converts."""
    from deepspeed.utils.zero_to_fp32 import convert_zero_checkpoint_to_fp32_state_dict

    name, folder = checkpoint
    out = tmp_path / "out"
    if CHECKPOINTS[name] == "tied":
        with pytest.raises(RuntimeError, match="Some tensors share memory"):
            convert_zero_checkpoint_to_fp32_state_dict(str(folder), str(out), safe_serialization=True)
        assert not out.exists() or not any(out.iterdir())
    else:
        convert_zero_checkpoint_to_fp32_state_dict(str(folder), str(out), safe_serialization=True)
        assert (out / "model.safetensors").is_file()
