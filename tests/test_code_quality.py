"""The code's habits, as CI checks them (``make lint`` runs the same three commands): ruff's lint
rules, ruff's format, and mypy's types (strict on vram/ and verify/). Their rules and what each
leaves out, with the reason: pyproject.toml. A failure lists one finding a line, as the tool
printed it, and says how to fix it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

CHECKS = {
    "ruff check": (
        ["-m", "ruff", "check", "--output-format=concise", "--no-fix", "."],
        "`ruff check --fix` fixes the safe ones; a rule that is wrong for a line: `# noqa: CODE (why)`",
    ),
    "ruff format": (["-m", "ruff", "format", "--check", "--output-format=concise", "."], "`ruff format` rewrites them"),
    "mypy": (["-m", "mypy"], "annotate; `# type: ignore[code]  # why` only where a library's types are wrong"),
}

SUMMARY = re.compile(r"Found \d+ errors?|\[\*\] \d+ fixable|\d+ files? would be reformatted|Success:|All checks passed")


@pytest.mark.parametrize("name", CHECKS)
def test_the_code_passes(name):
    args, fix = CHECKS[name]
    # a clean mypy (CI's) reads the standard library's and the libraries' stubs once: ~10 s; the
    # limit only ends a hang
    done = subprocess.run(
        [sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode != 0:
        findings = [
            line for line in (done.stdout + done.stderr).splitlines() if line.strip() and not SUMMARY.match(line)
        ]
        pytest.fail(f"{name}: {len(findings)} finding(s) ({fix}):\n" + "\n".join(findings), pytrace=False)
