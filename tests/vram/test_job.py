"""``vram.job.answer_job`` (the finder's one calculator) and ``python -m vram job``.

Independent anchors: the bytes of gpt-oss-20b's published checkpoint, DeepSpeed 0.19's
estimator figure for Llama 3.1 8B under ZeRO-3 on 8 GPUs (oracles.md), nvidia-smi's card
totals in gpus.yaml, and vLLM's rule for its share of a card.
"""

from __future__ import annotations

import json

import pytest

import vram
from tests.card_sources import memory_mib
from tests.conftest import REPO_ROOT
from vram.job import JobError, answer_job, answer_json, dumps
from vram.mxfp4 import mxfp4_weights_bytes_per_gpu

pytestmark = pytest.mark.usefixtures("frozen_catalogue")  # the command line reads the frozen test catalogue

MIB = 2**20
RESERVE_MIB = 2048  # the jobs' own: answer_job takes the reserve from the job (no default of its own)
RTX_4090, RTX_5090, H100 = memory_mib("rtx-4090"), memory_mib("rtx-5090"), memory_mib("h100")  # nvidia-smi memory.total
CARDS = [
    {"key": "rtx-4090", "memory_mib": RTX_4090},
    {"key": "rtx-5090", "memory_mib": RTX_5090},
    {"key": "h100", "memory_mib": H100},
]


MODELS = REPO_ROOT / "snippets" / "data" / "models"  # the finder's configs, public copies (models.yaml)


@pytest.fixture(scope="module")
def configs():
    def read(name: str) -> str:
        return (MODELS / f"{name}.json").read_text(encoding="utf-8")

    return read


def test_mxfp4_weights_are_the_published_checkpoint_bytes(configs):
    # huggingface.co/openai/gpt-oss-20b, model.safetensors.index.json: "total_size": 13761264768
    # (MXFP4 expert blocks and scales, everything else bf16).
    config = vram.model_config_from_dict(json.loads(configs("gpt-oss-20b")))
    assert mxfp4_weights_bytes_per_gpu(config) == 13_761_264_768
    # on 2 GPUs, the bf16 rest halves except the whole norms/router/biases, and the experts halve exactly
    assert mxfp4_weights_bytes_per_gpu(config, 2) < 13_761_264_768 // 2 + 200_000_000


def test_llama_8b_at_4096_tokens_refuses_8_rtx_4090_under_zero3(configs):
    answer = answer_job(
        {
            "kind": "training",
            "config": configs("llama-3.1-8b"),
            "cards": 8,
            "framework": "deepspeed",
            "zero_stage": 3,
            "seq_len": 4096,
            "gpus": CARDS,
            "reserve_mib": RESERVE_MIB,
        }
    )
    assert answer["per_gpu_bytes"] == 20_169_434_112  # DeepSpeed 0.19's estimator (oracles.md)
    margin = (RTX_4090 - RESERVE_MIB) * MIB - 20_169_434_112
    assert [f["gpu"] for f in answer["short"]] == ["rtx-4090"]  # holds the states, not the activations
    assert margin < answer["activations"]["full_bytes"]  # not even with full recomputation
    fit = answer["fits"][0]
    assert fit["gpu"] == "rtx-5090" and fit["recompute"] == "full"  # holds them only with full recomputation
    capacity = (RTX_5090 - RESERVE_MIB) * MIB
    peak = max(answer["per_gpu_bytes"], answer["backward_bytes"] + answer["activations"]["full_bytes"])
    assert fit["peak_bytes"] == peak and fit["free_fraction"] == (capacity - peak) / capacity
    assert fit["tight"] == (capacity - peak < 0.1 * capacity)


def _card(mib: int, key: str = "card") -> list[dict]:
    return [{"key": key, "memory_mib": mib}]


