"""LoRA/QLoRA time, the decoding bound per card and the finder's durations (issue 21), against
sources typed here:

- Llama 3.1 8B: 8,030,261,248 parameters, of which 128,256 x 4,096 in the input embedding (a
  lookup), 32 layers of 32 heads of 128; PEFT's ``print_trainable_parameters`` for rank 16 on
  all linear layers: 41,943,040 trainable;
- Narayanan et al. 2021 (arXiv:2104.04473, appendix): a weight's backward is twice its forward,
  half of it the weight's gradient; so without weight gradients 4 FLOPs per parameter and token;
- Hu et al. 2021 (LoRA, arXiv:2106.09685, section 4.2): 25 % faster than full fine-tuning on
  GPT-3 175B, i.e. 6 / 1.25 FLOPs' worth per frozen parameter;
- nccl-tests doc/PERFORMANCE.md: an all-gather of S bytes moves (n-1)/n x S per rank;
- the H100 SXM datasheet: 3,350 GB/s of HBM3; NVLink 4 at 450 GB/s per direction.
"""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout

import pytest
import yaml

from tests.card_sources import memory_mib
from tests.catalogue import FROZEN
from tests.conftest import REPO_ROOT
from vram import timing
from vram.calibration import load_measured_data
from vram.catalogue import card_speed, load_catalogue
from vram.cli import main
from vram.job import answer_job
from vram.models import load_model_config

pytestmark = pytest.mark.usefixtures("frozen_catalogue")  # the command line reads the frozen test catalogue

LLAMA_8B = REPO_ROOT / "snippets" / "data" / "models" / "llama-3.1-8b.json"
P_8B = 8_030_261_248
MATMUL_8B = P_8B - 128_256 * 4_096
ADAPTERS_8B_R16 = 41_943_040
ATTENTION_8B_2048 = 32 * 32 * 128 * 2048  # layers x heads x head_dim x sequence


@pytest.fixture(scope="module")
def llama8b():
    return load_model_config(LLAMA_8B)


@pytest.fixture(scope="module")
def cards(frozen_data_dir):
    return load_catalogue(frozen_data_dir)[0]


