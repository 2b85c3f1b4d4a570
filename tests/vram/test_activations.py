"""Activation memory: the cases typed from the paper and from shared/cases, and the errors.

Expected values come from Korthikanti et al. 2022 (arXiv:2205.05198, Table 2, GPT-3 175B
shapes of their Table 3) and from shared/cases/oracles.md ("Activations", measured with
saved-tensor hooks on real transformers layers); the per-family measurements themselves are
in test_activations_oracle.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import vram
from tests.conftest import REPO_ROOT
from vram.activations import activation_memory

LLAMA_8B = REPO_ROOT / "snippets" / "data" / "models" / "llama-3.1-8b.json"


def test_korthikanti_table_2_gpt3_175b_per_layer_is_exact():
    # GPT-3 175B: h = 12,288, a = 96, s = 2,048, b = 1; s*b*h*(34 + 5*a*s/h) bytes.
    assert vram.activation_bytes_per_layer(2048, 1, 12288, 96, "none") == 2_868_903_936


@pytest.fixture(scope="module")
def llama_8b():
    return vram.load_model_config(LLAMA_8B)


def test_llama_8b_sdpa_no_recompute_keeps_49_sbh_per_layer_not_korthikanti_34(llama_8b):
    memory = activation_memory(llama_8b, seq_len=2048, micro_batch=1)
    sbh = 2048 * 1 * 4096
    assert memory.per_layer_bytes / sbh == pytest.approx(49, abs=0.5)
    assert memory.layers_bytes / 1e9 == pytest.approx(13.2, abs=0.1)  # 49 sbh x 32 layers


def test_llama_8b_sdpa_total_is_about_13_to_15_gb_not_korthikantis_30_6(llama_8b):
    memory = activation_memory(llama_8b, seq_len=2048, micro_batch=1)
    # layers 13.2 GB + logits of a 128,256-token vocabulary; Korthikanti's eager figure: 30.6 GB
    assert 13e9 < memory.total_bytes < 16e9
    assert memory.total_bytes == memory.layers_bytes + memory.head_bytes + memory.logits_bytes


def test_llama_8b_full_recompute_keeps_the_2sbh_checkpoints_and_one_whole_layer(llama_8b):
    none = activation_memory(llama_8b, 2048, 1, recompute="none")
    full = activation_memory(llama_8b, 2048, 1, recompute="full")
    sbh = 2048 * 4096
    assert full.per_layer_bytes == 2 * sbh
    assert full.recomputed_bytes == none.per_layer_bytes
    assert full.layers_bytes == 32 * 2 * sbh + none.per_layer_bytes
    assert full.logits_bytes == none.logits_bytes  # the head is not checkpointed


def test_llama_8b_eager_keeps_the_s_squared_probabilities_and_selective_drops_them(llama_8b):
    sdpa = activation_memory(llama_8b, 2048, 1, "sdpa")
    eager = activation_memory(llama_8b, 2048, 1, "eager")
    selective = activation_memory(llama_8b, 2048, 1, "eager", "selective")
    # fp32 softmax + its bf16 cast: 6 bytes per head per s*s entry
    assert eager.per_layer_bytes - sdpa.per_layer_bytes > 6 * 32 * 2048 * 2048
    assert selective.per_layer_bytes < sdpa.per_layer_bytes + 4096 * 2048  # no s*s term left
    # under sdpa, selective changes nothing: the fused kernel already recomputes the s*s part
    assert activation_memory(llama_8b, 2048, 1, "sdpa", "selective") == replace(sdpa, recompute="selective")


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"seq_len": 0}, "seq_len must be an integer from 1"),
        ({"seq_len": -5}, "got -5"),
        ({"seq_len": 2.5}, "got 2.5"),
        ({"seq_len": True}, "got True"),
        ({"seq_len": 2**24 + 1}, "16,777,216"),
        ({"micro_batch": 0}, "micro_batch must be an integer from 1"),
        ({"micro_batch": 10**9}, "65,536"),
        ({"attention": "flash"}, "unknown attention 'flash'; known: sdpa, eager"),
        ({"recompute": "some"}, "unknown recompute 'some'; known: none, selective, full"),
        ({"dtype": "int8"}, "unknown dtype 'int8'"),
    ],
)
def test_bad_arguments_raise_one_line_value_errors(llama_8b, kwargs, fragment):
    args = {"config": llama_8b, "seq_len": 2048, "micro_batch": 1, **kwargs}
    with pytest.raises(ValueError) as info:
        activation_memory(**args)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_a_family_or_activation_not_modelled_is_refused_in_one_line(llama_8b):
    for config, fragment in (
        (replace(llama_8b, model_type="bert"), "unknown model_type for activations 'bert'"),
        (replace(llama_8b, hidden_act="gelu_new"), "activation 'gelu_new' is not modelled"),
    ):
        with pytest.raises(ValueError) as info:
            activation_memory(config, 2048, 1)
        assert fragment in str(info.value) and "\n" not in str(info.value)
