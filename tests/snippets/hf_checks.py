"""What the Hugging Face rehearsals assert, shared by the CPU rehearsal (gloo, 2 processes,
tests/snippets/test_hf_rehearsal.py) and the GPU one (NCCL, one process per GPU,
tests/gpu/test_hf_on_gpu.py): the guide's launch lines as jobs of launch_hf.py, and the
checks of their records (record_hf.py) and of zero_to_hf.py's folders.

Every check takes the number of processes ``n`` the line ran on: world size ``n`` on every
rank, FSDP2 DTensors ``Shard(0)`` on a mesh of ``n`` with 1/n of each parameter on a rank,
ZeRO-3 partitions of 1/n of each parameter, ZeRO-2's fp32 optimizer partition 1/n of the
model, and the loss of each of ``STEPS`` steps equal to the one-process reference (the same
line, ``n`` times the micro-batch: the same samples per step) within ``TOLERANCE``.
"""

from __future__ import annotations

from collections.abc import Sequence
import json
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.snippets.launch import free_port, torchrun_cmd
from tests.snippets.sealed import run_as_main
from tests.snippets.shell_words import command_lines

SNIPPETS = REPO_ROOT / "snippets"
HERE = Path(__file__).resolve().parent
RECORD_HF = HERE / "record_hf.py"
LAUNCH_HF = HERE / "launch_hf.py"
ACCELERATE_SH, CONFIGS_SH = SNIPPETS / "launch" / "accelerate.sh", SNIPPETS / "launch" / "configs.sh"
TO_HF = SNIPPETS / "checkpoints" / "to_hf.sh"
STEPS = 3
SAMPLES_PER_STEP = 8  # split over the processes: 4 a rank on 2, 8 for the one-process reference
TINY = ["--tiny", "--max_steps", str(STEPS), "--logging_steps", "1", "--learning_rate", "1e-2", "--seq_len", "32"]
# Losses of the distributed run vs the single-process reference. bf16 compute reduces in a
# different order on n ranks: under DeepSpeed and DDP/autocast the logged loss is an fp32
# mean (observed differences on CPU < 1e-3); FSDP2 with MixedPrecisionPolicy(param_dtype=bf16)
# returns a bf16 loss, whose spacing near 5.5 is 2^-5 = 0.03125 (one step either way).
TOLERANCE = {
    "DDP": 2e-3,
    "LORA": 2e-3,
    "ZERO2": 2e-3,
    "ZERO3": 2e-3,
    "TRAINER_ZERO3": 2e-3,
    "FSDP2": 0.032,
    "ZERO2_OFFLOAD": 2e-3,
    "ZERO3_OFFLOAD": 2e-3,
}
# the ZeRO-3 lines also leave a checkpoint (the Trainer's checkpoint-STEPS); the Trainer's own
# line trains the tiny model with its output layer untied from the embedding (record_hf.py)
CHECKPOINTS = {"ZERO3": "tied", "TRAINER_ZERO3": "untied"}
SAVE = ["--save_strategy", "steps", "--save_steps", str(STEPS)]
# The offload variants: DeepSpeed's CPU Adam, a C++ extension built on first use (GPU job only)
OFFLOAD = {"ZERO2_OFFLOAD": "ds_zero2_offload.json", "ZERO3_OFFLOAD": "ds_zero3_offload.json"}


def shell_commands(path: Path) -> list[list[str]]:
    """The words of each command line of ``path``, as bash reads them (plain words only:
    tests/snippets/shell_words.py refuses a line bash could read otherwise)."""
    return command_lines(path)


def the_line(path: Path, *needles: str) -> list[str]:
    (found,) = [words for words in shell_commands(path) if all(needle in words for needle in needles)]
    return found


def with_processes(args: list[str], n: int) -> list[str]:
    if "--num_processes" in args:
        at = args.index("--num_processes")
        return args[:at] + ["--num_processes", str(n)] + args[at + 2 :]
    return ["--num_processes", str(n), *args]


