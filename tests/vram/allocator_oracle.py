"""The live-bytes oracle: the profiler's allocator events of one training step of a transformers model on CPU.

``step(raw, attention, ...)`` builds a ``*ForCausalLM`` from a config dict (bf16 or fp32, the
given attention, optionally every layer checkpointed), runs one forward with
``labels=input_ids`` and the loss's backward under ``torch.profiler`` with
``profile_memory=True``, keeping the model's output alive as a training loop does, and returns
every allocation and free (time, signed bytes, address, the ops it ran inside) with the
windows of forward, backward and the moment the logits' gradient exists. The weights are
allocated before the profiler starts: live bytes count activations, the loss and whatever
the backward allocates.

Two kinds of allocation are not activations or not what a GPU run allocates, and
``Step.live`` can leave them out:

- the parameters' gradients (``grads=False``): the last allocation at each address where a
  ``.grad`` lives after the backward;
- the temporaries of two CPU kernels (``cpu_temporaries=False``): ``scatter_`` on a bf16
  tensor works on an fp32 copy of it (4 B per element, the gradient of a ``max`` is a
  ``scatter_``), and ``bmm`` copies an operand that is not contiguous (gpt_oss's probabilities
  without their sink column) before multiplying. CUDA's kernels write the bf16 tensor in place
  and take the strided operand as it is (cuBLAS's leading dimension), so they are left out
  with their frees; ``Step.cpu_temporaries`` lists them so that a test can say what they were.

Nothing here reads ``vram``: it measures.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch._C._profiler import _EventType
from torch.autograd.profiler import record_function

from tests.vram.activations_oracle import build_model

WINDOWS = ("forward", "backward", "logits_grad")


@dataclass(frozen=True)
class Event:
    time_ns: int
    bytes: int  # positive: an allocation; negative: a free
    ptr: int
    ops: tuple[str, ...]  # the profiler's op names around it, outermost first


def _cpu_kernel_temporary(event: Event) -> bool:
    """Allocated inside CPU ``scatter_``, or by an op nested in ``bmm`` (its operand's copy)."""
    return event.bytes > 0 and (
        "aten::scatter_" in event.ops or ("aten::bmm" in event.ops and event.ops[-1] != "aten::bmm")
    )


@dataclass(frozen=True)
class Step:
    events: tuple[Event, ...]  # in time order
    windows: dict[str, tuple[int, int]]  # WINDOWS -> (start, end) in ns
    grad_ptrs: frozenset[int]  # where the parameters' gradients live after the backward

    def _kept(self, grads: bool, cpu_temporaries: bool) -> list[tuple[Event, bool]]:
        last_grad = {}
        if not grads:
            for index, event in enumerate(self.events):
                if event.bytes > 0 and event.ptr in self.grad_ptrs:
                    last_grad[event.ptr] = index
        skip, pending = set(last_grad.values()), set()
        kept = []
        for index, event in enumerate(self.events):
            if not cpu_temporaries:
                if event.bytes < 0 and event.ptr in pending:
                    pending.discard(event.ptr)
                    kept.append((event, False))
                    continue
                if _cpu_kernel_temporary(event):
                    pending.add(event.ptr)
                    kept.append((event, False))
                    continue
            kept.append((event, index not in skip))
        return kept

    def live(
        self, window: str, until: str | None = None, *, grads: bool = True, cpu_temporaries: bool = True
    ) -> tuple[int, int]:
        """(live bytes when ``window`` starts, most live bytes from its start to its end, or
        to the start of ``until``)."""
        start = self.windows[window][0]
        end = self.windows[until][0] if until else self.windows[window][1]
        live, peak = 0, 0
        before: int | None = None
        for event, counted in self._kept(grads, cpu_temporaries):
            if event.time_ns >= start and before is None:
                before = live
            live += event.bytes if counted else 0
            if start <= event.time_ns <= end:
                peak = max(peak, live)
        assert before is not None, f"no allocation after {window!r} started"
        return before, peak

    @property
    def cpu_temporaries(self) -> list[Event]:
        """The CPU kernels' temporaries ``live(cpu_temporaries=False)`` leaves out."""
        return [e for e in self.events if _cpu_kernel_temporary(e)]


def step(raw: dict, attention: str, seq: int, batch: int, *, checkpointing: bool = False, dtype: str = "bf16") -> Step:
    """One profiled training step of the model ``raw`` describes (module docstring)."""
    model = build_model(raw, attention, checkpointing, dtype)
    ids = torch.randint(0, raw["vocab_size"], (batch, seq))

    def mark(grad):
        with record_function("logits_grad"):
            pass

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        with record_function("forward"):
            out = model(input_ids=ids, labels=ids)
        out.logits.register_hook(mark)
        with record_function("backward"):
            out.loss.backward()
    events, windows = [], {}

    def walk(nodes, ops):
        for node in nodes:
            if node.tag == _EventType.Allocation:
                events.append(Event(node.start_time_ns, node.extra_fields.alloc_size, node.extra_fields.ptr, ops))
                continue
            if node.name in WINDOWS:
                windows[node.name] = (node.start_time_ns, node.end_time_ns)
            walk(node.children, (*ops, node.name))

    walk(prof.profiler.kineto_results.experimental_event_tree(), ())
    grad_ptrs = frozenset(p.grad.untyped_storage().data_ptr() for p in model.parameters() if p.grad is not None)
    events.sort(key=lambda e: e.time_ns)
    return Step(tuple(events), windows, grad_ptrs)
