"""``python -m vram`` in a subprocess: outputs, JSON, and one-line errors with exit 2."""

from __future__ import annotations

import json

import pytest

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
    assert data["host_optimizer_bytes_per_machine"] == 96 * GB
    assert data["optimizer_bytes"] == 0
    human = cli("estimate", "--params", "8B", "--world-size", "8", "--zero-stage", "2", "--offload-optimizer").stdout
    assert "host RAM" in human and "96.00 GB" in human


def test_estimate_from_config_and_8bit_optimizer(cli, shared_configs):
    proc = cli("estimate", "--config", str(shared_configs / "llama-3.1-8b.json"),
               "--world-size", "1", "--zero-stage", "0", "--optimizer", "adam8bit", "--json")
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
    return {"not_json": str(not_json), "no_hidden": str(no_hidden), "gpt2": str(gpt2),
            "missing": str(tmp_path / "absent.json")}


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
]


@pytest.mark.parametrize("argv, needle", BAD)
def test_bad_input_exits_2_with_one_line_and_no_traceback(cli, bad_configs, argv, needle):
    proc = cli(*(a.format(**bad_configs) for a in argv))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("vram: error: ")
    assert needle.format(**bad_configs) in lines[0]
    assert proc.stdout == ""


def test_main_in_process_returns_0(capsys, shared_configs):
    from vram.__main__ import main

    assert main(["params", str(shared_configs / "llama-3.1-8b.json")]) == 0
    assert "8,030,261,248" in capsys.readouterr().out
