"""Every code block of the built pages, in both languages, is non-empty and parses:
Python with ``compile``, shell with ``bash -n`` and shellcheck when it is installed
(../shared/cases/site.md, case 5)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.site.pages import soup

pytestmark = pytest.mark.slow


def blocks(site):
    for page in sorted(site.rglob("*.html")):
        for div in soup(page).select("article div.highlight"):
            language = next(
                (c.removeprefix("language-") for c in div.get("class", []) if c.startswith("language-")), None
            )
            code = div.select_one("pre > code")
            if code is not None:
                yield page.relative_to(site), language, code.get_text()


def test_blocks_compile(built_site, tmp_path):
    seen = {"python": 0, "bash": 0}
    for page, language, code in blocks(built_site):
        assert code.strip(), f"{page}: empty code block"
        if language in ("python", "py"):
            compile(code, f"{page}", "exec")
            seen["python"] += 1
        elif language in ("bash", "sh", "shell"):
            script = tmp_path / "block.sh"
            script.write_text(code, encoding="utf-8")
            result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
            assert result.returncode == 0, f"{page}: {result.stderr}"
            if shutil.which("shellcheck"):
                result = subprocess.run(
                    ["shellcheck", "--shell=bash", "--severity=error", str(script)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                assert result.returncode == 0, f"{page}:\n{code}\n{result.stdout}"
            seen["bash"] += 1
    assert seen["python"] >= 2 and seen["bash"] >= 12, seen
