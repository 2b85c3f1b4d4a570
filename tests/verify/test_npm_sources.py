"""verify.npm_sources: `npm ci` installs registry tarballs with sha512 integrity and nothing else.
The attack it closes (issue 33's kind: a pull request changing what runs on the GPU runner): a
committed .npmrc naming a program of the checkout as npm's `git`, and a git dependency in the
lock, made `npm ci --ignore-scripts` run that program before any scope existed."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.conftest import REPO_ROOT
from verify.npm_sources import faults


@pytest.fixture
def checkout(tmp_path):
    for name in ("package.json", "package-lock.json", "Makefile"):
        shutil.copy(REPO_ROOT / name, tmp_path / name)
    shutil.copytree(REPO_ROOT / "verify", tmp_path / "verify", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _edit(path, change):
    value = json.loads(path.read_text(encoding="utf-8"))
    change(value)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def test_the_repository_s_npm_files_are_registry_tarballs_only():
    assert faults(REPO_ROOT) == []
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text(encoding="utf-8"))
    assert {path for path in lock["packages"] if path} >= {"node_modules/pyodide", "node_modules/fzstd"}


def _git_dependency(lock):
    lock["packages"]["node_modules/gitdep"] = {"version": "1.0.0", "resolved": "git+file:///tmp/gitdep#0123abc"}


def _link(lock):
    lock["packages"]["node_modules/fzstd"] = {"resolved": "../fzstd", "link": True}


def _no_integrity(lock):
    del lock["packages"]["node_modules/pyodide"]["integrity"]


def _other_registry(lock):
    lock["packages"]["node_modules/pyodide"]["resolved"] = "https://npm.example.org/pyodide/-/pyodide-314.0.7.tgz"


def _sha1(lock):
    lock["packages"]["node_modules/pyodide"]["integrity"] = "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="


def _version(lock):
    lock["packages"]["node_modules/pyodide"]["version"] = "314.0.6"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_git_dependency, "packages['node_modules/gitdep']: resolved 'git+file:///tmp/gitdep#0123abc' is not"),
        (_link, "packages['node_modules/fzstd']: key 'link' is not allowed"),
        (_no_integrity, "packages['node_modules/pyodide']: no sha512 integrity"),
        (_other_registry, "packages['node_modules/pyodide']: resolved 'https://npm.example.org/"),
        (_sha1, "packages['node_modules/pyodide']: no sha512 integrity"),
        (_version, "packages['node_modules/pyodide']: version '314.0.6', package.json pins '314.0.7'"),
    ],
)
def test_a_lock_entry_that_is_not_a_registry_tarball_is_refused(checkout, change, said):
    _edit(checkout / "package-lock.json", change)
    found = faults(checkout)
    entry = said.split(":", 1)[0]
    assert found and found[0].startswith(f"package-lock.json: {said}"), found
    assert all(line.startswith(f"package-lock.json: {entry}: ") for line in found), found


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda p: p["dependencies"].update(gitdep="git+https://example.org/gitdep.git"), "dependencies.gitdep"),
        (lambda p: p["dependencies"].update(fzstd="^0.1.1"), "dependencies.fzstd = '^0.1.1'"),
        (lambda p: p.update(overrides={"ws": "file:../ws"}), "key 'overrides' is not allowed"),
        (lambda p: p.update(scripts={"preinstall": "sh x.sh"}), "key 'scripts' is not allowed"),
    ],
)
def test_a_package_json_that_asks_for_more_than_exact_versions_is_refused(checkout, change, said):
    _edit(checkout / "package.json", change)
    found = faults(checkout)
    assert found and found[0].startswith(f"package.json: {said}"), found


def test_an_npmrc_in_the_checkout_stops_the_install_before_npm_runs(checkout):
    """The reviewer's reproduction, through the Makefile's own target: `.npmrc` names a program
    of the checkout as git, the lock holds a git dependency; make stops on the check's lines,
    npm never starts (no node_modules, the program never ran)."""
    (checkout / "attack").mkdir()
    ran = checkout / "ran.log"
    program = checkout / "attack" / "git.sh"
    program.write_text(f"#!/bin/sh\necho ran >> {ran}\nexec git \"$@\"\n", encoding="utf-8")
    program.chmod(0o755)
    (checkout / ".npmrc").write_text("git=./attack/git.sh\n", encoding="utf-8")
    _edit(checkout / "package-lock.json", _git_dependency)
    result = subprocess.run(
        ["make", "--no-print-directory", "node_modules/.package-lock.json"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    refused = [line for line in result.stderr.splitlines() if line.startswith("npm sources refused: ")]
    assert refused == [
        "npm sources refused: .npmrc: an npm configuration file in the checkout (npm would read it); remove it",
        (
            "npm sources refused: package-lock.json: packages['node_modules/gitdep']: resolved "
            "'git+file:///tmp/gitdep#0123abc' is not a tarball of https://registry.npmjs.org/"
        ),
        "npm sources refused: package-lock.json: packages['node_modules/gitdep']: no sha512 integrity",
    ]
    assert "npm ci" not in result.stdout.split("verify.npm_sources", 1)[1]
    assert not (checkout / "node_modules").exists() and not ran.exists()


def test_unreadable_npm_files_are_one_line_each(checkout):
    (checkout / "package-lock.json").write_text("{not json", encoding="utf-8")
    found = faults(checkout)
    assert len(found) == 1 and found[0].startswith("package-lock.json: cannot be read as JSON")
