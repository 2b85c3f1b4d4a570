"""Number placeholders against the figures of the articles (../shared/seeds) and
../shared/cases/memory.md, in each locale."""

from __future__ import annotations

import pytest

from hooks.render.markdown import render_markdown


def rendered(text: str, lang: str) -> str:
    return render_markdown(text, lang).replace("\u00a0", " ").replace("\u202f", " ")


@pytest.mark.parametrize(
    "placeholder,it,fr",
    [
        ("{{ bytes_per_param }}", "16", "16"),
        (
            "{{ bytes_per_param part=weights }} {{ bytes_per_param part=gradients }} {{ bytes_per_param part=optimizer }}",
            "2 2 12",
            "2 2 12",
        ),
        ("{{ bytes_per_param optimizer=adamw-fp32-grads }}", "18", "18"),
        ("{{ memory params=8e9 }}", "128 GB", "128 Go"),
        ("{{ memory params=6.7B part=optimizer decimals=1 }}", "80,4 GB", "80,4 Go"),
        ("{{ gradients_per_step params=1e9 }}", "2 GB", "2 Go"),
        ("{{ traffic_per_step params=8e9 world_size=4 zero_stage=3 step=5 }}", "35–50 GB", "35 à 50 Go"),
        ("{{ traffic_per_step params=8e9 world_size=4 zero_stage=3 }}", "36–48 GB", "36 à 48 Go"),
        ("{{ offload_host_ram params=8e9 }}", "96 GB", "96 Go"),
        ("{{ offload_host_ram params=8e9 round=10 }}", "100 GB", "100 Go"),
        ("{{ checkpoint params=8e9 }}", "112 GB", "112 Go"),
        ("{{ checkpoint params=8e9 floor=100 }}", "100 GB", "100 Go"),
        # a card's memory as nvidia-smi reports it: H200 143,771 MiB = 150.75 GB = 140.40 GiB (Modal's
        # table of nvidia-smi totals); H100 81,559 MiB, less the 2,048 MiB reserve: 83.37 GB usable.
        ("{{ gpu_memory gpu=h200 }}", "150,8 GB", "150,8 Go"),
        ("{{ gpu_memory gpu=h200 unit=gib }}", "140,4 GiB", "140,4 Gio"),
        ("{{ gpu_memory gpu=h100 unit=mib }}", "81.559 MiB", "81 559 Mio"),
        ("{{ gpu_memory gpu=h100 usable=yes }}", "83,4 GB", "83,4 Go"),
        ("{{ price machine=4x-rtx-4090 }}", "2,36 €", "2,36 €"),
        ("{{ price machine=8x-h100 }}", "31,20 €", "31,20 €"),
    ],
)
def test_number_in_each_locale(placeholder, it, fr):
    assert rendered(placeholder, "it") == it
    assert rendered(placeholder, "fr") == fr


def test_large_numbers_group_digits_per_locale():
    text = "{{ memory params=70e9 world_size=1 zero_stage=0 }}"
    assert rendered(text, "it") == "1.120 GB"
    assert rendered(text, "fr") == "1 120 Go"


def test_text_around_placeholders_is_kept():
    assert rendered("fanno {{ memory params=8e9 }} prima", "it") == "fanno 128 GB prima"
