"""Whether the machine's RAM holds the offload: ``answer_job``'s ``host_ram`` verdict per card.

Oracle for the host bytes: DeepSpeed 0.19's own estimators (``estimate_zero2/zero3_model_states_mem_needs``,
their ``cpu_offload`` branches, ``additional_buffer_factor=1``): the verdict flips exactly at
the estimator's cpu bytes, given in whole GB. A machine whose RAM the data do not give gets
``None``, never a guess: the guide's data publish no machine's RAM (gpus.yaml says so).
"""

from __future__ import annotations

import json
import logging
import math

import pytest

from hooks.data.load import load_yaml
from tests.card_sources import memory_mib
from tests.conftest import REPO_ROOT
from vram.job import JobError, answer_job, answer_json

MODELS = REPO_ROOT / "snippets" / "data" / "models"
CARDS = [{"key": key, "memory_mib": memory_mib(key)} for key in ("rtx-4090", "h100")]
RESERVE_MIB = 2048  # the job's own: answer_job takes the reserve from the job
LARGEST_8B = 525_336_576  # Llama 3.1 8B's largest module, the embedding (oracles.md)


@pytest.fixture(scope="module")
def estimators():
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    return estimate_zero2_model_states_mem_needs, estimate_zero3_model_states_mem_needs


@pytest.fixture(scope="module")
def llama():
    return (MODELS / "llama-3.1-8b.json").read_text(encoding="utf-8")


def _job(config: str, cards: int, stage: int, offload: str, ram: dict) -> dict:
    return {
        "kind": "training",
        "config": config,
        "cards": cards,
        "framework": "deepspeed",
        "zero_stage": stage,
        "offload": offload,
        "gpus": CARDS,
        "reserve_mib": RESERVE_MIB,
        "host_ram_gb": ram,
    }


@pytest.mark.parametrize(
    "cards, stage, offload", [(4, 3, "optimizer"), (8, 3, "optimizer+params"), (2, 2, "optimizer"), (4, 2, "optimizer")]
)
def test_the_verdict_flips_at_the_estimators_cpu_bytes(estimators, llama, cards, stage, offload):
    zero2, zero3 = estimators
    answer = answer_job(_job(llama, cards, stage, offload, {}))
    params = answer["params"]
    if stage == 3:
        cpu = zero3(params, LARGEST_8B, cards, 1, True, offload == "optimizer+params", True, 1)[0]
    else:  # the ZeRO-2 estimator's max(4N, 16) is 16 up to 4 GPUs (its load term above)
        cpu = zero2(params, cards, 1, True, 1)[0]
    assert answer["host_bytes"] == cpu
    enough, short = math.ceil(cpu / 10**9), math.ceil(cpu / 10**9) - 1
    for ram, holds in ((enough, True), (short, False)):
        found = answer_job(_job(llama, cards, stage, offload, {"h100": ram}))
        verdicts = {fit["gpu"]: fit["host_ram"] for fit in found["fits"] + found["short"]}
        assert verdicts["h100"] == {"machine_gb": ram, "holds": holds}
        assert verdicts.get("rtx-4090", {"holds": None}) == {"machine_gb": None, "holds": None}  # not given: unknown


def test_no_offload_no_verdict(llama):
    found = answer_job(_job(llama, 4, 3, "none", {"h100": 64}))
    assert found["host_bytes"] == 0 and not any("host_ram" in fit for fit in found["fits"] + found["short"])


@pytest.mark.parametrize("ram", [0, -1, 10**7, 1.5, "64", True])
def test_a_bad_machine_ram_names_the_field(llama, ram):
    found = json.loads(answer_json(json.dumps(_job(llama, 4, 3, "none", {"h100": ram}))))
    assert (found["error"]["field"], found["error"]["code"]) == ("host_ram_gb", "integer")  # whole GB, 1 to 10^6
    assert "\n" not in found["error"]["message"]


def test_the_command_line_gives_the_same_verdict(cli, llama):
    flags = [
        "job",
        "--config",
        str(MODELS / "llama-3.1-8b.json"),
        "--cards",
        "4",
        "--framework",
        "deepspeed",
        "--zero-stage",
        "3",
        "--offload",
        "optimizer",
        *[f"--gpu={c['key']}={c['memory_mib']}" for c in CARDS],
        f"--reserve-mib={RESERVE_MIB}",
        "--host-ram",
        "h100=128",
    ]
    proc = cli(*flags, "--json")
    assert proc.returncode == 0, proc.stderr
    expected = answer_job(_job(llama, 4, 3, "optimizer", {"h100": 128}))
    got = json.loads(proc.stdout)  # the command line adds the cards' speeds (a run's time): compare the memory
    assert got["host_bytes"] == expected["host_bytes"]
    assert [(f["gpu"], f["host_ram"]) for f in got["fits"]] == [(f["gpu"], f["host_ram"]) for f in expected["fits"]]
    text = cli(*flags).stdout
    assert "fits h100: " in text and "its machine's 128 GB of RAM do not hold the offload" in text  # 128.48 GB pinned
    assert "its machine's RAM: not given" in text
    bad = cli(*flags[:-1], "h100=lots")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "host_ram_gb" in bad.stderr


def test_the_catalogue_publishes_no_machine_ram_and_says_so(llama):
    """The guide's machines (gpus.yaml) carry their RAM or a stated absence, never a guessed figure."""
    for key, machine in load_yaml("gpus")["machines"].items():
        assert machine["host_ram_gb"] == "not published", key  # change this test with a cited figure
        assert machine["host_ram_source"].startswith("not published"), key
    with pytest.raises(JobError) as refused:
        answer_job({"kind": "training", "config": llama, "host_ram_gb": []})
    assert refused.value.field == "host_ram_gb"
