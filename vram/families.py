"""The family registry: what the calculator knows of each ``model_type``, one entry each.

Modelled on torchtitan's ``register_train_spec(TrainSpec(...))``: every fact about a family
that the calculator uses is one ``Family`` (``vram.family_spec``) registered here under its
``model_type``; ``vram.models``, ``vram.activations``, ``vram.lora``, ``vram.serving``, the
finder's list of families and the documentation's read it from here. The built-in entries
are ``vram.family_entries.BUILTIN_FAMILIES``; another one is added with
``register_family(Family(...))`` (CONTRIBUTING.md, "A family"). Registering is a dictionary
insert: the registry costs nothing at import.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from .family_entries import BUILTIN_FAMILIES
from .family_spec import CHUNKED, FULL, LAYER_RULES, NORMS, QK_NORMS, REQUIRED_KEYS, SLIDING, Experts, Family

__all__ = [
    "CHUNKED",
    "FULL",
    "LAYER_RULES",
    "MULTIMODAL_WRAPPERS",
    "NORMS",
    "QK_NORMS",
    "REQUIRED_KEYS",
    "SLIDING",
    "Experts",
    "Family",
    "get_family",
    "is_registered",
    "model_types",
    "register_family",
    "unregister_family",
]

# Multimodal wrappers (transformers' *ForConditionalGeneration: a vision tower and a projector
# beside the language model, which are not modelled): model_type -> (the class transformers
# builds, the model_type of the text_config its config class defaults to).
MULTIMODAL_WRAPPERS = {
    "gemma3": ("Gemma3ForConditionalGeneration", "gemma3_text"),
    "mistral3": ("Mistral3ForConditionalGeneration", "mistral"),
    "llama4": ("Llama4ForConditionalGeneration", "llama4_text"),
}

_REGISTRY: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Register ``family`` under its ``model_type`` and return it.

    Raises ValueError when the model_type is registered already (one entry per family).
    """
    if family.model_type in _REGISTRY:
        raise ValueError(f"model_type {family.model_type!r} is registered already")
    _REGISTRY[family.model_type] = family
    return family


def unregister_family(model_type: str) -> None:
    """Remove a registered family (tests that register a fixture entry clean up with it)."""
    _REGISTRY.pop(model_type, None)


def get_family(model_type: str) -> Family:
    """The registered ``Family`` of ``model_type``. Raises KeyError for an unknown one."""
    return _REGISTRY[model_type]


def is_registered(model_type: Any) -> TypeGuard[str]:
    """True when ``model_type`` is a registered family's name."""
    return isinstance(model_type, str) and model_type in _REGISTRY


def model_types() -> tuple[str, ...]:
    """Every registered model_type, sorted."""
    return tuple(sorted(_REGISTRY))


for _family in BUILTIN_FAMILIES:
    register_family(_family)
