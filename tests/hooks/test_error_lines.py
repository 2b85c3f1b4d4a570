"""Bad data is one line that says everything needed to fix it (issue 18, a new contributor adding
a card): every missing key of a mapping named at once, an unclosed quote at the line it opens;
and CONTRIBUTING.md's "A card" names every field the schema requires."""

from __future__ import annotations

import pytest

from hooks.data import schemas
from hooks.data.load import check_data_files
from hooks.errors import RenderError
from tests.conftest import REPO_ROOT
from tests.hooks.test_schemas import edit

CARD = "  x300:\n    name: X300 288GB\n    memory_mib: 294912\n    source: a test nvidia-smi output\n"


def refused(data_dir) -> str:
    with pytest.raises(RenderError) as error:
        check_data_files(data_dir)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_every_missing_field_of_a_card_is_named_in_the_one_line(data_dir):
    """Before: "gpus.x300.bf16_dense_tflops: Field required (and 4 more problems)"."""
    edit(data_dir / "gpus.yaml", "gpus:\n", "gpus:\n" + CARD)
    assert refused(data_dir) == (
        "snippets/data/gpus.yaml: gpus.x300: missing fields: bf16_dense_tflops, "
        "memory_bandwidth_gb_per_s, datasheet, peer_link, host_link"
    )


def test_other_problems_are_still_counted(data_dir):
    edit(data_dir / "gpus.yaml", "gpus:\n", "gpus:\n" + CARD.replace("294912", "'288 GB'"))
    assert refused(data_dir) == (
        "snippets/data/gpus.yaml: gpus.x300.memory_mib: Input should be a valid integer "
        "(got '288 GB') (and 5 more problems)"
    )


def test_an_unclosed_quote_names_the_line_it_opens(data_dir):
    """Before: only "line N: found unexpected end of stream", N the end of the file."""
    path = data_dir / "gpus.yaml"
    text = path.read_text(encoding="utf-8")
    opened = text.count("\n") + 1
    path.write_text(text + 'note: "a quote never closed\n\nmore: 1\n', encoding="utf-8")
    assert refused(data_dir) == (
        f"snippets/data/gpus.yaml: invalid YAML (line {opened + 3}): found unexpected end of "
        f"stream; while scanning a quoted scalar that starts at line {opened}"
    )


def test_contributing_names_every_field_a_card_requires():
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("### A card") :]
    section = section[: section.index("\n### ", 1)]
    required = [name for name, field in schemas.Card.model_fields.items() if field.is_required()]
    assert len(required) >= 8
    for name in required:
        assert f"`{name}`" in section, name
