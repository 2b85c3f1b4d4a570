"""The activation oracle: bytes autograd really keeps for backward in a transformers model.

Every tensor an op saves for its backward passes through
``torch.autograd.graph.saved_tensors_hooks``; we record its storage, then keep only the
storages still referenced once the forward has finished (a saved tensor of a branch the loss
does not use is freed with that branch). One storage counts once, however many ops saved it
or views of it. Parameters and buffers are not activations, and the tensors every layer
receives from the model (rotary cos/sin, the mask, position ids) are shared by all layers:
they are left out. Attribution: a tensor saved while decoder layer i runs belongs to layer i
(forward pre/post hooks); the rest is outside the layers, split into vocabulary-sized
(last dimension = vocab) and the other.

Nothing here reads ``vram``: it measures.
"""

from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Saved:
    """Bytes kept for backward, measured (ints)."""

    layers: tuple[int, ...]  # per decoder layer
    head: int  # outside the layers, not vocabulary-sized
    logits: int  # outside the layers, vocabulary-sized
    returned_logits: int  # the storage of ``output.logits``


def _storage(t: torch.Tensor) -> tuple[int, int]:
    st = t.untyped_storage()
    return st.data_ptr(), st.nbytes()


def measure(model: torch.nn.Module, input_ids: torch.Tensor, *,
            attention_mask: torch.Tensor | None = None) -> Saved:
    """Run one training forward of a ``*ForCausalLM`` with ``labels=input_ids``; count saves."""
    vocab = model.config.vocab_size
    excluded = {_storage(p)[0] for p in model.parameters()} | {_storage(b)[0] for b in model.buffers()}
    where = ["outside"]
    records: dict[int, dict] = {}
    handles = []

    def enter(index):
        def pre(module, args, kwargs):
            for value in list(kwargs.values()) + list(args[1:]):
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    if isinstance(item, torch.Tensor):
                        excluded.add(_storage(item)[0])
            where[0] = index
        return pre

    def leave(module, args, output):
        where[0] = "outside"

    for index, layer in enumerate(model.model.layers):
        handles.append(layer.register_forward_pre_hook(enter(index), with_kwargs=True))
        handles.append(layer.register_forward_hook(leave))

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr, nbytes = _storage(t)
        if nbytes:
            rec = records.setdefault(ptr, {"where": where[0], "bytes": nbytes, "refs": [],
                                           "vocab": t.dim() > 0 and t.shape[-1] == vocab})
            rec["refs"].append(weakref.ref(t))
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            output = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids)
    finally:
        for handle in handles:
            handle.remove()
    gc.collect()
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

    def pack(t):
        ptr, nbytes = _storage(t)
        if nbytes and ptr not in inputs:
            records.setdefault(ptr, (nbytes, []))[1].append(weakref.ref(t))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        output = function(module, query, key, value, mask, **kwargs)
    gc.collect()
    kept = sum(nbytes for nbytes, refs in records.values() if any(r() is not None for r in refs))
    del output
    return kept
