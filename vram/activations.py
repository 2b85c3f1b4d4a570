"""Activation memory of a transformer's layers (Korthikanti et al. 2022, arXiv:2205.05198).

Table 2 (no tensor or sequence parallelism, 16-bit activations, 1-byte dropout masks),
bytes per layer for sequence length s, micro-batch b, hidden size h, heads a:

- no recomputation:        s*b*h*(34 + 5*a*s/h)   (§4.1, equation 1)
- selective recomputation: 34*s*b*h                (§5: attention's s*s part recomputed)
- full recomputation:      2*s*b*h                 (only each layer's input is kept)

5*a*s/h * s*b*h = 5*a*s^2*b, so the results are exact integers. The formula is for the
GPT layer of the paper (multi-head attention, 4h MLP); for GQA or SwiGLU models it is an
estimate. Embeddings, the output layer and the loss are not included (§4.3).
"""

from __future__ import annotations

from .validate import check_int

RECOMPUTE = ("none", "selective", "full")


def activation_bytes_per_layer(
    seq_length: int, micro_batch: int, hidden_size: int, num_heads: int, recompute: str = "none"
) -> int:
    """Bytes of activations one layer keeps for the backward pass (Table 2).

    recompute: "none", "selective" or "full". Raises ValueError for a non-positive size
    or an unknown recompute mode.
    """
    s = check_int(seq_length, "seq_length", 1)
    b = check_int(micro_batch, "micro_batch", 1)
    h = check_int(hidden_size, "hidden_size", 1)
    a = check_int(num_heads, "num_heads", 1)
    if recompute == "none":
        return 34 * s * b * h + 5 * a * s * s * b
    if recompute == "selective":
        return 34 * s * b * h
    if recompute == "full":
        return 2 * s * b * h
    raise ValueError(f"unknown recompute {recompute!r}; known: {', '.join(RECOMPUTE)}")


def activation_bytes(
    seq_length: int,
    micro_batch: int,
    hidden_size: int,
    num_heads: int,
    num_layers: int,
    recompute: str = "none",
) -> int:
    """Bytes of activations of ``num_layers`` layers: L x ``activation_bytes_per_layer``.

    Raises ValueError as ``activation_bytes_per_layer`` does, or for num_layers < 1.
    """
    layers = check_int(num_layers, "num_layers", 1)
    return layers * activation_bytes_per_layer(seq_length, micro_batch, hidden_size, num_heads, recompute)
