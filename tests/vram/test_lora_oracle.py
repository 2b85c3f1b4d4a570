"""LoRA adapters against PEFT 0.21 itself, and the QLoRA base against transformers' bitsandbytes rules.

Oracles:
- ``peft.get_peft_model`` on the model transformers 5.23 builds on the meta device, with the
  same ``target_modules``; the trainable parameters it creates are counted (PEFT converts the
  targets of transformers-5 MoE models itself: routers and fused experts become
  ``target_parameters``, ``gate_up_proj`` at twice the rank).
- transformers' own selection of what bitsandbytes quantises
  (``integrations/bitsandbytes.replace_with_bnb_linear``): modules whose type is exactly
  ``nn.Linear``, minus ``quantizers.base.get_keys_to_not_convert`` (lm_head, tied weights),
  filtered by ``should_convert_module``; bitsandbytes itself is not installed (no CUDA here),
  so the replacement is not run, only its selection.
"""

from __future__ import annotations

import json
import warnings

import pytest
import torch
from hypothesis import given, settings

import vram
from tests.conftest import REPO_ROOT
from tests.vram.conftest import SHARED_CONFIGS
from tests.vram.model_variants import FAMILIES, config as family_config
from tests.vram.transformers_oracle import hf_config

MODELS = REPO_ROOT / "snippets" / "data" / "models"


def _meta_model(raw: dict):
    from transformers import AutoModelForCausalLM

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        return AutoModelForCausalLM.from_config(hf_config(raw))


def _peft_trainable(raw: dict, rank: int, target_modules) -> int:
    from peft import LoraConfig, get_peft_model

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = get_peft_model(_meta_model(raw), LoraConfig(r=rank, target_modules=target_modules))
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _raw(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


SHIPPED = [
    "llama-3.1-8b.json",
    "mixtral-8x7b-v0.1.json",
    "qwen3-30b-a3b.json",
    "phi-4.json",
    "gpt-oss-20b.json",
    "qwen3-8b.json",
    "glm-4-9b-0414.json",  # fused gate_up_proj, q/k/v biases
]


@pytest.mark.parametrize("name", SHIPPED)
def test_all_linear_equals_peft(name):
    raw = _raw(MODELS / name)
    assert vram.lora_adapter_params(raw, 16) == _peft_trainable(raw, 16, "all-linear")


@pytest.mark.parametrize("family", FAMILIES)
def test_all_linear_variants_equal_peft(family):
    @settings(max_examples=4, deadline=None, derandomize=True, database=None)
    @given(family_config(family))
    def check(raw):
        assert vram.lora_adapter_params(raw, 2) == _peft_trainable(raw, 2, "all-linear")

    check()


@pytest.mark.parametrize(
    "name, targets",
    [
        ("mixtral-8x7b-v0.1.json", ["q_proj", "v_proj"]),  # PEFT's default for mixtral
        ("mixtral-8x7b-v0.1.json", ["w1", "w3", "w2", "gate"]),  # transformers 4 names, converted by PEFT
        ("mixtral-8x7b-v0.1.json", ["w2"]),
        ("qwen3-30b-a3b.json", ["gate_proj", "up_proj", "down_proj"]),
        ("phi-4.json", ["qkv_proj"]),
        ("gpt-oss-20b.json", ["q_proj", "k_proj", "v_proj", "o_proj"]),
    ],
)
def test_explicit_targets_equal_peft(name, targets):
    raw = _raw(MODELS / name)
    assert vram.lora_adapter_params(raw, 8, targets) == _peft_trainable(raw, 8, targets)


@pytest.mark.parametrize("family", sorted(vram.lora.PEFT_DEFAULT_TARGETS))
def test_peft_default_targets(family):
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as MAPPING

    assert tuple(MAPPING[family]) == vram.lora.PEFT_DEFAULT_TARGETS[family]


def test_half_a_fused_pair_is_refused_like_peft():
    from peft import LoraConfig, get_peft_model

    raw = _raw(MODELS / "mixtral-8x7b-v0.1.json")
    with pytest.raises(ValueError, match="w1 of mixtral need w3 too"):
        vram.lora_adapter_params(raw, 8, ["w1"])
    with pytest.raises(ValueError, match="without also targeting w3"), torch.device("meta"):
        get_peft_model(_meta_model(raw), LoraConfig(r=8, target_modules=["w1"]))


def test_gpt_oss_experts_are_not_lora_targets():
    with pytest.raises(ValueError, match=r"experts of gpt_oss is not an nn\.Linear"):
        vram.lora_adapter_params(MODELS / "gpt-oss-20b.json", 8, ["experts"])


# --- QLoRA: what transformers hands to bitsandbytes --------------------------------------


def _quantized_by_transformers(raw: dict) -> int:
    from transformers.quantizers.base import get_keys_to_not_convert
    from transformers.quantizers.quantizers_utils import should_convert_module

    model = _meta_model(raw)
    skip = get_keys_to_not_convert(model)
    return sum(
        m.weight.numel()
        for name, m in model.named_modules()
        if type(m) is torch.nn.Linear and should_convert_module(name, skip)
    )


@pytest.mark.parametrize(
    "path", [SHARED_CONFIGS / "llama-3.2-1b.json", *(MODELS / n for n in SHIPPED)], ids=lambda p: p.name
)
def test_qlora_quantizes_what_transformers_selects(path):
    raw = _raw(path)
    assert vram.lora.qlora_quantized_params(raw) == _quantized_by_transformers(raw)


def test_qlora_mixtral_keeps_its_experts_in_bf16():
    # transformers 5.x: the experts are 3-D parameters, not nn.Linear, so bitsandbytes leaves
    # them alone: 32 layers x 8 experts x 3 x 14,336 x 4,096 = 45,097,156,608 bf16 weights.
    config = MODELS / "mixtral-8x7b-v0.1.json"
    total = vram.count_params(config).total
    assert total - vram.lora.qlora_quantized_params(config) > 45_097_156_608
    assert vram.qlora_base_bytes(config) > 2 * 45_097_156_608


def test_a_string_other_than_all_linear_is_refused_as_peft_reads_it_as_a_regex():
    # PEFT full-matches a string target_modules against whole module names: "q_proj" matches
    # no "model.layers.0.self_attn.q_proj" and PEFT refuses it; the calculator took it as a name.
    from peft import LoraConfig, get_peft_model

    raw = _raw(MODELS / "llama-3.1-8b.json")
    with pytest.raises(ValueError, match="Target modules q_proj not found"), torch.device("meta"):
        get_peft_model(_meta_model(raw), LoraConfig(r=8, target_modules="q_proj"))
    with pytest.raises(
        ValueError, match=r"target_modules 'q_proj' is a string: pass a list of names such as \['q_proj'\]"
    ):
        vram.lora_adapter_params(raw, 8, "q_proj")
    assert vram.lora_adapter_params(raw, 8, ["q_proj"]) == _peft_trainable(raw, 8, ["q_proj"])
