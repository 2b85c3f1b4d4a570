"""The configs a reader pastes, as extracted from the built pages (by their titles), read
by the libraries that read them, through the launch lines the guide shows
(snippets/launch/configs.sh, snippets/launch/accelerate.sh):

- ``accelerate launch`` lines go through accelerate's own parser and dispatcher
  (``launch_command``, with the final launchers replaced by a recorder) and the
  environment its launcher would give the workers;
- the FSDP2 YAML becomes accelerate's ``FullyShardedDataParallelPlugin`` from that
  environment, as in a worker;
- every DeepSpeed JSON becomes accelerate's ``DeepSpeedPlugin``, whose ``auto`` values are
  filled as ``Accelerator.prepare`` fills them, and is then parsed by DeepSpeed's own
  ``DeepSpeedConfig`` (pydantic models that refuse unknown keys and bad values); the values
  that depend on the model (the bucket sizes) are also filled by accelerate's and the
  Trainer's own code, in a process of their own (``deepspeed_autos.py``);
- ``torchrun`` lines go through ``torch.distributed.run``'s parser.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.snippets.launch import free_port, zygote_worker

SNIPPETS = REPO_ROOT / "snippets"
DEEPSPEED = {
    "ds_zero2.json": (2, False, False),
    "ds_zero2_offload.json": (2, True, False),
    "ds_zero3.json": (3, False, False),
    "ds_zero3_offload.json": (3, True, True),
}
MICRO_BATCH, ACCUMULATION = 8, 2  # what a DataLoader and Accelerator(gradient_accumulation_steps=) would give
HIDDEN_SIZE = 4096  # Llama 3.1 8B's hidden_size (snippets/data/models/llama-3.1-8b.json)


def shell_lines(path: Path) -> list[str]:
    """The commands of a shell snippet, continuation lines (a final backslash) joined."""
    return path.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()


def lines(path: Path, command: str) -> list[list[str]]:
    """Every command of a shell snippet that starts with ``command``, split as bash would."""
    found = [shlex.split(line, comments=True) for line in shell_lines(path) if line.startswith(command)]
    assert found, f"no '{command}' line in {path.name}"
    return found


@pytest.fixture(scope="module")
def configs(extracted) -> Path:
    """The folder of the blocks extracted from the built site (the reader's pasted files)."""
    return extracted


def rebased(args: list[str], folder: Path) -> list[str]:
    """The reader's working folder holds the pasted files: ours are in ``folder``."""
    return [str(folder / arg) if (folder / arg).is_file() else arg for arg in args]


@pytest.fixture
def accelerate_launch(monkeypatch, tmp_path, configs):
    """Run ``accelerate launch ARGS`` up to the launcher; returns (launcher name, worker env)."""
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # no default_config.yaml of this machine
    import accelerate.commands.launch as launch
    from accelerate.utils import launch as prepare

    seen = {}
    for name in ("deepspeed_launcher", "multi_gpu_launcher", "simple_launcher"):
        monkeypatch.setattr(launch, name, lambda args, name=name: seen.update(launcher=name, args=args))

    def run(args: list[str]) -> tuple[str, dict[str, str]]:
        launch.launch_command(launch.launch_command_parser().parse_args(rebased(args, configs)))
        parsed = seen["args"]
        if seen["launcher"] == "deepspeed_launcher":
            _, env = prepare.prepare_deepspeed_cmd_env(parsed)
        elif seen["launcher"] == "multi_gpu_launcher":
            env = prepare.prepare_multi_gpu_env(parsed)
        else:
            _, env = prepare.prepare_simple_launcher_cmd_env(parsed)
        return seen["launcher"], {key: value for key, value in env.items() if key.startswith(("ACCELERATE_", "FSDP_"))}

    return run


def test_accelerate_tab_trains_in_bf16_and_fp32_without_the_flag(accelerate_launch):
    """docs: ``accelerate launch --num_processes 4`` alone trains in fp32 (mixed_precision
    'no'); the guide's line passes ``--mixed_precision bf16``."""
    (args,) = lines(SNIPPETS / "launch" / "accelerate.sh", "accelerate launch")
    assert accelerate_launch(args[2:])[1]["ACCELERATE_MIXED_PRECISION"] == "bf16"
    without = [arg for arg in args[2:] if arg not in ("--mixed_precision", "bf16")]
    assert accelerate_launch(without)[1]["ACCELERATE_MIXED_PRECISION"] == "no"


def fsdp_plugin(monkeypatch, env: dict[str, str], **overrides: str):
    from accelerate.utils import FullyShardedDataParallelPlugin

    for key, value in {**env, **overrides}.items():
        monkeypatch.setenv(key, value)
    return FullyShardedDataParallelPlugin()


def test_accelerate_fsdp2_config_as_a_worker_reads_it(accelerate_launch, monkeypatch):
    from torch.distributed.fsdp import CPUOffloadPolicy, StateDictType

    (args,) = [
        line for line in lines(SNIPPETS / "launch" / "configs.sh", "accelerate launch") if "--config_file" in line
    ]
    assert args[args.index("--config_file") + 1] == "accelerate_fsdp2.yaml"
    launcher, env = accelerate_launch(args[2:])
    assert env["ACCELERATE_USE_FSDP"] == "true" and env["ACCELERATE_MIXED_PRECISION"] == "bf16"
    plugin = fsdp_plugin(monkeypatch, env)
    assert plugin.fsdp_version == 2
    assert plugin.reshard_after_forward is True  # FULL_SHARD / ZeRO-3
    assert plugin.cpu_ram_efficient_loading is True
    assert plugin.state_dict_type == StateDictType.SHARDED_STATE_DICT
    assert not isinstance(plugin.cpu_offload, CPUOffloadPolicy)
    # the YAML's comments: false is SHARD_GRAD_OP / ZeRO-2, offload is FSDP2's CPUOffloadPolicy
    assert fsdp_plugin(monkeypatch, env, FSDP_RESHARD_AFTER_FORWARD="false").reshard_after_forward is False
    assert isinstance(fsdp_plugin(monkeypatch, env, FSDP_OFFLOAD_PARAMS="true").cpu_offload, CPUOffloadPolicy)


def deepspeed_config(path: Path, mixed_precision: str, world_size: int = 1):
    """``path`` as accelerate hands it to DeepSpeed, parsed by DeepSpeed. The keys that depend
    on the model are filled as ``Accelerator._prepare_deepspeed`` fills them for a model of
    ``hidden_size`` HIDDEN_SIZE (accelerate 1.15; run for real in
    ``test_bucket_sizes_are_filled_from_the_model``)."""
    from accelerate.utils import DeepSpeedPlugin
    from deepspeed.runtime.config import DeepSpeedConfig

    plugin = DeepSpeedPlugin(hf_ds_config=str(path))
    plugin.set_mixed_precision(mixed_precision)
    plugin.fill_match("gradient_accumulation_steps", must_match=False, gradient_accumulation_steps=ACCUMULATION)
    plugin.deepspeed_config_process(
        must_match=False,
        train_micro_batch_size_per_gpu=MICRO_BATCH,
        train_batch_size=MICRO_BATCH * ACCUMULATION * world_size,
        gradient_clipping=1.0,
        **{
            "zero_optimization.reduce_bucket_size": HIDDEN_SIZE * HIDDEN_SIZE,
            "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * HIDDEN_SIZE * HIDDEN_SIZE),
            "zero_optimization.stage3_param_persistence_threshold": 10 * HIDDEN_SIZE,
        },
    )
    return DeepSpeedConfig(plugin.deepspeed_config)


@pytest.mark.parametrize("name", DEEPSPEED)
def test_deepspeed_configs_parse_as_deepspeed_reads_them(configs, name):
    stage, offload_optimizer, offload_param = DEEPSPEED[name]
    config = deepspeed_config(configs / name, "bf16")
    assert config.zero_optimization_stage == stage
    assert config.bfloat16_config.enabled is True
    assert (config.zero_config.offload_optimizer is not None) == offload_optimizer
    assert (config.zero_config.offload_param is not None) == offload_param
    if offload_optimizer:
        assert config.zero_config.offload_optimizer.device == "cpu"
    if stage == 3:  # save_model() writes whole 16-bit weights, loadable by from_pretrained
        assert config.zero_config.gather_16bit_weights_on_model_save is True
    assert (config.train_micro_batch_size_per_gpu, config.gradient_accumulation_steps) == (MICRO_BATCH, ACCUMULATION)
    # the reduction buckets follow the model, not DeepSpeed's default of 5e8 elements
    assert config.zero_config.reduce_bucket_size == 16_777_216  # 4,096^2


AUTOS_HIDDEN_SIZE = 64  # the worker's small model


@pytest.fixture(scope="module")
def filled(configs, tmp_path_factory, zygote) -> dict[str, dict]:
    """Each DeepSpeed config as accelerate's ``prepare`` and the Trainer hand it to DeepSpeed."""
    out = tmp_path_factory.mktemp("autos") / "filled.json"
    worker = Path(__file__).with_name("deepspeed_autos.py")
    # forked from the session's zygote (tests/conftest.py: torch and transformers imported once)
    done = subprocess.run(
        [
            sys.executable,
            *zygote_worker(zygote, worker),
            str(out),
            str(AUTOS_HIDDEN_SIZE),
            *(str(configs / n) for n in DEEPSPEED),
        ],
        env={**os.environ, "MASTER_PORT": str(free_port()), **zygote},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "deepspeed_shm_comm" not in done.stdout + done.stderr  # not JIT-built (deepspeed_autos.py)
    return {Path(path).name: by_filler for path, by_filler in json.loads(out.read_text(encoding="utf-8")).items()}


@pytest.mark.parametrize("filler", ["accelerate", "trainer"])
@pytest.mark.parametrize("name", DEEPSPEED)
def test_bucket_sizes_are_filled_from_the_model(filled, name, filler):
    """``"auto"`` bucket sizes become what accelerate 1.15 (``Accelerator._prepare_deepspeed``)
    and transformers 5.23 (``HfTrainerDeepSpeedConfig.trainer_config_finalize``) derive from
    the model's hidden_size h: reduce_bucket_size h^2 elements; at stage 3
    stage3_prefetch_bucket_size int(0.9 h^2) and stage3_param_persistence_threshold 10 h. Parsed
    by DeepSpeed: the values it will use."""
    from deepspeed.runtime.config import DeepSpeedConfig

    config = DeepSpeedConfig(filled[name][filler])
    zero = config.zero_config
    assert zero.reduce_bucket_size == 4_096  # 64^2, where DeepSpeed's default is 500,000,000
    if DEEPSPEED[name][0] == 3:
        assert (zero.prefetch_bucket_size, zero.param_persistence_threshold) == (3_686, 640)
    assert config.bfloat16_config.enabled is True and zero.overlap_comm is True
    assert (config.train_micro_batch_size_per_gpu, config.gradient_accumulation_steps) == (MICRO_BATCH, ACCUMULATION)


def test_without_the_auto_keys_deepspeed_keeps_two_buffers_of_5e8_elements():
    """The guide: without ``"auto"`` DeepSpeed takes its default, 5e8 elements, and with
    ``overlap_comm`` at ZeRO-2 it allocates two such buffers per GPU (a second one "to avoid
    data access conflict"), in bf16 1 GB each (measured: tests/vram/test_deepspeed_torchrun.py).
    DeepSpeed alone reads an unfilled ``"auto"`` as that default too: the configs count on
    Accelerate or the Trainer to fill it."""
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
    from deepspeed.runtime.zero.stage_1_and_2 import DeepSpeedZeroOptimizer

    assert DeepSpeedZeroConfig(stage=2).reduce_bucket_size == 500_000_000
    assert DeepSpeedZeroConfig(stage=2, reduce_bucket_size="auto").reduce_bucket_size == 500_000_000
    alone = DeepSpeedZeroConfig(
        stage=3,
        reduce_bucket_size="auto",
        stage3_prefetch_bucket_size="auto",
        stage3_param_persistence_threshold="auto",
    )
    assert (alone.reduce_bucket_size, alone.prefetch_bucket_size, alone.param_persistence_threshold) == (
        500_000_000,
        50_000_000,
        100_000,
    )  # DeepSpeed 0.19's defaults
    buckets = inspect.getsource(DeepSpeedZeroOptimizer.setup_buckets)
    assert buckets.count("torch.empty(int(self.reduce_bucket_size)") == 2 and "if self.overlap_comm:" in buckets


def test_deepspeed_refuses_a_misspelt_key(configs, tmp_path):
    """The parser the tests rely on can fail: a misspelt offload key is refused."""
    config = json.loads((configs / "ds_zero3_offload.json").read_text(encoding="utf-8"))
    config["zero_optimization"]["offload_optimiser"] = config["zero_optimization"].pop("offload_optimizer")
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(Exception, match="offload_optimiser"):
        deepspeed_config(path, "bf16")


def test_deepspeed_launch_line_hands_the_config_to_deepspeed(accelerate_launch, monkeypatch):
    (args,) = [
        line for line in lines(SNIPPETS / "launch" / "configs.sh", "accelerate launch") if "--use_deepspeed" in line
    ]
    launcher, env = accelerate_launch(args[2:])
    assert launcher == "deepspeed_launcher" and env["ACCELERATE_USE_DEEPSPEED"] == "true"
    config_file = Path(env["ACCELERATE_DEEPSPEED_CONFIG_FILE"])
    assert config_file.name in DEEPSPEED
    assert deepspeed_config(config_file, env["ACCELERATE_MIXED_PRECISION"]).bfloat16_config.enabled is True


def test_trainer_line_passes_training_arguments_that_exist():
    """``torchrun ... train_hf.py --bf16 --deepspeed ds_zero3.json``: both are fields of
    transformers' TrainingArguments (what HfArgumentParser turns flags into)."""
    from transformers import TrainingArguments

    (args,) = lines(SNIPPETS / "launch" / "configs.sh", "torchrun")
    script = args.index("train_hf.py")
    flags = {arg.removeprefix("--") for arg in args[script + 1 :] if arg.startswith("--")}
    assert flags <= {field.name for field in dataclasses.fields(TrainingArguments)}
    assert args[args.index("--deepspeed") + 1] in DEEPSPEED


TORCHRUN_SNIPPETS = sorted(path for path in SNIPPETS.rglob("*.sh") if "torchrun " in path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", TORCHRUN_SNIPPETS, ids=lambda path: str(path.relative_to(SNIPPETS)))
def test_torchrun_lines_parse(path):
    from torch.distributed.run import get_args_parser

    for line in shell_lines(path):
        words = shlex.split(line, comments=True)
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # VARIABLE=value before the command
        if words[:1] == ["torchrun"]:
            get_args_parser().parse_args(words[1:])


def test_fsdp2_names_the_guide_uses_are_torchs():
    """The guide's FSDP1 -> FSDP2 mapping names real arguments and classes of torch 2.13."""
    import inspect

    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    assert {"reshard_after_forward", "mp_policy", "offload_policy"} <= inspect.signature(fully_shard).parameters.keys()
    assert {field.name for field in dataclasses.fields(MixedPrecisionPolicy)} >= {"param_dtype", "reduce_dtype"}
    assert CPUOffloadPolicy().pin_memory is True


def test_torchrun_cheat_sheet_means_what_the_guide_says(monkeypatch):
    """Each line through torchrun's own ``run`` up to the launch (``elastic_launch``
    replaced by a recorder; 4 GPUs faked for ``--nproc_per_node=gpu``). On one machine,
    --standalone, and no --master_port at all, both mean a c10d rendezvous on localhost
    port 0, a free port chosen per job; a fixed --master_port is a static rendezvous on
    that port, so two jobs need two ports. --max-restarts reaches the launch config."""
    import torch
    import torch.distributed.run as torchrun_module

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # torchrun sets it in os.environ otherwise
    launched = []
    monkeypatch.setattr(
        torchrun_module, "elastic_launch", lambda config, entrypoint: lambda *args: launched.append((config, args))
    )
    commands = [
        words
        for words in (
            shlex.split(line, comments=True) for line in shell_lines(SNIPPETS / "launch" / "torchrun_cheatsheet.sh")
        )
        if words
    ]
    envs = []
    for words in commands:
        start = words.index("torchrun")
        envs.append(dict(word.split("=", 1) for word in words[:start]))
        torchrun_module.run(torchrun_module.get_args_parser().parse_args(words[start + 1 :]))
    endpoints = [(config.rdzv_backend, config.rdzv_endpoint, config.nproc_per_node) for config, _ in launched]
    assert endpoints[0] == ("c10d", "localhost:0", 4)  # --standalone --nproc_per_node=gpu
    assert endpoints[1:3] == [("static", "127.0.0.1:29500", 2), ("static", "127.0.0.1:29501", 2)]
    assert envs[1]["CUDA_VISIBLE_DEVICES"] != envs[2]["CUDA_VISIBLE_DEVICES"]
    assert launched[3][0].max_restarts == 3 and "train_fsdp2.py" in launched[3][1]
    assert envs[4] == {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}
    # torch 2.13: one machine without --master_port also picks a free port (c10d, port 0)
    torchrun_module.run(torchrun_module.get_args_parser().parse_args(["--nproc_per_node=2", "train.py"]))
    assert (launched[-1][0].rdzv_backend, launched[-1][0].rdzv_endpoint) == ("c10d", "localhost:0")


def test_torch_reads_the_allocator_variable_the_guide_names():
    """PyTorch 2.13's allocator reads PYTORCH_ALLOC_CONF first, PYTORCH_CUDA_ALLOC_CONF for
    backward compatibility (c10/core/AllocatorConfig.h of the installed torch)."""
    import torch

    header = (Path(torch.__file__).parent / "include/c10/core/AllocatorConfig.h").read_text(encoding="utf-8")
    assert "The primary environment variable for configuration is `PYTORCH_ALLOC_CONF`" in header
    assert "`PYTORCH_CUDA_ALLOC_CONF` is also supported" in header
    assert "expandable_segments" in header


def fsdp1_only_keys(config: dict) -> list[str]:
    """The keys of an accelerate config's ``fsdp_config`` that FSDP2 does not read as they are
    written, by accelerate's own FSDP1 -> FSDP2 converter (``accelerate to-fsdp2``,
    accelerate/commands/to_fsdp2.py): a key it removes or has not implemented for FSDP2, one
    it renames (``fsdp_sharding_strategy`` becomes ``fsdp_reshard_after_forward``), one it
    does not know, or an FSDP1 strategy name as a value it converts (``FULL_SHARD`` ...)."""
    from accelerate.commands.to_fsdp2 import ARGUMENT_KEY_MAPPING, ARGUMENT_VALUE_MAPPING

    fsdp = config.get("fsdp_config", {})
    assert fsdp.get("fsdp_version") == 2, "an FSDP2 config says fsdp_version: 2"
    wrong = [key for key in fsdp if ARGUMENT_KEY_MAPPING.get(key) != key]
    wrong += [
        f"{key}: {fsdp[key]}"
        for key, values in ARGUMENT_VALUE_MAPPING.items()
        if key in fsdp and ARGUMENT_KEY_MAPPING.get(key) == key and fsdp[key] in values
    ]
    return wrong


FSDP2_YAMLS = sorted(
    path for path in (SNIPPETS / "configs").glob("*.yaml") if "fsdp_version: 2" in path.read_text(encoding="utf-8")
)


@pytest.mark.parametrize("path", FSDP2_YAMLS, ids=lambda path: path.name)
def test_fsdp2_yaml_has_no_fsdp1_only_keys(path):
    import yaml

    assert fsdp1_only_keys(yaml.safe_load(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize(
    "key, value",
    [
        ("fsdp_sharding_strategy", "SHARD_GRAD_OP"),
        ("fsdp_use_orig_params", True),
        ("fsdp_backward_prefetch", "BACKWARD_PRE"),
        ("fsdp_sync_module_states", True),
        ("fsdp_reshard_after_forward", "FULL_SHARD"),
        ("fsdp_shard_strategy", "x"),
    ],
)
def test_the_fsdp1_lint_refuses_what_fsdp2_ignores(key, value):
    """The lint can fail: accelerate silently ignores ``fsdp_sharding_strategy: SHARD_GRAD_OP``
    under ``fsdp_version: 2`` and reshards fully (FullyShardedDataParallelPlugin reads
    ``FSDP_RESHARD_AFTER_FORWARD``); each of these is refused by name."""
    import yaml

    config = yaml.safe_load((SNIPPETS / "configs" / "accelerate_fsdp2.yaml").read_text(encoding="utf-8"))
    config["fsdp_config"][key] = value
    assert any(found.startswith(key) for found in fsdp1_only_keys(config))


def test_deepspeed_alone_reads_each_auto_as_the_guide_says(configs):
    """docs (#configs): fed to DeepSpeed 0.19 alone, with no Accelerate or Trainer to fill them,
    the shipped JSONs stop on the batch keys (TypeError); with those written as numbers,
    ``"bf16": {"enabled": "auto"}`` reads as off (fp32 training), ``gradient_clipping``
    stays the string "auto", which DeepSpeed compares with 0 (a TypeError: ZeRO-1/2 when the
    optimizer is built, ZeRO-3 at the step), and the three bucket sizes take their defaults.
    DeepSpeed's own parser, ``DeepSpeedConfig``, is the oracle."""
    import deepspeed.runtime.zero.stage3 as stage3
    import deepspeed.runtime.zero.stage_1_and_2 as stage_1_and_2
    from deepspeed.runtime.config import DeepSpeedConfig

    for name in DEEPSPEED:
        shipped = json.loads((configs / name).read_text(encoding="utf-8"))
        with pytest.raises(TypeError, match="'>' not supported between instances of 'str' and 'int'"):
            DeepSpeedConfig(json.loads(json.dumps(shipped)))
        for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
            assert shipped.pop(key) == "auto"
        alone = DeepSpeedConfig({**shipped, "train_micro_batch_size_per_gpu": 1})
        assert alone.bfloat16_config.enabled is False
        assert alone.gradient_clipping == "auto"
        assert alone.zero_config.reduce_bucket_size == 500_000_000
    for module in (stage_1_and_2, stage3):
        assert "clip_grad > 0." in inspect.getsource(module)
    with pytest.raises(TypeError):
        assert "auto" > 0.0
