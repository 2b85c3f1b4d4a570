"""Every branch arm of every bound block is listed with the test that runs it, and a run really
takes it (issue 33, hole 2: ``tests/snippets/branches.py``, ``tests/snippets/arms.py``).

The listing: every arm Python's AST shows in a bound Python block has its line in ``BRANCHES``,
naming a test that exists; a new arm, or one changed, without its line fails, and so does a line
for an arm the block no longer has. Every arm compiles to instructions a trace can see.

The measure: a toy block run by the rehearsals' loader (``sealed.py``, as ``python BLOCK``) with
the arms' folder set, twice with different inputs: the arms its runs took are exactly those its
inputs lead to, by Python's semantics (each written next to the toy's line), and the session's
check names the block, the line and the arm of every arm no run of its test's module took. The
check itself runs at the end of every session over the bound blocks (``tests/conftest.py``).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.snippets.arms import Taken, arms, runs, unmeasurable, untaken
from tests.snippets.branches import BRANCHES, gpu_only, python_blocks
from tests.snippets.launch import SEALED
from tests.snippets.sealed import ARMS


def test_every_branch_of_every_bound_block_has_the_test_that_runs_it():
    blocks = python_blocks()
    assert {"train_hf.py", "train_fsdp2.py", "nccl_check.py"} <= set(blocks)
    listed: dict[str, set[str]] = {}
    for title, arm in BRANCHES:
        listed.setdefault(title, set()).add(arm)
    assert set(listed) == set(blocks), "a bound Python block without its branches listed, or a block no longer bound"
    for title, path in blocks.items():
        found = [arm.name for arm in arms(path.read_text(encoding="utf-8"))]
        assert len(found) == len(set(found))
        missing, gone = sorted(set(found) - listed[title]), sorted(listed[title] - set(found))
        assert not missing, f"{title}: branches without the test that runs them (add them to BRANCHES): {missing}"
        assert not gone, f"{title}: BRANCHES lists branches the snippet no longer has: {gone}"


def test_every_arm_compiles_to_instructions_a_run_can_show():
    for title, path in python_blocks().items():
        assert unmeasurable(path.read_text(encoding="utf-8")) == [], title


def test_every_test_named_exists():
    defined: dict[str, set[str]] = {}
    for test in set(BRANCHES.values()):
        module, name = test.split("::")
        if module not in defined:
            tree = ast.parse((REPO_ROOT / module).read_text(encoding="utf-8"))
            defined[module] = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in defined[module] and name.startswith("test_"), test
    assert {test for test in BRANCHES.values() if gpu_only(test)} == {
        test for test in BRANCHES.values() if test.startswith("tests/gpu/")
    }


def test_the_arms_are_read_from_the_code_not_its_comments():
    """A comment cannot add or hide a branch: the listing is Python's AST."""
    assert [arm.name for arm in arms("if a:  # b\n    x = 1\n# if c:\n")] == ["if a: false", "if a: true"]
    assert [arm.name for arm in arms("for i in r:\n    pass\ntry:\n    f()\nexcept ValueError:\n    pass\n")] == [
        "loop r: body",
        "except ValueError: runs",
    ]


TOY = '''import sys
mode = sys.argv[1]
size = 2 if mode == "big" else 1  # ifexp: true in "big", false in "small"
def pick(x):  # def: runs in both
    if x and mode != "small":  # if: true only in "big" with x; false with x == 0 (both runs)
        return x
    return 0
for x in range(size + 1):  # body: both
    pick(x)
lines = [line for line in ["a", " ", "b"] if line.strip()]  # filter: kept and dropped in both
try:
    match mode:
        case "big":  # runs in "big"
            value = int("x")  # raises: except ValueError runs in "big"
        case _:  # runs in "small"
            value = 0
except ValueError:
    value = -1
unused = lambda: 1  # lambda: never runs
'''
# What the two runs take, by Python's semantics (the comments of TOY). ``or``/``and`` in ``pick``:
# ``mode != "small"`` is evaluated when x is truthy (x = 1, 2 in "big", x = 1 in "small") and
# skipped when x == 0 (every run).
BOTH = {
    "def pick: runs",
    "if x and mode != 'small': false",
    "and mode != 'small': evaluated",
    "and mode != 'small': skipped",
    "loop range(size + 1): body",
    "filter line.strip(): kept",
    "filter line.strip(): dropped",
}
BIG = BOTH | {
    "ifexp mode == 'big': true",
    "if x and mode != 'small': true",
    "case 'big': runs",
    "except ValueError: runs",
}
SMALL = BOTH | {"ifexp mode == 'big': false", "case _: runs"}
NEVER = {"lambda : runs"}


