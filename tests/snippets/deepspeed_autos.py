"""Fill the "auto" values of DeepSpeed configs as accelerate 1.15 and transformers 5.23 fill
them, and write the configs DeepSpeed would be handed to OUT.json: ``{path: {"accelerate": …,
"trainer": …}}``.

Usage: python deepspeed_autos.py OUT.json HIDDEN_SIZE CONFIG.json... (its own process: accelerate sets
up a process group, transformers a process-wide DeepSpeed config; neither may leak into the
tests). The model is a one-layer Llama of ``hidden_size`` HIDDEN_SIZE; the DataLoader gives
micro-batches of 8, accumulation 2, one process.

- accelerate: ``Accelerator(deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=path),
  mixed_precision="bf16", gradient_accumulation_steps=2).prepare(model, optimizer, loader)``,
  its own code up to ``deepspeed.initialize``, which is replaced by a recorder of the
  ``config_params`` it receives. Two things are skipped, neither touching the config: the JIT
  build of DeepSpeed's shared-memory CPU collective (gloo does the work) and, with optimizer
  offload, the swap of torch's AdamW for DeepSpeedCPUAdam (a C++ build).
- the Trainer: ``HfTrainerDeepSpeedConfig(path)`` through ``trainer_config_process(args)`` and
  ``trainer_config_finalize(args, model, steps)``, what ``Trainer`` runs on the config before
  ``deepspeed.initialize``.
"""

from __future__ import annotations

import copy
import json
import os
import sys


class _Handed(Exception):
    """deepspeed.initialize was reached: the config is recorded."""


def main(hidden_size: int, paths: list[str]) -> dict:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=os.environ.get("MASTER_PORT", "29561"),
        RANK="0",
        WORLD_SIZE="1",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        ACCELERATE_USE_DEEPSPEED="true",
    )
    import deepspeed
    import deepspeed.comm.torch  # noqa: F401
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, TrainingArguments
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    import accelerate.accelerator
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from accelerate.utils import DeepSpeedPlugin

    sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None  # type: ignore[attr-defined]  # the submodule, not PyTorch
    accelerate.accelerator.map_pytorch_optim_to_deepspeed = lambda optimizer: optimizer
    handed: dict = {}

    def initialize(**kwargs):
        handed.update(copy.deepcopy(kwargs["config_params"]))
        raise _Handed

    deepspeed.initialize = initialize
    config = LlamaConfig(
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=1,
        vocab_size=128,
    )
    model = LlamaForCausalLM(config)
    out = {}
    for path in paths:
        handed.clear()
        AcceleratorState._reset_state(True)
        accelerator = Accelerator(
            deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=path), mixed_precision="bf16", gradient_accumulation_steps=2
        )
        loader = torch.utils.data.DataLoader(list(range(64)), batch_size=8)
        try:
            accelerator.prepare(model, torch.optim.AdamW(model.parameters()), loader)
        except _Handed:
            pass
        trainer = HfTrainerDeepSpeedConfig(path)
        args = TrainingArguments(
            output_dir=os.devnull,
            bf16=True,
            per_device_train_batch_size=8,
            gradient_accumulation_steps=2,
            report_to=[],
            use_cpu=True,
        )
        trainer.trainer_config_process(args)
        trainer.trainer_config_finalize(args, model, num_training_steps=10)
        out[path] = {"accelerate": dict(handed), "trainer": trainer.config}
    return out


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(main(int(sys.argv[2]), sys.argv[3:]), out)
