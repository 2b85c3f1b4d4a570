"""The time model (vram.timing), the billing (vram.billing) and ``python -m vram time`` against
independent sources, typed here:

- torchtitan ``benchmarks/llama3_h100_202412_torchtitan.md`` (Table 1: Llama 3.1 8B, FSDP, 8 x
  H100, local batch 2, selective activation checkpointing: 5,762 tokens/s per GPU, 6,667 with
  torch.compile; "33% to 39% MFU"), with the sequence length of its train config
  (``train_configs/llama3_8b.toml``: seq_len = 8192) and the peak it divided by
  (``torchtitan/utils.py`` get_peak_flops: H100 SXM 989e12);
- Llama 3.1 8B's published shape (32 layers, 32 heads of 128, vocabulary 128,256, hidden 4,096)
  and its parameter count 8,030,261,248;
- nccl-tests doc/PERFORMANCE.md: busbw = algbw x 2(n-1)/n for all-reduce, a collective of S
  bytes takes S / algbw;
- vendors' datasheets, values as printed (the sparse figure halved where they print that one);
- the guide's billing: per minute, 15-minute minimum, 31.20 EUR/h for 8 x H100.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from decimal import Decimal

import pytest
import yaml

from tests.catalogue import FROZEN
from tests.conftest import REPO_ROOT
from vram import billing, timing
from vram.catalogue import Bandwidth, cards_from_data, load_catalogue
from vram.cli import main
from vram.models import count_params, load_model_config

pytestmark = pytest.mark.usefixtures("frozen_catalogue")  # the command line reads the frozen test catalogue

MODELS = REPO_ROOT / "snippets" / "data" / "models"
LLAMA_8B = MODELS / "llama-3.1-8b.json"
LLAMA_1B = MODELS / "llama-3.2-1b.json"
P_8B = 8_030_261_248
EMBEDDING_8B = 128_256 * 4_096
TORCHTITAN_PEAK = 989e12


@pytest.fixture(scope="module")
def catalogue(frozen_data_dir):
    return load_catalogue(frozen_data_dir)


@pytest.fixture(scope="module")
def llama8b():
    return load_model_config(LLAMA_8B)


@pytest.fixture(scope="module")
def llama1b():
    return load_model_config(LLAMA_1B)


# ------------------------------------------------------------------ FLOPs and torchtitan
def test_flops_per_token_is_torchtitans_formula_for_llama_8b(llama8b):
    # 6 x (params - tok_embeddings) + 12 x layers x heads x head_dim x seq_len
    assert timing.flops_per_token(llama8b, 8192) == 6 * (P_8B - EMBEDDING_8B) + 12 * 32 * 32 * 128 * 8192


@pytest.mark.parametrize("tokens_per_s, published_mfu", [(5_762, 33), (6_667, 39)])
def test_torchtitans_published_mfu_comes_out_of_its_tokens_per_second(llama8b, tokens_per_s, published_mfu):
    """The FLOPs convention is the one the MFU range was measured with: the published
    tokens/s give the published percentages (whole percents, cut: 33.7 % and 39.0 %)."""
    mfu = tokens_per_s * timing.flops_per_token(llama8b, 8192) / TORCHTITAN_PEAK
    assert int(mfu * 100) == published_mfu


def test_the_model_reproduces_torchtitans_tokens_per_second(catalogue, llama8b):
    cards, _ = catalogue
    step = timing.training_step(llama8b, cards["h100"], 8, 3, seq_len=8192, micro_batch=2, recompute="selective")
    per_gpu = step.tokens_per_second
    assert per_gpu.low / 8 <= 5_762 <= per_gpu.high / 8
    assert step.bound == "compute"
    assert timing.MFU == (0.33, 0.39)


def test_moe_counts_the_active_experts(local_configs):
    mixtral = load_model_config(local_configs / "mixtral-8x7b-v0.1.json")
    # Mixtral paper (arXiv:2401.04088): 47B parameters, 13B active per token
    per_token_matmuls = (timing.flops_per_token(mixtral, 1) - 12 * 32 * 32 * 128) / 6
    assert 12.5e9 < per_token_matmuls < 13.0e9


def test_full_recomputation_adds_a_forward_pass():
    base = timing.compute_seconds(3e12, 100.0, "none")
    full = timing.compute_seconds(3e12, 100.0, "full")
    assert full.low == pytest.approx(base.low * 4 / 3) and full.high == pytest.approx(base.high * 4 / 3)
    assert base.low == pytest.approx(3e12 / (100e12 * 0.39)) and base.high == pytest.approx(3e12 / (100e12 * 0.33))


# ------------------------------------------------------------------ communication (nccl-tests)
def test_ddp_allreduce_time_is_payload_over_algbw():
    n, params, busbw = 4, 10**9, 25.0
    algbw = busbw / (2 * (n - 1) / n)  # nccl-tests: busbw = algbw x 2(n-1)/n
    span = timing.communication_seconds(params, n, 0, Bandwidth("pcie", busbw, busbw))
    assert span.low == pytest.approx(2 * params / (algbw * 1e9))  # bf16 gradients
    assert span.high == pytest.approx(4 * params / (algbw * 1e9))  # fp32 gradients


def test_zero3_moves_three_times_the_weights_share():
    # ZeRO paper §7.2: all-gather forward, all-gather backward, reduce-scatter: 3 x (n-1)/n x 2P bytes
    span = timing.communication_seconds(P_8B, 4, 3, Bandwidth("nvlink", 450, 450))
    assert span.low == pytest.approx(3 * 0.75 * 2 * P_8B / 450e9)
    assert timing.communication_seconds(P_8B, 1, 3, Bandwidth("nvlink", 450, 450)) == timing.ZERO


def test_offload_crosses_the_host_link_both_ways():
    span = timing.offload_seconds(8 * 10**9, 4, Bandwidth("pcie4", 25, 32))
    assert span.low == pytest.approx(2 * 2e9 / 32e9) and span.high == pytest.approx(2 * 2 * 2e9 / 25e9)


def test_step_is_between_the_longest_part_and_the_sum(catalogue, llama1b):
    cards, _ = catalogue
    step = timing.training_step(llama1b, cards["h100"], 4, 3, offload_optimizer=True)
    # the CPU's Adam step never overlaps: it is in the offload part and adds to both ends
    cpu = timing.cpu_optimizer_seconds(count_params(llama1b).total)
    pcie = timing.offload_seconds(count_params(llama1b).total, 4, cards["h100"].host)
    assert step.offload.low == pytest.approx(pcie.low + cpu.low)
    assert step.step.low == pytest.approx(max(step.compute.low, step.communication.low, pcie.low) + cpu.low)
    parts = (step.compute, step.communication, step.offload)
    assert step.step.high == pytest.approx(sum(p.high for p in parts))
    plain = timing.training_step(llama1b, cards["h100"], 4, 3)
    assert plain.step.low == max(plain.compute.low, plain.communication.low)


def test_without_peer_to_peer_communication_adds_to_compute(catalogue, llama1b):
    # GeForce cards copy through host memory: Answer.AI's dual 3090 and 4090 under FSDP lost
    # against DDP about the gathers' time, which compute would have hidden (measurements.yaml,
    # tests/vram/test_calibration.py), so the low end is compute + communication, not the longer
    # of the two; the CPU's Adam step adds to it.
    cards, _ = catalogue
    step = timing.training_step(llama1b, cards["rtx-4090"], 4, 3, offload_optimizer=True)
    cpu = timing.cpu_optimizer_seconds(count_params(llama1b).total)
    pcie = timing.offload_seconds(count_params(llama1b).total, 4, cards["rtx-4090"].host)
    assert step.step.low == pytest.approx(max(step.compute.low + step.communication.low, pcie.low) + cpu.low)
    assert step.step.low > max(step.compute.low, step.communication.low)
    assert step.step.high == pytest.approx(step.compute.high + step.communication.high + step.offload.high)


# ------------------------------------------------------------------ links (the datasheet figures: tests/vram/test_cards.py)
def test_geforce_cards_go_through_host_memory_and_the_rest_peer_to_peer(catalogue):
    cards, _ = catalogue
    assert {key for key, c in cards.items() if not c.peer.peer_to_peer} == {"rtx-3090", "rtx-4090", "rtx-5090"}
    assert cards["h100"].peer.low_gb_per_s == 450


def test_an_unknown_link_is_named():
    gpus = yaml.safe_load((FROZEN / "gpus.yaml").read_text(encoding="utf-8"))
    links = yaml.safe_load((REPO_ROOT / "snippets/data/interconnects.yaml").read_text(encoding="utf-8"))
    gpus["gpus"]["h100"]["peer_link"] = "nvlink-9"
    with pytest.raises(ValueError, match=r"gpus\.h100\.peer_link: 'nvlink-9' is not a key of interconnects\.yaml"):
        cards_from_data(gpus, links)


# ------------------------------------------------------------------ billing
def test_ten_minutes_on_8_h100_cost_the_15_minute_minimum():
    assert billing.run_cost_eur(10 * 60, Decimal("31.20")) == Decimal("7.80")
    assert billing.run_cost_eur(15 * 60, "31.20") == Decimal("7.80")
    assert billing.run_cost_eur(15 * 60 + 1, "31.20") == Decimal("8.32")  # every started minute
    assert billing.run_cost_eur(16 * 60, "31.20") - billing.run_cost_eur(15 * 60, "31.20") == Decimal("0.52")
    assert billing.price_per_minute(Decimal("31.20")) == Decimal("0.52")


@pytest.mark.parametrize(
    "text, message",
    [
        ("abc", "price_eur_per_hour must be a number"),
        ("31,20", "price_eur_per_hour must be a number"),
        ("0", "price_eur_per_hour must be more than 0"),
        ("1e9", "price_eur_per_hour '1e9' is implausible"),
        ("1000000000", "implausible"),
        ("nan", "must be a number"),
        ("-1", "must be a number"),
    ],
)
def test_a_bad_price_is_one_line_naming_the_field(text, message):
    with pytest.raises(ValueError, match=message) as info:
        billing.parse_price(text)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ the guide's illustrations
def test_8b_on_a_billion_tokens_is_hours_on_8_h100_and_days_on_4_a6000(catalogue, llama8b):
    cards, _ = catalogue
    h100 = timing.run_seconds(10**9, timing.training_step(llama8b, cards["h100"], 8, 3, micro_batch=2))
    a6000 = timing.run_seconds(10**9, timing.training_step(llama8b, cards["a6000"], 4, 3, recompute="full"))
    assert h100.low > 3600 and h100.high < 24 * 3600
    assert a6000.low > 2 * 86_400


def test_zero3_on_4_rtx_4090_is_communication_bound(catalogue, llama1b):
    cards, _ = catalogue
    assert timing.training_step(llama1b, cards["rtx-4090"], 4, 3).bound == "communication"
    assert timing.training_step(llama1b, cards["h100"], 4, 3).bound == "compute"


def test_decode_bound_is_bandwidth_over_the_weights_read(llama8b):
    bound = timing.decode_bound(llama8b, 3350, context_length=0)
    # bf16 weights a token goes through: every parameter but the input embedding (a lookup)
    assert bound.tokens_per_second_per_sequence == pytest.approx(3350e9 / (2 * (P_8B - EMBEDDING_8B)))
    with_kv = timing.decode_bound(llama8b, 3350, context_length=2048, batch=8)
    assert with_kv.bytes_per_step == 2 * (P_8B - EMBEDDING_8B) + 8 * 2048 * 131_072  # 128 KiB of KV per token
    assert with_kv.tokens_per_second == pytest.approx(8 * with_kv.tokens_per_second_per_sequence)


# ------------------------------------------------------------------ the command line
def run_cli(*argv: str) -> tuple[int | str | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code: int | str | None = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_cli_time_json_with_the_guides_price(catalogue):
    code, out, err = run_cli(
        "time",
        "--config",
        str(LLAMA_8B),
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--zero-stage",
        "3",
        "--micro-batch",
        "2",
        "--tokens",
        "1e9",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["price_source"] == "8x-h100" and data["price_eur_per_hour"] == "31.2"
    assert data["bound"] == "compute"
    low, high = data["run_s"]
    assert data["cost_eur"] == [str(billing.run_cost_eur(low, "31.20")), str(billing.run_cost_eur(high, "31.20"))]


def test_cli_a_typed_price_changes_the_cost():
    common = (
        "time",
        "--config",
        str(LLAMA_1B),
        "--gpu",
        "rtx-4090",
        "--gpus",
        "4",
        "--zero-stage",
        "3",
        "--tokens",
        "1e9",
        "--json",
    )
    guide = json.loads(run_cli(*common)[1])
    typed = json.loads(run_cli(*common, "--price-eur-per-hour", "4.72")[1])
    assert typed["price_source"] == "reader" and guide["price_source"] == "4x-rtx-4090"
    assert [Decimal(c) for c in typed["cost_eur"]] != [Decimal(c) for c in guide["cost_eur"]]


@pytest.mark.parametrize(
    "flag, value, field",
    [
        ("--tokens", "0", "token count"),
        ("--tokens", "-5", "token count"),
        ("--tokens", "2.5", "token count"),
        ("--price-eur-per-hour", "abc", "price_eur_per_hour"),
        ("--price-eur-per-hour", "1e9", "price_eur_per_hour"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line_naming_the_field(flag, value, field):
    extra = () if flag == "--tokens" else ("--tokens", "1e9")
    code, out, err = run_cli(
        "time", "--config", str(LLAMA_1B), "--gpu", "rtx-4090", "--gpus", "4", "--zero-stage", "3", *extra, flag, value
    )
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and field in err and "Traceback" not in err


def test_cli_unknown_gpu_is_one_line():
    code, _, err = run_cli("time", "--config", str(LLAMA_1B), "--gpu", "h1000", "--gpus", "4", "--zero-stage", "3")
    assert code == 2 and "unknown gpu 'h1000'" in err and err.count("\n") == 1


def test_cli_serve_prints_the_roofline_bound(llama8b):
    code, out, err = run_cli(
        "time",
        "--task",
        "serve",
        "--config",
        str(LLAMA_8B),
        "--gpu",
        "h100",
        "--gpus",
        "1",
        "--context",
        "2048",
        "--batch",
        "8",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["bytes_per_step"] == 2 * (P_8B - EMBEDDING_8B) + 8 * 2048 * 131_072
    assert data["tokens_per_s_at_most"] == pytest.approx(3350e9 * 8 / data["bytes_per_step"])
    code, _, err = run_cli(
        "time",
        "--task",
        "serve",
        "--config",
        str(LLAMA_8B),
        "--gpu",
        "h100",
        "--gpus",
        "1",
        "--context",
        "2048",
        "--tokens",
        "1e9",
    )
    assert code == 2 and "--tokens is for training" in err


# ------------------------------------------------------------------ ranking by the run's cost
def test_a_typed_price_changes_the_ranking(catalogue, llama1b):
    from vram.ranking import rank_runs, run_options

    cards, machines = catalogue
    chosen = {key: (cards[m.gpu], m.count) for key, m in machines.items()}
    guide = {key: m.price_eur_per_hour for key, m in machines.items()}
    by, ranked = rank_runs(run_options(llama1b, 10**9, chosen, guide, 3))
    assert by == "cost" and [o.key for o in ranked] == ["8x-h100", "4x-rtx-4090"]
    by, ranked = rank_runs(run_options(llama1b, 10**9, chosen, {**guide, "4x-rtx-4090": "0.50"}, 3))
    assert [o.key for o in ranked] == ["4x-rtx-4090", "8x-h100"]
    by, _ = rank_runs(run_options(llama1b, 10**9, {**chosen, "4x-a6000": (cards["a6000"], 4)}, guide, 3))
    assert by == "time"  # a machine without a price: ranked by time, and said so


def test_cli_rank_says_what_it_ranks_by():
    code, out, err = run_cli(
        "time",
        "--rank",
        "--config",
        str(LLAMA_1B),
        "--zero-stage",
        "3",
        "--tokens",
        "1e9",
        "--price",
        "4x-rtx-4090=0.50",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["ranked_by"] == "cost" and [m["machine"] for m in data["machines"]] == ["4x-rtx-4090", "8x-h100"]
    code, _, err = run_cli(
        "time",
        "--rank",
        "--config",
        str(LLAMA_1B),
        "--zero-stage",
        "3",
        "--tokens",
        "1e9",
        "--price",
        "4x-rtx-4090=abc",
    )
    assert code == 2 and "price of 4x-rtx-4090 must be a number" in err and err.count("\n") == 1


def test_cli_names_the_bound_of_both_illustrations():
    code, out, _ = run_cli(
        "time",
        "--config",
        str(LLAMA_8B),
        "--gpu",
        "a6000",
        "--gpus",
        "4",
        "--zero-stage",
        "3",
        "--recompute",
        "full",
        "--tokens",
        "1e9",
    )
    assert (
        code == 0
        and "bound: compute" in out
        and re.search(r"run of 1,000,000,000 tokens: [\d.]+ (h|days( \d+ h)?) to \d+ days( \d+ h)?", out)
    )
    code, out, _ = run_cli("time", "--config", str(LLAMA_1B), "--gpu", "rtx-4090", "--gpus", "4", "--zero-stage", "3")
    assert code == 0 and "bound: communication" in out and "pcie4-host" in out


@pytest.mark.parametrize("module", ["timing", "billing", "catalogue", "ranking"])
def test_the_time_model_imports_only_the_standard_library(module):
    """The finder runs vram in the browser (Pyodide): a module-level import outside the standard
    library would break it there. catalogue.load_catalogue reads YAML for the CLI only, inside it."""
    import ast
    import sys

    tree = ast.parse((REPO_ROOT / "vram" / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module]
        else:
            continue
        assert all(name.split(".")[0] in sys.stdlib_module_names or name == "__future__" for name in names), names


# "1.200": Italian writes thousands with a point (Babel: get_group_symbol("it") == "."), the
# calculator's point is a decimal one. Neither reading is taken: both are named in one line.
@pytest.mark.parametrize(
    "text, decimal, thousands",
    [
        ("1.200", "1.2", "1200"),
        ("10.000", "10", "10000"),
        (" 1.230 ", "1.23", "1230"),
        ("999.999", "999.999", "999999"),
    ],
)
def test_a_point_before_exactly_three_digits_is_refused_as_ambiguous(text, decimal, thousands):
    from babel.numbers import get_group_symbol

    assert get_group_symbol("it") == "."  # the reading the calculator's decimal point collides with
    with pytest.raises(billing.AmbiguousPrice, match="is ambiguous") as info:
        billing.parse_price(text, "prices.h100")
    assert (info.value.decimal, info.value.thousands, info.value.got) == (decimal, thousands, text.strip())
    assert Decimal(decimal) * 1000 == Decimal(thousands)  # the two readings of the same digits
    assert "\n" not in str(info.value) and str(info.value).startswith("prices.h100 ")


@pytest.mark.parametrize("text", ["1.2", "1.20", "31.20", "1200", "1.2000", "0.125", "1234.567"])
def test_an_unambiguous_price_is_read(text):
    assert billing.parse_price(text) == Decimal(text)
