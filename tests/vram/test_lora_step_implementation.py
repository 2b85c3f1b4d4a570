"""Which AdamW the finder's LoRA figures assume, and why it never changes a LoRA verdict.

The LoRA and QLoRA figures count the adapters' fp32 weights, gradients and AdamW states
(4 + 4 + 8 B per trainable parameter) and no temporary of the optimizer step: what a fused
AdamW allocates (the Trainer's default ``adamw_torch_fused``; DeepSpeed's own optimizer under
ZeRO). ``torch.optim.AdamW`` with its default foreach implementation adds, during the step
only, an fp32 temporary of 4 B per trainable parameter on the card
(tests/vram/test_optimizer_step.py). The step comes after backward has freed the
activations, so it decides a verdict only if those 4 B per adapter parameter exceed the
activations the card must already hold at backward. The finder's reference activations with
full recomputation (its smallest) exceed 4·A for every model of the catalogue at the
finder's rank, A counted as PEFT creates the adapters (checked against PEFT in
test_lora_oracle.py) and taken whole, unsharded (the most any card holds): the finder's
LoRA verdicts are the same under foreach and fused, as the page says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import vram

DATA = Path(__file__).resolve().parents[2] / "snippets" / "data"
FINDER = yaml.safe_load((DATA / "finder.yaml").read_text(encoding="utf-8"))
MODELS = yaml.safe_load((DATA / "models.yaml").read_text(encoding="utf-8"))["models"]
FOREACH_BYTES_PER_PARAM = 4  # torch._foreach_sqrt(exp_avg_sq): one fp32 element per trainable parameter


@pytest.mark.parametrize("model_key", MODELS)
def test_the_foreach_temporary_of_the_adapters_is_under_the_activations(model_key):
    cfg = vram.model_config_from_dict(json.loads((DATA / "models" / MODELS[model_key]["config"]).read_text()))
    adapters = vram.lora_adapter_params(cfg, FINDER["settings"]["lora"]["rank"], vram.ALL_LINEAR)
    ref = FINDER["settings"]["activations"]
    activations = vram.activation_memory(
        cfg, ref["seq_length"], ref["micro_batch"], vram.default_attention(cfg), "full"
    ).peak_bytes
    assert FOREACH_BYTES_PER_PARAM * adapters < activations


def test_the_lora_figure_counts_no_step_temporary():
    """16 B per adapter parameter on one card (ZeRO-0): weights, gradients and AdamW states, nothing for the step."""
    cfg = vram.model_config_from_dict(json.loads((DATA / "models" / MODELS["llama-3.1-8b"]["config"]).read_text()))
    rank = FINDER["settings"]["lora"]["rank"]
    memory = vram.lora_memory_per_gpu(cfg, rank, 1, 0, vram.ALL_LINEAR, "bf16")
    adapters = vram.lora_adapter_params(cfg, rank, vram.ALL_LINEAR)
    assert memory.total_bytes - memory.base_weights_bytes == (4 + 4 + 8) * adapters


@pytest.mark.parametrize(
    "lang, words",
    [("it", ("adamw_torch_fused", "foreach", "4 byte")), ("fr", ("adamw_torch_fused", "foreach", "4 octets"))],
)
def test_the_page_names_the_implementation_the_lora_figures_assume(lang, words):
    page = (DATA.parents[1] / "docs" / f"gpu-finder.{lang}.md").read_text(encoding="utf-8")
    lora = next(line for line in page.splitlines() if line.startswith(("- **LoRA e", "- **LoRA et")))
    assert all(word in lora for word in words)
