"""Time and cost placeholders (hooks/render/timing.py) and the guide's claims that rest on them.

Expected texts are typed: the guide's billing (per minute, 15-minute minimum, 8 x H100 at
31.20 EUR/h: 0.52 EUR a minute, 7.80 EUR for a 10-minute trial), the locale's number forms
(it ``1,5–2``, fr ``1,5 à 2``), and the words of the claims as the pages write them.
"""

from __future__ import annotations

import math
import re

import pytest

from hooks.errors import RenderError
from hooks.render.markdown import render_markdown
from tests.conftest import REPO_ROOT
from vram import billing, timing
from vram.calibration import load_measured_data
from vram.catalogue import load_catalogue
from vram.models import load_model_config

NBSP = "\u00a0"
LLAMA_1B = REPO_ROOT / "snippets" / "data" / "models" / "llama-3.2-1b.json"


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_per_minute_billing_in_both_languages(lang):
    assert render_markdown("{{ per_minute machine=8x-h100 }}", lang) == f"0,52{NBSP}€"
    assert render_markdown("{{ billed_cost machine=8x-h100 minutes=10 }}", lang) == f"7,80{NBSP}€"
    assert render_markdown("{{ billed_cost machine=8x-h100 minutes=16 }}", lang) == f"8,32{NBSP}€"


def test_mfu_is_the_published_range():
    assert render_markdown("{{ mfu }}", "it") == "33–39%"
    assert re.fullmatch(r"33 à 39\s%", render_markdown("{{ mfu }}", "fr"))
    assert render_markdown("{{ mfu part=tokens_per_gpu }}", "it") == "5.762"  # torchtitan's Table 1, FSDP


def test_durations_change_unit_and_round_outwards():
    job = "model=llama-3.1-8b gpu=h100 gpus=8 zero_stage=3 micro_batch=2 tokens=1e9"
    cards, _ = load_catalogue()
    # the page's time is the calculator's at the calibrated range of H100s' full training (vram.calibration)
    share = load_measured_data().calibration.backing("h100", ("dense", "full", "none")).range.utilisation
    run = timing.run_seconds(
        10**9,
        timing.training_step(
            load_model_config(REPO_ROOT / "snippets" / "data" / "models" / "llama-3.1-8b.json"),
            cards["h100"],
            8,
            3,
            micro_batch=2,
            utilisation=share,
        ),
    )
    low, high = math.floor(run.low / 360) / 10, math.ceil(run.high / 360) / 10  # hours, rounded outwards
    assert render_markdown(f"{{{{ run_time {job} }}}}", "it") == f"{low:.1f}–{high:.1f}{NBSP}h".replace(".", ",")
    a6000 = "model=llama-3.1-8b gpu=a6000 gpus=4 zero_stage=3 recompute=full tokens=1e9"
    # several days: days and hours, each end rounded outwards (vram.timing.shown_duration); under two days, hours
    assert re.fullmatch(
        rf"de ([\d,]+{NBSP}h|\d+{NBSP}jours et \d+{NBSP}h) à \d+{NBSP}jours et \d+{NBSP}h",
        render_markdown(f"{{{{ run_time {a6000} }}}}", "fr"),
    )
    mixed = render_markdown("{{ run_time model=llama-3.2-1b gpu=rtx-4090 gpus=4 zero_stage=3 tokens=1e9 }}", "it")
    assert re.fullmatch(rf"da [\d,]+{NBSP}h a \d+{NBSP}giorni( e \d+{NBSP}h)?", mixed), mixed


@pytest.mark.parametrize(
    "placeholder, message",
    [
        (
            "{{ run_time model=llama-3.2-1b gpu=h100 gpus=8 zero_stage=3 tokens=0 }}",
            "token count '0': it must be positive",
        ),
        ("{{ run_time model=llama-3.2-1b gpu=h100 gpus=8 zero_stage=3 tokens=-1 }}", "invalid token count '-1'"),
        (
            "{{ run_cost model=llama-3.2-1b gpu=h100 gpus=8 zero_stage=3 tokens=1e9 price=abc }}",
            "price must be a number",
        ),
        (
            "{{ run_cost model=llama-3.2-1b gpu=h100 gpus=8 zero_stage=3 tokens=1e9 price=1e9 }}",
            "price '1e9' is implausible",
        ),
        ("{{ run_cost model=llama-3.2-1b gpu=h100 gpus=2 zero_stage=3 tokens=1e9 }}", "no price for 2 x h100"),
        ("{{ step_time model=llama-3.2-1b gpu=h1000 gpus=8 zero_stage=3 }}", "unknown gpu 'h1000'"),
        ("{{ comm_time params=8e9 world_size=4 zero_stage=3 link=nvlink-9 }}", "unknown link 'nvlink-9'"),
    ],
)
def test_bad_arguments_are_one_line_naming_the_field(placeholder, message):
    with pytest.raises(RenderError) as info:
        render_markdown(placeholder, "it")
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {lang: (REPO_ROOT / "docs" / f"index.{lang}.md").read_text(encoding="utf-8") for lang in ("it", "fr")}


def test_the_old_speed_and_billing_claims_are_gone(pages):
    for text in pages.values():
        assert "1,7–1,9" not in text and "1,7 à 1,9" not in text
        assert "fraction de seconde" not in text and "frazione di secondo" not in text
    assert "sempre al minuto in euro" not in pages["it"]
    assert "minimo di 15 minuti" in pages["it"] and "minimum de 15 minutes" in pages["fr"]


