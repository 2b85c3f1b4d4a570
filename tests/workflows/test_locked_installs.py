"""The workflow's Python installs are hash-checked (issue 33): each job that runs a make target
sets ``LOCKED=1``, under which the Makefile installs only lock/'s files (``pip install
--require-hashes --no-deps --no-build-isolation -r lock/...``) and the project itself with
``--no-deps --no-build-isolation`` (nothing fetched); lock/ holds exactly constraints.txt's
versions, each with the sha256 of its files.

lock/ is written by ``make lock`` (uv's ``pip compile --generate-hashes``, from PyPI); these
tests read it offline. Whether the hashes are PyPI's is not checked here (no network in the
tests): pip checks each file against them at install, and refuses a file that differs.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO_ROOT
from tests.workflows.test_publish_workflow import PUBLISH, job_env, make_checkout, make_targets, plain_env, planned

LOCK = REPO_ROOT / "lock"
# each lock file, and the requirement files it is compiled from (under constraints.txt)
LOCK_INPUTS = {
    "build.txt": ("requirements-build.txt",),
    "site.txt": ("requirements-build.txt", "requirements.txt"),
    "test.txt": ("requirements-build.txt", "requirements.txt", "requirements-test.txt"),
}
# what each stamp of the Makefile installs, in order, under LOCKED=1
SITE_INSTALLS = ["lock/build.txt", "lock/site.txt", "-e ."]
TEST_INSTALLS = [*SITE_INSTALLS, "lock/test.txt"]
TARGET_INSTALLS = {"test": TEST_INSTALLS, "gpu-outputs": TEST_INSTALLS, "site": SITE_INSTALLS, "publish": SITE_INSTALLS}
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(PUBLISH.read_text())


def constraint_pins(text: str) -> dict[str, str]:
    """constraints.txt's pins: canonical name -> version."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        if line.split("#")[0].strip():
            requirement = Requirement(line)
            pins[canonicalize_name(requirement.name)] = str(next(iter(requirement.specifier)).version)
    return pins


def lock_entries(text: str) -> list[tuple[str, list[str]]]:
    """A requirements file's entries, continuation lines joined, comments dropped: each
    entry's requirement and its options (``--hash=...``)."""
    entries = []
    for line in text.replace("\\\n", " ").splitlines():
        words = line.split("#")[0].split()
        if words:
            entries.append((words[0], words[1:]))
    return entries


def lock_problems(lock_text: str, constraints_text: str, *, complete: bool = False) -> list[str]:
    """What makes a lock file differ from constraints.txt or unfit for ``--require-hashes``:
    an option line, an entry not pinned with == to constraints.txt's version, an entry
    without a sha256 or with any other option; ``complete``: a package of constraints.txt
    the lock lacks."""
    pins = constraint_pins(constraints_text)
    problems, seen = [], set()
    for requirement_text, options in lock_entries(lock_text):
        if requirement_text.startswith("-"):
            problems.append(f"an option line: {requirement_text} {' '.join(options)}")
            continue
        requirement = Requirement(requirement_text)
        name = canonicalize_name(requirement.name)
        seen.add(name)
        versions = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if len(requirement.specifier) != 1 or versions != [pins.get(name)]:
            problems.append(f"{requirement_text}: constraints.txt pins {pins.get(name)}")
        if not options or not all(HASH.fullmatch(option) for option in options):
            problems.append(f"{requirement_text}: not only sha256 hashes, at least one: {options}")
    if complete:
        problems.extend(f"{name}: pinned in constraints.txt, missing" for name in sorted(set(pins) - seen))
    return problems


def locked_versions(name: str) -> dict[str, str]:
    return {
        canonicalize_name(Requirement(text).name): str(next(iter(Requirement(text).specifier)).version)
        for text, _ in lock_entries((LOCK / name).read_text(encoding="utf-8"))
    }


