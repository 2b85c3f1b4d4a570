"""Each GPU round starts clean (issue 19, hole 8): `.github/gpu-runner/jit-runner.sh` run for
two rounds against stand-ins for GitHub's API (curl), sudo and the runner (run.sh), all on
PATH in a temporary folder. The stand-in runner records what a job would see and plants
what the attacker planted (~/.config/pip/pip.conf, a notebook store, a file in its runner
folder); the second round must see none of it, and neither round may see the token. The
stand-in sudo records each command and runs only the harmless ones (the script's `kill -1`
and `find … -delete` would act on this machine's user). What only a real second user can
show (that JOB_USER cannot read the token file) is the script's refusal to run as JOB_USER
or with a token file other users may read, tested here too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / ".github" / "gpu-runner" / "jit-runner.sh"
TOKEN = "ghs_the-registration-token-0123456789"

CURL = """#!/bin/bash
printf '%s\\n' "$*" >> "$LOG_DIR/curl.args"
n=$(( $(ls "$LOG_DIR" | grep -c '^round.*[.]env$') + 1 ))
printf '{"encoded_jit_config": "JIT-%s"}' "$n"
"""
SUDO = """#!/bin/bash
printf '%s\\n' "$*" >> "$LOG_DIR/sudo.log"
while [ "$1" != "--" ]; do shift; done; shift
case "$1" in /bin/kill|find) exit 0 ;; esac
exec "$@"
"""
# The job user's groups, as the administrator left them (a stand-in: this machine has no gpu-job)
ID = """#!/bin/bash
case "$1 $3" in
  "-gn gpu-job") echo gpu-job ;;
  "-Gn gpu-job") echo "$JOB_GROUPS" ;;
  *) exec /usr/bin/id "$@" ;;
