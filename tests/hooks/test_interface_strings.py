"""hooks/render/interface.yaml: every listed English attribute value in the page's language, and a
file missing a language (or naming one the site lacks) refused in one line naming the file
and the key. Expected texts are typed here from the file's purpose (toc's permalink title)."""

from __future__ import annotations

import pytest

from hooks.errors import RenderError
from hooks.render.interface import STRINGS_FILE, interface_strings, translate_interface

PERMALINK = '<a class="headerlink" href="#x" title="Permanent link">&para;</a>'


@pytest.mark.parametrize(("lang", "title"), [("it", "Link permanente"), ("fr", "Lien permanent")])
def test_the_permalink_title_is_in_the_page_language(lang, title):
    assert translate_interface(PERMALINK, lang) == PERMALINK.replace("Permanent link", title)


def test_text_is_never_touched():
    assert translate_interface("<p>Permanent link</p>", "fr") == "<p>Permanent link</p>"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("    fr: Lien permanent\n", ""), "attributes[1]: missing translation for fr"),
        (
            lambda t: t.replace("    fr: Lien permanent\n", "    fr: Lien permanent\n    de: Permalink\n"),
            "attributes[1]: 'de' is not a language of the site",
        ),
        (lambda t: t.replace("    en: Permanent link\n", ""), "attributes[1].en: Field required"),
        (
            lambda t: t.replace("    it: Link permanente\n", "    it: 3\n"),
            "attributes[1]: it: the translation must be a non-empty string (got 3)",
        ),
        (
            lambda t: t.replace("attributes:\n", "attributes:\n  - just text\n"),
            "attributes[1]: Input should be a mapping of keys",
        ),
    ],
)
def test_a_bad_file_is_one_line_naming_the_key(tmp_path, edit, message):
    path = tmp_path / "interface.yaml"
    path.write_text(edit(STRINGS_FILE.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(RenderError) as caught:
        interface_strings(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)
