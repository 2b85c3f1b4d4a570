"""One meaning of "identical code": identical to Python, which runs bytes
(../shared/cases/integrity.md, "Code identical in every language").

The oracle is Python itself: a file written as extraction writes it is run, or parsed from
its bytes, by the interpreter; the checks must refuse what Python would run differently.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import markdown
import pytest

import hooks.render.comments
from hooks.checks.same_code import TitledBlocks
from hooks.data.schemas import safe_comment
from hooks.errors import RenderError
from hooks.render.comments import load_catalogue
from verify.extract import ExtractError, compare_code, python_ast

ITALIAN = '''# prova.py: avvialo con  python prova.py
import sys
try:
    for _ in range(3): pass  # riscaldamento
    print("ok")
except RuntimeError:
    sys.exit(1)
'''
COOKIE = "prova.py : à lancer avec  python prova.py (encoding: raw_unicode_escape)"
ESCAPED_LINE = 'échauffement\\u000a    print("X", flush=True)'
# The French page of the case: only two comments "translated", each harmless as text.
FRENCH_ATTACK = ITALIAN.replace("prova.py: avvialo con  python prova.py", COOKIE).replace("riscaldamento", ESCAPED_LINE)
FRENCH_GOOD = ITALIAN.replace("avvialo con", "à lancer avec").replace("riscaldamento", "échauffement")


def run(code: str, tmp_path) -> str:
    path = tmp_path / "prova.py"
    path.write_bytes(code.encode("utf-8"))  # what verify.extract writes
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=False).stdout


def test_the_attack_is_real_python_runs_an_extra_line(tmp_path):
    """Python obeys the cookie of the French file and runs the escaped line; compile(str) does not see it."""
    assert run(ITALIAN, tmp_path) == "ok\n"
    assert run(FRENCH_ATTACK, tmp_path) == "X\nok\n"
    calls = [
        node.args[0].value
        for node in ast.walk(ast.parse(compile(FRENCH_ATTACK, "f", "exec", ast.PyCF_ONLY_AST)))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print"
    ]
    assert calls == ["ok"], "compile(str) ignores the cookie: a str-based check is blind to the attack"


def test_compare_refuses_the_cookie_and_accepts_translated_comments():
    compare_code("prova.py", (ITALIAN, "it"), (FRENCH_GOOD, "fr"))
    with pytest.raises(ExtractError, match=r"block 'prova.py': fr: Python reads it as 'raw_unicode_escape', not UTF-8"):
        compare_code("prova.py", (ITALIAN, "it"), (FRENCH_ATTACK, "fr"))


def test_compare_refuses_a_different_ast_naming_the_line():
    other = ITALIAN.replace('print("ok")', 'print("ok"); print("X")')
    with pytest.raises(ExtractError, match=r"code differs between it \(line 5\) and fr \(line 5\)"):
        compare_code("prova.py", (ITALIAN, "it"), (other, "fr"))


def test_a_byte_order_mark_is_not_utf8_to_python():
    with pytest.raises(ExtractError, match="reads it as 'utf-8-sig'"):
        python_ast("\ufeff" + ITALIAN, "x")


@pytest.mark.parametrize(
    "translation, problem",
    [
        (COOKIE, r"matches Python's coding-cookie rule \('coding: raw_unicode_escape'\)"),
        ("vim: set fileencoding=latin-1 :", r"coding-cookie rule \('coding=latin-1'\)"),
        (ESCAPED_LINE, "contains a backslash"),
        ("due\nrighe", r"contains a newline \(U\+000A\)"),
        ("ritorno\rcarrello", r"contains a carriage return \(U\+000D\)"),
        ("salto\fpagina", r"contains a form feed \(U\+000C\)"),
        ("testo \u202erovesciato", r"contains a format character \(U\+202E\)"),
        ("riga\u2028nuova", r"contains a line separator \(U\+2028\)"),
    ],
)
def test_comment_translations_that_could_change_the_code_are_refused(translation, problem):
    with pytest.raises(ValueError, match=problem):
        safe_comment(translation)


def test_ordinary_french_typography_is_accepted():
    assert safe_comment("le chronomètre ne part qu’une fois\u00a0: « repos »\u202f!") is not None


def test_catalogue_with_the_attack_is_refused_when_loaded(tmp_path, monkeypatch):
    (tmp_path / "comments.yaml").write_text(
        f'- it: "prova.py: avvialo con  python prova.py"\n  fr: "{COOKIE}"\n', encoding="utf-8"
    )
    monkeypatch.setattr(hooks.render.comments, "SNIPPETS_DIR", tmp_path)
    for lang in ("it", "fr"):  # refused whichever language is being built
        with pytest.raises(
            RenderError,
            match=r"snippets/comments\.yaml: entry 1: fr: matches Python's coding-cookie rule "
            r"\('coding: raw_unicode_escape'\): .* \(the comment 'prova\.py: avvialo con  python prova\.py'\)",
        ):
            load_catalogue(lang)


# ------------------------------------------------------------------ every build: TitledBlocks
def page(*blocks: tuple[str, str]) -> str:
    """HTML of a page with the given (title, code) blocks, rendered like mkdocs.yml does."""
    source = "\n\n".join(f'```python title="{title}"\n{code}```' for title, code in blocks)
    return markdown.markdown(
        source,
        extensions=["pymdownx.highlight", "pymdownx.superfences"],
        extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}},
    )


def build(pages: dict[str, list[list[tuple[str, str]]]]) -> None:
    """One build: the default language's pages, then the French ones (as static-i18n runs them)."""
    blocks = TitledBlocks()
    for lang in ("it", "fr"):
        blocks.start(lang)
        for n, page_blocks in enumerate(pages[lang]):
            blocks.add_page(page(*page_blocks), lang, f"docs/p{n}.{lang}.md")
        blocks.finish(lang)


