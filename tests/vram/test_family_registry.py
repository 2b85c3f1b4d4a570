"""The family registry (vram.families) against the libraries it describes, and the tests' tables against it.

Oracles: transformers 5.23's config classes (``CONFIG_MAPPING``: each field's default and
whether it admits None), the modules of a small decoder layer transformers builds (the
RMSNorms by name), PEFT 0.21's ``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`` and
transformers' ``_MOE_TARGET_MODULE_MAPPING`` (the expert names PEFT converts). Then a
fixture family registered like any other: its parameter, LoRA and KV-cache figures follow
the registry entry, and equal what transformers and PEFT give for the model it describes.
"""

from __future__ import annotations

import dataclasses
import types
import typing
import warnings
from pathlib import Path

import pytest
import torch

import vram
from tests.vram import model_variants, test_activations_oracle, test_kv_cache_oracle
from tests.vram.transformers_oracle import built, hf_config
from vram.families import Family, get_family, model_types, register_family, unregister_family

FAMILIES = model_types()


def _config_class(model_type: str):
    from transformers import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]


def _admits_none(annotation) -> bool:
    if isinstance(annotation, str):  # postponed annotations: "int | None"
        return "None" in annotation
    return (
        type(None) in typing.get_args(annotation)
        or annotation is type(None)
        or (isinstance(annotation, types.UnionType) and type(None) in annotation.__args__)
    )


@pytest.mark.parametrize("model_type", FAMILIES)
def test_entry_matches_its_config_class(model_type):
    family = get_family(model_type)
    cls = _config_class(model_type)
    assert cls.__name__ == family.config_class
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, default in family.defaults.items():
        if key in fields:  # a key read through an attribute_map alias or getattr is not a field
            assert fields[key].default == default, key
    for key in family.nullable:
        assert _admits_none(fields[key].type), key
    module = __import__(f"transformers.models.{cls.__module__.split('.')[-2]}", fromlist=["x"])
    assert (Path(module.__file__).parent / family.modeling).is_file()


def _tiny(model_type: str) -> dict:
    raw = {
        "model_type": model_type,
        "vocab_size": 16,
        "hidden_size": 16,
        "intermediate_size": 8,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 4,
        "pad_token_id": 0,
        "bos_token_id": 0,
        "eos_token_id": 0,
    }
    family = get_family(model_type)
    if family.experts is not None:
        raw.update(
            {
                family.experts.key: 2,
                "num_experts_per_tok": 1,
                "moe_intermediate_size": 4,
                "shared_expert_intermediate_size": 4,
                "n_group": 1,
                "topk_group": 1,
                "first_k_dense_replace": 1,
            }
        )
    return raw


@pytest.mark.parametrize("model_type", FAMILIES)
def test_layer_norms_are_the_norms_transformers_builds(model_type):
    layer = built(_tiny(model_type)).model.model.layers[0]
    norms = tuple(name for name, child in layer.named_children() if type(child).__name__.endswith("RMSNorm"))
    assert set(norms) == set(get_family(model_type).layer_norms)


@pytest.mark.parametrize("model_type", FAMILIES)
def test_peft_defaults_and_converted_expert_names(model_type):
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as DEFAULTS
    from peft.utils.transformers_weight_conversion import (
        _MODEL_TO_CONVERSION_PATTERN as PEFT_PATTERNS,
        _MOE_TARGET_MODULE_MAPPING,
    )
    from transformers.conversion_mapping import _MODEL_TO_CONVERSION_PATTERN

    family = get_family(model_type)
    assert family.peft_targets == tuple(DEFAULTS.get(model_type, ()))
    pattern = PEFT_PATTERNS.get(model_type, _MODEL_TO_CONVERSION_PATTERN.get(model_type))
    converted = {
        old: ("router" if new == "gate.weight" else new)
        for old, new in _MOE_TARGET_MODULE_MAPPING.get(pattern, {}).items()
    }
    assert dict(family.experts.peft_v4_names if family.experts else {}) == converted


def test_the_tests_family_tables_cover_the_registry():
    assert set(model_variants.FAMILIES) == set(FAMILIES)
    assert set(test_kv_cache_oracle.FAMILIES) == set(FAMILIES)
    assert {raw["model_type"] for raw in test_activations_oracle.CONFIGS.values()} == set(FAMILIES)


def test_default_attention_is_the_registrys():
    for model_type in FAMILIES:
        config = vram.model_config_from_dict(_tiny(model_type))
        assert vram.default_attention(config) == get_family(model_type).default_attention


# --- a family added the way CONTRIBUTING.md says: one entry ---------------------------------

FIXTURE = dataclasses.replace(get_family("llama"), model_type="fixture_llama", config_class="FixtureLlamaConfig")


@pytest.fixture
def fixture_family():
    register_family(FIXTURE)
    yield FIXTURE
    unregister_family(FIXTURE.model_type)


def test_a_registered_llama_shaped_family_is_counted_like_the_model_it_describes(fixture_family):
    raw = {
        "vocab_size": 40,
        "hidden_size": 32,
        "intermediate_size": 24,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "sliding_window": 5,
    }
    mine = {**raw, "model_type": fixture_family.model_type}
    transformers_llama = {**raw, "model_type": "llama"}  # what the entry says the family is
    assert fixture_family.model_type in vram.families.model_types()
    oracle = built(transformers_llama)
    assert vram.count_params(mine).total == oracle.total
    assert vram.largest_layer_params(mine) == oracle.largest_module
    assert vram.linear_params(mine) == oracle.linear

    from peft import LoraConfig, get_peft_model

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        from transformers import AutoModelForCausalLM

        peft_model = get_peft_model(
            AutoModelForCausalLM.from_config(hf_config(transformers_llama)),
            LoraConfig(r=4, target_modules="all-linear"),
        )
    assert vram.lora_adapter_params(mine, 4) == sum(p.numel() for p in peft_model.parameters() if p.requires_grad)

    # KV cache: DynamicCache's sliding layers (a llama with a sliding_window slides on every layer)
    kinds, window = oracle.cache_layers
    config = vram.model_config_from_dict(mine)
    assert (config.layer_types, config.sliding_window) == (kinds, window)
    per_token_layer = 2 * 2 * 8 * 2  # K and V, 2 KV heads of 32 // 4, bf16
    assert vram.kv_cache_bytes(mine, 4, server="transformers") == 3 * 4 * per_token_layer


