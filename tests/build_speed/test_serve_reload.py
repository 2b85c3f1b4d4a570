"""Under `mkdocs serve` the process stays: each rebuild re-imports vram/ and hooks/ only
when one of their .py files changed (hooks/mkdocs_glue.py, reload_render_layer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# Run in a copy of the repository, in its own process: three builds the way `mkdocs serve`
# does them (load the configuration, build), editing hooks/render.py before the third.
SERVE_LIKE = r'''
import json, sys
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config

def rebuild(n):
    config = load_config("mkdocs.yml", site_dir=f"site{n}")
    build(config, serve_url="http://127.0.0.1:8000/")
    return id(sys.modules["hooks.render"]), id(sys.modules["vram"])

report = {"first": rebuild(0), "unchanged": rebuild(1)}
render = Path("hooks/render.py")
render.write_text(render.read_text() + """

_original_render_markdown = render_markdown


def render_markdown(markdown, lang):
    return _original_render_markdown(markdown, lang) + "\\n\\nRELOADED-MARKER-" + lang + "\\n"
""")
report["edited"] = rebuild(2)
print(json.dumps(report))
'''


def test_rebuild_reloads_only_after_an_edit(repo_copy):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-c", SERVE_LIKE], cwd=repo_copy, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["unchanged"] == report["first"], "a rebuild without edits re-imported the render layer"
    assert report["edited"][0] != report["first"][0] and report["edited"][1] != report["first"][1]
    for n, marker_expected in ((1, False), (2, True)):
        for page, lang in (("memory-formulas/index.html", "it"), ("fr/memory-formulas/index.html", "fr")):
            html = (repo_copy / f"site{n}" / page).read_text(encoding="utf-8")
            assert (f"RELOADED-MARKER-{lang}" in html) is marker_expected, (n, page)