def test_the_claims_around_the_placeholders_hold():
    """'the training can cost more than on the H100s', 'in the worst case less than one card',
    'the 4 x RTX 4090 wait on communication': what the prose says next to the figures."""
    from hooks.render.timing import utilisation

    cards, machines = load_catalogue()
    config = load_model_config(LLAMA_1B)
    share = {m.gpu: utilisation(m.gpu, config, "full", False) for m in machines.values()}  # the calibrated classes
    run = {
        key: timing.run_seconds(10**9, timing.training_step(config, cards[m.gpu], m.count, 3, utilisation=share[m.gpu]))
        for key, m in machines.items()
    }
    cost_high = {key: billing.run_cost_eur(run[key].high, machines[key].price_eur_per_hour) for key in machines}
    assert cost_high["4x-rtx-4090"] > cost_high["8x-h100"]
    step = timing.training_step(config, cards["rtx-4090"], 4, 3, utilisation=share["rtx-4090"])
    assert step.bound == "communication" and step.communication.middle > step.compute.middle


def _ends(text: str) -> tuple[float, float]:
    """The two numbers of a rendered range ("1,4–12 s", "1,1 à 2 s") as floats."""
    numbers = [float(n.replace(",", ".")) for n in re.findall(r"\d+(?:,\d+)?", text)]
    return numbers[0], numbers[-1]


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_slower_link_never_reads_faster_than_a_quicker_one(lang):
    """The guide's "via NVLink … via PCIe 4.0 with peer-to-peer … without peer-to-peer": as
    rounded on the page, each slower path's ends are at least the quicker path's (the low end
    was once rounded down to "1" s beside a quicker path's "1,1")."""
    shown = {
        link: _ends(render_markdown(f"{{{{ comm_time params=8e9 world_size=4 zero_stage=3 link={link} }}}}", lang))
        for link in ("nvlink-h100", "pcie4", "pcie4-host")
    }
    assert shown["nvlink-h100"][1] <= shown["pcie4"][0]
    assert shown["pcie4"][0] <= shown["pcie4-host"][0] and shown["pcie4"][1] <= shown["pcie4-host"][1]


def test_more_cards_never_read_slower_than_fewer():
    two, four = (
        _ends(
            render_markdown(f"{{{{ speedup model=llama-3.2-1b gpu=a6000 gpus={n} zero_stage=0 micro_batch=2 }}}}", "it")
        )
        for n in (2, 4)
    )
    assert two[0] >= 1 and two[1] <= 2 and two[0] <= four[0] and two[1] <= four[1] <= 4


GUIDE_JOBS = [  # every training job the guide times: (model, card, cards, zero_stage, micro_batch, recompute)
    ("llama-3.1-8b", "h100", 8, 3, 2, "none"),
    ("llama-3.1-8b", "a6000", 4, 3, 1, "full"),
    ("llama-3.2-1b", "rtx-4090", 4, 3, 1, "none"),
    ("llama-3.2-1b", "h100", 8, 3, 1, "none"),
    ("llama-3.2-1b", "a6000", 1, 0, 2, "none"),
    ("llama-3.2-1b", "a6000", 2, 0, 2, "none"),
    ("llama-3.2-1b", "a6000", 4, 0, 2, "none"),
]


@pytest.mark.parametrize("model, gpu, cards, zero_stage, micro_batch, recompute", GUIDE_JOBS)
def test_every_job_the_guide_times_fits_its_cards(model, gpu, cards, zero_stage, micro_batch, recompute):
    """A time for a job that does not fit would be a number about nothing: FSDP2's bytes per
    card (PyTorch 2.13, measured by tests/vram) plus the activations, within the usable memory."""
    import vram
    from vram.fit import usable_bytes

    config = load_model_config(REPO_ROOT / "snippets" / "data" / "models" / f"{model}.json")
    states = vram.framework_memory("fsdp2", vram.model_shape(config), cards, zero_stage).per_gpu_bytes
    activations = vram.activation_memory(config, 2048, micro_batch, "sdpa", recompute).total_bytes
    memory_mib = {"h100": 81_559, "a6000": 49_140, "rtx-4090": 24_564}[gpu]  # nvidia-smi, tests/vram/test_cards.py
    assert states + activations <= usable_bytes(memory_mib, 2048)


def test_the_table_lists_every_priced_machine_with_its_bound():
    table = render_markdown("{{ table name=run_cost model=llama-3.2-1b tokens=1e9 zero_stage=3 }}", "fr")
    from tests.hooks.markdown_tables import parse_tables

    (parsed,) = parse_tables(table)
    rows = parsed[1:]
    assert [row[0] for row in rows] == ["4 × RTX 4090 24GB", "8 × H100 80GB"]
    assert "communication entre les cartes" in " ".join(rows[0]) and "calcul" in " ".join(rows[1])


def test_the_decode_bound_is_rounded_up_as_an_upper_bound():
    # H100 at 3,350 GB/s over Llama 3.1 8B's bf16 weights past the embedding and 2,048 tokens of
    # KV cache (128 KiB each): 3.35e12 / (2 x 7,504,924,672 + 2,048 x 131,072) = 219.3 -> 220
    assert render_markdown("{{ decode_bound model=llama-3.1-8b gpu=h100 context=2048 }}", "it") == f"220{NBSP}token/s"