esac
"""
RUN_SH = """#!/bin/bash
n=$(( $(ls "$LOG_DIR" | grep -c '^round.*[.]env$') + 1 ))
{ env; echo "PWD=$PWD"; } > "$LOG_DIR/round$n.env"
ls -A "$HOME" > "$LOG_DIR/round$n.home"; ls -A . > "$LOG_DIR/round$n.runner"
mkdir -p "$HOME/.config/pip" "$HOME/.cache/vramfarm-guide"
echo "[global]\nindex-url = https://evil.example/simple" > "$HOME/.config/pip/pip.conf"
touch "$HOME/.cache/vramfarm-guide/planted.ipynb" ./planted-tool
"""


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def harness(tmp_path):
    bin_dir, logs, runner, scratch = (tmp_path / name for name in ("bin", "logs", "runner", "scratch"))
    for folder in (bin_dir, logs, runner, scratch):
        folder.mkdir()
    executable(bin_dir / "curl", CURL)
    executable(bin_dir / "sudo", SUDO)
    executable(bin_dir / "id", ID)
    executable(runner / "run.sh", RUN_SH.replace("$LOG_DIR", str(logs)))
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    etc, linger = tmp_path / "etc", tmp_path / "linger"
    etc.mkdir()
    linger.mkdir()
    for name in ("cron.deny", "at.deny"):  # as the administrator's set-up leaves them (PUBLISHING.md)
        (etc / name).write_text("daemon\ngpu-job\n")
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "LOG_DIR": str(logs),
        "GH_ORG": "vramfarm",
        "RUNNER_GROUP_ID": "7",
        "GH_TOKEN_FILE": str(token),
        "RUNNER_DIR": str(runner),
        "JOB_USER": "gpu-job",
        "ROUNDS": "2",
        "ROUND_ROOT": str(scratch),
        "HOME": str(tmp_path / "broker-home"),
        "GH_PAT": TOKEN,
        "CRON_DENY": str(etc / "cron.deny"),
        "AT_DENY": str(etc / "at.deny"),
        "LINGER_DIR": str(linger),
        "JOB_GROUPS": "gpu-job video render",
    }
    return {
        "env": env,
        "logs": logs,
        "scratch": scratch,
        "token": token,
        "runner": runner,
        "etc": etc,
        "linger": linger,
    }


def run(harness):
    return subprocess.run(
        ["bash", str(SCRIPT)], env=harness["env"], capture_output=True, text=True, timeout=60, check=False
    )


def environment(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_two_rounds_each_start_clean_and_never_see_the_token(harness):
    result = run(harness)
    assert result.returncode == 0, result.stderr
    logs = harness["logs"]
    rounds = [environment(logs / f"round{n}.env") for n in (1, 2)]
    assert [r["ACTIONS_RUNNER_INPUT_JITCONFIG"] for r in rounds] == ["JIT-1", "JIT-2"]  # one config per round
    for n, seen in enumerate(rounds, start=1):
        assert seen["PIP_CONFIG_FILE"] == "/dev/null" and seen["PIP_NO_CACHE_DIR"] == "1", seen
        assert seen["GUIDE_NOTEBOOK_STORE"] == "off"
        assert (
            seen["XDG_CONFIG_HOME"] == f"{seen['HOME']}/.config" and seen["XDG_CACHE_HOME"] == f"{seen['HOME']}/.cache"
        )
        assert Path(seen["HOME"]).parent == harness["scratch"] and Path(seen["PWD"]).parent == harness["scratch"]
        # nothing of the broker's environment: no token, no path to it, no other variable
        assert TOKEN not in json.dumps(seen) and str(harness["token"]) not in json.dumps(seen)
        assert set(seen) <= {
            "HOME",
            "PATH",
            "LANG",
            "XDG_CONFIG_HOME",
            "XDG_CACHE_HOME",
            "XDG_DATA_HOME",
            "PIP_CONFIG_FILE",
            "PIP_NO_CACHE_DIR",
            "PIP_DISABLE_PIP_VERSION_CHECK",
            "GUIDE_NOTEBOOK_STORE",
            "ACTIONS_RUNNER_INPUT_JITCONFIG",
            "PWD",
            "SHLVL",
            "_",
            "OLDPWD",
        }, sorted(seen)
        assert (logs / f"round{n}.home").read_text() == "", "a fresh HOME is empty"
        assert (logs / f"round{n}.runner").read_text().split() == ["run.sh"], "a fresh copy of the runner"
    assert rounds[0]["HOME"] != rounds[1]["HOME"] and rounds[0]["PWD"] != rounds[1]["PWD"]
    assert list(harness["scratch"].iterdir()) == [], "each round's HOME and runner copy are removed"
    assert not (harness["runner"] / "planted-tool").exists()
    # the token only in a header read from a file descriptor, never on a command line
    assert TOKEN not in (logs / "curl.args").read_text() and TOKEN not in (logs / "sudo.log").read_text()
    jobs = (logs / "sudo.log").read_text().splitlines()
    assert all(line.startswith("--non-interactive --user=gpu-job -- ") for line in jobs)
    assert sum("/bin/kill -KILL -1" in line for line in jobs) == 2  # every process of the job user, each round
    assert sum(line.endswith("find /tmp /var/tmp /dev/shm -xdev -user gpu-job -delete") for line in jobs) == 2
    assert not any("JIT-" in line for line in jobs), "the config goes on standard input, not on sudo's command line"


def test_it_refuses_to_run_jobs_as_the_user_that_holds_the_token(harness):
    harness["env"]["JOB_USER"] = subprocess.run(
        ["id", "-un"], capture_output=True, text=True, check=False
    ).stdout.strip()
    result = run(harness)
    assert result.returncode == 2 and "could read the token" in result.stderr
    assert not (harness["logs"] / "curl.args").exists()


def test_it_refuses_a_token_file_others_may_read(harness):
    harness["token"].chmod(0o644)
    result = run(harness)
    assert result.returncode == 2 and "mode 600" in result.stderr
    assert not (harness["logs"] / "curl.args").exists()


@pytest.mark.parametrize("setting", ["cron.deny", "at.deny", "cron.allow", "at.allow", "linger"])
def test_it_refuses_a_job_user_that_could_schedule_into_the_next_round(harness, setting):
    """Issue 33, hole 5: a round could leave a crontab or an at job for the next one (or a
    systemd user timer, kept alive by lingering), which the round's kill does not reach."""
    etc = harness["etc"]
    if setting.endswith(".deny"):
        (etc / setting).write_text("daemon\n")
    elif setting.endswith(".allow"):
        (etc / setting).write_text("gpu-job\n")
    else:
        (harness["linger"] / "gpu-job").touch()
    result = run(harness)
    assert result.returncode == 2
    named = harness["linger"] / "gpu-job" if setting == "linger" else etc / setting
    assert result.stderr.count("\n") == 1 and str(named) in result.stderr, result.stderr
    assert not (harness["logs"] / "curl.args").exists(), "no runner was registered"


@pytest.mark.parametrize("group", ["docker", "lxd", "sudo"])
def test_it_refuses_a_job_user_in_a_group_that_is_root_outside_the_scopes(harness, group):
    """The scopes make the file system read-only to the verified code, but a socket on it can
    still be connected to: a member of docker starts a container as root, outside every scope.
    Only the user's own group and video, render (the GPUs' device files) are accepted."""
    harness["env"]["JOB_GROUPS"] = f"gpu-job video {group}"
    result = run(harness)
    assert result.returncode == 2 and f"gpu-job is in group {group}" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1
    assert not (harness["logs"] / "curl.args").exists(), "no runner was registered"


def test_a_round_that_turns_lingering_on_is_the_last(harness):
    """What a round could do about it itself (``loginctl enable-linger`` where polkit lets it):
    seen after the round, and the script stops before the next."""
    run_sh = harness["runner"] / "run.sh"
    run_sh.write_text(run_sh.read_text() + f"touch {harness['linger'] / 'gpu-job'}\n")
    result = run(harness)
    assert result.returncode == 2 and "lingering is on for gpu-job" in result.stderr
    assert len((harness["logs"] / "curl.args").read_text().splitlines()) == 1, "one round only"
    jobs = (harness["logs"] / "sudo.log").read_text().splitlines()
    assert sum("/bin/kill -KILL -1" in line for line in jobs) == 1, "the round itself was still cleaned up"


def test_the_script_passes_shellcheck():
    assert shutil.which("shellcheck")
    assert subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True, check=False).returncode == 0
