"""``vram.job.answer_job`` (the finder's one calculator) and ``python -m vram job``.

Independent anchors: the bytes of gpt-oss-20b's published checkpoint, DeepSpeed 0.19's
estimator figure for Llama 3.1 8B under ZeRO-3 on 8 GPUs (oracles.md), nvidia-smi's card
totals in gpus.yaml, and vLLM's rule for its share of a card.
"""

from __future__ import annotations

import json

import pytest

import vram
from tests.conftest import REPO_ROOT
from vram.job import JobError, answer_job, answer_json, dumps
from vram.mxfp4 import mxfp4_weights_bytes_per_gpu
from tests.catalogue import FROZEN

pytestmark = pytest.mark.usefixtures("frozen_catalogue")  # the command line reads the frozen test catalogue

MIB = 2**20
RESERVE_MIB = 2048  # the jobs' own: answer_job takes the reserve from the job (no default of its own)
RTX_4090, RTX_5090, H100 = 24564, 32607, 81559  # nvidia-smi memory.total (snippets/data/gpus.yaml)
CARDS = [{"key": "rtx-4090", "memory_mib": RTX_4090}, {"key": "rtx-5090", "memory_mib": RTX_5090},
         {"key": "h100", "memory_mib": H100}]


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
    answer = answer_job({"kind": "training", "config": configs("llama-3.1-8b"), "cards": 8, "framework": "deepspeed",
                         "zero_stage": 3, "seq_len": 4096, "gpus": CARDS, "reserve_mib": RESERVE_MIB})
    assert answer["per_gpu_bytes"] == 20_169_434_112  # DeepSpeed 0.19's estimator (oracles.md)
    margin = (RTX_4090 - RESERVE_MIB) * MIB - 20_169_434_112
    assert [f["gpu"] for f in answer["short"]] == ["rtx-4090"]  # holds the states, not the activations
    assert margin < answer["activations"]["full_bytes"]  # not even with full recomputation
    assert answer["fits"][0]["gpu"] == "rtx-5090" and answer["fits"][0]["tight"]


def test_gpt_oss_20b_mxfp4_16_sequences_of_8192_fit_a_32_gb_card(configs):
    answer = answer_job({"kind": "serving", "config": configs("gpt-oss-20b"), "weights": "mxfp4", "context": 8192,
                         "concurrent": 16, "gpu_memory_utilization": 0.9, "gpus": CARDS, "reserve_mib": RESERVE_MIB})
    assert dict((k, b) for k, b, _ in answer["parts"])["weights"] == 13_761_264_768
    fit = next(f for f in answer["fits"] if f["gpu"] == "rtx-5090")
    # vLLM: gpu_memory_utilization x total memory, the CUDA context and NCCL buffers inside it
    assert fit["capacity_bytes"] == int(0.9 * RTX_5090 * MIB) - RESERVE_MIB * MIB
    assert fit["max_concurrent"] >= 16 and RTX_5090 * MIB <= 32 * 2**30
    assert fit["max_concurrent"] == (fit["capacity_bytes"] - 13_761_264_768) // answer["kv_per_sequence_bytes"]


def test_8b_all_bf16_full_fine_tuning_fits_one_h100_at_2048_tokens(configs):
    answer = answer_job({"kind": "training", "config": configs("llama-3.1-8b"), "framework": "zero-paper",
                         "optimizer": "adamw-bf16", "seq_len": 2048, "gpus": CARDS, "reserve_mib": RESERVE_MIB})
    assert answer["per_gpu_bytes"] == 8 * 8_030_261_248  # bf16 weights, gradients, m and v: 2 + 2 + 2 + 2 B
    assert [f["gpu"] for f in answer["fits"]] == ["h100"] and answer["fits"][0]["recompute"] == "none"
    with pytest.raises(JobError) as refused:  # DeepSpeed keeps an fp32 master copy: not this optimizer
        answer_job({"kind": "training", "config": configs("llama-3.1-8b"), "framework": "deepspeed",
                    "optimizer": "adamw-bf16", "gpus": CARDS, "reserve_mib": RESERVE_MIB})
    assert (refused.value.field, refused.value.code) == ("optimizer", "not_offered")


