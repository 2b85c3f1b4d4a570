"""``python -m vram`` in a subprocess: outputs, JSON, and one-line errors with exit 2."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO_ROOT
from tests.vram.conftest import run_cli

GB = 10**9


def test_params_human_and_json(cli, shared_configs):
    proc = cli("params", str(shared_configs / "llama-3.1-8b.json"))
    assert proc.returncode == 0, proc.stderr
    assert "8,030,261,248" in proc.stdout
    proc = cli("params", str(shared_configs / "llama-3.2-1b.json"), "--json")
    assert json.loads(proc.stdout) == {"params": 1_235_814_400, "active_params": 1_235_814_400}


def test_params_json_moe_reports_active(cli, local_configs):
    data = json.loads(cli("params", str(local_configs / "mixtral-8x7b-v0.1.json"), "--json").stdout)
    assert data["params"] == 46_702_792_704
    assert round(data["active_params"] / 1e9, 1) == 12.9


@pytest.mark.parametrize("params", ["8e9", "8B", "8000000000"])
def test_estimate_json_zero3_on_4_gpus(cli, params):
    proc = cli("estimate", "--params", params, "--world-size", "4", "--zero-stage", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["params"] == 8 * GB
    assert data["per_gpu_bytes"] == 32 * GB  # the guide's table
    assert (data["weights_bytes"], data["gradients_bytes"], data["optimizer_bytes"]) == (4 * GB, 4 * GB, 24 * GB)


def test_estimate_human_output_labels_gb_and_gib(cli):
    proc = cli("estimate", "--params", "7e9", "--world-size", "1", "--zero-stage", "0")
    assert proc.returncode == 0, proc.stderr
    weights = next(line for line in proc.stdout.splitlines() if line.strip().startswith("weights"))
    assert "14.00 GB" in weights and "13.04 GiB" in weights
    assert "14.00 GiB" not in proc.stdout
    assert "112.00 GB" in proc.stdout  # 7e9 x 16 B


def test_estimate_offload_reports_host_ram(cli):
    proc = cli("estimate", "--params", "8B", "--world-size", "8", "--zero-stage", "2", "--offload-optimizer", "--json")
    data = json.loads(proc.stdout)
    assert data["framework"] == "zero-paper"
    assert data["host_bytes"] == 96 * GB
    assert data["optimizer_bytes"] == 0
    human = cli("estimate", "--params", "8B", "--world-size", "8", "--zero-stage", "2", "--offload-optimizer").stdout
    assert "host RAM" in human and "96.00 GB" in human


def test_estimate_from_config_and_8bit_optimizer(cli, shared_configs):
    proc = cli(
        "estimate",
        "--config",
        str(shared_configs / "llama-3.1-8b.json"),
        "--world-size",
        "1",
        "--zero-stage",
        "0",
        "--optimizer",
        "adam8bit",
        "--json",
    )
    data = json.loads(proc.stdout)
    assert data["params"] == 8_030_261_248
    assert data["optimizer_bytes"] == 6 * 8_030_261_248


def test_serve_and_lora(cli, shared_configs):
    config = str(shared_configs / "llama-3.1-8b.json")
    serve = json.loads(cli("serve", config, "--context", "8192", "--json").stdout)
    assert serve["kv_cache_bytes"] == 2**30
    assert "1.00 GiB" in cli("serve", config, "--context", "8192").stdout
    lora = json.loads(cli("lora", config, "--rank", "16", "--json").stdout)
    assert lora["adapter_params"] == 41_943_040


def test_serve_takes_vllms_prefill_chunk(cli):
    # gpt-oss-20b: 12 full and 12 sliding (128-token) layers, 2 KiB per token and layer in bf16; vLLM's
    # SlidingWindowSpec reserves cdiv(min(127 + max_num_batched_tokens, T), 16) + 1 blocks of 16 tokens
    config = str(REPO_ROOT / "snippets" / "data" / "models" / "gpt-oss-20b.json")
    default = json.loads(cli("serve", config, "--context", "8192", "--json").stdout)
    assert default["max_num_batched_tokens"] == 2048
    assert default["kv_cache_bytes"] == 2048 * (12 * 8192 + 12 * 2192)
    h100 = json.loads(cli("serve", config, "--context", "8192", "--max-num-batched-tokens", "8192", "--json").stdout)
    assert h100["kv_cache_bytes"] == 2048 * (12 * 8192 + 12 * 8208)
    bad = cli("serve", config, "--context", "8192", "--max-num-batched-tokens", "0")
    assert bad.returncode == 2 and "max_num_batched_tokens" in bad.stderr and bad.stderr.count("\n") == 1


@pytest.fixture
def bad_configs(tmp_path, shared_configs):
    not_json = tmp_path / "not-json.json"
    not_json.write_text("model_type: llama\n")
    raw = json.loads((shared_configs / "llama-3.1-8b.json").read_text())
    del raw["hidden_size"]
    no_hidden = tmp_path / "no-hidden.json"
    no_hidden.write_text(json.dumps(raw))
    gpt2 = tmp_path / "gpt2.json"
    gpt2.write_text(json.dumps({**raw, "model_type": "gpt2"}))
    return {
        "not_json": str(not_json),
        "no_hidden": str(no_hidden),
        "gpt2": str(gpt2),
        "missing": str(tmp_path / "absent.json"),
        "llama": str(shared_configs / "llama-3.1-8b.json"),
    }


CONTRACT_KEYS = {
    "per_gpu_bytes",
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "working_bytes",
    "activation_bytes",
    "host_bytes",
    "params",
    "framework",
}
P8B = 8_030_261_248


@pytest.mark.parametrize("framework", ["zero-paper", "deepspeed", "fsdp2"])
def test_estimate_json_contract_for_every_framework(cli, shared_configs, framework):
    data = json.loads(
        cli(
            "estimate",
            "--config",
            str(shared_configs / "llama-3.1-8b.json"),
            "--world-size",
            "8",
            "--zero-stage",
            "3",
            "--framework",
            framework,
            "--json",
        ).stdout
    )
    assert set(data) >= CONTRACT_KEYS
    assert data["framework"] == framework and data["params"] == P8B
    parts = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "working_bytes", "activation_bytes")
    assert data["per_gpu_bytes"] == sum(data[k] for k in parts)
    assert sum(t["bytes"] for t in data["terms"] if t["part"] != "host") == data["per_gpu_bytes"]


def test_estimate_deepspeed_cases_of_oracles_md(cli, shared_configs):
    config = str(shared_configs / "llama-3.1-8b.json")
    zero3 = json.loads(
        cli(
            "estimate",
            "--config",
            config,
            "--world-size",
            "8",
            "--zero-stage",
            "3",
            "--framework",
            "deepspeed",
            "--json",
        ).stdout
    )
    assert zero3["per_gpu_bytes"] == 20_169_434_112
    assert zero3["largest_layer_params"] == 525_336_576
    by_hand = json.loads(
        cli(
            "estimate",
            "--params",
            str(P8B),
            "--largest-layer-params",
            "525336576",
            "--world-size",
            "8",
            "--zero-stage",
            "3",
            "--framework",
            "deepspeed",
            "--json",
        ).stdout
    )
    assert by_hand["per_gpu_bytes"] == 20_169_434_112
    offload = json.loads(
        cli(
            "estimate",
            "--params",
            str(P8B),
            "--world-size",
            "1",
            "--zero-stage",
            "2",
            "--framework",
            "deepspeed",
            "--offload-optimizer",
            "--json",
        ).stdout
    )
    assert (offload["per_gpu_bytes"], offload["host_bytes"]) == (16_060_522_496, 128_484_179_968)
    human = cli(
        "estimate",
        "--params",
        str(P8B),
        "--world-size",
        "1",
        "--zero-stage",
        "2",
        "--framework",
        "deepspeed",
        "--offload-optimizer",
    ).stdout
    assert "additional_buffer_factor=1.5" in human and "max(4*N, 16)" in human
    assert "128.48 GB" in human


def test_estimate_fsdp2_with_sdpa_activations(cli, shared_configs):
    """oracles.md: 8B at 2,048 tokens under SDPA keeps about 49 s*b*h bytes per layer, ~13 GB."""
    data = json.loads(
        cli(
            "estimate",
            "--config",
            str(shared_configs / "llama-3.1-8b.json"),
            "--world-size",
            "8",
            "--zero-stage",
            "3",
            "--framework",
            "fsdp2",
            "--seq-len",
            "2048",
            "--json",
        ).stdout
    )
    layers = data["activations"]["layers_bytes"]
    assert abs(layers - 49 * 2048 * 4096 * 32) / (49 * 2048 * 4096 * 32) < 0.05
    # the activations at their peak: what is kept plus the loss's backward (8 x vocabulary x tokens)
    assert data["activations"]["loss_backward_bytes"] == 8 * 128_256 * 2048
    assert data["activation_bytes"] == data["activations"]["peak_bytes"] > data["activations"]["total_bytes"] > layers
    assert data["activation_bytes"] < 30.6 * GB / 2 + 8 * 128_256 * 2048  # not Korthikanti's eager 30.6 GB
    full = json.loads(
        cli(
            "estimate",
            "--config",
            str(shared_configs / "llama-3.1-8b.json"),
            "--world-size",
            "8",
            "--zero-stage",
            "3",
            "--framework",
            "fsdp2",
            "--seq-len",
            "2048",
            "--recompute",
            "full",
            "--json",
        ).stdout
    )
    assert full["activation_bytes"] < data["activation_bytes"]
    assert full["per_gpu_bytes"] - full["activation_bytes"] == data["per_gpu_bytes"] - data["activation_bytes"]


def test_estimate_optimizer_impl_counts_the_step(cli, shared_configs):
    """One GPU under AMP: foreach (the default, the guide's scripts) holds 20 B per parameter at
    the step (tests/vram/test_optimizer_step.py measures it), fused 16 B plus autocast's copies."""
    config = str(shared_configs / "llama-3.1-8b.json")

    def run(*extra):
        return json.loads(
            cli(
                "estimate",
                "--config",
                config,
                "--world-size",
                "1",
                "--zero-stage",
                "0",
                "--framework",
                "fsdp2",
                "--json",
                *extra,
            ).stdout
        )

    foreach, fused = run(), run("--optimizer-impl", "fused")
    assert foreach["optimizer_impl"] == "foreach" and foreach["per_gpu_bytes"] == 20 * P8B
    assert fused["per_gpu_bytes"] < 20 * P8B
    # with activations of 2,048 tokens, fully recomputed, the step still holds the most under foreach
    with_act = run("--seq-len", "2048", "--recompute", "full")
    assert with_act["per_gpu_bytes"] == 20 * P8B and with_act["activations"]["counted"] is False
    fused_act = run("--seq-len", "2048", "--recompute", "full", "--optimizer-impl", "fused")
    assert fused_act["per_gpu_bytes"] == fused["per_gpu_bytes"] + fused_act["activations"]["peak_bytes"]


def test_params_1e30_is_never_a_float_rounded_integer(cli):
    proc = cli("estimate", "--params", "1e30", "--world-size", "1", "--zero-stage", "0", "--json")
    if proc.returncode == 0:
        assert json.loads(proc.stdout)["params"] == 10**30
    else:
        assert proc.returncode == 2 and "'1e30'" in proc.stderr and "implausible" in proc.stderr


def test_fractional_parts_of_a_count_are_exact(cli):
    data = json.loads(cli("estimate", "--params", "1.5b", "--world-size", "1", "--zero-stage", "0", "--json").stdout)
    assert data["params"] == 1_500_000_000
    proc = cli("estimate", "--params", "1.0000000000000000000000000000001e9", "--world-size", "1", "--zero-stage", "0")
    assert proc.returncode == 2 and "whole number" in proc.stderr


BAD = [
    (["estimate", "--params", "8X", "--world-size", "1", "--zero-stage", "0"], "8X"),
    (["estimate", "--params", "-1", "--world-size", "1", "--zero-stage", "0"], "-1"),
    (["estimate", "--params", "8B", "--world-size", "0", "--zero-stage", "0"], "world_size"),
    (["estimate", "--params", "8B", "--world-size", "1", "--zero-stage", "5"], "zero_stage"),
    (["estimate", "--params", "8B", "--world-size", "two", "--zero-stage", "1"], "world-size"),
    (["estimate", "--params", "8B", "--world-size", "1", "--zero-stage", "0", "--offload-optimizer"], "offload"),
    (["estimate", "--params", "8B", "--world-size", "1", "--zero-stage", "0", "--optimizer", "lion"], "optimizer"),
    (["estimate", "--world-size", "1", "--zero-stage", "0"], "--params"),
    (["params", "{not_json}"], "not valid JSON"),
    (["params", "{no_hidden}"], "hidden_size"),
    (["params", "{gpt2}"], "unsupported model_type"),
    (["params", "{missing}"], "absent.json"),
    (["estimate", "--config", "{no_hidden}", "--world-size", "1", "--zero-stage", "0"], "hidden_size"),
    (["serve", "{missing}", "--context", "10"], "absent.json"),
    (["lora", "{not_json}", "--rank", "8"], "not valid JSON"),
    ([], "required"),
    (["estimate", "--params", "1e400", "--world-size", "1", "--zero-stage", "0"], "'1e400'"),
    (["estimate", "--params", "1e308B", "--world-size", "1", "--zero-stage", "0"], "'1e308B'"),
    (["estimate", "--params", "0.4", "--world-size", "1", "--zero-stage", "0"], "'0.4'"),
    (["estimate", "--params", "nan", "--world-size", "1", "--zero-stage", "0"], "'nan'"),
    (["estimate", "--params", "8B", "--world-size", "1.5", "--zero-stage", "0"], "'1.5'"),
    (["estimate", "--params", "8B", "--world-size", "1e400", "--zero-stage", "0"], "'1e400'"),
    (["estimate", "--params", "8B", "--world-size", "99999999999999999999999", "--zero-stage", "0"], "world_size"),
    (["estimate", "--params", "8B", "--world-size", "8", "--zero-stage", "2", "--gpus-per-machine", "3"], "divide"),
    (
        [
            "estimate",
            "--params",
            "8B",
            "--world-size",
            "4",
            "--zero-stage",
            "1",
            "--framework",
            "fsdp2",
            "--config",
            "{llama}",
        ],
        "argument --config",
    ),
    (["estimate", "--config", "{llama}", "--world-size", "4", "--zero-stage", "1", "--framework", "fsdp2"], "ZeRO-1"),
    (
        ["estimate", "--params", "8B", "--world-size", "4", "--zero-stage", "3", "--framework", "deepspeed"],
        "--largest-layer-params",
    ),
    (["estimate", "--params", "8B", "--world-size", "4", "--zero-stage", "2", "--framework", "fsdp2"], "--config"),
    (
        ["estimate", "--params", "8B", "--world-size", "4", "--zero-stage", "2", "--largest-layer-params", "5"],
        "deepspeed --zero-stage 3 only",
    ),
    (
        [
            "estimate",
            "--params",
            "8B",
            "--world-size",
            "4",
            "--zero-stage",
            "3",
            "--framework",
            "deepspeed",
            "--largest-layer-params",
            "0.5",
        ],
        "'0.5'",
    ),
    (
        [
            "estimate",
            "--params",
            "8B",
            "--world-size",
            "4",
            "--zero-stage",
            "3",
            "--offload-optimizer",
            "--offload-params",
        ],
        "offload_params",
    ),
    (
        [
            "estimate",
            "--config",
            "{llama}",
            "--world-size",
            "4",
            "--zero-stage",
            "3",
            "--framework",
            "fsdp2",
            "--offload-optimizer",
        ],
        "CPUOffloadPolicy",
    ),
    (["estimate", "--params", "8B", "--world-size", "4", "--zero-stage", "2", "--seq-len", "2048"], "--config"),
    (["estimate", "--config", "{llama}", "--world-size", "4", "--zero-stage", "2", "--recompute", "full"], "--seq-len"),
    (["estimate", "--config", "{llama}", "--world-size", "4", "--zero-stage", "2", "--seq-len", "0"], "seq_len"),
    (["estimate", "--config", "{llama}", "--world-size", "4", "--zero-stage", "2", "--seq-len", "2e3"], "'2e3'"),
    (
        [
            "estimate",
            "--config",
            "{llama}",
            "--world-size",
            "4",
            "--zero-stage",
            "2",
            "--seq-len",
            "64",
            "--micro-batch",
            "-1",
        ],
        "micro_batch",
    ),
    # digits other than ASCII 0-9 (Arabic-Indic, full-width) are not a parameter count
    (["estimate", "--params", "\u0668e9", "--world-size", "1", "--zero-stage", "0"], "'\u0668e9'"),
    (["estimate", "--params", "\uff18", "--world-size", "1", "--zero-stage", "0"], "'\uff18'"),
    (["estimate", "--params", "8e9\u00a0", "--world-size", "1", "--zero-stage", "0"], "invalid parameter count"),
    (["estimate", "--params", "+8e9", "--world-size", "1", "--zero-stage", "0"], "'+8e9'"),
    (["estimate", "--params", "8_000", "--world-size", "1", "--zero-stage", "0"], "'8_000'"),
    (["estimate", "--params", "-0", "--world-size", "1", "--zero-stage", "0"], "'-0'"),
    (["estimate", "--params", "inf", "--world-size", "1", "--zero-stage", "0"], "'inf'"),
    (["estimate", "--params", "1000000000000001", "--world-size", "1", "--zero-stage", "0"], "implausible"),
    # FSDP2 has no stage 1 whatever else is given: the first line says so, not "give --config"
    (["estimate", "--params", "8B", "--world-size", "4", "--zero-stage", "1", "--framework", "fsdp2"], "no ZeRO-1"),
    # serve and lora read their integers as estimate does: ASCII digits, in range
    (["serve", "{llama}", "--context", "\u0668"], "'\u0668'"),
    (["serve", "{llama}", "--context", "1_000"], "'1_000'"),
    (["serve", "{llama}", "--context", "0"], "context"),
    (["serve", "{llama}", "--context", "8192", "--batch", "99999999999999999999999999"], "batch"),
    (["lora", "{llama}", "--rank", "\u0668"], "'\u0668'"),
    (["lora", "{llama}", "--rank", "999999999999"], "rank"),
]


@pytest.mark.parametrize("argv, needle", BAD)
def test_bad_input_exits_2_with_one_line_and_no_traceback(capsys, bad_configs, argv, needle):
    """In process (fast): any exception other than the exit would fail the test itself."""
    from vram.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([a.format(**bad_configs) for a in argv])
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("vram: error: ")
    assert needle.format(**bad_configs) in lines[0]
    assert out == ""


@pytest.mark.parametrize("argv, needle", [BAD[0], BAD[9], BAD[16], BAD[18]])
def test_bad_input_in_a_real_process(bad_configs, argv, needle):
    """A fresh ``python -m vram`` (not forked from ``vram_zygote``): what its imports print counts too."""
    proc = run_cli(*(a.format(**bad_configs) for a in argv))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and needle.format(**bad_configs) in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    "params, needle",
    [
        ("1e99999999999999999999", "implausible"),  # past decimal.Decimal's exponent range
        ("1e-99999999999999999", "whole number"),  # Fraction would compute 10**(10**17)
        ("0e-99999999999999999999", "positive"),
    ],
)
def test_huge_exponents_are_refused_at_once(cli, params, needle):
    proc = cli("estimate", "--params", params, "--world-size", "1", "--zero-stage", "0")  # cli times out at 60 s
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert repr(params) in proc.stderr and needle in proc.stderr


