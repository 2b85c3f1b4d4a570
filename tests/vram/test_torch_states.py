"""The calculator's bytes per parameter against real PyTorch tensors on CPU.

Each case builds a small real model, runs one forward/backward and one optimizer step,
and sums ``nbytes`` of the parameters, of their ``.grad`` and of the optimizer's state
tensors. The scalar ``step`` counters that ``torch.optim.AdamW`` keeps per parameter
(a 0-d tensor each, not a per-element state) are excluded. The parameter count fed to
the calculator is ``sum(p.numel())``; the expected bytes are the measured ones.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import vram


def _tiny_block() -> nn.Module:
    return nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0, batch_first=True)


class _TinyLM(nn.Module):
    """Embedding -> transformer block -> LayerNorm -> Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.block = _tiny_block()
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 50)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.block(self.embed(tokens))))


# name -> (model factory, input factory)
MODELS = {
    "linear": (lambda: nn.Linear(16, 8), lambda: torch.randn(4, 16)),
    "embedding": (lambda: nn.Embedding(50, 12), lambda: torch.randint(0, 50, (4, 3))),
    "layernorm": (lambda: nn.LayerNorm(12), lambda: torch.randn(4, 12)),
    "transformer_block": (_tiny_block, lambda: torch.randn(2, 5, 16)),
    "tiny_lm": (_TinyLM, lambda: torch.randint(0, 50, (2, 5))),
}
OPTIMIZERS = {
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3),
    "sgd": lambda params: torch.optim.SGD(params, lr=1e-3, momentum=0.9),
}


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of the optimizer's per-parameter state tensors, without the 'step' scalars."""
    return _nbytes(
        value
        for state in optimizer.state.values()
        for key, value in state.items()
        if key != "step" and torch.is_tensor(value)
    )


def _one_step(model: nn.Module, inputs: torch.Tensor, optimizer: torch.optim.Optimizer) -> None:
    model(inputs).float().sum().backward()
    optimizer.step()


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("optim_name, calculator_name", [("adamw", "adamw-fp32"), ("sgd", "sgd-fp32")])
def test_fp32_training_matches_real_tensors(model_name, optim_name, calculator_name):
    make_model, make_input = MODELS[model_name]
    model = make_model()
    optimizer = OPTIMIZERS[optim_name](model.parameters())
    _one_step(model, make_input(), optimizer)
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    states = vram.model_states_per_gpu(n, 1, 0, calculator_name)
    assert states.weights_bytes == _nbytes(params)
    assert states.gradients_bytes == _nbytes(p.grad for p in params)
    assert states.optimizer_bytes == _state_bytes(optimizer)


def test_adamw_on_bf16_parameters_keeps_bf16_moments():
    model = _TinyLM().to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    _one_step(model, torch.randint(0, 50, (2, 5)), optimizer)
    params = list(model.parameters())
    states = vram.model_states_per_gpu(sum(p.numel() for p in params), 1, 0, "adamw-bf16")
    assert states.weights_bytes == _nbytes(params)
    assert states.gradients_bytes == _nbytes(p.grad for p in params)
    assert states.optimizer_bytes == _state_bytes(optimizer)


@pytest.mark.parametrize(
    "optim_name, calculator_name, fp32_grads",
    [("adamw", "adamw", False), ("sgd", "sgd", False), ("adamw", "adamw-fp32-grads", True)],
)
def test_mixed_precision_with_fp32_master_copy(optim_name, calculator_name, fp32_grads):
    """bf16 model for forward/backward, fp32 master copy stepped by the optimizer.

    What stays allocated between steps: bf16 weights; bf16 gradients (or, with fp32
    gradient accumulation, fp32 gradient buffers on the master copy instead); the fp32
    master weights and the optimizer's moments (counted as optimizer states, ZeRO §3.1).
    """
    model = _TinyLM().to(torch.bfloat16)
    master = [p.detach().float().clone().requires_grad_(True) for p in model.parameters()]
    optimizer = OPTIMIZERS[optim_name](master)
    model(torch.randint(0, 50, (2, 5))).float().sum().backward()
    for p, m in zip(model.parameters(), master, strict=True):
        m.grad = p.grad.float()
        if fp32_grads:
            p.grad = None  # the fp32 buffer is the only gradient kept
    optimizer.step()
    params = list(model.parameters())
    gradient_tensors = [m.grad for m in master] if fp32_grads else [p.grad for p in params]
    states = vram.model_states_per_gpu(sum(p.numel() for p in params), 1, 0, calculator_name)
    assert states.weights_bytes == _nbytes(params)
    assert states.gradients_bytes == _nbytes(gradient_tensors)
    assert states.optimizer_bytes == _nbytes(master) + _state_bytes(optimizer)


