"""The loss's backward on real decoder models: ``ActivationMemory.peak_bytes`` against the
profiler's allocator events; and what the checkpoints keep with full recomputation.

A training step of a small transformers ``*ForCausalLM`` (bf16, CPU, the attention
transformers runs it with), its output kept as a training loop keeps it: the live bytes of
the profiler's allocator events at the end of forward, and their most while the loss's
backward runs (from ``backward()`` until the gradient of the logits exists, a hook on
them). Between the two, ``nll_loss``'s and ``log_softmax``'s fp32 gradients coexist:
8 x vocabulary x tokens bytes (less the 8 B per token of the shifted labels, freed by
then). With every layer checkpointed the loss's backward comes before any recomputation,
so the peak is what is kept plus those two buffers.
"""

from __future__ import annotations

import pytest

import vram
from tests.vram import allocator_oracle
from tests.vram.test_activations_oracle import CONFIGS

SEQ, BATCH, VOCAB = 64, 2, 4000
FAMILIES = ("llama", "gemma2")  # sdpa; eager with final softcapping (the loss is the same in every family)
# What the forward keeps matches the saved-tensor oracle (test_activations_oracle.py) to the
# byte; live bytes also hold the rotary tables, the mask and the autocast-free outputs
# (under 2.5 % here, gemma2's eager masks the most).
TOL_PEAK = 0.025


def _measure(raw: dict, attention: str, checkpointing: bool, seq: int = SEQ) -> tuple[int, int]:
    """(live bytes at the end of forward, their most from backward() until the logits' gradient)."""
    return allocator_oracle.step(raw, attention, seq, BATCH, checkpointing=checkpointing).live(
        "backward", "logits_grad"
    )


@pytest.mark.parametrize("recompute", ["none", "full"])
@pytest.mark.parametrize("family", FAMILIES)
def test_loss_backward_adds_two_fp32_vocabulary_buffers(family, recompute):
    raw = {**CONFIGS[family], "vocab_size": VOCAB}
    config = vram.model_config_from_dict(raw)
    attention = vram.default_attention(config)
    end_of_forward, peak = _measure(raw, attention, recompute == "full")
    memory = vram.activation_memory(config, SEQ, BATCH, attention, recompute)
    assert memory.loss_backward_bytes == 8 * VOCAB * SEQ * BATCH
    assert peak - end_of_forward == pytest.approx(memory.loss_backward_bytes, rel=1e-3)
    assert peak == pytest.approx(memory.peak_bytes, rel=TOL_PEAK)
    # what the figure without the loss's backward said: far below the measured peak
    assert memory.total_bytes < peak * (1 - TOL_PEAK)


def test_llama_3_1_8b_reference_with_full_recomputation(shared_configs):
    """The finder's reference (2,048 tokens, micro-batch 1, every layer checkpointed): the
    loss's two fp32 buffers, 8 x 128,256 x 2,048 = 2.10 GB, dominate the activations."""
    config = vram.load_model_config(shared_configs / "llama-3.1-8b.json")
    memory = vram.activation_memory(config, 2048, 1, "sdpa", "full")
    assert memory.loss_backward_bytes == 8 * 128_256 * 2048
    assert memory.peak_bytes == memory.total_bytes - memory.recomputed_bytes + memory.loss_backward_bytes
    assert round(memory.peak_bytes / 1e9, 2) == 4.28  # the audit: 4.28 GB needed, 2.59 shown


# With every layer checkpointed, the checkpoints keep the 4-D masks the layers receive, once
# per kind of layer: under eager a (b, 1, s, s) mask in the dtype (gemma2: a full and a
# sliding one), under sdpa a boolean one where a layer gets a mask (mistral: its window is
# shorter than the sequence). What is left apart: the rotary tables (cos and sin) and a few
# small tensors, under 1.5 % here, where the masks are 2 to 10 %.
@pytest.mark.parametrize("family, attention", [("gemma2", "eager"), ("mistral", "sdpa")])
def test_checkpointed_layers_keep_their_masks(family, attention):
    seq = 256
    raw = CONFIGS[family]
    end_of_forward, _ = _measure(raw, attention, True, seq)
    memory = vram.activation_memory(vram.model_config_from_dict(raw), seq, BATCH, attention, "full")
    kept = memory.total_bytes - memory.recomputed_bytes  # no recomputation has run yet
    assert kept <= end_of_forward < kept * 1.015