def toy_runs(tmp_path: Path, *modes: str) -> tuple[str, Path]:
    """TOY run by the loader once per mode, each as started by a test of its own module."""
    block, folder = tmp_path / "toy.py", tmp_path / "arms"
    block.write_text(TOY, encoding="utf-8")
    folder.mkdir()
    for mode in modes:
        test = f"tests/{mode}.py::test_{mode} (call)"
        done = subprocess.run(
            [sys.executable, str(SEALED), str(block), mode],
            capture_output=True,
            text=True,
            env={**os.environ, ARMS: str(folder), "PYTEST_CURRENT_TEST": test},
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    return TOY, folder


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> tuple[str, Path, Path]:
    """TOY's two runs, "big" and "small" (each started by a test of its own module), and its folder."""
    tmp_path = tmp_path_factory.mktemp("toy")
    return (*toy_runs(tmp_path, "big", "small"), tmp_path)


def test_a_run_shows_exactly_the_arms_it_took(toy):
    source, folder, _ = toy
    names = {arm.name for arm in arms(source)}
    assert names == BIG | SMALL | NEVER
    (measured,) = runs(folder).values()
    for run in measured:
        expected = BIG if run.test == "tests/big.py::test_big" else SMALL
        taken = Taken(source, [run.counts])
        assert {arm.name for arm in arms(source) if arm.taken(taken)} == expected, run.test


def test_the_check_names_the_line_and_the_arm_no_run_of_its_test_took(toy):
    _, folder, tmp_path = toy
    branches = {("toy.py", name): "tests/big.py::test_big" for name in BIG | NEVER}
    branches |= {("toy.py", name): "tests/small.py::test_small" for name in SMALL - BIG}
    branches[("toy.py", "case 'big': runs")] = "tests/small.py::test_small"  # listed against the wrong test
    passed = {"tests/big.py::test_big", "tests/small.py::test_small"}
    due, problems = untaken(folder, passed, False, {"toy.py": tmp_path / "toy.py"}, branches, tmp_path)
    assert due == len(BIG | SMALL | NEVER)
    assert problems == [
        (
            "toy.py:13: 'case 'big': runs': no run of tests/small.py::test_small took this arm; "
            "only runs of tests/big.py took it"
        ),
        "toy.py:19: 'lambda : runs': no run of tests/big.py::test_big took this arm",
    ]
    # an arm whose test did not pass in the session, or a gpu test's without REQUIRE_GPU=1, is not due
    assert untaken(folder, {"tests/small.py::test_small"}, False, {"toy.py": tmp_path / "toy.py"}, branches, tmp_path)[
        1
    ] == [problems[0]]
    gpu = {key: "tests/gpu/x.py::test_x" if key[1] == "lambda : runs" else test for key, test in branches.items()}
    assert untaken(folder, passed, False, {"toy.py": tmp_path / "toy.py"}, gpu, tmp_path)[1] == [problems[0]]
    assert untaken(folder, passed | {"tests/gpu/x.py::test_x"}, True, {"toy.py": tmp_path / "toy.py"}, gpu, tmp_path)[
        1
    ] == [problems[0], problems[1].replace("tests/big.py::test_big", "tests/gpu/x.py::test_x")]