def test_the_recomputation_asked_is_the_one_counted(configs):
    base = {"kind": "training", "config": configs("llama-3.1-8b"), "cards": 8, "framework": "deepspeed",
            "zero_stage": 3, "seq_len": 4096, "gpus": CARDS, "reserve_mib": RESERVE_MIB}
    full = answer_job(base | {"recompute": "full"})
    assert full["activations"]["bytes"] == full["activations"]["full_bytes"]
    assert not full["fits"][0]["tight"] and full["fits"][0]["recompute"] == "full"


@pytest.mark.parametrize("change, field, code", [
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
])
def test_bad_input_names_the_field(configs, change, field, code):
    job = {"kind": "training", "config": configs("llama-3.1-8b"), "gpus": CARDS, "reserve_mib": RESERVE_MIB} | change
    found = json.loads(answer_json(json.dumps(job)))
    assert (found["error"]["field"], found["error"]["code"]) == (field, code)
    assert "\n" not in found["error"]["message"]


def test_the_command_line_prints_the_same_bytes(cli, configs):
    job = {"kind": "serving", "config": configs("gpt-oss-20b"), "weights": "mxfp4", "context": 8192,
           "concurrent": 16, "kv_dtype": "fp8", "cards": 2, "gpus": CARDS, "reserve_mib": RESERVE_MIB}
    proc = cli("job", "--config", str(MODELS / "gpt-oss-20b.json"), "--kind", "serving", "--weights", "mxfp4",
               "--context", "8192", "--concurrent", "16", "--kv-dtype", "fp8", "--cards", "2",
               *[f"--gpu={c['key']}={c['memory_mib']}" for c in CARDS], f"--reserve-mib={RESERVE_MIB}", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == answer_json(json.dumps(job)) == dumps(answer_job(job))


@pytest.mark.parametrize("args, words", [
    (["--seq-len", "200000"], "seq_len: 200,000 tokens is beyond the model's maximum, 131,072"),
    (["--seq-len", "-5"], "seq_len must be a whole number"),
    (["--gpu-memory-utilization", "nan"], "gpu_memory_utilization must be a decimal"),
    (["--framework", "deepspeed", "--zero-stage", "2", "--offload", "optimizer+params"], "offload:"),
])
def test_the_command_line_refuses_in_one_line(cli, args, words):
    proc = cli("job", "--config", str(MODELS / "llama-3.1-8b.json"), *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


# --- the run: time per step and per run, its cost, and the ranking (issue 21) ----------------

def _speeds():
    from vram.catalogue import card_speed, load_catalogue
    return load_catalogue(FROZEN)[0]


def test_the_run_is_vram_timing_and_billing_for_the_same_inputs(configs):
    from vram.billing import run_cost_eur
    from vram.catalogue import card_speed
    from vram.timing import run_seconds, training_step
    cards = _speeds()
    gpus = [c | {"speed": card_speed(cards[c["key"]])} for c in CARDS]
    job = {"kind": "training", "config": configs("llama-3.1-8b"), "cards": 8, "framework": "deepspeed",
           "zero_stage": 3, "gpus": gpus, "tokens": 10**9, "prices": {"h100": "31.20"}, "reserve_mib": RESERVE_MIB}
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
    gpus = [{"key": k, "memory_mib": m, "speed": card_speed(cards[k])} for k, m in (("a6000", 49140), ("h100", H100))]
    job = {"kind": "training", "config": configs("llama-3.1-8b"), "cards": 8, "framework": "deepspeed",
           "zero_stage": 3, "gpus": gpus, "reserve_mib": RESERVE_MIB}
    cheap = answer_job(job | {"prices": {"h100": "31.20", "a6000": "2"}})
    dear = answer_job(job | {"prices": {"h100": "31.20", "a6000": "8"}})
    assert cheap["run"]["ranked_by"] == dear["run"]["ranked_by"] == "cost"
    # a6000: 8 cards at 2 EUR/h for 27.8-70.9 h is 55-142 EUR, below H100's 135.72-226.20 EUR; at 8 EUR/h, above
    assert cheap["run"]["order"] == ["a6000", "h100"] and dear["run"]["order"] == ["h100", "a6000"]
    h100 = next(f for f in dear["fits"] if f["gpu"] == "h100")["time"]
    assert h100["cost_eur"] == ["135.72", "226.20"]  # billing's per-minute rule, 31.20 EUR/h = 0.52 EUR/min
    assert int(h100["cost_eur"][0].replace(".", "")) % 52 == 0 and int(h100["cost_eur"][1].replace(".", "")) % 52 == 0


@pytest.mark.parametrize("change, field", [({"tokens": 0}, "tokens"), ({"tokens": -5}, "tokens"),
                                           ({"prices": {"h100": "abc"}}, "prices"),
                                           ({"prices": {"h100": "1000000000"}}, "prices")])
def test_bad_run_input_names_the_field(configs, change, field):
    job = {"kind": "training", "config": configs("llama-3.1-8b"), "gpus": CARDS, "reserve_mib": RESERVE_MIB} | change
    found = json.loads(answer_json(json.dumps(job)))
    assert found["error"]["field"] == field and "\n" not in found["error"]["message"]


def test_the_command_line_prints_the_same_run(cli, configs):
    from vram.catalogue import card_speed
    cards = _speeds()
    job = {"kind": "training", "config": configs("llama-3.1-8b"), "cards": 8, "framework": "deepspeed",
           "zero_stage": 3, "tokens": 2 * 10**9, "prices": {"h100": "31.20"},
           "gpus": [c | {"speed": card_speed(cards[c["key"]])} for c in CARDS], "reserve_mib": RESERVE_MIB}
    proc = cli("job", "--config", str(MODELS / "llama-3.1-8b.json"), "--cards", "8", "--framework", "deepspeed",
               "--zero-stage", "3", "--tokens", "2000000000", "--price", "h100=31.20",
               *[f"--gpu={c['key']}={c['memory_mib']}" for c in CARDS], f"--reserve-mib={RESERVE_MIB}", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == answer_json(json.dumps(job))
    assert json.loads(proc.stdout)["run"]["tokens"] == 2 * 10**9


@pytest.mark.parametrize("text, code, limits", [
    ("[1, 2]", "config_object", {"got": "list"}),
    ('{"model_type": "llama", "model_type": "qwen2"}', "config_duplicate", {"key": "model_type"}),
    ('{"model_type": "llama",\n  "hidden_size": }', "config_json", {"line": 2, "column": 18}),
    ('{"model_type": "falcon"}', "config_family", {"key": "falcon", "choices": list(vram.SUPPORTED_MODEL_TYPES)}),
    # a multimodal Gemma 3: the CLI says to save its text_config alone; the page must say that too
    ('{"model_type": "gemma3", "text_config": {"model_type": "gemma3_text"}}', "config_multimodal", {"key": "gemma3"}),
    ('{"model_type": "gemma3"}', "config_multimodal", {"key": "gemma3"}),
])
def test_config_errors_say_what_the_command_line_says(tmp_path, text, code, limits):
    """The page's one line comes from these fields: the same facts as the CLI's message
    (``load_model_config`` on the same text saved as a file), not a generic "not JSON"."""
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ValueError) as cli:
        vram.load_model_config(path)
    found = json.loads(answer_json(json.dumps({"kind": "training", "config": text, "gpus": CARDS, "reserve_mib": RESERVE_MIB})))["error"]
    assert (found["field"], found["code"], found["limits"]) == ("config", code, limits)
    assert found["message"] == "config: " + str(cli.value).removeprefix(f"{path}: ")
