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
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.snippets.launch import free_port, run, torchrun_cmd

pytestmark = pytest.mark.slow

SNIPPETS = REPO_ROOT / "snippets"
RECORD_HF = Path(__file__).with_name("record_hf.py")
LAUNCH_HF = Path(__file__).with_name("launch_hf.py")
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
        return [str(RECORD_HF), str(self.root / name / "record"), str(self.extracted / "train_hf.py"),
                *self.rebased(script_args), *TINY, "--per_device_train_batch_size", str(micro_batch),
                "--output_dir", str(self.root / name / "out")]

    def job(self, name: str, words: list[str], processes: int) -> dict:
        """The line as a job of launch_hf.py on ``processes`` processes: each rank gets
        2 * MICRO_BATCH / processes samples per step, so every run sees the same samples."""
        script = words.index("train_hf.py")
        worker = self.worker(name, words[script + 1:], MICRO_BATCH * 2 // processes)
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
        return {"name": name, "launcher": launcher, "args": args, "log": str(self.root / name / "log.txt")}

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


# which single-process run is the reference of which line (the same launch with 1 process;
# the Trainer's own --deepspeed line and accelerate's give DeepSpeed the same config)
REFERENCE = {"DDP": "DDP", "LORA": "LORA", "FSDP2": "FSDP2", "ZERO3": "ZERO3", "ZERO2": "ZERO2", "TRAINER_ZERO3": "ZERO3"}


@pytest.fixture(scope="module")
def launches(extracted, tmp_path_factory) -> tuple[Launches, dict[str, int]]:
    """Every line on 2 processes and each reference on 1, from one launcher process."""
    launches = Launches(extracted, tmp_path_factory.mktemp("hf"))
    jobs = []
    for name, words in guide_lines().items():
        jobs.append(launches.job(name, words, 2))
        if REFERENCE[name] == name:
            jobs.append(launches.job(f"{name}-reference", words, 1))
    (launches.root / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    env = {"HF_HOME": str(launches.root / "hf-home"), "TOKENIZERS_PARALLELISM": "false"}
    done = run([sys.executable, str(LAUNCH_HF), str(launches.root / "jobs.json")], env, 1200, launches.root)
    assert done.returncode == 0, done.stderr[-3000:]
    return launches, json.loads(done.stdout.splitlines()[-1])


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


def test_lora_trains_only_the_adapters(line):
    name, ranks, _, _ = line
    if name != "LORA":
        pytest.skip("LoRA line only")
    trainable = ranks[0]["trainable"]
    assert trainable and all("lora_" in param for param in trainable)


def test_loss_matches_a_single_process_reference(line):
    name, ranks, reference, _ = line
    assert reference["world_size"] == 1
    losses = [rank["losses"] for rank in ranks]
    assert losses[0] == losses[1]  # the Trainer logs the mean over ranks
    assert len(losses[0]) == len(reference["losses"]) == STEPS
    assert losses[0] == pytest.approx(reference["losses"], abs=TOLERANCE[name])
