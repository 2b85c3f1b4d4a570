"""The publishing workflow: zizmor clean (auditor persona, one accepted finding written
down), and its gating rules read from the YAML.

Case 12: pull requests (forks included) run only `test` on a hosted runner; the
self-hosted GPU runner and the deployment are reachable only from pushes to main and
manual runs on main, and only after both `test` and `gpu` succeeded. The job conditions are
evaluated below for each event and ref, not just compared as text. The conditions are
defence in depth: a pull request runs its own copy of this file, so the boundary is the
runner group `gpu-publish` restricted to this workflow on main (README, checked below
as far as a file can show it) and the ephemeral just-in-time runners of
.github/gpu-runner/jit-runner.sh.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from itertools import product
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
PUBLISH = WORKFLOWS / "publish.yml"
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(PUBLISH.read_text())


def triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true


def all_steps(workflow: dict):
    for name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield name, step


def condition(expression: str, event: str, ref: str, results: dict[str, str]) -> bool:
    """Evaluate a job's ``if`` (==, !=, &&, ||, parentheses, string literals, the contexts used here)."""
    body = expression.strip()
    body = body[3:-2] if body.startswith("${{") and body.endswith("}}") else body
    values = {"github.event_name": event, "github.ref": ref, **{f"needs.{job}.result": r for job, r in results.items()}}
    python = []
    for token in re.findall(r"'[^']*'|&&|\|\||==|!=|[()]|[\w.-]+|\S", body):
        if token in values:
            python.append(repr(values[token]))
        elif token in {"&&", "||"}:
            python.append({"&&": " and ", "||": " or "}[token])
        elif token in {"==", "!=", "(", ")"} or token.startswith("'"):
            python.append(token)
        else:
            raise AssertionError(f"unexpected token {token!r} in {expression!r}")
    return bool(eval("".join(python), {"__builtins__": {}}))  # noqa: S307 (tokens checked above)


ZIZMOR_IGNORE = re.compile(r"#\s*zizmor:\s*ignore\[([\w,\s-]+)\]")


def zizmor(*args: str) -> subprocess.CompletedProcess:
    program = shutil.which("zizmor") or str(Path(sys.executable).parent / "zizmor")
    return subprocess.run([program, "--offline", "--color=never", *args, str(WORKFLOWS)], capture_output=True, text=True, cwd=REPO_ROOT)


def test_zizmor_auditor_finds_nothing_but_the_accepted_finding():
    """`zizmor --persona=auditor` (what it reports beyond the default run) passes with one
    ignore, written on the line it concerns, explained there and in the README."""
    for persona in ("regular", "auditor"):
        result = zizmor(f"--persona={persona}")
        assert result.returncode == 0, result.stdout + result.stderr
    assert "(1 ignored" in zizmor("--persona=auditor").stdout
    ignores = [(path.name, number, line) for path in sorted(WORKFLOWS.glob("*.y*ml"))
               for number, line in enumerate(path.read_text().splitlines(), start=1) if ZIZMOR_IGNORE.search(line)]
    assert len(ignores) == 1, ignores
    name, number, line = ignores[0]
    assert (name, ZIZMOR_IGNORE.search(line).group(1)) == ("publish.yml", "self-hosted-runner")
    assert line.strip().startswith("runs-on:") and "accepted" in line and "README" in line
    gpu_job_start = PUBLISH.read_text().splitlines().index("  gpu:")
    assert gpu_job_start < number, "the ignore must be on the gpu job's runs-on"
    readme = (REPO_ROOT / "README.md").read_text()
    assert "self-hosted-runner" in readme and "--persona=auditor" in readme


def test_triggers_push_to_main_pull_request_and_manual_never_pull_request_target(workflow):
    on = triggers(workflow)
    assert set(on) == {"push", "pull_request", "workflow_dispatch"}
    assert on["push"] == {"branches": ["main"]}
    for path in WORKFLOWS.glob("*.y*ml"):
        assert "pull_request_target" not in path.read_text(), path.name


def test_least_privilege_permissions_and_limits(workflow):
    assert workflow["permissions"] == {}
    assert workflow["concurrency"]["group"]
    expected = {"test": {"contents": "read"}, "gpu": {"contents": "read"}, "publish": {"contents": "read"},
                "deploy": {"pages": "write", "id-token": "write"}}
    assert {name: job["permissions"] for name, job in workflow["jobs"].items()} == expected
    for name, job in workflow["jobs"].items():
        assert 0 < job["timeout-minutes"] <= 60, name


def test_every_action_pinned_to_a_full_sha_and_checkouts_keep_no_credentials(workflow):
    steps = list(all_steps(workflow))
    assert steps
    for job, step in steps:
        if "uses" in step:
            assert SHA_PIN.match(step["uses"]), f"{job}: {step['uses']} is not pinned to a 40-hex commit"
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False, job


