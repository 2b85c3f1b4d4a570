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
from functools import lru_cache


@dataclass(frozen=True)
class Built:
    total: int
    largest_module: int
    linear: int
    layers: tuple[int, ...]  # parameters of each decoder layer
    layer_types: tuple[str, ...] | None
    model: object  # the meta-device model (for PEFT)


def _key(cfg: dict) -> str:
    return json.dumps(cfg, sort_keys=True)


@lru_cache(maxsize=None)
def _built(key: str) -> Built:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    cfg = json.loads(key)
    model_type = cfg.pop("model_type")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(model_type, **cfg)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    unique = {id(p): p.numel() for p in model.parameters()}
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    linear = sum(sum(p.numel() for p in m.parameters(recurse=False))
                 for m in model.modules() if type(m) is torch.nn.Linear)
    layers = tuple(sum(p.numel() for p in layer.parameters()) for layer in model.model.layers)
    return Built(sum(unique.values()), largest, linear, layers,
                 tuple(getattr(config, "layer_types", None) or ()) or None, model)


def built(cfg: dict) -> Built:
    """The meta-device model of ``cfg`` (a parsed config.json with its model_type), built once."""
    return _built(_key(cfg))
