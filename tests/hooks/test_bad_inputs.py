"""Bad inputs of ../shared/cases/bad-inputs.md that the render functions see:
each raises RenderError with a message naming the problem (and the file, for data)."""

from __future__ import annotations

import pytest

from hooks.errors import RenderError
from hooks.render.markdown import render_markdown


@pytest.mark.parametrize(
    "markdown,message",
    [
        ("{{ nonsense }}", "unknown placeholder"),
        ("{{ table name=nonsense }}", "unknown table 'nonsense'"),
        ("{{ gpu_memory gpu=h900 }}", "unknown gpu 'h900'"),
        ("{{ price machine=3x-h100 }}", "unknown machine '3x-h100'"),
        ("{{ memory params=8e9 world_size=0 }}", "world_size must be an integer >= 1"),
        ("{{ memory params=-8e9 }}", "invalid parameter count"),
        ("{{ memory params=8X }}", "invalid parameter count"),
        ("{{ memory params=8e9 zero_stage=4 }}", "zero_stage must be 0, 1, 2 or 3"),
        ("{{ table name=sharding params=8e9 world_sizes=0,8 }}", "out of range"),
        ("{{ memory params=8e9 colour=red }}", "unknown argument(s) colour"),
        ("{{ memory params=8e9 part=activations }}", "part=activations"),
        ("{{ memory params }}", "not key=value"),
        ("{{ memory params=8e9", "malformed placeholder"),
        ("{{ Memory params=8e9 }}", "malformed placeholder"),
    ],
)
def test_bad_placeholder(markdown, message):
    with pytest.raises(RenderError) as info:
        render_markdown(markdown, "it")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_language():
    with pytest.raises(RenderError, match="unknown language 'de'"):
        render_markdown("x", "de")


def test_yaml_that_does_not_parse(data_dir):
    (data_dir / "needs.yaml").write_text("rows: [unclosed\n", encoding="utf-8")
    with pytest.raises(RenderError, match=r"needs\.yaml: invalid YAML \(line \d+\)"):
        render_markdown("{{ table name=needs }}", "it")


def test_row_without_french_fails_in_both_languages(data_dir):
    path = data_dir / "interconnects.yaml"
    path.write_text(
        path.read_text(encoding="utf-8").replace(", fr: Rare sur les machines louées", ""), encoding="utf-8"
    )
    for lang in ("it", "fr"):
        with pytest.raises(
            RenderError, match=r"snippets/data/interconnects\.yaml: rows\[3\]\.where: missing translation for fr"
        ):
            render_markdown("{{ table name=interconnects }}", lang)


def test_missing_data_file(data_dir):
    (data_dir / "sharding.yaml").unlink()
    with pytest.raises(RenderError, match=r"sharding\.yaml: data file not found"):
        render_markdown("{{ table name=sharding params=8e9 world_sizes=4 }}", "fr")


def test_data_edit_shows_without_reload(data_dir):
    """No module-level cache: an edited data file is read on the next render."""
    assert "Tout" in render_markdown("{{ table name=sharding params=8e9 world_sizes=4 }}", "fr")
    path = data_dir / "sharding.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("fr: Tout}", "fr: Absolument tout}"), encoding="utf-8")
    assert "Absolument tout" in render_markdown("{{ table name=sharding params=8e9 world_sizes=4 }}", "fr")
