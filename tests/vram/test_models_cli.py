"""Bad config files through ``python -m vram params CONFIG``: exit 2, one line naming the file.

Each file is refused for a reason transformers or JSON gives too (the expected text is the
calculator's message, checked for the file name, the key and the reason; never a traceback).
"""

from __future__ import annotations

import json
import os
import resource

import pytest

LLAMA = {
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
}


def _write(tmp_path, name: str, content) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(path)


CASES = {
    # a 5,000-digit hidden_size: Python's int parser refuses it (4,300-digit limit), JSON and all
    "5000-digit hidden_size": ('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}", "too many digits"),
    "absurd hidden_size": (
        {**LLAMA, "hidden_size": 10**30},
        "'hidden_size' is implausibly large (an integer of 31 digits",
    ),
    "hidden_size 1e400": ('{"model_type": "llama", "hidden_size": 1e400}', "'hidden_size' must be an integer, got inf"),
    "hidden_size as text": ({**LLAMA, "hidden_size": "4096"}, "'hidden_size' must be an integer, got '4096'"),
    "kv heads 5 of 32": (
        {**LLAMA, "num_key_value_heads": 5},
        "num_key_value_heads 5 does not divide num_attention_heads 32",
    ),
    "null head_dim for gemma2": (
        {**LLAMA, "model_type": "gemma2", "head_dim": None},
        "'head_dim' is null, which Gemma2Config refuses",
    ),
    "null kv heads for mistral": (
        {**LLAMA, "model_type": "mistral", "num_key_value_heads": None},
        "'num_key_value_heads' is null, which MistralConfig refuses",
    ),
    "gemma3 without text_config": ({"model_type": "gemma3"}, "needs a 'text_config' object"),
    "layer_types of the wrong length": (
        {**LLAMA, "model_type": "gemma2", "head_dim": 128, "layer_types": ["full_attention"]},
        "'layer_types' must list 32 entries",
    ),
    # issue 33: refused before json.loads (its recursion crashed the browser's Pyodide), one level past the bound too
    "nested too deep": ('{"a":' * 50_000 + "1" + "}" * 50_000, "nested deeper than 32 levels, which no config.json is"),
    "nested one level too deep": ("[" * 33 + "]" * 33, "nested deeper than 32 levels"),
    "nested as deep as allowed": ("[" * 32 + "]" * 32, "expected a JSON object, got array"),
    "not UTF-8": (b"\xff\xfe{}", "not a UTF-8 text file"),
    "a JSON list": ("[1, 2]", "expected a JSON object, got array"),
    # model_type must be text: a list or an object once ended in a TypeError traceback
    "model_type as a list": ({**LLAMA, "model_type": ["llama"]}, "unsupported model_type ['llama']"),
    "model_type as an object": ({**LLAMA, "model_type": {"a": 1}}, "unsupported model_type {'a': 1}"),
    # a real config.json is a few KB; 10 MB of padding is not one
    "10 MB of padding": (json.dumps({**LLAMA, "padding": "x" * 10_000_000}), "larger than 1 MiB"),
    "a duplicated key": (
        '{"model_type": "llama", "hidden_size": 4096, "hidden_size": 8}',
        "key 'hidden_size' appears twice",
    ),
    # Gemma2Config accepts it, but every forward of the model builds a sliding-window mask and fails
    "gemma2 without a window": (
        {**LLAMA, "model_type": "gemma2", "head_dim": 128, "sliding_window": None},
        "'sliding_window' is null, which modeling_gemma2.py cannot run",
    ),
    # the config classes type these float | None and int | None strictly: transformers refuses 50 and 2.0
    "softcapping as an integer": (
        {**LLAMA, "model_type": "gemma2", "head_dim": 128, "attn_logit_softcapping": 50},
        "'attn_logit_softcapping' must be a number with a decimal point (50.0) or null, got 50",
    ),
    "qwen3_moe window as a float": (
        {**LLAMA, "model_type": "qwen3_moe", "sliding_window": 2.0},
        "'sliding_window' must be an integer, got 2.0",
    ),
    "hidden_act not text": (
        {**LLAMA, "hidden_act": 5},
        "'hidden_act' must be a string (an activation such as 'silu'), got 5",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_config_exits_2_with_one_line_naming_the_file(cli, tmp_path, case):
    content, needle = CASES[case]
    path = _write(tmp_path, "config.json", content)
    proc = cli("params", path)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"vram: error: {path}: "), lines[0]
    assert needle in lines[0], lines[0]
    assert len(lines[0]) < 400
    assert proc.stdout == ""


def test_a_multimodal_gemma3_is_refused_in_one_line_naming_its_text_config(cli, tmp_path):
    # the vision tower is not modelled (test_models_oracle.py builds it): one line, no figure
    text = {
        "model_type": "gemma3_text",
        "hidden_size": 64,
        "intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "vocab_size": 100,
    }
    text_only = cli("params", _write(tmp_path, "t.json", text), "--json")
    proc = cli("params", _write(tmp_path, "m.json", {"model_type": "gemma3", "text_config": text}), "--json")
    assert text_only.returncode == 0, text_only.stderr
    assert proc.returncode != 0 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "multimodal gemma3" in lines[0] and "text_config" in lines[0]


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_path_that_is_not_a_regular_file_is_refused_without_reading_it(cli, tmp_path, kind):
    # a FIFO blocks whoever opens it; /dev/zero never ends: both once hung the command
    path = tmp_path / "config.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    proc = cli("params", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"vram: error: {path}: not a regular file; pass the model's config.json"]


def test_a_config_of_more_than_10_15_parameters_is_refused_like_params(cli, tmp_path):
    # every size is at most MAX_SIZE (2^24), yet two layers of 2^24 x 2^24 MLP matrices (3 x 2^48 each)
    # make 1.7e15 parameters: implausible, as --params 1e30 is
    sizes = dict.fromkeys(("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads"), 2**24)
    raw = {"model_type": "llama", **sizes, "num_hidden_layers": 2, "num_key_value_heads": 1, "head_dim": 1}
    proc = cli("params", _write(tmp_path, "config.json", raw))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "more than 10^15 parameters" in proc.stderr


def test_many_layers_and_a_long_mlp_only_layers_list_answer_at_once(cli, tmp_path):
    # 65,536 layers (MAX_LAYERS) and 90,000 dense-layer indices in a 0.9 MB file: a list scanned
    # once per layer took hours (the command hung); a layer count past MAX_LAYERS is refused.
    raw = {
        "model_type": "qwen3_moe",
        "vocab_size": 8,
        "hidden_size": 8,
        "intermediate_size": 8,
        "num_hidden_layers": 2**16,
        "num_attention_heads": 1,
        "num_key_value_heads": 1,
        "head_dim": 1,
        "num_experts": 1,
        "num_experts_per_tok": 1,
        "moe_intermediate_size": 1,
        "mlp_only_layers": list(range(10**7, 10**7 + 90_000)),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = cli("params", _write(tmp_path, "config.json", raw), "--json")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr
    # CPU seconds, which a busy machine does not stretch as it stretches wall time
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 30
    # every layer has its experts (no listed index is a layer): 8 x 8 x 4 + 4 x 8 attention, 2 x 8 norms,
    # 2 x 1 q/k norms, router 8, experts 1 x 2 x 8 + 8; embeddings 2 x 64, final norm 8
    per_layer = 4 * 8 + 16 + 2 + 8 + 16 + 8
    assert json.loads(proc.stdout)["params"] == 2**16 * per_layer + 2 * 64 + 8
    proc = cli("params", _write(tmp_path, "config.json", {**raw, "num_hidden_layers": 2**16 + 1}))
    assert proc.returncode == 2 and "'num_hidden_layers' is implausibly large" in proc.stderr
