"""The finder's training verdicts against totals built here from independent sources.

For a seeded sample of the finder's full-AdamW choices (model, cards, method) plus the
issue's named cases, the test derives what one card needs without vram's memory formulas:

- parameters from the model transformers builds on the meta device (transformers_oracle.py):
  P, the nn.Linear elements W, each decoder layer B, the root R = P - layers, lm_head and the
  final norm O, DeepSpeed's largest module, and rank 0's FSDP2 shard S = sum over parameters
  of ceil(dim0 / N) x the other dims (torch.chunk on dim 0, as ``fully_shard`` shards);
- bytes per parameter by hand, as measured by the audit of issue 17 and the gloo tests:
  DDP under AMP with torch.optim.AdamW foreach: the step holds 4 + 4 + 8 B, a 4 B foreach
  temporary and, on more than one card, 4 B of buckets (20·P on one card, 24·P on more);
  backward holds 16·P, the buckets and autocast's bf16 copies of every nn.Linear (2·W).
  FSDP2 reshard_after_forward=True: the step 20·S (16·S + the 4 B temporary); backward 16·S +
  the larger of a block's moment (2R + 2O + 10B) and the root's reduce-scatter (6R)
  (tests/vram/test_fsdp2_torchrun.py, ``test_what_the_peaks_are_made_of``);
- DeepSpeed ZeRO-2/3: DeepSpeed's own estimator functions (no offload);
- activations: ``vram.activation_memory(...).peak_bytes`` at the finder's reference, the one
  vram figure used here, checked against saved-tensor hooks and the real loss's backward in
  tests/vram/test_activations_oracle.py and test_loss_backward.py;
- cards: nvidia-smi's memory less the reserve, read from gpus.yaml.

A card fits when max(step, backward + activations) <= its usable bytes ("none" without
recomputation, "full" only with it); a card that holds the step but not the activations is
"short". The finder's answer (``hooks.finder.compute.result``) must agree card by card.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import yaml

import vram

from tests.vram.transformers_oracle import built

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = REPO_ROOT / "snippets" / "data"
TASK = "full-adamw"
METHODS = ("ddp", "fsdp2-reshard", "zero2", "zero3")
SAMPLE = 20
# the issue's named cases: the default view, and two "fits" the step broke
NAMED = [("llama-3.1-8b", 1, "ddp"), ("qwen3-32b", 4, "fsdp2-reshard"), ("gpt-oss-20b", 4, "fsdp2-reshard")]


def _yaml(name: str) -> dict:
    return yaml.safe_load((DATA / name).read_text(encoding="utf-8"))


FINDER, GPUS, MODELS = _yaml("finder.yaml"), _yaml("gpus.yaml"), _yaml("models.yaml")["models"]


def _config(model_key: str) -> dict:
    return json.loads((DATA / "models" / MODELS[model_key]["config"]).read_text(encoding="utf-8"))


def _cases() -> list[tuple[str, int, str]]:
    every = [(m, n, method) for m in MODELS for n in FINDER["settings"]["cards"] for method in METHODS]
    sample = random.Random(17).sample(sorted(set(every) - set(NAMED)), SAMPLE)
    return NAMED + sample


def _sizes(cfg: dict, cards: int) -> dict[str, int]:
    b = built(cfg)
    model = b.model
    unique = {id(p): p for p in model.parameters()}.values()
    shard = sum(math.ceil(p.shape[0] / cards) * math.prod(p.shape[1:]) for p in unique)
    output = sum(p.numel() for p in {id(p): p for m in (model.lm_head, model.model.norm) for p in m.parameters()}.values())
    assert len(set(b.layers)) == 1  # every decoder layer alike in these models
    return {"P": b.total, "W": b.linear, "B": b.layers[0], "R": b.total - sum(b.layers), "O": output,
            "S": shard, "largest": b.largest_module}


def _deepspeed(stage: int, params: int, largest: int, cards: int) -> int:
    if stage == 2:
        from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs
        return int(estimate_zero2_model_states_mem_needs(params, cards, 1, cpu_offload=False)[1])
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    return int(estimate_zero3_model_states_mem_needs(params, largest, cards, 1, cpu_offload=False,
                                                     cpu_offload_params=False)[1])


def oracle_bytes(model_key: str, cards: int, method: str) -> tuple[int, int]:
    """(the most the step or backward holds without activations, what backward holds)."""
    s = _sizes(_config(model_key), cards)
    if method == "ddp":
        buckets = 4 * s["P"] if cards > 1 else 0
        step = 16 * s["P"] + 4 * s["P"] + buckets
        backward = 16 * s["P"] + 2 * s["W"] + buckets
    elif method == "fsdp2-reshard":
        step = 20 * s["S"]
        backward = 16 * s["S"] + max(2 * s["R"] + 2 * s["O"] + 10 * s["B"], 6 * s["R"])
    else:
        step = backward = _deepspeed(int(method[-1]), s["P"], s["largest"], cards)
    return max(step, backward), backward


def oracle_verdicts(model_key: str, cards: int, method: str) -> tuple[int, dict[str, str], set[str]]:
    per_gpu, backward = oracle_bytes(model_key, cards, method)
    ref = FINDER["settings"]["activations"]
    cfg = vram.model_config_from_dict(_config(model_key))
    activations = {mode: vram.activation_memory(cfg, ref["seq_length"], ref["micro_batch"],
                                                vram.default_attention(cfg), mode).peak_bytes for mode in ("none", "full")}
    fits, short = {}, set()
    for key, gpu in GPUS["gpus"].items():
        usable = (gpu["memory_mib"] - GPUS["reserve_mib"]) * 2**20
        if per_gpu > usable:
            continue
        modes = [m for m in ("none", "full") if max(per_gpu, backward + activations[m]) <= usable]
        if modes:
            fits[key] = modes[0]
        else:
            short.add(key)
    return per_gpu, fits, short


@pytest.fixture(scope="module")
def catalogue():
    from hooks.finder import compute as finder
    return finder.load_catalogue()


def finder_answer(catalogue, model_key: str, cards: int, method: str) -> tuple[float, dict[str, str], set[str]]:
    """What the finder shows for one choice (the one place this test reads hooks/finder/compute.py)."""
    from hooks.finder import compute as finder
    found = finder.result(catalogue, model_key, TASK, cards, method)
    return found["per_gpu_gb"], {f["gpu"]: f["recompute"] for f in found["fits"]}, {s["gpu"] for s in found["short"]}


def test_the_sample_covers_every_method_and_both_recompute_verdicts():
    cases = _cases()
    assert len(cases) == SAMPLE + len(NAMED) and {c[2] for c in cases} == set(METHODS)
    verdicts = {v for case in cases for v in oracle_verdicts(*case)[1].values()}
    assert verdicts == {"none", "full"}


@pytest.mark.parametrize("model_key, cards, method", _cases())
def test_finder_verdicts_equal_the_oracle_backed_totals(catalogue, model_key, cards, method):
    per_gpu, fits, short = oracle_verdicts(model_key, cards, method)
    per_gpu_gb, finder_fits, finder_short = finder_answer(catalogue, model_key, cards, method)
    assert per_gpu_gb * 1e9 == pytest.approx(per_gpu, rel=1e-12)
    assert (finder_fits, finder_short) == (fits, short)


def test_the_default_view_needs_the_step():
    """Llama 3.1 8B, full AdamW, one card, DDP: the foreach step (20·P) is what one card must hold."""
    s = _sizes(_config("llama-3.1-8b"), 1)
    per_gpu, fits, _ = oracle_verdicts("llama-3.1-8b", 1, "ddp")
    assert per_gpu == 20 * s["P"] > 16 * s["P"] + 2 * s["W"]
    h200 = (GPUS["gpus"]["h200"]["memory_mib"] - GPUS["reserve_mib"]) * 2**20
    assert per_gpu > h200 and "h200" not in fits


@pytest.mark.parametrize("model_key, cards, method, gpu", [("qwen3-32b", 4, "fsdp2-reshard", "h200"),
                                                           ("gpt-oss-20b", 4, "fsdp2-reshard", "rtx-pro-6000")])
def test_the_issues_broken_fits_do_not_fit_by_the_oracle(model_key, cards, method, gpu):
    """Issue 17: 'fits' verdicts the foreach step breaks (20·S per card under FSDP2)."""
    per_gpu, fits, short = oracle_verdicts(model_key, cards, method)
    assert per_gpu == 20 * _sizes(_config(model_key), cards)["S"]
    assert gpu not in fits and gpu not in short
