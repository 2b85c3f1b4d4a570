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

import os
import re
import shutil
import subprocess
import sys
from itertools import product
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
PUBLISH = WORKFLOWS / "publish.yml"
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(PUBLISH.read_text())


def triggers(workflow: dict) -> Any:
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
    # --no-config: a pull request's .github/zizmor.yml (or zizmor.yml) cannot switch a rule off
    return subprocess.run(
        [program, "--offline", "--no-config", "--color=never", *args, str(WORKFLOWS)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )


def test_zizmor_auditor_finds_nothing_but_the_accepted_finding():
    """`zizmor --persona=auditor` (what it reports beyond the default run) passes with one
    ignore, written on the line it concerns, explained there and in the README."""
    for persona in ("regular", "auditor"):
        result = zizmor(f"--persona={persona}")
        assert result.returncode == 0, result.stdout + result.stderr
    assert "(1 ignored" in zizmor("--persona=auditor").stdout
    ignores = [
        (path.name, number, line)
        for path in sorted(WORKFLOWS.glob("*.y*ml"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if ZIZMOR_IGNORE.search(line)
    ]
    assert len(ignores) == 1, ignores
    name, number, line = ignores[0]
    assert (name, ZIZMOR_IGNORE.search(line).group(1)) == ("publish.yml", "self-hosted-runner")
    assert line.strip().startswith("runs-on:") and "accepted" in line and "README" in line
    gpu_job_start = PUBLISH.read_text().splitlines().index("  gpu:")
    assert gpu_job_start < number, "the ignore must be on the gpu job's runs-on"
    readme = (REPO_ROOT / "README.md").read_text() + (REPO_ROOT / "PUBLISHING.md").read_text()  # linked from the README
    assert "self-hosted-runner" in readme and "--persona=auditor" in readme


SHIPPED = {".github/actionlint.yaml", ".github/gpu-runner/jit-runner.sh", ".github/workflows/publish.yml"}
PRIVILEGED_TRIGGERS = {"pull_request_target", "workflow_run"}  # run with the base repository's token and secrets


def test_triggers_push_to_main_pull_request_and_manual_never_pull_request_target(workflow):
    on = triggers(workflow)
    assert set(on) == {"push", "pull_request", "workflow_dispatch"}
    assert on["push"] == {"branches": ["main"]}
    for path in WORKFLOWS.glob("*.y*ml"):
        assert "pull_request_target" not in path.read_text(), path.name


def github_files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in (root / ".github").rglob("*") if not path.is_dir()}


def privileged_triggers(path: Path) -> set[str]:
    on = triggers(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    names = {on} if isinstance(on, str) else set(on or ())
    return names & PRIVILEGED_TRIGGERS


def test_only_the_shipped_workflow_files_exist_and_none_has_a_privileged_trigger():
    """Issue 19, hole 9: a pull request added `.github/zizmor.yml` (a disabled rule) and a
    `workflow_run` workflow with `pages: write`; the auditor passed. Any file of .github/
    other than ours fails here, and so does a zizmor configuration anywhere zizmor looks."""
    assert github_files(REPO_ROOT) == SHIPPED
    assert not (REPO_ROOT / "zizmor.yml").exists() and not (REPO_ROOT / ".github" / "zizmor.yml").exists()
    for path in WORKFLOWS.glob("*"):
        assert not privileged_triggers(path), path.name


def test_the_attackers_workflow_and_config_are_caught(tmp_path):
    """The checks above on a copy of .github/ with the attacker's files planted."""
    import shutil

    shutil.copytree(REPO_ROOT / ".github", tmp_path / ".github")
    (tmp_path / ".github" / "zizmor.yml").write_text("rules:\n  dangerous-triggers:\n    disable: true\n")
    attack = tmp_path / ".github" / "workflows" / "deploy.yml"
    attack.write_text(
        "on:\n  workflow_run:\n    workflows: [x]\n    types: [completed]\npermissions:\n  pages: write\n"
        "jobs:\n  d:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo\n"
    )
    assert github_files(tmp_path) - SHIPPED == {".github/zizmor.yml", ".github/workflows/deploy.yml"}
    assert privileged_triggers(attack) == {"workflow_run"}
    (attack).write_text("on: pull_request_target\njobs: {}\n")
    assert privileged_triggers(attack) == {"pull_request_target"}
    # zizmor itself, configuration ignored, reports the trigger the config would have silenced
    program = shutil.which("zizmor") or str(Path(sys.executable).parent / "zizmor")
    attack.write_text(
        "on:\n  workflow_run:\n    workflows: [x]\n    types: [completed]\npermissions: {}\n"
        "jobs:\n  d:\n    runs-on: ubuntu-24.04\n    permissions:\n      pages: write\n"
        "    steps:\n      - run: echo\n"
    )
    result = subprocess.run(
        [program, "--offline", "--no-config", "--color=never", "--persona=auditor", str(attack)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode != 0 and "dangerous-triggers" in result.stdout


def test_least_privilege_permissions_and_limits(workflow):
    assert workflow["permissions"] == {}
    assert workflow["concurrency"]["group"]
    expected = {
        "test": {"contents": "read"},
        "gpu": {"contents": "read"},
        "record": {"contents": "read"},
        "publish": {"contents": "read"},
        "check-site": {"contents": "read"},
        "deploy": {"pages": "write", "id-token": "write"},
    }
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
    assert [step["run"] for step in gpu["steps"] if "run" in step] == ["make gpu-outputs"]
    upload = next(step for step in gpu["steps"] if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "gpu-outputs" and "verification/outputs.json" in upload["with"]["path"]
    assert "nccl_check.json" not in upload["with"]["path"], "the GPU job writes no record"


def test_the_record_is_written_on_a_fresh_machine_from_the_gpu_jobs_outputs(workflow):
    """Issue 33, hole 1: a process of the verified code outlived the GPU job's check and turned
    its record into a pass. The GPU job now only collects outputs (each command in a scope
    ended before the next, verify/scope.py); the record is written by `record`, on a
    GitHub-hosted machine from a fresh checkout, running only verify.write_record (standard
    library), and it is that job's record that `publish` downloads."""
    record = workflow["jobs"]["record"]
    assert record["needs"] == "gpu" and record["runs-on"] == "ubuntu-24.04"
    steps = record["steps"]
    assert [step["run"] for step in steps if "run" in step] == ["python -m verify.write_record verification"]
    download = next(step for step in steps if step.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"] == {"name": "gpu-outputs", "path": "verification"}
    order = [step.get("uses", step.get("run", "")).split("@")[0] for step in steps]
    assert order.index("actions/download-artifact") < order.index("python -m verify.write_record verification")
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "verification"
    assert {"verification/nccl_check.json", "verification/gpu-tests.xml"} <= set(upload["with"]["path"].split())
    for event, ref, gpu in product(
        ("pull_request", "push", "workflow_dispatch"),
        ("refs/heads/main", "refs/heads/x"),
        ("success", "failure", "skipped", "cancelled"),
    ):
        expected = event != "pull_request" and ref == "refs/heads/main" and gpu == "success"
        assert condition(record["if"], event, ref, {"gpu": gpu}) == expected, (event, ref, gpu)
    # what the record job runs imports the standard library and verify's parsers only
    probe = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            (
                "import sys; sys.path.insert(0, '.'); import verify.write_record; "
                "print(sorted(m for m in sys.modules if m.split('.')[0] not in sys.stdlib_module_names))"
            ),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert all(name.split(".")[0] in ("verify", "__main__") for name in eval(probe.stdout)), probe.stdout  # noqa: S307


def test_only_push_and_manual_runs_on_main_reach_the_gpu_runner(workflow):
    gpu_if = workflow["jobs"]["gpu"]["if"]
    for event, ref in product(
        ("pull_request", "push", "workflow_dispatch"), ("refs/heads/main", "refs/heads/x", "refs/pull/7/merge")
    ):
        expected = event != "pull_request" and ref == "refs/heads/main"
        assert condition(gpu_if, event, ref, {}) == expected, (event, ref)
    assert all("self-hosted" not in str(job["runs-on"]) for name, job in workflow["jobs"].items() if name != "gpu")


def test_publish_needs_both_jobs_to_succeed_on_main(workflow):
    publish = workflow["jobs"]["publish"]
    assert sorted(publish["needs"]) == ["record", "test"]
    results = ("success", "failure", "skipped", "cancelled")
    for event, ref, test, record in product(
        ("pull_request", "push", "workflow_dispatch"), ("refs/heads/main", "refs/heads/x"), results, results
    ):
        expected = event != "pull_request" and ref == "refs/heads/main" and test == record == "success"
        assert condition(publish["if"], event, ref, {"test": test, "record": record}) == expected, (
            event,
            ref,
            test,
            record,
        )
    order = [step.get("uses", step.get("run", "")).split("@")[0] for step in publish["steps"]]
    assert (
        order.index("actions/download-artifact") < order.index("make publish") < order.index("actions/upload-artifact")
    )
    assert "actions/upload-pages-artifact" not in order  # the Pages archive comes from check-site only
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
    assert deploy["needs"] == "check-site" and deploy["environment"]["name"] == "github-pages"
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]
    for event, ref, publish in product(
        ("pull_request", "push", "workflow_dispatch"),
        ("refs/heads/main", "refs/heads/x"),
        ("success", "failure", "skipped"),
    ):
        expected = event != "pull_request" and ref == "refs/heads/main" and publish == "success"
        assert condition(deploy["if"], event, ref, {"check-site": publish}) == expected, (event, ref, publish)
        assert condition(workflow["jobs"]["check-site"]["if"], event, ref, {"publish": publish}) == expected


def test_the_publication_build_runs_in_a_scope_the_runner_allows(workflow):
    """``make publish`` builds in a scope (verify/publish.py), a user namespace Ubuntu 24.04's
    AppArmor refuses by default: the publish job allows it before the build, as the test job
    does for the rehearsals (tests/verify/test_publish_scope.py rehearses the scope itself)."""
    switch = "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
    for name in ("test", "publish"):
        runs = [step.get("run", "") for step in workflow["jobs"][name]["steps"]]
        assert switch in runs, name
    runs = [step.get("run", "") for step in workflow["jobs"]["publish"]["steps"]]
    assert runs.index(switch) < runs.index("make publish")


# What make reads to plan the workflow's targets (verify/make.mk, the install stamps' inputs)
MAKE_INPUTS = (
    "Makefile",
    "verify",
    "package.json",
    "package-lock.json",
    "requirements.txt",
    "requirements-test.txt",
    "requirements-build.txt",
    "constraints.txt",
    "pyproject.toml",
    "lock",
)


def make_checkout(root: Path) -> Path:
    """A copy of what make reads, without .venv or node_modules (a fresh runner's checkout)."""
    for name in MAKE_INPUTS:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, root / name)
    return root


def plain_env() -> dict[str, str]:
    """This process's environment, less the Makefile's switch (and the flags of a make that runs the tests)."""
    return {name: value for name, value in os.environ.items() if name not in ("LOCKED", "MAKEFLAGS", "MAKELEVEL")}


def job_env(workflow: dict, job: str, step: dict) -> dict[str, str]:
    """The environment a step's command runs in: ``plain_env()`` plus the workflow's, the
    job's and the step's ``env``."""
    env = plain_env()
    for level in (workflow, workflow["jobs"][job], step):
        env.update({name: str(value) for name, value in level.get("env", {}).items()})
    return env


def make_targets(workflow: dict) -> dict[str, tuple[str, dict]]:
    """Each make target a step runs: its job and step."""
    return {
        step["run"].split()[1]: (job, step)
        for job, step in all_steps(workflow)
        if step.get("run", "").startswith("make ")
    }


def planned(root: Path, target: str, env: dict[str, str]) -> list[str]:
    """The commands ``make`` would run for ``target`` from scratch (``make -n -B``)."""
    result = subprocess.run(
        ["make", "-n", "-B", "-C", str(root), target], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def test_every_build_and_check_of_the_workflow_gets_the_pinned_npm_packages(workflow, tmp_path):
    """A fresh runner has no node_modules: each make target a job calls that builds the site
    (which copies Pyodide and fzstd from node_modules) installs them first, as make itself
    plans it (``make -n -B``, in a copy without node_modules, in the job's environment);
    check-site, which compares the site with them and runs no make target, installs them
    before the check. No package's install script runs (``--ignore-scripts``): the lock's
    integrity hashes pin the files."""
    root = make_checkout(tmp_path)
    install = "npm ci --ignore-scripts --git=false --no-audit --no-fund --loglevel=error"
    targets = make_targets(workflow)
    assert set(targets) == {"test", "site", "gpu-outputs", "publish"}, targets
    for target, (job, step) in targets.items():
        plan = planned(root, target, job_env(workflow, job, step))
        assert install in plan, (job, target)
        assert plan.index("python3 -m verify.npm_sources") < plan.index(install), (job, target)
    checks = [step["run"] for step in workflow["jobs"]["check-site"]["steps"] if "run" in step]
    assert (
        checks.index("python -m verify.npm_sources")
        < checks.index(install)
        < checks.index("python -m verify.artifact site --manifest site-manifest.json --tar artifact.tar")
    )


def test_make_targets_called_by_the_workflow_exist():
    make_mk = (REPO_ROOT / "verify" / "make.mk").read_text()
    assert re.search(
        r"^gpu-check: gpu-outputs\n\t\$\(PY\) -m verify\.write_record verification$", make_mk, re.MULTILINE
    )
    assert re.search(
        r"^gpu-outputs:.*\n\t\$\(PY\) -m verify.config mkdocs.yml\n\t\$\(PY\) -m verify\.gpu_check --out verification$",
        make_mk,
        re.MULTILINE,
    )
    assert re.search(
        r"^publish:.*\n\t\$\(PY\) -m verify.config mkdocs.yml\n"
        r"\t\$\(PY\) -m verify\.publish site --manifest site-manifest\.json --tar artifact\.tar$",
        make_mk,
        re.MULTILINE,
    )


def test_the_pages_archive_is_made_by_the_check_on_a_fresh_machine(workflow):
    """Issue 19, hole 6: a process left by the publish build rewrote site/ after the build and
    before the upload. The build's job hands site/ over as an artifact; check-site (another
    machine: no process of the build survives there, and none of its code runs: only the
    check's pinned libraries are installed) checks it, writes the archive from the bytes it
    checked, and uploads that archive, which deploy-pages deploys."""
    check = workflow["jobs"]["check-site"]
    assert check["needs"] == "publish"
    steps = check["steps"]
    runs = [step["run"] for step in steps if "run" in step]
    assert runs == [
        "python -m pip install --quiet --no-deps --require-hashes -r verify/requirements-artifact.txt",
        "python -m verify.npm_sources",
        "npm ci --ignore-scripts --git=false --no-audit --no-fund --loglevel=error",
        "python -m verify.artifact site --manifest site-manifest.json --tar artifact.tar",
    ]
    download = next(step for step in steps if step.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"] == {"name": "site-build", "path": "site"}
    uploads = {
        step["with"]["name"]: step["with"]["path"]
        for step in steps
        if step.get("uses", "").startswith("actions/upload-artifact@")
    }
    assert uploads == {"github-pages": "artifact.tar", "site-manifest": "site-manifest.json"}
    handed = next(
        step
        for step in workflow["jobs"]["publish"]["steps"]
        if step.get("uses", "").startswith("actions/upload-artifact@")
    )
    assert handed["with"]["name"] == "site-build" and handed["with"]["path"] == "site"
    pins = dict(line.split("==") for line in (REPO_ROOT / "constraints.txt").read_text().splitlines() if "==" in line)
    requirements = (REPO_ROOT / "verify" / "requirements-artifact.txt").read_text().replace("\\\n", " ")
    for line in requirements.splitlines():
        if line and not line.startswith("#"):
            words = line.split("#")[0].split()
            name, version = words[0].split("==")
            assert pins.get(name) == version, line
            # issue 33: every file installed there is the one hashed (pip refuses any other)
            assert [word for word in words[1:] if word.startswith("--hash=sha256:")] == words[1:] and words[1:], line


def test_actionlint_knows_the_gpu_label():
    config = yaml.safe_load((REPO_ROOT / ".github" / "actionlint.yaml").read_text())
    assert "gpu" in config["self-hosted-runner"]["labels"]


def shellcheck(path) -> subprocess.CompletedProcess:
    """Debian's shellcheck: installed by the test job (apt-get) and on the development machines; never skipped."""
    assert shutil.which("shellcheck"), "shellcheck is not installed (apt-get install shellcheck)"
    return subprocess.run(["shellcheck", str(path)], capture_output=True, text=True, check=False)


def test_the_jit_runner_script_passes_shellcheck_and_registers_one_job_runners():
    script = REPO_ROOT / ".github" / "gpu-runner" / "jit-runner.sh"
    result = shellcheck(script)
    assert result.returncode == 0, result.stdout
    text = script.read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "generate-jitconfig" in code and "ACTIONS_RUNNER_INPUT_JITCONFIG" in code and "run.sh" in code
    assert "config.sh" not in code and "--token" not in code, "a configured runner is persistent, not just-in-time"
    assert '"labels":["self-hosted","linux","x64","gpu"]' in code
    # each round starts clean: tests/workflows/test_gpu_runner.py runs the script's rounds


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
    tracked = subprocess.run(
        [
            "git",
            "ls-files",
            "--",
            ".cache",
            "site",
            ":(glob)verification/*.json",
            ":(glob)verification/*.txt",
            ":(glob)verification/*.xml",
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=True,
    ).stdout.split()
    assert tracked == [], tracked