def run_cli(*argv: str) -> tuple[int | str | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code: int | str | None = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------ LoRA FLOPs and step
def test_lora_flops_run_from_no_weight_gradients_to_hus_measured_speedup(llama8b):
    low, high = timing.lora_flops_per_token(llama8b, 2048, ADAPTERS_8B_R16)
    rest = 6 * ADAPTERS_8B_R16 + 12 * ATTENTION_8B_2048  # adapters trained; attention has no weights
    assert low == 4 * MATMUL_8B + rest  # Narayanan et al.: forward 2 + input gradients 2
    assert high == math.ceil(MATMUL_8B * 6 / 1.25) + rest  # Hu et al.: 1.25x the full fine-tuning's speed
    assert low < high < timing.flops_per_token(llama8b, 2048)  # cheaper than a full training's step


def test_full_recomputation_adds_one_forward_to_a_lora_step(llama8b):
    low, _ = timing.lora_flops_per_token(llama8b, 2048, ADAPTERS_8B_R16)
    again, _ = timing.lora_flops_per_token(llama8b, 2048, ADAPTERS_8B_R16, "full")
    assert again - low == 2 * (MATMUL_8B + ADAPTERS_8B_R16) + 4 * ATTENTION_8B_2048


def test_lora_at_zero3_gathers_the_frozen_base_twice(llama8b, cards):
    step = timing.lora_step(llama8b, cards["h100"], 8, 3)
    share = 7 / 8
    adapters = share * (2 * 2 + 2) * ADAPTERS_8B_R16  # ZeRO-3 volume of the bf16 adapters (ZeRO paper §7.2)
    assert step.communication.low == pytest.approx((2 * share * 2 * P_8B + adapters) / 450e9)
    one = timing.lora_step(llama8b, cards["h100"], 1, 0)
    assert one.communication == timing.ZERO and one.bound == "compute"
    tokens = 2048
    assert one.compute.low == pytest.approx(one.flops_per_token * tokens / (989.5e12 * timing.MFU[1]))
    assert one.compute.high == pytest.approx(one.flops_per_token_high * tokens / (989.5e12 * timing.MFU[0]))


def test_cli_time_lora_gives_the_finders_figures(llama8b, cards):
    code, out, err = run_cli(
        "time",
        "--task",
        "lora",
        "--config",
        str(LLAMA_8B),
        "--gpu",
        "rtx-4090",
        "--gpus",
        "1",
        "--zero-stage",
        "0",
        "--base-dtype",
        "nf4",
        "--tokens",
        "1e9",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["flops_per_token"] == list(timing.lora_flops_per_token(llama8b, 2048, ADAPTERS_8B_R16))
    answer = answer_job(
        {
            "kind": "lora",
            "config": llama8b,
            "cards": 1,
            "framework": "deepspeed",
            "zero_stage": 0,
            "base_dtype": "nf4",
            "reserve_mib": 2048,
            "gpus": [{"key": "rtx-4090", "memory_mib": memory_mib("rtx-4090"), "speed": card_speed(cards["rtx-4090"])}],
            "calibration": load_measured_data().calibration.as_job(),
        }
    )
    time = answer["fits"][0]["time"]
    assert time["run_s"] == data["run_s"] and time["step_s"] == data["step_s"]
    assert time["backing"] == data["backing"]  # the same published runs behind both
    assert time["run_shown"][0][0][0] == "days"  # QLoRA of an 8B on one RTX 4090: days


def test_cli_time_settles_the_recomputation_as_the_finder(llama8b, cards):
    """LoRA of Llama 3.1 8B (bf16 base) on one RTX 4090: the states fit the card, the activations
    of 2,048 tokens only fully recomputed, so the finder times that run with full recomputation
    (one more forward per step: test_full_recomputation_adds_one_forward_to_a_lora_step).
    ``python -m vram time`` must time the same run, not the one its ``--recompute`` default asks."""
    gpus = yaml.safe_load((FROZEN / "gpus.yaml").read_text(encoding="utf-8"))
    job = {
        "kind": "lora",
        "config": llama8b,
        "cards": 1,
        "framework": "deepspeed",
        "zero_stage": 0,
        "reserve_mib": gpus["reserve_mib"],
        "gpus": [
            {
                "key": "rtx-4090",
                "memory_mib": gpus["gpus"]["rtx-4090"]["memory_mib"],
                "speed": card_speed(cards["rtx-4090"]),
            }
        ],
        "calibration": load_measured_data().calibration.as_job(),
    }  # the published runs, as the CLI reads them
    (fit,) = answer_job(job)["fits"]
    assert fit["recompute"] == "full"  # the case: only full recomputation fits
    code, out, err = run_cli(
        "time",
        "--task",
        "lora",
        "--config",
        str(LLAMA_8B),
        "--gpu",
        "rtx-4090",
        "--gpus",
        "1",
        "--zero-stage",
        "0",
        "--tokens",
        "1e9",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert (data["step_s"], data["run_s"]) == (fit["time"]["step_s"], fit["time"]["run_s"])
    assert data["recompute"] == "full" and data["fits"] is True


@pytest.mark.parametrize(
    "argv, field",
    [
        (("--lora-rank", "0"), "lora_rank"),
        (("--base-dtype", "nf5"), "--base-dtype"),
        (("--price-eur-per-hour", "0"), "price_eur_per_hour"),
        (("--price-eur-per-hour", "-1"), "price_eur_per_hour"),
    ],
)
def test_cli_time_lora_bad_input_is_one_line(argv, field):
    code, out, err = run_cli(
        "time",
        "--task",
        "lora",
        "--config",
        str(LLAMA_8B),
        "--gpu",
        "h100",
        "--gpus",
        "1",
        "--zero-stage",
        "0",
        "--tokens",
        "1e9",
        *argv,
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err


# ------------------------------------------------------------------ serving in the finder
def test_the_finders_decode_bound_is_the_command_lines_rounded_up(llama8b, cards):
    code, out, err = run_cli(
        "time",
        "--task",
        "serve",
        "--config",
        str(LLAMA_8B),
        "--gpu",
        "h100",
        "--gpus",
        "2",
        "--context",
        "8192",
        "--batch",
        "4",
        "--json",
    )
    assert code == 0, err
    cli = json.loads(out)
    answer = answer_job(
        {
            "kind": "serving",
            "config": llama8b,
            "cards": 2,
            "context": 8192,
            "concurrent": 4,
            "reserve_mib": 2048,
            "gpus": [{"key": "h100", "memory_mib": memory_mib("h100"), "speed": card_speed(cards["h100"])}],
        }
    )
    decode = answer["fits"][0]["decode"]
    assert decode["bytes_per_step"] == cli["bytes_per_step"]
    assert decode["tokens_per_s_per_sequence_at_most"] == math.ceil(cli["tokens_per_s_per_sequence_at_most"])
    assert decode["tokens_per_s_at_most"] == math.ceil(cli["tokens_per_s_at_most"])
    # the roofline: 3,350 GB/s over the bytes each GPU reads per step (bf16 weights on 2 GPUs, KV of 4 x 8,192)
    assert cli["tokens_per_s_per_sequence_at_most"] == pytest.approx(3350e9 / cli["bytes_per_step"])


# ------------------------------------------------------------------ durations as the finder writes them
@pytest.mark.parametrize(
    "seconds, down, up",
    [
        (42.5, [["s", 42]], [["s", 43]]),
        (59 * 60 + 1, [["min", 59]], [["min", 60]]),
        (4.25 * 3600, [["h", 4.2]], [["h", 4.3]]),
        (47.99 * 3600, [["h", 47.9]], [["h", 48.0]]),
        (2 * 86_400, [["days", 2]], [["days", 2]]),
        (4 * 86_400 + 15.5 * 3600, [["days", 4], ["h", 15]], [["days", 4], ["h", 16]]),
        (6 * 86_400 + 23.5 * 3600, [["days", 6], ["h", 23]], [["days", 7]]),
    ],
)
def test_a_run_is_written_in_days_and_hours_rounded_outwards(seconds, down, up):
    assert timing.shown_duration(seconds, up=False) == down
    assert timing.shown_duration(seconds, up=True) == up


@pytest.mark.parametrize("seconds", [-1.0, math.inf, math.nan])
def test_a_duration_refuses_what_is_not_one(seconds):
    with pytest.raises(ValueError, match="seconds must be finite"):
        timing.shown_duration(seconds, up=True)


@pytest.mark.parametrize("price", ["abc", "-1", "0", "1e9", "31,20"])
@pytest.mark.parametrize("kind", ["training", "lora"])
def test_job_cli_refuses_a_bad_typed_price_in_one_line(price, kind):
    """The finder's validation (vram.billing.parse_price through vram.job) on the command line: exit 2."""
    code, out, err = run_cli(
        "job",
        "--config",
        str(LLAMA_8B),
        f"--kind={kind}",
        f"--gpu=rtx-5090={memory_mib('rtx-5090')}",
        f"--price=rtx-5090={price}",
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("vram: error: prices: prices.rtx-5090 ") and "euros per hour" in err, err


def test_job_cli_refuses_an_ambiguous_price_naming_both_readings():
    """The finder's answer (vram.job: code price_ambiguous, with both readings) on the command line: exit 2."""
    from vram.job_input import JobError

    code, out, err = run_cli(
        "job", "--config", str(LLAMA_8B), f"--gpu=rtx-5090={memory_mib('rtx-5090')}", "--price=rtx-5090=1.200"
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("vram: error: prices: prices.rtx-5090 '1.200' is ambiguous") and "1.2 or 1200" in err, err
    job = {
        "kind": "training",
        "config": json.loads(LLAMA_8B.read_text()),
        "cards": 8,
        "framework": "deepspeed",
        "zero_stage": 3,
        "gpus": [{"key": "rtx-5090", "memory_mib": memory_mib("rtx-5090")}],
        "reserve_mib": 2048,
        "tokens": 10**9,
        "prices": {"rtx-5090": "1.200"},
    }
    with pytest.raises(JobError) as info:
        answer_job(job)
    assert info.value.as_dict()["code"] == "price_ambiguous"
    assert info.value.limits == {"key": "rtx-5090", "got": "1.200", "decimal": "1.2", "thousands": "1200"}