@pytest.mark.parametrize("kind", ["training", "lora", "serving"])
def test_tight_is_one_rule_for_every_kind_under_a_tenth_free_at_the_peak(configs, kind):
    """One definition of "tight" (vram.fit.is_tight) for training, LoRA and serving: the card is
    tight exactly when less than 10 % of its capacity is left at the job's peak. The peak is
    found on a card far larger than the job, then two cards are sized around the threshold by
    arithmetic on nvidia-smi's MiB: one leaving just over a tenth free, one just under."""
    job = {"kind": kind, "config": configs("llama-3.1-8b"), "gpu_memory_utilization": 1.0, "reserve_mib": RESERVE_MIB}
    big = answer_job(job | {"gpus": _card(10**6)})["fits"][0]
    peak = big["peak_bytes"]
    # capacity C = (memory - reserve) MiB: free C - peak >= C / 10  <=>  C >= peak / 0.9
    roomy_mib = RESERVE_MIB + -(-peak * 10 // 9) // MIB + 2
    snug_mib = RESERVE_MIB + peak * 10 // 9 // MIB - 2
    roomy, snug = (answer_job(job | {"gpus": _card(mib)})["fits"][0] for mib in (roomy_mib, snug_mib))
    assert roomy["peak_bytes"] == snug["peak_bytes"] == peak  # same job, same recomputation
    assert not roomy["tight"] and roomy["free_fraction"] >= 0.1
    assert snug["tight"] and 0 <= snug["free_fraction"] < 0.1


def test_gpt_oss_20b_mxfp4_16_sequences_of_8192_fit_a_32_gb_card(configs):
    answer = answer_job(
        {
            "kind": "serving",
            "config": configs("gpt-oss-20b"),
            "weights": "mxfp4",
            "context": 8192,
            "concurrent": 16,
            "gpu_memory_utilization": 0.9,
            "gpus": CARDS,
            "reserve_mib": RESERVE_MIB,
        }
    )
    assert {k: b for k, b, _ in answer["parts"]}["weights"] == 13_761_264_768
    fit = next(f for f in answer["fits"] if f["gpu"] == "rtx-5090")
    # vLLM: gpu_memory_utilization x total memory, the CUDA context and NCCL buffers inside it
    assert fit["capacity_bytes"] == int(0.9 * RTX_5090 * MIB) - RESERVE_MIB * MIB
    assert fit["max_concurrent"] >= 16 and RTX_5090 * MIB <= 32 * 2**30
    assert fit["max_concurrent"] == (fit["capacity_bytes"] - 13_761_264_768) // answer["kv_per_sequence_bytes"]


def test_8b_all_bf16_full_fine_tuning_fits_one_h100_at_2048_tokens(configs):
    answer = answer_job(
        {
            "kind": "training",
            "config": configs("llama-3.1-8b"),
            "framework": "zero-paper",
            "optimizer": "adamw-bf16",
            "seq_len": 2048,
            "gpus": CARDS,
            "reserve_mib": RESERVE_MIB,
        }
    )
    assert answer["per_gpu_bytes"] == 8 * 8_030_261_248  # bf16 weights, gradients, m and v: 2 + 2 + 2 + 2 B
    assert [f["gpu"] for f in answer["fits"]] == ["h100"] and answer["fits"][0]["recompute"] == "none"
    with pytest.raises(JobError) as refused:  # DeepSpeed keeps an fp32 master copy: not this optimizer
        answer_job(
            {
                "kind": "training",
                "config": configs("llama-3.1-8b"),
                "framework": "deepspeed",
                "optimizer": "adamw-bf16",
                "gpus": CARDS,
                "reserve_mib": RESERVE_MIB,
            }
        )
    assert (refused.value.field, refused.value.code) == ("optimizer", "not_offered")


def test_the_recomputation_asked_is_the_one_counted(configs):
    base = {
        "kind": "training",
        "config": configs("llama-3.1-8b"),
        "cards": 8,
        "framework": "deepspeed",
        "zero_stage": 3,
        "seq_len": 4096,
        "gpus": CARDS,
        "reserve_mib": RESERVE_MIB,
    }
    full = answer_job(base | {"recompute": "full"})
    assert full["activations"]["bytes"] == full["activations"]["full_bytes"]
    assert not full["fits"][0]["tight"] and full["fits"][0]["recompute"] == "full"


@pytest.mark.parametrize(
    "change, field, code",
    [
        ({"seq_len": 131_073}, "seq_len", "too_long"),
        ({"seq_len": -1}, "seq_len", "integer"),
        ({"micro_batch": 10**30}, "micro_batch", "integer"),
        ({"micro_batch": "1e3"}, "micro_batch", "integer"),
        ({"recompute": "some"}, "recompute", "choice"),
        ({"config": "{not json"}, "config", "config_json"),
        ({"config": '{"model_type": "falcon"}'}, "config", "config_family"),
        ({"config": '{"model_type": "llama", "hidden_size": 4096}'}, "config", "config_key"),
        ({"kind": "serving", "gpu_memory_utilization": 1.5}, "gpu_memory_utilization", "fraction"),
        ({"kind": "serving", "weights": "mxfp4"}, "weights", "not_offered"),
    ],
)
def test_bad_input_names_the_field(configs, change, field, code):
    job = {"kind": "training", "config": configs("llama-3.1-8b"), "gpus": CARDS, "reserve_mib": RESERVE_MIB} | change
    found = json.loads(answer_json(json.dumps(job)))
    assert (found["error"]["field"], found["error"]["code"]) == (field, code)
    assert "\n" not in found["error"]["message"]


def test_the_command_line_prints_the_same_bytes(cli, configs):
    job = {
        "kind": "serving",
        "config": configs("gpt-oss-20b"),
        "weights": "mxfp4",
        "context": 8192,
        "concurrent": 16,
        "kv_dtype": "fp8",
        "cards": 2,
        "gpus": CARDS,
        "reserve_mib": RESERVE_MIB,
    }
    proc = cli(
        "job",
        "--config",
        str(MODELS / "gpt-oss-20b.json"),
        "--kind",
        "serving",
        "--weights",
        "mxfp4",
        "--context",
        "8192",
        "--concurrent",
        "16",
        "--kv-dtype",
        "fp8",
        "--cards",
        "2",
        *[f"--gpu={c['key']}={c['memory_mib']}" for c in CARDS],
        f"--reserve-mib={RESERVE_MIB}",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == answer_json(json.dumps(job)) == dumps(answer_job(job))


@pytest.mark.parametrize(
    "args, words",
    [
        (["--seq-len", "200000"], "seq_len: 200,000 tokens is beyond the model's maximum, 131,072"),
        (["--seq-len", "-5"], "seq_len must be a whole number"),
        (["--gpu-memory-utilization", "nan"], "gpu_memory_utilization must be a decimal"),
        (["--framework", "deepspeed", "--zero-stage", "2", "--offload", "optimizer+params"], "offload:"),
    ],
)
def test_the_command_line_refuses_in_one_line(cli, args, words):
    proc = cli("job", "--config", str(MODELS / "llama-3.1-8b.json"), *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


# --- the run: time per step and per run, its cost, and the ranking (issue 21) ----------------


def _speeds():
    from vram.catalogue import load_catalogue

    return load_catalogue()[0]  # the frozen test catalogue's (pytestmark)


def test_the_run_is_vram_timing_and_billing_for_the_same_inputs(configs):
    from vram.billing import run_cost_eur
    from vram.catalogue import card_speed
    from vram.timing import run_seconds, training_step

    cards = _speeds()
    gpus = [c | {"speed": card_speed(cards[c["key"]])} for c in CARDS]
    job = {
        "kind": "training",
        "config": configs("llama-3.1-8b"),
        "cards": 8,
        "framework": "deepspeed",
        "zero_stage": 3,
        "gpus": gpus,
        "tokens": 10**9,
        "prices": {"h100": "31.20"},
        "reserve_mib": RESERVE_MIB,
    }
    answer = answer_job(job)
    config = vram.model_config_from_dict(json.loads(configs("llama-3.1-8b")))
    h100 = next(f for f in answer["fits"] if f["gpu"] == "h100")
    step = training_step(config, cards["h100"], 8, 3, 2048, 1, h100["recompute"])
    run = run_seconds(10**9, step)
    assert h100["time"]["step_s"] == step.step.as_list() and h100["time"]["run_s"] == run.as_list()
    assert h100["time"]["bound"] == step.bound
    assert h100["time"]["cost_eur"] == [str(run_cost_eur(run.low, "31.20")), str(run_cost_eur(run.high, "31.20"))]
    # not every fitting card has a price: ranked by time, fastest first, and saying so
    assert answer["run"]["ranked_by"] == "time" and answer["run"]["order"][0] == "h100"
    assert all(f["time"]["cost_eur"] is None for f in answer["fits"] if f["gpu"] != "h100")


def test_a_typed_price_that_makes_the_smaller_card_dearer_changes_the_ranking(configs):
    from vram.catalogue import card_speed

    cards = _speeds()
    gpus = [
        {"key": k, "memory_mib": m, "speed": card_speed(cards[k])}
        for k, m in (("a6000", memory_mib("a6000")), ("h100", H100))
    ]
    job = {
        "kind": "training",
        "config": configs("llama-3.1-8b"),
        "cards": 8,
        "framework": "deepspeed",
        "zero_stage": 3,
        "gpus": gpus,
        "reserve_mib": RESERVE_MIB,
    }
    cheap = answer_job(job | {"prices": {"h100": "31.20", "a6000": "2"}})
    dear = answer_job(job | {"prices": {"h100": "31.20", "a6000": "8"}})
    assert cheap["run"]["ranked_by"] == dear["run"]["ranked_by"] == "cost"
    # a6000: 8 cards at 2 EUR/h for 27.8-70.9 h is 55-142 EUR, below H100's 135.72-226.20 EUR; at 8 EUR/h, above
    assert cheap["run"]["order"] == ["a6000", "h100"] and dear["run"]["order"] == ["h100", "a6000"]
    h100 = next(f for f in dear["fits"] if f["gpu"] == "h100")["time"]
    assert h100["cost_eur"] == ["135.72", "226.20"]  # billing's per-minute rule, 31.20 EUR/h = 0.52 EUR/min
    assert int(h100["cost_eur"][0].replace(".", "")) % 52 == 0 and int(h100["cost_eur"][1].replace(".", "")) % 52 == 0


@pytest.mark.parametrize(
    "change, field",
    [
        ({"tokens": 0}, "tokens"),
        ({"tokens": -5}, "tokens"),
        ({"prices": {"h100": "abc"}}, "prices"),
        ({"prices": {"h100": "1000000000"}}, "prices"),
    ],
)
def test_bad_run_input_names_the_field(configs, change, field):
    job = {"kind": "training", "config": configs("llama-3.1-8b"), "gpus": CARDS, "reserve_mib": RESERVE_MIB} | change
    found = json.loads(answer_json(json.dumps(job)))
    assert found["error"]["field"] == field and "\n" not in found["error"]["message"]


def test_the_command_line_prints_the_same_run(cli, configs):
    from vram.catalogue import card_speed

    cards = _speeds()
    from vram.calibration import load_measured_data

    job = {
        "kind": "training",
        "config": configs("llama-3.1-8b"),
        "cards": 8,
        "framework": "deepspeed",
        "zero_stage": 3,
        "tokens": 2 * 10**9,
        "prices": {"h100": "31.20"},
        "gpus": [c | {"speed": card_speed(cards[c["key"]])} for c in CARDS],
        "reserve_mib": RESERVE_MIB,
        "calibration": load_measured_data().calibration.as_job(),
    }  # the published runs the CLI hands in
    proc = cli(
        "job",
        "--config",
        str(MODELS / "llama-3.1-8b.json"),
        "--cards",
        "8",
        "--framework",
        "deepspeed",
        "--zero-stage",
        "3",
        "--tokens",
        "2000000000",
        "--price",
        "h100=31.20",
        *[f"--gpu={c['key']}={c['memory_mib']}" for c in CARDS],
        f"--reserve-mib={RESERVE_MIB}",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == answer_json(json.dumps(job))
    assert json.loads(proc.stdout)["run"]["tokens"] == 2 * 10**9


@pytest.mark.parametrize(
    "text, code, limits",
    [
        ("[1, 2]", "config_object", {"got": "array"}),  # JSON's word for it (RFC 8259), not Python's
        ('"llama"', "config_object", {"got": "string"}),
        ("null", "config_object", {"got": "null"}),
        ('{"model_type": "llama", "model_type": "qwen2"}', "config_duplicate", {"key": "model_type"}),
        ('{"model_type": "llama",\n  "hidden_size": }', "config_json", {"line": 2, "column": 18}),
        ('{"model_type": "falcon"}', "config_family", {"key": "falcon", "choices": list(vram.SUPPORTED_MODEL_TYPES)}),
        # a multimodal Gemma 3: the CLI says to save its text_config alone; the page must say that too
        (
            '{"model_type": "gemma3", "text_config": {"model_type": "gemma3_text"}}',
            "config_multimodal",
            {
                "key": "gemma3",
                "got": "gemma3_text",
                "add": {
                    "vocab_size": 262208,
                    "hidden_size": 2304,
                    "intermediate_size": 9216,
                    "num_hidden_layers": 26,
                    "num_attention_heads": 8,
                },
            },
        ),
        ('{"model_type": "gemma3"}', "config_multimodal", {"key": "gemma3", "got": "gemma3_text"}),
        # Mistral3Config's text_config defaults to mistral, Llama4Config's to llama4_text (transformers 5.23)
        ('{"model_type": "mistral3"}', "config_multimodal", {"key": "mistral3", "got": "mistral"}),
        # llama4_text is in the registry: its text_config alone is read once it writes out the sizes it
        # leaves to Llama4TextConfig's defaults (transformers 5.23)
        (
            '{"model_type": "llama4", "text_config": {"model_type": "llama4_text"}}',
            "config_multimodal",
            {
                "key": "llama4",
                "got": "llama4_text",
                "add": {
                    "hidden_size": 5120,
                    "intermediate_size": 8192,
                    "num_attention_heads": 40,
                    "num_hidden_layers": 48,
                    "vocab_size": 202048,
                },
            },
        ),
        # a look-alike: the Cyrillic а (U+0430) in "llаma", shown with its code point on the page too  # noqa: RUF003
        (
            '{"model_type": "ll\u0430ma"}',
            "config_family",
            {
                "key": "ll\u0430ma",  # the page says it in its language, with each odd character's code point
                "choices": list(vram.SUPPORTED_MODEL_TYPES),
                "characters": [["\u0430", "U+0430", "CYRILLIC SMALL LETTER A"]],  # unicodedata, the standard's name
            },
        ),
    ],
)
def test_config_errors_say_what_the_command_line_says(tmp_path, text, code, limits):
    """The page's one line comes from these fields: the same facts as the CLI's message
    (``load_model_config`` on the same text saved as a file), not a generic "not JSON"."""
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ValueError) as cli:
        vram.load_model_config(path)
    found = json.loads(
        answer_json(json.dumps({"kind": "training", "config": text, "gpus": CARDS, "reserve_mib": RESERVE_MIB}))
    )["error"]
    assert (found["field"], found["code"], found["limits"]) == ("config", code, limits)
    assert found["message"] == "config: " + str(cli.value).removeprefix(f"{path}: ")


def test_a_config_nested_past_the_bound_is_refused_before_it_is_parsed(monkeypatch):
    """Issue 33: a config.json nested 50,000 deep crashed the finder's Pyodide inside json.loads;
    the bound (vram.json_nesting.MAX_JSON_DEPTH) is checked first, and json.loads never sees it."""
    import json

    import vram.job_input
    from vram.json_nesting import MAX_JSON_DEPTH, nesting_depth

    parsed, loads = [], json.loads
    monkeypatch.setattr(vram.job_input.json, "loads", lambda text, **kw: parsed.append(text) or loads(text, **kw))
    for depth in (MAX_JSON_DEPTH + 1, 50_000):
        text = '{"a":' * depth + "1" + "}" * depth
        with pytest.raises(JobError) as info:
            vram.job_input.read_config(text)
        assert info.value.as_dict()["code"] == "config_depth" and info.value.limits == {"maximum": MAX_JSON_DEPTH}
        assert str(info.value) == "config: nested deeper than 32 levels, which no config.json is"
    assert parsed == []
    # brackets inside strings are text, not nesting; the count is json's own for real configs
    assert nesting_depth('{"a": "[[[{{{\\"", "b": [1, {"c": []}]}') == 4 == _depth({"b": [1, {"c": []}]})
    for path in (REPO_ROOT / "snippets" / "data" / "models").glob("*.json"):
        raw = json.loads(path.read_text())
        assert nesting_depth(path.read_text()) == _depth(raw) <= MAX_JSON_DEPTH, path.name


def _depth(value) -> int:
    """json's own nesting of a parsed value (the oracle for the text scan)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def test_a_multimodal_gemma3_refusal_gives_the_values_to_add():
    """The refusal names what the text_config, saved alone, must add: model_type gemma3_text
    and each size key it leaves to Gemma3TextConfig's defaults, with transformers' own default
    (the oracle: the config class itself); with them added, the file is read."""
    import transformers

    text = {
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "num_hidden_layers": 34,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
    }  # google/gemma-3-4b-it's text_config leaves vocab_size out
    found = json.loads(answer_json(json.dumps({"config": json.dumps({"model_type": "gemma3", "text_config": text})})))
    assert found["error"]["code"] == "config_multimodal"
    add = found["error"]["limits"]["add"]
    assert add == {"model_type": "gemma3_text", "vocab_size": transformers.Gemma3TextConfig().vocab_size}
    assert add["vocab_size"] == 262_208
    assert vram.model_config_from_dict({**text, **add}).vocab_size == 262_208


# gpt-oss-20b: 12 full and 12 sliding (128-token) layers, 2 KiB of KV per token and layer in bf16.
# vLLM's SlidingWindowSpec (vllm/v1/kv_cache_interface.py at 001cabc1be16a59a70d720ed61a13b678c060a18)
# reserves cdiv(min(W - 1 + max_num_batched_tokens, T), 16) + 1 blocks of 16 tokens per sliding layer.
GPT_OSS_KV_8K = {2048: 2048 * (12 * 8192 + 12 * 2192), 8192: 2048 * (12 * 8192 + 12 * 8208)}


def test_serving_says_which_prefill_chunk_it_assumes_and_the_reader_can_change_it(configs):
    job = {
        "kind": "serving",
        "config": configs("gpt-oss-20b"),
        "context": 8192,
        "concurrent": 16,
        "gpus": CARDS,
        "reserve_mib": RESERVE_MIB,
    }
    default = answer_job(job)
    assert default["max_num_batched_tokens"] == 2048  # vLLM's SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS
    assert {part[0]: part[1] for part in default["parts"]}["kv_cache"] == 16 * GPT_OSS_KV_8K[2048]
    assert default["kv_per_sequence_bytes"] == GPT_OSS_KV_8K[2048]
    h100 = answer_job({**job, "max_num_batched_tokens": 8192})  # `vllm serve` on an H100
    assert h100["max_num_batched_tokens"] == 8192 and h100["kv_per_sequence_bytes"] == GPT_OSS_KV_8K[8192]


@pytest.mark.parametrize("chunk", [0, 2**24 + 1, 1.5, "2048", True, None])
def test_a_bad_prefill_chunk_is_refused_naming_the_field(configs, chunk):
    job = {
        "kind": "serving",
        "config": configs("gpt-oss-20b"),
        "gpus": CARDS,
        "reserve_mib": RESERVE_MIB,
        "max_num_batched_tokens": chunk,
    }
    with pytest.raises(JobError) as info:
        answer_job(job)
    assert (info.value.field, info.value.code) == ("max_num_batched_tokens", "integer")
    assert info.value.limits == {"minimum": 1, "maximum": 2**24}
