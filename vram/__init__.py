"""The guide's memory and communication calculator (pure Python, no MkDocs).

All results are bytes (ints where exact), per GPU unless a name says otherwise.
GB = 10**9 bytes, GiB = 2**30 bytes (``vram.units``). One module per job:
``states`` (bytes per parameter), ``sharding`` (ZeRO stages, FSDP strategies),
``fsdp2`` (exact FSDP2 shards; FSDP2 and DDP+AMP per step), ``deepspeed_zero``
(DeepSpeed's estimators), ``frameworks`` (one entry point: zero-paper, deepspeed, fsdp2;
results as ``breakdown.FrameworkMemory``), ``training`` (per GPU, optimizer offload),
``checkpoint``, ``activations``, ``communication``, ``models`` (parameters from a
Hugging Face config.json), ``dtypes`` (bf16/fp8/int4/NF4 bytes), ``lora``, ``lora_offload``
(LoRA with host memory),
``serving`` (weights and KV cache, tensor parallel), ``mxfp4`` (gpt-oss's MXFP4 experts),
``fit`` (does it fit a card), ``optimizer_step`` (what torch.optim.AdamW's step allocates,
by implementation), ``job`` (one finder job answered: the finder's calculator),
``accounting`` (the name of the formula behind a job's answer: what it assumes).
"""

from .activations import (
    ATTENTION,
    RECOMPUTE,
    ActivationMemory,
    activation_bytes,
    activation_bytes_per_layer,
    activation_memory,
    default_attention,
)
from .breakdown import FrameworkMemory, ModelShape, Term, model_shape
from .checkpoint import CheckpointSize, checkpoint_bytes
from .communication import (
    allreduce_busbw_factor,
    busbw_from_algbw,
    bytes_per_gpu_per_step,
    gradient_bytes,
    ring_allreduce_bytes_per_gpu,
    seconds_at_busbw,
)
from .deepspeed_zero import deepspeed_memory
from .dtypes import DTYPE_BITS, WEIGHT_DTYPES, nf4_bytes, tensor_bytes
from .fit import fits, free_fraction, training_verdict
from .frameworks import FRAMEWORKS, framework_memory
from .fsdp2 import fsdp2_chunk_rows, fsdp2_local_rows, fsdp2_memory, fsdp2_model_states_per_rank
from .job import JOB_FIELDS, JobError, answer_job, answer_json
from .lora import (
    ALL_LINEAR,
    PEFT_DEFAULT_TARGETS,
    LoraFsdp2Memory,
    LoraMemory,
    LoraTarget,
    lora_adapter_params,
    lora_fsdp2_memory,
    lora_memory,
    lora_memory_for_config,
    lora_memory_per_gpu,
    lora_targets,
    qlora_base_bytes,
    qlora_quantized_params,
)
from .lora_offload import LoraOffloadMemory, lora_offload_memory
from .models import (
    SUPPORTED_MODEL_TYPES,
    ConfigError,
    ModelConfig,
    ParamCount,
    count_params,
    decoder_layer_params,
    largest_layer_params,
    linear_params,
    load_model_config,
    model_config_from_dict,
    root_params,
)
from .optimizer_step import OPTIMIZER_IMPLS, step_temporary_bytes
from .serving import (
    SERVERS,
    ServingMemory,
    check_tensor_parallel,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    kv_cache_tokens,
    kv_heads_per_gpu,
    serving_memory,
    serving_memory_per_gpu,
)
from .sharding import (
    FSDP_TO_ZERO_STAGE,
    ModelStates,
    check_world_size,
    check_zero_stage,
    fsdp_model_states_per_gpu,
    fsdp_zero_stage,
    model_states_per_gpu,
)
from .states import OPTIMIZERS, BytesPerParam, bytes_per_param
from .training import TrainingMemory, training_memory_per_gpu
from .units import GB, GIB, bytes_to_gb, bytes_to_gib, gb_to_bytes, gib_to_bytes, parse_params

__all__ = [
    "ALL_LINEAR",
    "ATTENTION",
    "DTYPE_BITS",
    "FRAMEWORKS",
    "FSDP_TO_ZERO_STAGE",
    "GB",
    "GIB",
    "JOB_FIELDS",
    "OPTIMIZERS",
    "OPTIMIZER_IMPLS",
    "PEFT_DEFAULT_TARGETS",
    "RECOMPUTE",
    "SERVERS",
    "SUPPORTED_MODEL_TYPES",
    "WEIGHT_DTYPES",
    "ActivationMemory",
    "BytesPerParam",
    "CheckpointSize",
    "ConfigError",
    "FrameworkMemory",
    "JobError",
    "LoraFsdp2Memory",
    "LoraMemory",
    "LoraOffloadMemory",
    "LoraTarget",
    "ModelConfig",
    "ModelShape",
    "ModelStates",
    "ParamCount",
    "ServingMemory",
    "Term",
    "TrainingMemory",
    "activation_bytes",
    "activation_bytes_per_layer",
    "activation_memory",
    "allreduce_busbw_factor",
    "answer_job",
    "answer_json",
    "busbw_from_algbw",
    "bytes_per_gpu_per_step",
    "bytes_per_param",
    "bytes_to_gb",
    "bytes_to_gib",
    "check_tensor_parallel",
    "check_world_size",
    "check_zero_stage",
    "checkpoint_bytes",
    "count_params",
    "decoder_layer_params",
    "deepspeed_memory",
    "default_attention",
    "fits",
    "framework_memory",
    "free_fraction",
    "fsdp2_chunk_rows",
    "fsdp2_local_rows",
    "fsdp2_memory",
    "fsdp2_model_states_per_rank",
    "fsdp_model_states_per_gpu",
    "fsdp_zero_stage",
    "gb_to_bytes",
    "gib_to_bytes",
    "gradient_bytes",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "kv_cache_tokens",
    "kv_heads_per_gpu",
    "largest_layer_params",
    "linear_params",
    "load_model_config",
    "lora_adapter_params",
    "lora_fsdp2_memory",
    "lora_memory",
    "lora_memory_for_config",
    "lora_memory_per_gpu",
    "lora_offload_memory",
    "lora_targets",
    "model_config_from_dict",
    "model_shape",
    "model_states_per_gpu",
    "nf4_bytes",
    "parse_params",
    "qlora_base_bytes",
    "qlora_quantized_params",
    "ring_allreduce_bytes_per_gpu",
    "root_params",
    "seconds_at_busbw",
    "serving_memory",
    "serving_memory_per_gpu",
    "step_temporary_bytes",
    "tensor_bytes",
    "training_memory_per_gpu",
    "training_verdict",
]