def test_odd_but_exact_counts(cli):
    """Spaces around, an exponent sign, a fraction of a suffix: exact, never via a float."""
    for text, params in (
        (" 8e9 ", 8 * GB),
        ("1e+3", 1000),
        ("0.001k", 1),
        ("7000000001", 7_000_000_001),
        ("1e15", 10**15),
        ("0.000001T", 10**6),
    ):
        data = json.loads(cli("estimate", "--params", text, "--world-size", "1", "--zero-stage", "0", "--json").stdout)
        assert data["params"] == params, text


@pytest.mark.parametrize(
    "value, needle",
    [
        (0, "positive"),
        (-5, "positive"),
        (10**15 + 1, "implausible"),
        (10**5000, "implausible"),
        (True, "invalid"),
        (1.5, "invalid"),
    ],
    ids=["0", "-5", "10^15+1", "10^5000", "True", "1.5"],
)
def test_parse_params_refuses_ints_out_of_range_in_one_line(value, needle):
    """Placeholders and callers may pass an int: the same range, a message that fits a line."""
    import vram

    with pytest.raises(ValueError, match=needle) as info:
        vram.parse_params(value)
    assert len(str(info.value)) < 120
    assert vram.parse_params(10**15) == 10**15


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_a_closed_pipe_ends_quietly(shared_configs, json_flag):
    """``python -m vram ... | head -1``: no BrokenPipeError traceback on stderr."""
    import subprocess
    import sys

    from tests.vram.conftest import REPO_ROOT

    argv = [
        sys.executable,
        "-m",
        "vram",
        "estimate",
        "--config",
        str(shared_configs / "llama-3.1-8b.json"),
        "--world-size",
        "8",
        "--zero-stage",
        "3",
        "--framework",
        "fsdp2",
        "--seq-len",
        "2048",
        *json_flag,
    ]
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first byte is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) in (0, 1)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_main_in_process_returns_0(capsys, shared_configs):
    from vram.cli import main

    assert main(["params", str(shared_configs / "llama-3.1-8b.json")]) == 0
    assert "8,030,261,248" in capsys.readouterr().out