def test_lora_adapter_shapes_match_a_real_low_rank_pair():
    """A rank-r adapter on a frozen Linear(in, out): A is r x in, B is out x r."""
    config = {
        "model_type": "llama",
        "vocab_size": 10,
        "hidden_size": 16,
        "intermediate_size": 24,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    }
    rank = 4
    # q_proj: 16 -> 16; v_proj: 16 -> 2 KV heads x 4 = 8 (shapes of the HF llama module).
    adapters = [
        nn.Linear(16, rank, bias=False),
        nn.Linear(rank, 16, bias=False),
        nn.Linear(16, rank, bias=False),
        nn.Linear(rank, 8, bias=False),
    ]
    real = sum(p.numel() for a in adapters for p in a.parameters())
    assert vram.lora_adapter_params(config, rank, ("q_proj", "v_proj")) == real


def test_kv_cache_matches_real_cache_tensors(shared_configs):
    """HF's cache keeps, per layer, K and V of shape (batch, kv_heads, seq, head_dim)."""
    config = vram.load_model_config(shared_configs / "llama-3.1-8b.json")
    batch, seq = 2, 8192
    per_layer = torch.empty(batch, 8, seq, 128, dtype=torch.bfloat16, device="meta")
    real = 32 * 2 * per_layer.nbytes
    assert vram.kv_cache_bytes(config, seq, batch, "bf16") == real
    fp8 = torch.empty(batch, 8, seq, 128, dtype=torch.float8_e4m3fn, device="meta")
    assert vram.kv_cache_bytes(config, seq, batch, "fp8") == 32 * 2 * fp8.nbytes


# --- PyTorch AMP (fp32 parameters, bf16 autocast), AdamW: --framework fsdp2 --zero-stage 0 --

AMP_LLAMA = {
    "model_type": "llama",
    "vocab_size": 3175,
    "hidden_size": 64,
    "intermediate_size": 577,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}  # P = 776,064 (shared/cases/oracles.md)


def test_amp_adamw_is_4_4_8_plus_the_bf16_copies_autocast_keeps():
    """One GPU under AMP: the calculator's DDP/AMP split equals the tensors of a real step.

    The bf16 copies are what autograd saves of the casts autocast makes of every
    nn.Linear weight (shapes of the model's Linear weights, bf16, counted once per storage):
    they live from forward to backward.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    model = LlamaForCausalLM(
        LlamaConfig(**{k: v for k, v in AMP_LLAMA.items() if k != "model_type"}, attn_implementation="sdpa")
    )
    linear_shapes = {tuple(m.weight.shape) for m in model.modules() if isinstance(m, nn.Linear)}
    copies: dict[int, int] = {}

    def keep(t: torch.Tensor) -> torch.Tensor:
        if t.dtype == torch.bfloat16 and t.dim() == 2 and {tuple(t.shape), tuple(t.shape[::-1])} & linear_shapes:
            copies[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, AMP_LLAMA["vocab_size"], (2, 8))
    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t), torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(input_ids=tokens, labels=tokens).loss
    loss.backward()
    optimizer.step()
    params = list(model.parameters())
    assert sum(p.numel() for p in params) == 776_064
    assert sum(copies.values()) == 1_144_832  # oracles.md: about 1.5 B per parameter
    shape = vram.model_shape(vram.model_config_from_dict(AMP_LLAMA))
    calc = vram.fsdp2_memory(shape, 1, 0, moment="block")  # backward; the step: test_optimizer_step.py
    assert calc.weights_bytes == _nbytes(params) == 4 * 776_064
    assert calc.gradients_bytes == _nbytes(p.grad for p in params) == 4 * 776_064
    assert calc.optimizer_bytes == _state_bytes(optimizer) == 8 * 776_064
    assert calc.working_bytes == sum(copies.values())  # one GPU: no DDP buckets
