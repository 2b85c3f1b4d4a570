"""Under `mkdocs serve` the process stays: each rebuild re-imports vram/ and hooks/ only
when one of their .py files changed (hooks/mkdocs_glue.py, reload_render_layer), recovers
from an edit that does not import, and refuses to build with an edited hook file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# Run in a copy of the repository, in its own process: builds the way `mkdocs serve` does
# them (load the configuration, build), with edits in between.
SERVE_LIKE = r'''
import json, logging, sys
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config

logging.basicConfig(level=logging.ERROR)  # build errors to stderr, as `mkdocs serve` shows them

def rebuild(n):
    config = load_config("mkdocs.yml", site_dir=f"site{n}")
    try:
        build(config, serve_url="http://127.0.0.1:8000/")
    except BaseException as exc:  # what `mkdocs serve` would print, then it keeps serving
        return f"{type(exc).__name__}: {exc}"
    # Which build first imported the modules in use now (ids can be reused after a reload).
    seen = []
    for name in ("hooks.render", "vram"):
        module = sys.modules[name]
        seen.append(getattr(module, "_imported_by_build", n))
        module._imported_by_build = seen[-1]
    return seen

def append(path, text):
    Path(path).write_text(Path(path).read_text() + text)

MARKER = """

_original_{n} = render_markdown


def render_markdown(markdown, lang):
    return _original_{n}(markdown, lang) + "\\n\\nRELOADED-MARKER-{n}-" + lang + "\\n"
"""
report = {"first": rebuild(0), "unchanged": rebuild(1)}
append("hooks/render.py", MARKER.format(n=2))
report["edited"] = rebuild(2)
tables = Path("hooks/tables.py").read_text()
append("hooks/tables.py", "\ndef broken(:\n")
report["syntax_error"] = rebuild(3)
Path("hooks/tables.py").write_text(tables)
append("hooks/render.py", MARKER.format(n=4))
report["fixed"] = rebuild(4)
append("hooks/mkdocs_glue.py", "\n# an edit\n")
report["glue_edited"] = rebuild(5)
print(json.dumps(report))
'''


def test_serve_rebuilds_follow_edits(repo_copy):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-c", SERVE_LIKE], cwd=repo_copy, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["first"] == [0, 0]
    assert report["unchanged"] == [0, 0], "a rebuild without edits re-imported the render layer"
    assert report["edited"] == [2, 2], "an edit to hooks/ did not re-import hooks and vram"
    assert report["syntax_error"].startswith("SyntaxError")
    assert report["fixed"] == [4, 4], report["fixed"]
    assert report["glue_edited"].startswith("Abort")
    assert "hooks/mkdocs_glue.py: edited after `mkdocs serve` started" in result.stderr

    def markers(n: int, page: str) -> set[str]:
        html = (repo_copy / f"site{n}" / page).read_text(encoding="utf-8")
        return {marker for marker in ("2-it", "2-fr", "4-it", "4-fr") if f"RELOADED-MARKER-{marker}" in html}

    for n, expected in ((1, set()), (2, {"2"}), (4, {"2", "4"})):
        assert markers(n, "memory-formulas/index.html") == {f"{m}-it" for m in expected}, n
        assert markers(n, "fr/memory-formulas/index.html") == {f"{m}-fr" for m in expected}, n
