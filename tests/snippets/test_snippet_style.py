"""The Python scripts readers copy read well on a phone, in every language: at most 88
columns once the comments are translated, and one statement per line (no ``;`` chains, no
``for ...: body`` on one line), read from the blocks of the built pages."""

from __future__ import annotations

import ast

import pytest

from verify.extract import collect

SCRIPTS = ("nccl_check.py", "train.py", "train_fsdp2.py", "train_hf.py", "zero_to_hf.py", "dcp_to_hf.py")
MAX_COLUMNS = 88


@pytest.fixture(scope="module")
def blocks(built_site):
    return {lang: collect(built_site, lang) for lang in ("it", "fr")}


@pytest.mark.parametrize("lang", ["it", "fr"])
@pytest.mark.parametrize("name", SCRIPTS)
def test_at_most_88_columns(blocks, lang, name):
    code = blocks[lang][name].code
    wide = [(number, len(line)) for number, line in enumerate(code.splitlines(), start=1) if len(line) > MAX_COLUMNS]
    assert not wide, f"{name} ({lang}): lines over {MAX_COLUMNS} columns (line, width): {wide}"


@pytest.mark.parametrize("name", SCRIPTS)
def test_one_statement_per_line(blocks, name):
    tree = ast.parse(blocks["it"][name].code)
    lines = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    shared = sorted({line for line in lines if lines.count(line) > 1})
    assert not shared, f"{name}: several statements on line(s) {shared}"
