"""Run train_hf.py as one worker of a launch and record what the Trainer really did (tests only).

Usage (as the worker command of ``accelerate launch`` / ``torchrun``, or alone):
``record_hf.py RECORD_DIR SCRIPT [ARGS...]``. The script is not modified: ``Trainer.train``
is wrapped to write ``RECORD_DIR/rank<N>.json`` after training with

- ``world_size`` (torch.distributed's, 1 without a process group), ``distributed_type``
  (accelerate's), ``wrapper`` (the class the Trainer trains: DistributedDataParallel,
  DeepSpeedEngine, or the model itself under FSDP2);
- ``dtensors``: per parameter, its placements, mesh size, local and global element counts
  (FSDP2's ``fully_shard`` turns parameters into DTensors);
- ``zero``: DeepSpeed's stage; per parameter, ``ds_numel`` (the whole) and the elements of
  this rank's partition ``ds_tensor`` (ZeRO-3); the model's parameter count and the elements
  of this rank's fp32 optimizer partition (ZeRO-1/2, ``single_partition_of_fp32_groups``);
  ``base_optimizer``, the class of the optimizer ZeRO wraps (``DeepSpeedCPUAdam`` under offload);
- ``trainable``: names of the parameters that require a gradient (LoRA: only adapters);
- ``losses``: the losses the Trainer logged (``logging_steps``), averaged over ranks;
- ``first_batch``: the ``input_ids``, ``attention_mask`` and ``labels`` of the first batch this
  rank computed a loss on (what the script's dataset and the Trainer's collator made of the
  reader's text file: tests/snippets/test_reader_paths.py).

On CPU accelerate never enables FSDP or DeepSpeed (``AcceleratorState`` switches to them only
for accelerator devices; with ``cpu=True`` a launch with either becomes DDP over gloo,
``DistributedType.MULTI_CPU``). When the launch asks for one of them (``ACCELERATE_USE_FSDP``
/ ``ACCELERATE_USE_DEEPSPEED`` from ``accelerate launch``, or ``--deepspeed``), this wrapper
lets accelerate take the branch it takes on GPUs (the process group stays gloo, the device
CPU); a launch that still falls back shows ``MULTI_CPU`` and plain parameters, and the tests
fail. DeepSpeed's shared-memory CPU collective is not JIT-built (gloo does its work), as in
tests/vram/deepspeed_worker.py.

With ``RECORD_HF_UNTIED=1`` in the environment, ``--tiny``'s model unties its output layer
from the embedding (``AutoConfig.for_model(..., tie_word_embeddings=False)``): the same
script, a model like Qwen3 8B rather than like Llama 3.2 1B.
"""

import json
import os
import sys
from pathlib import Path


KEPT: list[dict] = []  # the scripts' globals (main)
FIRST_BATCH: list[dict] = []  # the first batch the Trainer computed a loss on, as lists


def wants_sharding() -> bool:
    return "--deepspeed" in sys.argv or any(
        os.environ.get(key, "").lower() == "true" for key in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED")
    )


def dispatch_as_on_gpus() -> None:
    from accelerate.state import AcceleratorState, PartialState
    from accelerate.utils import DistributedType

    original = AcceleratorState.__init__

    def init(self, *args, cpu=False, **kwargs):
        if PartialState._shared_state == {}:
            PartialState(cpu=True)
        shared = PartialState._shared_state
        if shared["distributed_type"] == DistributedType.MULTI_CPU:
            shared["distributed_type"] = DistributedType.MULTI_GPU
        original(self, *args, cpu=False, **kwargs)
        if self.distributed_type == DistributedType.MULTI_GPU:  # neither FSDP nor DeepSpeed took over
            self.distributed_type = shared["distributed_type"] = DistributedType.MULTI_CPU

    AcceleratorState.__init__ = init
    import deepspeed.comm
    import deepspeed.comm.torch  # noqa: F401

    sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None  # type: ignore[attr-defined]  # the submodule, not PyTorch
    partial_init = PartialState.__init__

    def partial_state(self, *args, **kwargs):
        partial_init(self, *args, **kwargs)
        # what PartialState does for DeepSpeed on GPUs: DeepSpeed's communication set up on
        # the process group (the gloo group here), before zero.Init needs its world size
        if "LOCAL_RANK" in os.environ and not deepspeed.comm.is_initialized():
            deepspeed.comm.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)

    PartialState.__init__ = partial_state


