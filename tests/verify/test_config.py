"""mkdocs.yml is data (issue 19, hole 7): read by a loader that constructs nothing and
refuses every tag but !ENV (site_url only) and !relative. The attacker's line ran a command
in every build under MkDocs' own loader; here it is refused before anything runs, and the
proof that nothing ran is the file the command would have created."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from verify.config import ConfigError, check_config, main

CONFIG = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_committed_mkdocs_yml_passes_and_the_make_targets_check_it_first():
    check_config(CONFIG)
    makefiles = (REPO_ROOT / "Makefile").read_text() + (REPO_ROOT / "verify" / "make.mk").read_text()
    for target in ("site", "publish", "gpu-outputs"):
        recipe = makefiles.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        assert recipe.splitlines()[1].strip() == "$(PY) -m verify.config mkdocs.yml", target
    assert makefiles.split("\ngpu-check:", 1)[1].split("\n", 1)[0].split() == ["gpu-outputs"]  # its first half


@pytest.mark.parametrize(
    ("addition", "tag"),
    [
        (
            "extra:\n  x: !!python/object/apply:subprocess.getoutput ['touch {marker}']\n",
            "!!python/object/apply:subprocess.getoutput",
        ),
        ("extra:\n  x: !!python/object/new:os.system ['touch {marker}']\n", "!!python/object/new:os.system"),
        ("extra:\n  x: !!python/name:os.system\n", "!!python/name:os.system"),
        ("extra:\n  token: !ENV GITHUB_TOKEN\n", "!ENV"),
        ("extra:\n  x: !include other.yml\n", "!include"),
    ],
)
def test_any_other_tag_fails_in_one_line_and_runs_nothing(tmp_path, capsys, addition, tag):
    marker = tmp_path / "ran"
    config = tmp_path / "mkdocs.yml"
    config.write_text(CONFIG + addition.format(marker=marker), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        check_config(config.read_text(encoding="utf-8"))
    assert f"the tag {tag} is not allowed" in str(caught.value) and "extra." in str(caught.value)
    assert main([str(config)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not marker.exists()


def test_the_command_line_fails_in_one_line(tmp_path):
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        CONFIG + f"extra:\n  x: !!python/object/apply:subprocess.getoutput ['touch {tmp_path / 'ran'}']\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "verify.config", str(config)], capture_output=True, text=True, cwd=REPO_ROOT, check=False
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"verify.config: error: {config}:") and not (tmp_path / "ran").exists()


def test_env_is_allowed_for_site_url_only():
    assert "site_url: !ENV" in CONFIG
    check_config("site_url: !ENV [SITE_URL, 'http://127.0.0.1:8000/']\n")
    with pytest.raises(ConfigError, match="site_name: the tag !ENV"):
        check_config("site_name: !ENV [NAME, x]\n")