def test_gpu_job_runs_on_the_gpu_runner_group_after_test(workflow):
    gpu = workflow["jobs"]["gpu"]
    assert gpu["runs-on"] == {"group": "gpu-publish", "labels": ["self-hosted", "linux", "x64", "gpu"]}
    assert gpu["needs"] == "test"
    assert any(step.get("run") == "make gpu-check" for step in gpu["steps"])
    upload = next(step for step in gpu["steps"] if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "verification" and "verification/nccl_check.json" in upload["with"]["path"]


def test_only_push_and_manual_runs_on_main_reach_the_gpu_runner(workflow):
    gpu_if = workflow["jobs"]["gpu"]["if"]
    for event, ref in product(("pull_request", "push", "workflow_dispatch"), ("refs/heads/main", "refs/heads/x", "refs/pull/7/merge")):
        expected = event != "pull_request" and ref == "refs/heads/main"
        assert condition(gpu_if, event, ref, {}) == expected, (event, ref)
    assert all("self-hosted" not in str(job["runs-on"]) for name, job in workflow["jobs"].items() if name != "gpu")


def test_publish_needs_both_jobs_to_succeed_on_main(workflow):
    publish = workflow["jobs"]["publish"]
    assert sorted(publish["needs"]) == ["gpu", "test"]
    results = ("success", "failure", "skipped", "cancelled")
    for event, ref, test, gpu in product(("pull_request", "push", "workflow_dispatch"), ("refs/heads/main", "refs/heads/x"), results, results):
        expected = event != "pull_request" and ref == "refs/heads/main" and test == gpu == "success"
        assert condition(publish["if"], event, ref, {"test": test, "gpu": gpu}) == expected, (event, ref, test, gpu)
    order = [step.get("uses", step.get("run", "")).split("@")[0] for step in publish["steps"]]
    assert order.index("actions/download-artifact") < order.index("make publish") < order.index("actions/upload-pages-artifact")
    download = next(step for step in publish["steps"] if step.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"] == {"name": "verification", "path": "verification"}


def test_the_oidc_token_is_only_where_no_code_of_the_repository_runs(workflow):
    """The publish build runs the project's code (hooks, notebook cells, pip installs); with
    ``id-token: write`` every step of that job had the OIDC request token in its environment.
    The token lives in deploy, which checks out nothing and runs only GitHub's deploy action."""
    for name, job in workflow["jobs"].items():
        if name != "deploy":
            assert "id-token" not in job["permissions"] and "pages" not in job["permissions"], name
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "publish" and deploy["environment"]["name"] == "github-pages"
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]
    for event, ref, publish in product(("pull_request", "push", "workflow_dispatch"), ("refs/heads/main", "refs/heads/x"),
                                       ("success", "failure", "skipped")):
        expected = event != "pull_request" and ref == "refs/heads/main" and publish == "success"
        assert condition(deploy["if"], event, ref, {"publish": publish}) == expected, (event, ref, publish)


def test_make_targets_called_by_the_workflow_exist():
    make_mk = (REPO_ROOT / "verify" / "make.mk").read_text()
    assert re.search(r"^gpu-check:.*\n\t\$\(PY\) -m verify\.gpu_check", make_mk, re.M)
    assert re.search(r"^publish:.*\n\tGUIDE_PUBLISH=1 \$\(PY\) -m mkdocs build --strict", make_mk, re.M)


def test_actionlint_knows_the_gpu_label():
    config = yaml.safe_load((REPO_ROOT / ".github" / "actionlint.yaml").read_text())
    assert "gpu" in config["self-hosted-runner"]["labels"]


def shellcheck(path) -> subprocess.CompletedProcess:
    """Debian's shellcheck: installed by the test job (apt-get) and on the development machines; never skipped."""
    assert shutil.which("shellcheck"), "shellcheck is not installed (apt-get install shellcheck)"
    return subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)


def test_the_jit_runner_script_passes_shellcheck_and_registers_one_job_runners():
    script = REPO_ROOT / ".github" / "gpu-runner" / "jit-runner.sh"
    result = shellcheck(script)
    assert result.returncode == 0, result.stdout
    text = script.read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "generate-jitconfig" in code and "ACTIONS_RUNNER_INPUT_JITCONFIG" in code and "run.sh" in code
    assert "config.sh" not in code and "--token" not in code, "a configured runner is persistent, not just-in-time"
    assert '"labels":["self-hosted","linux","x64","gpu"]' in code
    # each round in a cgroup of its own, stopped afterwards: no process of a job outlives it
    assert 'systemd-run --user --scope --quiet --unit "$name" ./run.sh' in code and 'systemctl --user stop "$name.scope"' in code


def test_run_steps_pass_shellcheck(workflow, tmp_path):
    for job, step in all_steps(workflow):
        if "run" in step:
            script = tmp_path / f"{job}-{len(list(tmp_path.iterdir()))}.sh"
            script.write_text("#!/bin/bash\nset -e\n" + step["run"] + "\n")
            result = shellcheck(script)
            assert result.returncode == 0, f"{job}: {step['run']}\n{result.stdout}"


def test_no_cache_or_record_is_committed():
    """The deploy job builds from a fresh checkout: whatever a build would reuse from it
    (validated markers, executed notebooks, mkdocs-jupyter's HTML, a record) is there only if
    a commit carries it (``git add -f``), and it would then skip work the publish build must
    do: mkdocs-jupyter's cached HTML goes on the notebook page as it is."""
    tracked = subprocess.run(["git", "ls-files", "--", ".cache", "site", ":(glob)verification/*.json", ":(glob)verification/*.txt",
                              ":(glob)verification/*.xml"], capture_output=True, text=True, cwd=REPO_ROOT, check=True).stdout.split()
    assert tracked == [], tracked