def with_config(words: list[str], config: str) -> list[str]:
    """The DeepSpeed line with another of the guide's JSONs (its comment: "ZeRO-2, ZeRO-3 or a
    variant with offload")."""
    assert "ds_zero3.json" in words
    return [(config if word == "ds_zero3.json" else word) for word in words]


def guide_lines() -> dict[str, list[str]]:
    """name -> words of the guide's line (the CPU rehearsal's six)."""
    deepspeed = the_line(CONFIGS_SH, "--use_deepspeed")
    return {
        "DDP": the_line(ACCELERATE_SH, "train_hf.py"),
        "LORA": the_line(CONFIGS_SH, "--lora"),
        "FSDP2": the_line(CONFIGS_SH, "--config_file"),
        "ZERO3": deepspeed,
        "ZERO2": with_config(deepspeed, "ds_zero2.json"),
        "TRAINER_ZERO3": the_line(CONFIGS_SH, "torchrun"),
    }


def offload_lines() -> dict[str, list[str]]:
    deepspeed = the_line(CONFIGS_SH, "--use_deepspeed")
    return {name: with_config(deepspeed, config) for name, config in OFFLOAD.items()}


class Launches:
    """Builds the jobs of the guide's lines for the extracted files and reads their records.
    ``worker`` is the worker command before its arguments: record_hf.py, or on CPU
    ``script_zygote.py worker record_hf.py`` (record_hf.py forked from a zygote)."""

    def __init__(
        self, extracted: Path, root: Path, worker: tuple[str | Path, ...] = (RECORD_HF,), script_args: list[str] = TINY
    ):
        self.extracted, self.root, self.worker_command = extracted, root, [str(word) for word in worker]
        self.script_args = list(script_args)  # TINY, or a reader's --model FOLDER --data FILE (test_reader_paths.py)

    def rebased(self, args: list[str]) -> list[str]:
        return [str(self.extracted / arg) if (self.extracted / arg).is_file() else arg for arg in args]

    def worker(self, name: str, script_args: list[str], micro_batch: int) -> list[str]:
        return [
            *self.worker_command,
            str(self.root / name / "record"),
            str(self.extracted / "train_hf.py"),
            *self.rebased(script_args),
            *self.script_args,
            "--per_device_train_batch_size",
            str(micro_batch),
            "--output_dir",
            str(self.root / name / "out"),
        ]

    def job(
        self, name: str, words: list[str], processes: int, extra: Sequence[str] = (), env: dict | None = None
    ) -> dict:
        """The line as a job of launch_hf.py on ``processes`` processes: each rank gets
        SAMPLES_PER_STEP / processes samples per step, so every run sees the same samples."""
        assert SAMPLES_PER_STEP % processes == 0, processes
        script = words.index("train_hf.py")
        worker = [*self.worker(name, words[script + 1 :], SAMPLES_PER_STEP // processes), *extra]
        if words[:2] == ["accelerate", "launch"]:
            launch = with_processes(self.rebased(words[2:script]), processes)
            if processes > 1 and not any(
                flag in launch for flag in ("--config_file", "--use_deepspeed", "--multi_gpu")
            ):
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
        return {
            "name": name,
            "launcher": launcher,
            "args": args,
            "log": str(self.root / name / "log.txt"),
            "env": env or {},
        }

    def jobs(self, lines: dict[str, list[str]], processes: int) -> list[dict]:
        """Every line on ``processes`` processes and its reference on one."""
        jobs = []
        for name, words in lines.items():
            extra = SAVE if name in CHECKPOINTS else []
            env = {"RECORD_HF_UNTIED": "1"} if CHECKPOINTS.get(name) == "untied" else {}
            jobs.append(self.job(name, words, processes, extra, env))
            jobs.append(self.job(f"{name}-reference", words, 1, env=env))
        (self.root / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
        return jobs

    def log(self, name: str) -> str:
        return (self.root / name / "log.txt").read_text(encoding="utf-8", errors="replace")

    def records(self, name: str) -> list[dict]:
        folder = self.root / name / "record"
        return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("rank*.json"))]


def check_world_size(ranks: list[dict], log: str, n: int) -> None:
    assert len(ranks) == n
    assert [rank["world_size"] for rank in ranks] == [n] * n
    # the script says it on rank 0, once
    kind = ranks[0]["distributed_type"]
    assert log.count("world_size=") == 1
    assert f"world_size={n} distributed_type={kind}" in log


def check_distribution(name: str, ranks: list[dict], n: int, ddp_type: str) -> None:
    """``ddp_type``: accelerate's name for DDP on these devices (MULTI_CPU, MULTI_GPU)."""
    assert ranks
    for rank in ranks:
        if name in ("DDP", "LORA"):
            assert rank["distributed_type"] == ddp_type and rank["wrapper"] == "DistributedDataParallel"
        elif name == "FSDP2":
            assert rank["distributed_type"] == "FSDP"
            assert rank["dtensors"] and len(rank["dtensors"]) == len(rank["trainable"])
            for shard in rank["dtensors"].values():
                assert shard["placements"] == ["Shard(dim=0)"] and shard["mesh_size"] == n
                assert shard["local"] * n == shard["global"]
        else:
            assert rank["distributed_type"] == "DEEPSPEED" and rank["wrapper"] == "DeepSpeedEngine"
            zero = rank["zero"]
            assert zero["stage"] == (2 if name.startswith("ZERO2") else 3)
            if zero["stage"] == 3:
                assert zero["params"] and len(zero["params"]) == len(rank["trainable"])
                for param in zero["params"].values():
                    assert param["partition"] * n == param["ds_numel"]
            else:
                assert n * zero["fp32_partition"] == pytest.approx(zero["model_params"], abs=n)
            if name in OFFLOAD:
                assert zero["base_optimizer"] == "DeepSpeedCPUAdam"


def check_lora(lora: list[dict], full: list[dict]) -> None:
    assert lora and full
    for rank in lora:
        assert rank["trainable"] and all("lora_" in param for param in rank["trainable"])
    assert not any("lora_" in param for param in full[0]["trainable"])


def check_loss(name: str, ranks: list[dict], reference: dict) -> None:
    assert reference["world_size"] == 1
    losses = [rank["losses"] for rank in ranks]
    assert all(loss == losses[0] for loss in losses)  # the Trainer logs the mean over ranks
    assert len(losses[0]) == len(reference["losses"]) == STEPS
    assert losses[0] == pytest.approx(reference["losses"], abs=TOLERANCE[name])


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
        run_as_main(str(script), sys.argv[1:], watch=False)


def check_zero_to_hf(extracted: Path, folder: Path, tied: bool, tmp_path: Path) -> None:
    """A real ZeRO-3 checkpoint through the guide's command: the folder holds config.json
    and bf16 safetensors; from_pretrained reports no missing, unexpected or mismatched key;
    the weights are those the Trainer saved from the trained model (its gathered 16-bit
    model.safetensors, the guide's claim that from_pretrained loads checkpoint-N as it is)
    and give the same logits. With --dtype fp32 the weights are DeepSpeed's own fp32 master
    copy (get_fp32_state_dict_from_zero_checkpoint)."""
    import torch
    from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    # the reader's checkpoint may hold the tokenizer (a Trainer given one saves it): the script copies it
    tokenizer = folder / "tokenizer_config.json"
    tokenizer.write_text('{"model_max_length": 32}', encoding="utf-8")
    convert(extracted, folder, tmp_path / "bf16")
    convert(extracted, folder, tmp_path / "fp32", "--dtype", "fp32")
    for dtype in ("bf16", "fp32"):
        assert (tmp_path / dtype / tokenizer.name).read_bytes() == tokenizer.read_bytes()
    tokens = torch.arange(32).unsqueeze(0)
    trainer_saved = AutoModelForCausalLM.from_pretrained(folder)  # the Trainer's own folder
    master = get_fp32_state_dict_from_zero_checkpoint(str(folder))
    for dtype in ("bf16", "fp32"):
        out = tmp_path / dtype
        assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
        model, info = AutoModelForCausalLM.from_pretrained(out, output_loading_info=True)
        assert {key: list(value) for key, value in info.items()} == {
            "missing_keys": [],
            "unexpected_keys": [],
            "mismatched_keys": [],
            "error_msgs": [],
        }
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


def check_zero_to_fp32_safe_serialization(folder: Path, tied: bool, tmp_path: Path) -> None:
    """The page: DeepSpeed's zero_to_fp32 with --safe_serialization stops with an error on a
    model whose output layer shares the embedding, and leaves its folder empty (DeepSpeed's
    own function, on the real tied checkpoint); the untied one converts."""
    from deepspeed.utils.zero_to_fp32 import convert_zero_checkpoint_to_fp32_state_dict

    out = tmp_path / "out"
    if tied:
        with pytest.raises(RuntimeError, match="Some tensors share memory"):
            convert_zero_checkpoint_to_fp32_state_dict(str(folder), str(out), safe_serialization=True)
        assert not out.exists() or not any(out.iterdir())
    else:
        convert_zero_checkpoint_to_fp32_state_dict(str(folder), str(out), safe_serialization=True)
        assert (out / "model.safetensors").is_file()


def check_dcp_to_hf(extracted: Path, folder: Path, tmp_path: Path) -> None:
    """The guide's DCP -> Hugging Face line (to_hf.sh: ``python dcp_to_hf.py
    checkpoints/epoch-3 hf_model``), the extracted dcp_to_hf.py on ``folder`` (a checkpoint
    of train_fsdp2.py --tiny: its ``model`` DCP folder and config.json): from_pretrained
    reports no missing, unexpected or mismatched key; the weights are the trained ones (torch's own dcp_to_torch_save of the same checkpoint is the
    oracle), bit for bit in fp32 (``--dtype fp32``) and cast to bf16 by default; the tied
    head stays tied; the logits equal those of the trained weights loaded strictly into the
    model built from the run's config.json."""
    import torch
    from safetensors.torch import load_file
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
    from transformers import AutoConfig, AutoModelForCausalLM

    (args,) = [words for words in shell_commands(TO_HF) if words[:2] == ["python", "dcp_to_hf.py"]]
    assert args[2:] == ["checkpoints/epoch-3", "hf_model"]
    tmp_path.mkdir(parents=True, exist_ok=True)
    dcp_to_torch_save(folder / "model", tmp_path / "trained.pt")
    trained = torch.load(tmp_path / "trained.pt", weights_only=False)
    config = AutoConfig.from_pretrained(folder)
    tokens = torch.arange(32).unsqueeze(0)
    for dtype, options in (("bf16", []), ("fp32", ["--dtype", "fp32"])):
        out = tmp_path / dtype
        with argv([str(extracted / "dcp_to_hf.py"), str(folder), str(out), *options]), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_as_main(str(extracted / "dcp_to_hf.py"), sys.argv[1:], watch=False)
        assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
        model, info = AutoModelForCausalLM.from_pretrained(out, output_loading_info=True)
        assert {key: list(value) for key, value in info.items()} == {
            "missing_keys": [],
            "unexpected_keys": [],
            "mismatched_keys": [],
            "error_msgs": [],
        }
        assert model.config.tie_word_embeddings
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
        want = torch.bfloat16 if dtype == "bf16" else torch.float32
        assert {tensor.dtype for tensor in load_file(out / "model.safetensors").values()} == {want}
        expected = AutoModelForCausalLM.from_config(config, dtype=want)
        expected.load_state_dict({key: tensor.to(want) for key, tensor in trained.items()}, strict=True)
        loaded = model.state_dict()
        assert set(loaded) == set(trained)
        for key, tensor in trained.items():
            assert torch.equal(loaded[key], tensor.to(want)), key
        with torch.no_grad():
            assert torch.equal(model(tokens).logits, expected(tokens).logits)
