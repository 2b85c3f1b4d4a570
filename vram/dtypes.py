"""Bytes of tensors stored in a given number format, including 4-bit NF4 with its constants.

Plain formats (``DTYPE_BITS``): fp32 32 bits, bf16/fp16 16, fp8/int8 8, int4 4 bits per
element. ``int4`` counts the 4-bit values only: GPTQ/AWQ-style per-group scales (about
0.1-0.2 bit per element at group size 128) are not included, so it is a lower bound.

NF4 follows QLoRA (Dettmers et al. 2023, arXiv:2305.14314, §3 "4-bit NormalFloat" and
"Double Quantization"): 4-bit values, one absmax constant per block of 64 elements; with
double quantisation those constants are stored as 8-bit floats in blocks of 256 with one
fp32 constant per block: 8/64 + 32/(64*256) = 0.127 bit per element instead of 32/64 = 0.5.
Assumed and not counted: the per-tensor fp32 mean subtracted before the second
quantisation and the shared 16- and 256-entry lookup tables (a few bytes per tensor).
"""

from __future__ import annotations

from .units import ceil_div
from .validate import check_int, lookup

DTYPE_BITS: dict[str, int] = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}
NF4 = "nf4"
WEIGHT_DTYPES = (*DTYPE_BITS, NF4)


def dtype_bits(dtype: str) -> int:
    """Bits per element of a plain format (a key of ``DTYPE_BITS``). Raises ValueError."""
    return lookup(DTYPE_BITS, dtype, "dtype")


def nf4_bytes(n_elements: int, block_size: int = 64, double_quant: bool = True, dq_block_size: int = 256) -> int:
    """Bytes of ONE tensor of ``n_elements`` quantised to NF4 (QLoRA §3), constants included.

    Data: ceil(n/2) bytes. Constants: ceil(n/block_size) of them, fp32 (4 B each), or
    with ``double_quant`` 1 B each plus 4 B per ``dq_block_size`` of them.
    Raises ValueError for a negative or non-integer count.
    """
    check_int(n_elements, "n_elements", 0)
    blocks = ceil_div(n_elements, block_size)
    constants = blocks + 4 * ceil_div(blocks, dq_block_size) if double_quant else 4 * blocks
    return ceil_div(n_elements, 2) + constants


def tensor_bytes(n_elements: int, dtype: str) -> int:
    """Bytes of ``n_elements`` stored as ``dtype`` (``WEIGHT_DTYPES``), rounded up to whole bytes.

    ``nf4`` treats the elements as one tensor (``nf4_bytes``). Raises ValueError.
    """
    check_int(n_elements, "n_elements", 0)
    if dtype == NF4:
        return nf4_bytes(n_elements)
    return ceil_div(n_elements * dtype_bits(dtype), 8)
