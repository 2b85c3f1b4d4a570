"""Issue 19, hole 1: a data island respelled, then rewritten into a module script after the
page checks. Closed three ways, each tested here with the attacker's change as input:
``hooks/render/interface.yaml`` translates only reader-facing attributes (``TRANSLATABLE_ATTRIBUTES``);
an inline ``<script>`` is data only with exactly ``type="application/json"`` and content
that is JSON (what the HTML standard runs as a "data block" is any type that is not a
JavaScript MIME type, so the spelling is ours to fix); and the page checks run again on
the page as published, after the last rewrite (``check_article_content``)."""

from __future__ import annotations

import pytest

from hooks.checks.active_content import check_article_content, check_page_content
from hooks.errors import RenderError
from hooks.render.interface import STRINGS_FILE, interface_strings

ISLAND = '<script type="{kind}">{body}</script>'
ATTACK_ENTRY = "  - attribute: type\n    en: Application/JSON\n    it: module\n    fr: module\n"


@pytest.mark.parametrize("attribute", ["type", "class", "href", "src", "id", "data-copy", "onclick"])
def test_interface_strings_translate_only_reader_facing_attributes(tmp_path, attribute):
    path = tmp_path / "interface.yaml"
    path.write_text(
        STRINGS_FILE.read_text(encoding="utf-8") + ATTACK_ENTRY.replace("type", attribute, 1), encoding="utf-8"
    )
    with pytest.raises(RenderError) as caught:
        interface_strings(path)
    assert str(caught.value).startswith(f"{path}: attributes[2].attribute: ") and "\n" not in str(caught.value)


@pytest.mark.parametrize("attribute", ["title", "aria-label", "placeholder", "alt"])
def test_reader_facing_attributes_may_be_translated(tmp_path, attribute):
    path = tmp_path / "interface.yaml"
    path.write_text(
        STRINGS_FILE.read_text(encoding="utf-8") + ATTACK_ENTRY.replace("type", attribute, 1), encoding="utf-8"
    )
    assert interface_strings(path)[1]["attribute"] == attribute


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("Application/JSON", "{}"),  # the attacker's spelling: a case
        (" application/json", "{}"),  # a space
        ("application/json ", "{}"),
        ("application/ld+json", "{}"),
        ("text/plain", "x"),
        ("module", "import('x')"),
        ("application/json", "document.title = 1"),  # the right type, but not data
        ("application/json", ""),
    ],
)
def test_a_data_island_is_exactly_application_json_with_json_inside(kind, body):
    with pytest.raises(RenderError, match="script"):
        check_page_content(f"<p>Testo.</p>{ISLAND.format(kind=kind, body=body)}")


def test_a_json_data_island_passes():
    check_page_content('<p>Testo.</p><script type="application/json" id="labels">{"a": "\\u003c/script>"}</script>')


def test_the_page_is_checked_again_after_its_last_rewrite():
    """The attacker's page after ``on_post_page`` rewrote the island's type: caught on the page as published."""
    page = (
        '<html><head><script>var theme = 1</script></head><body><article class="md-content__inner">'
        '<p>Testo.</p><script type="module">document.querySelector("code").textContent = "x"</script>'
        "</article></body></html>"
    )
    with pytest.raises(RenderError, match=r"the page as published holds an inline <script> of type 'module'"):
        check_article_content(page)
    check_article_content(
        page.replace('<script type="module">document.querySelector("code").textContent = "x"</script>', "")
    )