def test_identical_code_with_translated_comments_builds():
    build({"it": [[("prova.py", ITALIAN)]], "fr": [[("prova.py", FRENCH_GOOD)]]})


def test_every_build_refuses_the_french_attack():
    with pytest.raises(
        RenderError, match=r"block 'prova.py' \(fr, docs/p0.fr.md\): Python reads it as 'raw_unicode_escape'"
    ):
        build({"it": [[("prova.py", ITALIAN)]], "fr": [[("prova.py", FRENCH_ATTACK)]]})


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_second_block_with_the_same_title_is_refused_in_either_language(lang):
    pages = {"it": [[("prova.py", ITALIAN)]], "fr": [[("prova.py", FRENCH_GOOD)]]}
    pages[lang].append([("prova.py", ITALIAN if lang == "it" else FRENCH_GOOD)])
    with pytest.raises(
        RenderError,
        match=rf"block 'prova.py' \({lang}\): a second block with this title in docs/p1.{lang}.md "
        rf"\(the first is in docs/p0.{lang}.md\)",
    ):
        build(pages)


def test_the_same_code_under_another_title_is_refused():
    with pytest.raises(RenderError, match=r"block 'prova_fr.py' \(fr\) has no it block with this title"):
        build({"it": [[("prova.py", ITALIAN)]], "fr": [[("prova_fr.py", FRENCH_GOOD)]]})
    with pytest.raises(RenderError, match=r"block 'prova.py' \(docs/p0.it.md\) has no fr block with this title"):
        build({"it": [[("prova.py", ITALIAN)]], "fr": [[]]})


def test_a_title_outside_a_code_block_is_refused():
    """Raw HTML ``<span class="filename">prova.py</span>`` above an untitled block labels that
    block with the snippet's name (and the publish gate's note used to follow it)."""
    blocks = TitledBlocks()
    blocks.start("it")
    fake = '<p><span class="filename">prova.py</span></p>' + page(("altro.py", "x = 1\n")).replace(
        '<span class="filename">altro.py</span>', ""
    )
    with pytest.raises(RenderError, match=r"a snippet title \(class=\"filename\"\) outside a code block"):
        blocks.add_page(fake + page(("prova.py", ITALIAN)), "it", "docs/p0.it.md")