def record(trainer) -> dict:
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor

    model, wrapped = trainer.model, trainer.model_wrapped
    params = dict(model.named_parameters())
    out = {
        "world_size": dist.get_world_size() if dist.is_initialized() else 1,
        "distributed_type": trainer.accelerator.distributed_type.name,
        "wrapper": type(wrapped).__name__,
        "dtensors": {
            name: {
                "placements": [repr(p) for p in param.placements],
                "mesh_size": param.device_mesh.size(),
                "local": param.to_local().numel(),
                "global": param.numel(),
            }
            for name, param in params.items()
            if isinstance(param, DTensor)
        },
        "zero": None,
        "trainable": sorted(name for name, param in params.items() if param.requires_grad),
        "losses": [entry["loss"] for entry in trainer.state.log_history if "loss" in entry],
        "first_batch": FIRST_BATCH[0] if FIRST_BATCH else None,
    }
    if hasattr(wrapped, "zero_optimization_stage"):
        out["zero"] = {
            "stage": wrapped.zero_optimization_stage(),
            "params": {
                name: {"ds_numel": param.ds_numel, "partition": param.ds_tensor.numel()}
                for name, param in params.items()
                if hasattr(param, "ds_tensor")
            },
            "model_params": sum(param.numel() for param in params.values()),
            "fp32_partition": sum(t.numel() for t in getattr(wrapped.optimizer, "single_partition_of_fp32_groups", [])),
            # the optimizer ZeRO wraps: DeepSpeedCPUAdam under offload
            "base_optimizer": type(getattr(wrapped.optimizer, "optimizer", None)).__name__,
        }
    return out


def main() -> None:
    record_dir, script = Path(sys.argv[1]), sys.argv[2]
    sys.argv = sys.argv[2:]
    import torch

    if wants_sharding() and not torch.cuda.is_available():  # on GPUs accelerate dispatches by itself
        dispatch_as_on_gpus()
    import transformers

    if os.environ.get("RECORD_HF_UNTIED") == "1":
        for_model = transformers.AutoConfig.for_model
        transformers.AutoConfig.for_model = lambda *args, **kwargs: for_model(
            *args, **{**kwargs, "tie_word_embeddings": False}
        )

    train = transformers.Trainer.train

    def recording_train(self, *args, **kwargs):
        result = train(self, *args, **kwargs)
        record_dir.mkdir(parents=True, exist_ok=True)
        rank = os.environ.get("RANK", "0")
        (record_dir / f"rank{rank}.json").write_text(json.dumps(record(self)), encoding="utf-8")
        return result

    transformers.Trainer.train = recording_train
    compute_loss = transformers.Trainer.compute_loss

    def recording_compute_loss(self, model, inputs, *args, **kwargs):
        if not FIRST_BATCH:
            FIRST_BATCH.append(
                {key: inputs[key].tolist() for key in ("input_ids", "attention_mask", "labels") if key in inputs}
            )
        return compute_loss(self, model, inputs, *args, **kwargs)

    transformers.Trainer.compute_loss = recording_compute_loss
    # the script's globals kept until the process ends, as python keeps them (freed on return, a DDP
    # model's gloo process group can deadlock in its destructor: tests/snippets/test_script_zygote.py)
    from sealed import run_as_main  # tests/snippets/sealed.py: the sealed copy in a rehearsal

    KEPT.append(run_as_main(script, sys.argv[1:]))


if __name__ == "__main__":
    main()
