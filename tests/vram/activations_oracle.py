"""The activation oracle: bytes autograd really keeps for backward in a transformers model.

Every tensor an op saves for its backward passes through
``torch.autograd.graph.saved_tensors_hooks``; we record its storage, then keep only the
storages the graph still references once the forward has finished (a saved tensor of a
branch the loss does not use is freed with that branch). The graph holds a small holder per
saved tensor, whose liveness we watch (reference counting frees a dead branch's nodes at
once), while we keep every tensor seen: no storage address is reused during a measurement,
so an address names one storage. One storage counts once, however many ops saved it
or views of it. Parameters and buffers are not activations, and the tensors every layer
receives from the model (rotary cos/sin, the mask, position ids) are shared by all layers:
they are left out. Attribution: a tensor saved while decoder layer i runs belongs to layer i
(forward pre/post hooks); the rest is outside the layers, split into vocabulary-sized
(last dimension = vocab) and the other.

Nothing here reads ``vram``: it measures.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def build_model(raw: dict, attention: str, checkpointing: bool = False, dtype: str = "bf16"):
    """The ``*ForCausalLM`` transformers builds from the config dict ``raw`` (seed 0), in
    ``dtype``, training mode, with ``attention`` and optionally every layer checkpointed."""
    import transformers

    fields = {key: value for key, value in raw.items() if key != "model_type"}
    config = transformers.AutoConfig.for_model(raw["model_type"], **fields)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attention)
    model = model.to(DTYPES[dtype]).train()
    if checkpointing:
        model.activation_checkpointing_enable()
    return model


@dataclass(frozen=True)
class Saved:
    """Bytes kept for backward, measured (ints)."""

    layers: tuple[int, ...]  # per decoder layer
    head: int  # outside the layers, not vocabulary-sized
    logits: int  # outside the layers, vocabulary-sized
    returned_logits: int  # the storage of ``output.logits``


class _Held:
    """What the autograd graph keeps in place of a saved tensor."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor


def _storage(t: torch.Tensor) -> tuple[int, int]:
    st = t.untyped_storage()
    return st.data_ptr(), st.nbytes()


def measure(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    *,
    attention_mask: torch.Tensor | None = None,
    use_cache: bool | None = None,
) -> Saved:
    """Run one training forward of a ``*ForCausalLM`` with ``labels=input_ids``; count saves.

    ``use_cache``: None leaves transformers' default (the config's ``use_cache``, true; under
    activation checkpointing transformers turns it off).
    """
    vocab = model.config.vocab_size
    excluded = {_storage(p)[0] for p in model.parameters()} | {_storage(b)[0] for b in model.buffers()}
    where = ["outside"]
    records: dict[int, dict] = {}
    handles = []
    seen: list[torch.Tensor] = []  # every tensor met, kept so that no address is reused

    def enter(index):
        def pre(module, args, kwargs):
            for value in list(kwargs.values()) + list(args[1:]):
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    if isinstance(item, torch.Tensor):
                        seen.append(item)
                        excluded.add(_storage(item)[0])
            where[0] = index

        return pre

    def leave(module, args, output):
        where[0] = "outside"

    for index, layer in enumerate(model.model.layers):
        handles.append(layer.register_forward_pre_hook(enter(index), with_kwargs=True))
        handles.append(layer.register_forward_hook(leave))

    def pack(t: torch.Tensor) -> _Held:
        held = _Held(t)
        seen.append(t)
        ptr, nbytes = _storage(t)
        if nbytes:
            rec = records.setdefault(
                ptr, {"where": where[0], "bytes": nbytes, "refs": [], "vocab": t.dim() > 0 and t.shape[-1] == vocab}
            )
            rec["refs"].append(weakref.ref(held))
        return held

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda held: held.tensor):
            output = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids, use_cache=use_cache)
    finally:
        for handle in handles:
            handle.remove()
    layers = [0] * len(model.model.layers)
    head = logits = 0
    for ptr, rec in records.items():
        if ptr in excluded or not any(ref() is not None for ref in rec["refs"]):
            continue
        if rec["where"] == "outside":
            if rec["vocab"]:
                logits += rec["bytes"]
            else:
                head += rec["bytes"]
        else:
            layers[rec["where"]] += rec["bytes"]
    returned = _storage(output.logits)[1]
    del output
    return Saved(tuple(layers), head, logits, returned)


def attention_core_saves(function, module, query, key, value, mask, **kwargs) -> int:
    """Bytes one attention function keeps beyond its inputs (what a recomputation re-creates)."""
    inputs = {_storage(t)[0] for t in (query, key, value) + ((mask,) if mask is not None else ())}
    records: dict[int, tuple[int, list]] = {}
    seen: list[torch.Tensor] = []

    def pack(t):
        held = _Held(t)
        seen.append(t)
        ptr, nbytes = _storage(t)
        if nbytes and ptr not in inputs:
            records.setdefault(ptr, (nbytes, []))[1].append(weakref.ref(held))
        return held

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda held: held.tensor):
        output = function(module, query, key, value, mask, **kwargs)
    kept = sum(nbytes for nbytes, refs in records.values() if any(r() is not None for r in refs))
    del output
    return kept
