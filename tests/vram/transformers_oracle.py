"""The independent source of parameter counts: the model ``transformers`` builds from a config.

``built(cfg)`` builds ``AutoModelForCausalLM.from_config`` on the meta device (no weights, no
download) once per distinct config for the whole session and returns what the tests compare
with the calculator: parameters counted once per object (tied weights once), the largest
sum of direct parameters of one module (DeepSpeed's ``model_to_params`` loop), the elements
of every ``nn.Linear``, and each decoder layer's parameters.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class Built:
    total: int
    largest_module: int
    linear: int
    layers: tuple[int, ...]  # parameters of each decoder layer
    cache_layers: tuple[tuple[str, ...], int | None]  # DynamicCache's layer kinds, and the window of the sliding ones
    model: Any  # the meta-device model (for PEFT)


def _key(cfg: dict) -> str:
    return json.dumps(cfg, sort_keys=True)


@cache
def _hf_config(key: str):
    from transformers import AutoConfig
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    cfg = json.loads(key)
    model_type = cfg.pop("model_type")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoConfig.for_model(model_type, **cfg)


def hf_config(cfg: dict):
    """The transformers config object of ``cfg`` (defaults of its config class applied)."""
    return _hf_config(_key(cfg))


@cache
def _built(key: str) -> Built:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.cache_utils import get_layer_types_and_kwargs

    config = _hf_config(key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    unique = {id(p): p.numel() for p in model.parameters()}
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    linear = sum(
        sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules() if type(m) is torch.nn.Linear
    )
    layers = tuple(sum(p.numel() for p in layer.parameters()) for layer in model.model.layers)
    kinds, kwargs = get_layer_types_and_kwargs(config.get_text_config(decoder=True))
    windows = {kw["sliding_window"] for kw in kwargs if "sliding_window" in kw}
    assert len(windows) <= 1
    cache_layers = (tuple(kinds), windows.pop() if windows else None)
    return Built(sum(unique.values()), largest, linear, layers, cache_layers, model)


def built(cfg: dict) -> Built:
    """The meta-device model of ``cfg`` (a parsed config.json with its model_type), built once."""
    return _built(_key(cfg))