@pytest.mark.parametrize("name", sorted(LOCK_INPUTS))
def test_each_lock_file_pins_the_constraints_versions_each_with_its_hashes(name):
    constraints = (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8")
    # lock/test.txt is the workflow's whole venv: every version constraints.txt pins, no other
    complete = name == "test.txt"
    assert lock_problems((LOCK / name).read_text(encoding="utf-8"), constraints, complete=complete) == []
    assert locked_versions(name), name


def test_each_stamps_lock_holds_the_earlier_ones():
    """The test stamp installs lock/test.txt over lock/site.txt's venv, which lock/build.txt's
    setuptools started: the same version of each package throughout (nothing reinstalled)."""
    build, site, test = (locked_versions(name) for name in ("build.txt", "site.txt", "test.txt"))
    assert build.items() <= site.items() <= test.items()
    assert "setuptools" in build and {"torch", "mkdocs"} <= set(site) and {"deepspeed", "transformers"} <= set(test)


def test_a_removed_hash_or_a_pin_that_disagrees_is_caught():
    """The check above, on mutated copies of lock/test.txt and constraints.txt."""
    lock = (LOCK / "test.txt").read_text(encoding="utf-8")
    constraints = (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8")
    assert lock_problems(lock, constraints, complete=True) == []
    # every hash of torch's entry removed
    torch_entry = re.search(r"(?m)^torch==\S+ \\\n(?:    --hash=\S+(?: \\)?\n)+", lock)
    assert torch_entry
    unhashed = lock.replace(torch_entry.group(0), torch_entry.group(0).split(" \\")[0] + "\n")
    torch = f"torch=={constraint_pins(constraints)['torch']}"
    assert [problem.split(":")[0] for problem in lock_problems(unhashed, constraints)] == [torch]
    # the only hash of an entry that has one removed (the entry then ends its line)
    single = re.search(r"(?m)^(\S+==\S+) \\\n    (--hash=sha256:[0-9a-f]{64})\n", lock)
    assert single
    without = lock.replace(single.group(0), single.group(1) + "\n")
    assert [problem.split(":")[0] for problem in lock_problems(without, constraints)] == [single.group(1)]
    # a hash cut short
    shortened = lock.replace(single.group(2), single.group(2)[:-1])
    assert [problem.split(":")[0] for problem in lock_problems(shortened, constraints)] == [single.group(1)]
    # constraints.txt bumped, the lock not regenerated
    bumped = re.sub(r"(?m)^deepspeed==\S+$", "deepspeed==0.0.1", constraints)
    assert lock_problems(lock, bumped) == [
        f"deepspeed=={constraint_pins(constraints)['deepspeed']}: constraints.txt pins 0.0.1"
    ]
    # the lock edited by hand
    edited = re.sub(r"(?m)^triton==\S+ ", "triton==9.9.9 ", lock)
    assert lock_problems(edited, constraints) == [
        f"triton==9.9.9: constraints.txt pins {constraint_pins(constraints)['triton']}"
    ]
    # a package pinned in constraints.txt that the lock lacks, and one the lock adds
    assert lock_problems(lock, constraints + "extra-package==1.0\n", complete=True) == [
        "extra-package: pinned in constraints.txt, missing"
    ]
    assert lock_problems(lock + "unpinned-package==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\n", constraints) == [
        "unpinned-package==1.0: constraints.txt pins None"
    ]
    # an option line (another index, a file fetched unhashed)
    assert lock_problems("--extra-index-url https://example.org/simple\n" + lock, constraints) == [
        "an option line: --extra-index-url https://example.org/simple"
    ]


def header_command(name: str) -> str:
    """The generator's command, as uv wrote it at the top of the lock file."""
    lines = (LOCK / name).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# This file was autogenerated by uv via the following command:", name
    return lines[1].removeprefix("#").strip()


def test_each_lock_file_is_what_make_lock_writes(tmp_path, workflow):
    """The command in each file's header is the one ``make lock`` runs (one command
    regenerates lock/ after a bump), compiled from the requirement files for CPython 3.11 on
    Linux x86_64, the jobs' Python."""
    compiles = {}
    for command in planned(make_checkout(tmp_path), "lock", plain_env()):
        if " pip compile " in command:
            words = shlex.split(command)
            assert words[-1] == ">/dev/null", command  # uv writes the file (-o), not the terminal too
            words = words[:-1]
            assert Path(words[0]).name == "uv", command
            output = words[words.index("-o") + 1]
            compiles[output] = shlex.join(["uv", *words[1:]])
    assert compiles == {f"lock/{name}": header_command(name) for name in LOCK_INPUTS}
    setup_pythons = {
        step["with"]["python-version"]
        for job in workflow["jobs"].values()
        for step in job.get("steps", [])
        if step.get("uses", "").startswith("actions/setup-python@")
    }
    for name, inputs in LOCK_INPUTS.items():
        words = header_command(name).split()
        assert words[:3] == ["uv", "pip", "compile"] and "--generate-hashes" in words and "--no-config" in words
        assert words[words.index("--python-platform") + 1] == "x86_64-manylinux_2_28"
        python = words[words.index("--python-version") + 1]
        assert setup_pythons == {".".join(python.split(".")[:2])}, (python, setup_pythons)
        assert [word for word in words if word.endswith(".txt") and word != f"lock/{name}"] == list(inputs)


def pip_installs(commands: list[str]) -> list[tuple[dict[str, str], list[str]]]:
    """The ``pip install`` commands among ``commands``: the variables set on the line, and
    pip's arguments after ``install``."""
    installs = []
    for command in commands:
        words = shlex.split(command)
        if "pip" in words and words[words.index("pip") + 1] == "install":
            assignments = dict(word.split("=", 1) for word in words[: words.index("pip")] if "=" in word)
            installs.append((assignments, words[words.index("pip") + 2 :]))
    return installs


def test_every_job_that_runs_make_sets_the_switch_and_no_other_index(workflow):
    """Each job that runs a make target (each installs the venv: test, gpu, publish) sets
    LOCKED=1; no job, step or the workflow points pip at another index or a folder of files
    (the CPU torch's index, download.pytorch.org, is gone: its files are not in lock/)."""
    jobs = {job for job, _step in make_targets(workflow).values()}
    assert jobs == {"test", "gpu", "publish"}
    for job in jobs:
        assert workflow["jobs"][job]["env"]["LOCKED"] == "1", job
    text = PUBLISH.read_text(encoding="utf-8")
    for variable in (
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_FIND_LINKS",
        "PIP_CONSTRAINT",
        "download.pytorch.org",
    ):
        assert variable not in text, variable
    assert "--index-url" not in text and "--find-links" not in text


def test_the_workflows_make_targets_install_only_hash_checked_files(workflow, tmp_path):
    """As make plans each target in its job's environment (``make -n -B``, a fresh checkout):
    every ``pip install`` takes lock/'s files with ``--require-hashes --no-deps
    --no-build-isolation``, except the project's own ``-e .``, which fetches nothing
    (``--no-deps --no-build-isolation``); the build tools come first; DeepSpeed builds
    CPU-only and Playwright downloads no browser."""
    root = make_checkout(tmp_path)
    for target, (job, step) in make_targets(workflow).items():
        installs = pip_installs(planned(root, target, job_env(workflow, job, step)))
        files = []
        for assignments, args in installs:
            flags = [arg for arg in args if arg != "--quiet"]
            if "-e" in flags:
                assert sorted(flags) == sorted(["--no-deps", "--no-build-isolation", "-e", "."]), (target, args)
                files.append("-e .")
                continue
            assert flags[:3] == ["--require-hashes", "--no-deps", "--no-build-isolation"], (target, args)
            assert flags[3] == "-r" and len(flags) == 5, (target, args)
            files.append(flags[4])
            if flags[4] != "lock/build.txt":
                assert assignments.get("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD") == "1", (target, args)
            if flags[4] == "lock/test.txt":
                assert assignments.get("DS_BUILD_OPS") == "0", (target, args)
        assert files == TARGET_INSTALLS[target], (job, target, files)


def test_without_the_switch_the_install_is_todays(tmp_path):
    """``make serve`` / ``make test`` on a development machine and in .ci/run (no LOCKED): pip
    resolves the requirement files under constraints.txt from the indexes it is configured
    with (a CPU build of torch where one is offered), lock/ unread."""
    installs = pip_installs(planned(make_checkout(tmp_path), "test", plain_env()))
    assert [args for _assignments, args in installs] == [
        ["--quiet", "-r", "requirements.txt", "-c", "constraints.txt"],
        ["--quiet", "--no-deps", "-e", "."],
        ["--quiet", "-r", "requirements-test.txt", "-c", "constraints.txt"],
    ]
