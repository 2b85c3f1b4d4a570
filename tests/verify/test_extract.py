"""Extraction of the titled code blocks from the built site, on copies of its HTML."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from verify.extract import ExtractError, code_lines, extract

pytestmark = pytest.mark.slow  # needs the built site

SNIPPETS = REPO_ROOT / "snippets"


@pytest.fixture
def site(built_site, tmp_path) -> Path:
    """A copy of the built site that a test may break."""
    return Path(shutil.copytree(built_site, tmp_path / "site"))


def edit(page: Path, old: str, new: str) -> None:
    html = page.read_text(encoding="utf-8")
    assert html.count(old) == 1, f"{old!r} occurs {html.count(old)} times in {page}"
    page.write_text(html.replace(old, new), encoding="utf-8")


def line_of(name: str, needle: str) -> int:
    lines = (SNIPPETS / name).read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_extracts_both_blocks_byte_identical_to_the_snippets(built_site, tmp_path):
    hashes = extract(built_site, tmp_path)
    for name in ("nccl_check.py", "train.py"):
        source = (SNIPPETS / name).read_bytes()
        assert (tmp_path / name).read_bytes() == source
        assert hashes[name] == hashlib.sha256(source).hexdigest()


def comment_texts(html: str, title: str) -> list[tuple[int, int]]:
    """(start, end) of the text of every comment span in the block titled ``title``."""
    block = html.index(f'<span class="filename">{title}</span>')
    end_of_block = html.index("</code></pre></div>", block)
    spans, position = [], block
    while (start := html.find('<span class="c1">', position, end_of_block)) >= 0:
        start += len('<span class="c1">')
        position = html.index("</span>", start)
        spans.append((start, position))
    return spans


def test_french_page_really_has_translated_comments(built_site):
    """Otherwise the 'comments aside' comparison below would prove nothing."""
    italian = (built_site / "index.html").read_text(encoding="utf-8")
    french = (built_site / "fr" / "index.html").read_text(encoding="utf-8")
    it_comments = [italian[a:b] for a, b in comment_texts(italian, "nccl_check.py")]
    fr_comments = [french[a:b] for a, b in comment_texts(french, "nccl_check.py")]
    assert len(it_comments) == len(fr_comments) > 3
    assert sum(a != b for a, b in zip(it_comments, fr_comments, strict=True)) > 3


def test_a_changed_comment_passes(site, tmp_path):
    page = site / "fr" / "index.html"
    html = page.read_text(encoding="utf-8")
    start, end = comment_texts(html, "nccl_check.py")[1]
    page.write_text(html[:start] + "# un tout autre commentaire" + html[end:], encoding="utf-8")
    extract(site, tmp_path / "out")


def test_a_changed_line_of_code_fails_naming_block_and_line(site, tmp_path):
    # the French page went through BeautifulSoup (comment translation), so quotes are literal
    edit(
        site / "fr" / "index.html",
        'NCCL_CHECK_TIMEOUT"</span><span class="p">,</span> <span class="mi">120</span>',
        'NCCL_CHECK_TIMEOUT"</span><span class="p">,</span> <span class="mi">121</span>',
    )
    with pytest.raises(ExtractError) as error:
        extract(site, tmp_path / "out")
    line = line_of("nccl_check.py", "NCCL_CHECK_TIMEOUT")
    assert "'nccl_check.py'" in str(error.value)
    assert f"line {line}" in str(error.value) and "120" in str(error.value) and "121" in str(error.value)


def test_a_missing_block_fails_naming_it_and_the_language(site, tmp_path):
    edit(site / "fr" / "index.html", '<span class="filename">train.py</span>', "")
    with pytest.raises(ExtractError, match=r"block 'train.py' not found in the built pages of fr"):
        extract(site, tmp_path / "out")


def test_a_line_missing_in_one_language_fails(site, tmp_path):
    edit(
        site / "fr" / "index.html",
        '<span class="n">sys</span><span class="o">.</span><span class="n">stdout</span><span class="o">.</span><span class="n">flush</span><span class="p">()</span>',
        "",
    )
    with pytest.raises(
        ExtractError,
        match=rf"'nccl_check.py': the fr version .* lacks line {line_of('nccl_check.py', 'sys.stdout.flush()')} of the it version \(index.html\): 'sys.stdout.flush\(\)'",
    ):
        extract(site, tmp_path / "out")


def test_a_coding_cookie_in_a_french_comment_fails(site, tmp_path):
    """Case: a French comment on line 1 carrying a coding cookie; the lines without comments are unchanged."""
    page = site / "fr" / "index.html"
    html = page.read_text(encoding="utf-8")
    block = html.index('<span class="filename">nccl_check.py</span>')
    first_line = html.index("<code>", block) + len("<code>")
    assert html.startswith('<span class="c1">', first_line), (
        "line 1 of nccl_check.py is no longer a comment: update this test"
    )
    start, end = first_line + len('<span class="c1">'), html.index("</span>", first_line)
    page.write_text(html[:start] + "# nccl_check.py (encoding: raw_unicode_escape)" + html[end:], encoding="utf-8")
    with pytest.raises(
        ExtractError,
        match=r"block 'nccl_check.py' \(fr, fr/index.html\): Python reads it as 'raw_unicode_escape', not UTF-8",
    ):
        extract(site, tmp_path / "out")


@pytest.mark.parametrize("lang_dir", ["", "fr"])
def test_a_second_block_with_the_same_title_fails_in_either_language(site, tmp_path, lang_dir):
    page = site / lang_dir / "index.html"
    html = page.read_text(encoding="utf-8")
    start = html.rindex('<div class="', 0, html.index('<span class="filename">nccl_check.py</span>'))
    end = html.index("</code></pre></div>", start) + len("</code></pre></div>")
    page.write_text(html[:end] + html[start:end] + html[end:], encoding="utf-8")
    lang = lang_dir or "it"
    with pytest.raises(ExtractError, match=rf"block 'nccl_check.py' \({lang}\): a second block with this title"):
        extract(site, tmp_path / "out")


def test_cli_writes_files_and_fails_with_one_line(site, tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "verify.extract", str(site), str(tmp_path / "ok")],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "ok" / "train.py").read_bytes() == (SNIPPETS / "train.py").read_bytes()
    edit(site / "index.html", '<span class="filename">nccl_check.py</span>', "")
    bad = subprocess.run(
        [sys.executable, "-m", "verify.extract", str(site), str(tmp_path / "bad")],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        f"verify.extract: error: block 'nccl_check.py' not found in the built pages of it ({site}): is its title=\"nccl_check.py\" still there?"
    ]


def test_comment_stripping_keeps_hashes_inside_strings():
    assert code_lines('x = "#"  # commento\n# solo commento\ny = 1\n', "a.py") == [(1, 'x = "#"'), (3, "y = 1")]
    assert code_lines("echo \"a # b\" 'c#d'  # commento\nls -l#x\n", "a.sh") == [
        (1, "echo \"a # b\" 'c#d'"),
        (2, "ls -l#x"),
    ]
