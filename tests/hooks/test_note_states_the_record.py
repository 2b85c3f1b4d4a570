"""The verification note states the record (issue 19, hole 12): a language's text that
leaves out a field the record gives (the GPU model, the date, busbw...) and prints a fixed
claim instead is refused, in one line naming the file, the key and the field."""

from __future__ import annotations

import pytest
import yaml

from hooks.data.load import validate
from hooks.errors import RenderError
from tests.conftest import REPO_ROOT

FILE = REPO_ROOT / "snippets" / "data" / "verification.yaml"
FIELDS = {
    "verified": ["gpus", "links", "when", "rate", "size", "algbw", "busbw", "torch", "cuda", "nccl"],
    "verified_one_gpu": ["model", "when", "rate", "size", "torch", "cuda", "nccl"],
    "gpus": ["count", "model"],
    "when": ["date", "time"],
    "links": ["classes"],
}


def test_the_shipped_texts_state_every_field():
    validate(
        yaml.safe_load(FILE.read_text(encoding="utf-8")),
        "verification",
        "verification.yaml",
        FILE.read_text(encoding="utf-8"),
    )


@pytest.mark.parametrize(("key", "field"), [(key, field) for key, fields in FIELDS.items() for field in fields])
@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_text_without_a_field_is_refused(key, field, lang):
    data = yaml.safe_load(FILE.read_text(encoding="utf-8"))
    data[key][lang] = data[key][lang].replace("{" + field + "}", "8 × H100" if field in ("gpus", "model") else "sempre")
    with pytest.raises(RenderError) as caught:
        validate(data, "verification", "verification.yaml", "")
    message = str(caught.value)
    assert f"{key}: {lang}: lacks {{{field}}}" in message and "\n" not in message, message
