"""Code comments are translated; code tokens never change."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from hooks.comments import translate_comments
from hooks.errors import RenderError

HTML = (
    '<div class="highlight"><pre><span></span><code>'
    '<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>  '
    '<span class="c1"># 1 GiB</span>\n'
    '<span class="ch">#!/usr/bin/env bash</span>\n'
    '<span class="c1"># ---</span>\n'
    '</code></pre></div><p># not code</p>'
)


def code_tokens(html: str) -> list[str]:
    soup = BeautifulSoup(html, "html.parser")
    return [s.get_text() for s in soup.select("code span") if not {"c1", "c"} & set(s.get("class", []))]


def test_french_comment_replaced_code_untouched():
    out = translate_comments(HTML, "fr", {"1 GiB": "1 Gio"})
    assert "# 1 Gio" in out and "# 1 GiB" not in out
    assert code_tokens(out) == code_tokens(HTML)
    assert "#!/usr/bin/env bash" in out  # shebang is not prose
    assert "<p># not code</p>" in out


def test_italian_is_the_source_and_unchanged():
    assert translate_comments(HTML, "it", {}) == HTML


def test_comment_without_translation_fails():
    with pytest.raises(RenderError, match=r"code comment '1 GiB' has no 'fr' translation in snippets/comments\.yaml"):
        translate_comments(HTML, "fr", {})


def test_catalogue_covers_the_snippets():
    """The real catalogue translates every comment of every snippet the pages show."""
    from hooks.comments import load_catalogue

    catalogue = load_catalogue("fr")
    assert catalogue["PyTorch puro, Hugging Face Trainer"] == "PyTorch standard, Hugging Face Trainer"
