"""The guide's memory and communication calculator (pure Python, no MkDocs)."""

from .communication import (
    allreduce_busbw_factor,
    busbw_from_algbw,
    bytes_per_gpu_per_step,
    gradient_bytes,
    ring_allreduce_bytes_per_gpu,
    seconds_at_busbw,
)
from .sharding import FSDP_TO_ZERO_STAGE, ModelStates, fsdp_zero_stage, model_states_per_gpu
from .states import OPTIMIZERS, BytesPerParam, bytes_per_param
from .units import GB, GIB, bytes_to_gb, bytes_to_gib, parse_params

__all__ = [
    "GB", "GIB", "OPTIMIZERS", "FSDP_TO_ZERO_STAGE", "BytesPerParam", "ModelStates",
    "allreduce_busbw_factor", "busbw_from_algbw", "bytes_per_gpu_per_step", "bytes_per_param",
    "bytes_to_gb", "bytes_to_gib", "fsdp_zero_stage", "gradient_bytes", "model_states_per_gpu",
    "parse_params", "ring_allreduce_bytes_per_gpu", "seconds_at_busbw",
]
