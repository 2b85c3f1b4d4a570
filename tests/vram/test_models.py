"""Parameter counts from Hugging Face configs against published totals, and config errors.

Published totals (the Hub's safetensors parameter count shown on each model page, and
the model cards):
- Qwen/Qwen2.5-7B: 7,615,616,512; card: "Number of Parameters: 7.61B, Non-Embedding: 6.53B".
- Qwen/Qwen2.5-0.5B: 494,032,768; card: "0.49B, Non-Embedding: 0.36B" (tied embeddings).
- google/gemma-2-9b: 9,241,705,984.
- mistralai/Mixtral-8x7B-v0.1: 46,702,792,704; Mistral AI's announcement ("Mixtral of
  experts", Dec 2023): "46.7B total parameters but only uses 12.9B parameters per token".
- meta-llama/Llama-2-7b-hf: 6,738,415,616 (PEFT's print_trainable_parameters for it with
  a rank-8 LoRA on q_proj, v_proj prints "trainable params: 4,194,304 || all params:
  6,742,609,920", 6,742,609,920 - 4,194,304 = 6,738,415,616).
"""

from __future__ import annotations

import json

import pytest

import vram
from vram.models import ConfigError, embedding_params


@pytest.mark.parametrize(
    "name, published",
    [
        ("qwen2.5-7b.json", 7_615_616_512),
        ("qwen2.5-0.5b.json", 494_032_768),
        ("gemma-2-9b.json", 9_241_705_984),
        ("mixtral-8x7b-v0.1.json", 46_702_792_704),
        ("llama-2-7b.json", 6_738_415_616),
    ],
)
def test_published_totals(local_configs, name, published):
    assert vram.count_params(local_configs / name).total == published


@pytest.mark.parametrize("name, non_embedding_b", [("qwen2.5-7b.json", 6.53), ("qwen2.5-0.5b.json", 0.36)])
def test_qwen_non_embedding_params_match_the_model_cards(local_configs, name, non_embedding_b):
    config = vram.load_model_config(local_configs / name)
    non_embedding = vram.count_params(config).total - embedding_params(config)
    assert round(non_embedding / 1e9, 2) == non_embedding_b


def test_qwen2_has_qkv_biases_and_no_o_bias(local_configs):
    config = vram.load_model_config(local_configs / "qwen2.5-7b.json")
    assert (config.qkv_bias, config.o_bias) == (True, False)
    # Removing the q/k/v biases removes exactly 28 layers x (3584 + 512 + 512) elements
    # (q_proj out = 28 heads x 128, k/v out = 4 KV heads x 128: shapes from the config).
    from dataclasses import replace

    no_bias = replace(config, qkv_bias=False)
    assert vram.count_params(config).total - vram.count_params(no_bias).total == 28 * (3584 + 512 + 512)


def test_gemma2_head_dim_differs_from_hidden_over_heads_and_embeddings_are_tied(local_configs):
    config = vram.load_model_config(local_configs / "gemma-2-9b.json")
    assert config.head_dim == 256 != 3584 // 16
    assert config.tie_word_embeddings  # Gemma2Config default; the key is absent
    assert config.norms_per_layer == 4


def test_mixtral_every_expert_counts_toward_memory_active_toward_compute(local_configs):
    count = vram.count_params(local_configs / "mixtral-8x7b-v0.1.json")
    assert count.total == 46_702_792_704
    assert round(count.active / 1e9, 1) == 12.9
    assert count.active < count.total


def test_mixtral_training_memory_counts_all_experts(local_configs):
    count = vram.count_params(local_configs / "mixtral-8x7b-v0.1.json")
    states = vram.model_states_per_gpu(count.total, 1, 0, "adamw")
    assert states.total_bytes == 16 * 46_702_792_704


# --- bad configs -----------------------------------------------------------------------


def _write(tmp_path, data) -> str:
    path = tmp_path / "config.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def _llama(shared_configs) -> dict:
    return json.loads((shared_configs / "llama-3.1-8b.json").read_text())


def test_unsupported_model_type_is_a_clear_value_error(tmp_path, shared_configs):
    path = _write(tmp_path, {**_llama(shared_configs), "model_type": "gpt2"})
    supported = ", ".join(vram.families.model_types())  # the registry's families, sorted
    with pytest.raises(ValueError, match=rf"unsupported model_type 'gpt2'; supported: {supported}$"):
        vram.count_params(path)


def test_a_look_alike_model_type_is_shown_with_its_code_points(tmp_path, shared_configs):
    # "llаma" with the Cyrillic а (U+0430, CYRILLIC SMALL LETTER A in the Unicode standard) looks  # noqa: RUF003
    # like llama in any font: the line says which character is not the one meant.
    path = _write(tmp_path, {**_llama(shared_configs), "model_type": "ll\u0430ma"})
    with pytest.raises(ConfigError) as info:
        vram.count_params(path)
    message = str(info.value)
    assert (
        "unsupported model_type 'll\u0430ma' (not plain ASCII: '\u0430' is U+0430 CYRILLIC SMALL LETTER A)" in message
    )
    assert "\n" not in message


def test_missing_hidden_size_names_the_file_and_the_key(tmp_path, shared_configs):
    raw = _llama(shared_configs)
    del raw["hidden_size"]
    path = _write(tmp_path, raw)
    with pytest.raises(ConfigError) as info:
        vram.load_model_config(path)
    assert path in str(info.value) and "'hidden_size'" in str(info.value)


def test_not_json_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not valid JSON"):
        vram.load_model_config(_write(tmp_path, "{not json"))
    with pytest.raises(ConfigError, match="cannot read"):
        vram.load_model_config(tmp_path / "absent.json")


@pytest.mark.parametrize("key, value", [("num_hidden_layers", 0), ("vocab_size", "32000"), ("hidden_size", True)])
def test_bad_values_are_rejected(tmp_path, shared_configs, key, value):
    with pytest.raises(ConfigError, match=key):
        vram.load_model_config(_write(tmp_path, {**_llama(shared_configs), key: value}))


def test_heads_not_dividing_hidden_are_refused_as_llamaconfig_does(tmp_path, shared_configs):
    # LlamaConfig.validate_architecture: "The hidden size (4096) is not a multiple of the number of attention heads (30)."
    raw = {**_llama(shared_configs), "num_attention_heads": 30, "num_key_value_heads": 10}
    del raw["head_dim"]
    with pytest.raises(
        ConfigError, match="hidden_size 4096 is not a multiple of num_attention_heads 30, which LlamaConfig refuses"
    ):
        vram.load_model_config(_write(tmp_path, raw))


def test_a_json_list_is_not_a_config(tmp_path):
    with pytest.raises(ConfigError, match="JSON object"):
        vram.load_model_config(_write(tmp_path, "[1, 2]"))


def test_a_config_built_by_hand_has_one_entry_per_layer(local_configs):
    """``moe_layers`` and ``layer_types`` say what each layer is: a ``ModelConfig`` built or
    replaced by hand with another count is refused (the shapes count each kind of layer by them)."""
    import dataclasses

    config = vram.models.load_model_config(local_configs / "llama-2-7b.json")
    with pytest.raises(ValueError, match="moe_layers: one entry per layer"):
        dataclasses.replace(config, num_hidden_layers=config.num_hidden_layers + 1)
    with pytest.raises(ValueError, match="layer_types: one entry per layer"):
        dataclasses.replace(config, layer_types=config.layer_types[:-1])