def test_one_entry_per_model_type():
    with pytest.raises(ValueError, match="registered already"):
        register_family(Family("llama", "LlamaConfig", "modeling_llama.py", get_family("llama").defaults))


def test_the_calculator_readmes_list_of_families_is_the_registrys():
    import re

    from tests.conftest import REPO_ROOT

    text = " ".join((REPO_ROOT / "vram" / "README.md").read_text(encoding="utf-8").split())
    listed = re.search(r"in `vram/family_entries.py`: ([a-z0-9_, ]+);", text).group(1)
    assert [name.strip() for name in listed.split(",")] == list(FAMILIES)


@pytest.mark.parametrize("wrapper, text_type", [("mistral3", "mistral"), ("llama4", "llama4_text")])
def test_a_multimodal_wrapper_is_refused_saying_how_to_count_its_language_model(wrapper, text_type):
    # transformers builds these as *ForConditionalGeneration (a vision tower beside the language
    # model); their config classes default the text_config to these model_types
    assert _config_class(wrapper)().text_config.model_type == text_type
    with pytest.raises(vram.ConfigError) as refused:
        vram.model_config_from_dict({"model_type": wrapper}, f"{wrapper}.json")
    message = str(refused.value)
    assert message.startswith(f"{wrapper}.json: a multimodal {wrapper} config") and "\n" not in message
    if vram.families.is_registered(text_type):
        assert f"model_type {text_type}" in message
    else:
        assert f"{text_type}, is not in the registry" in message


# --- bad input of the newer families: one line naming the key, in the CLI and the finder ----

_GLM = {
    "model_type": "glm4_moe",
    "vocab_size": 16,
    "hidden_size": 16,
    "intermediate_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 4,
}
_DEEPSEEK = {
    **_GLM,
    "model_type": "deepseek_v3",
    "num_key_value_heads": 4,
    "n_group": 2,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 8,
    "q_lora_rank": None,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 4,
    "v_head_dim": 4,
}
_LLAMA4 = {
    **_GLM,
    "model_type": "llama4_text",
    "intermediate_size_mlp": 8,
    "num_local_experts": 2,
    "num_experts_per_tok": 1,
    "head_dim": 4,
}
BAD_FAMILY_CONFIGS = [
    # (config, the key the line must name, what it must say)
    ({**_GLM, "first_k_dense_replace": 3}, "first_k_dense_replace", "larger than num_hidden_layers (2)"),
    ({**_GLM, "n_group": 3}, "n_group", "does not divide the 4 routed experts"),
    ({**_GLM, "n_group": 2, "topk_group": 3}, "topk_group", "is more than n_group (2)"),
    ({**_DEEPSEEK, "kv_lora_rank": 0}, "kv_lora_rank", "must be at least 1, got 0"),
    ({**_DEEPSEEK, "qk_rope_head_dim": 3}, "qk_rope_head_dim", "must be even"),
    ({**_DEEPSEEK, "v_head_dim": None}, "v_head_dim", "is null"),
    ({**_DEEPSEEK, "q_lora_rank": 0}, "q_lora_rank", "must be at least 1, got 0"),
    ({**_LLAMA4, "attention_chunk_size": None}, "attention_chunk_size", "is null"),
    ({**_LLAMA4, "moe_layers": "all"}, "moe_layers", "must be a list of layer indices"),
]


def _finder_templates() -> dict[str, str]:
    import yaml

    from tests.conftest import REPO_ROOT

    labels = yaml.safe_load((REPO_ROOT / "snippets" / "data" / "finder.yaml").read_text(encoding="utf-8"))
    return dict(_find_key(labels, "error_config_value"))


def _find_key(data, key):
    if isinstance(data, dict):
        if key in data:
            return data[key]
        for value in data.values():
            found = _find_key(value, key)
            if found:
                return found
    return None


@pytest.mark.parametrize(
    "raw, key, says", BAD_FAMILY_CONFIGS, ids=[f"{r['model_type']}-{k}" for r, k, _ in BAD_FAMILY_CONFIGS]
)
def test_a_contradictory_key_is_refused_in_one_line_naming_it(raw, key, says, tmp_path, cli):
    import json

    from vram.job import answer_json

    # the calculator: one line naming the key
    with pytest.raises(vram.ConfigError) as refused:
        vram.model_config_from_dict(raw, "config.json")
    message = str(refused.value)
    assert "\n" not in message and f"'{key}'" in message and says in message
    # the command line: exit 2, that one line
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    proc = cli("params", str(path))
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert f"'{key}'" in proc.stderr and says in proc.stderr
    # the finder: the job's error names the config field and the key, which both languages' line shows
    error = json.loads(answer_json(json.dumps({"kind": "training", "config": json.dumps(raw)})))["error"]
    assert (error["field"], error["code"], error["limits"]["key"]) == ("config", "config_value", key)
    for lang, template in _finder_templates().items():
        assert key in template.format(field="config", key=error["limits"]["key"]), lang
