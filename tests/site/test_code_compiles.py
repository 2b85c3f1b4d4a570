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
            language = next((c.removeprefix("language-") for c in div.get("class", []) if c.startswith("language-")), None)
            code = div.select_one("pre > code")
            if code is not None:
                yield page.relative_to(site), language, code.get_text()


def test_blocks_compile(built_site, tmp_path):
    seen = {"python": 0, "bash": 0}
    scripts = {}  # one file per shell block, for one shellcheck run over all of them
    for page, language, code in blocks(built_site):
        assert code.strip(), f"{page}: empty code block"
        if language in ("python", "py"):
            compile(code, f"{page}", "exec")
            seen["python"] += 1
        elif language in ("bash", "sh", "shell"):
            script = tmp_path / f"block-{len(scripts)}.sh"
            script.write_text(code, encoding="utf-8")
            result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
            assert result.returncode == 0, f"{page}: {result.stderr}"
            scripts[script] = (page, code)
            seen["bash"] += 1
    if shutil.which("shellcheck") and scripts:
        result = subprocess.run(["shellcheck", "--shell=bash", "--severity=error", *map(str, scripts)], capture_output=True, text=True)
        assert result.returncode == 0, "\n".join(f"{page}:\n{code}" for script, (page, code) in scripts.items()
                                                 if str(script) in result.stdout) + "\n" + result.stdout
    assert seen["python"] >= 2 and seen["bash"] >= 12, seen
