"""No test asserts a wall-clock duration: on a busy machine a healthy run takes any time.

A test may bound a hang (a subprocess ``timeout=``, a deadline that ends a wait loop), but what
it asserts must be counted, not timed: a message, an exit status, CPU seconds. Speed targets live
in ``make bench`` as ratios. Read from each test module's syntax tree: an ``assert`` fails here
when it reads a wall clock (``time.time``, ``time.monotonic``, ``time.perf_counter`` and their
``_ns`` forms), a name assigned from one in the same function, or a ``.seconds`` / ``.elapsed``
attribute (a harness's measured duration).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
WALL_CLOCKS = {"time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "perf_counter_ns"}
DURATION_ATTRIBUTES = {"seconds", "elapsed"}


def _reads_wall_clock(node: ast.AST, tainted: set[str]) -> bool:
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in WALL_CLOCKS
            and isinstance(sub.func.value, ast.Name)
            and sub.func.value.id == "time"
        ):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in DURATION_ATTRIBUTES:
            return True
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
    return False


def timed_assertions(source: str, filename: str) -> list[str]:
    """``file:line`` of each assertion that reads a wall clock, in ``source``."""
    lines: set[int] = set()
    tree = ast.parse(source, filename)
    scopes = [tree] + [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:
        tainted: set[str] = set()
        body = list(ast.walk(scope)) if scope is not tree else tree.body
        for node in body:
            if isinstance(node, ast.Assign) and _reads_wall_clock(node.value, tainted):
                tainted |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        for node in body:
            if isinstance(node, ast.Assert) and _reads_wall_clock(node.test, tainted):
                lines.add(node.lineno)
    return [f"{filename}:{line}" for line in sorted(lines)]


def test_the_detector_finds_each_kind_of_timed_assertion():
    source = (
        "import time\n"
        "def a(run):\n    assert run.seconds < 30\n"
        "def b():\n    start = time.monotonic()\n    work()\n    assert time.monotonic() - start < 5\n"
        "def c():\n    t0 = time.perf_counter()\n    elapsed_s = time.perf_counter() - t0\n    assert elapsed_s < 2\n"
        "def d():\n    deadline = time.monotonic() + 60\n    while time.monotonic() < deadline:\n        pass\n"
        "    assert done()\n"
    )
    assert timed_assertions(source, "x.py") == ["x.py:3", "x.py:7", "x.py:11"]


def test_no_test_asserts_a_wall_clock_duration():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        found += timed_assertions(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS.parent)))
    assert found == [], "assertions on wall time (a busy machine fails them): " + ", ".join(found)
