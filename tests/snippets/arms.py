"""The arms of a Python block's branches, read from its AST, and whether a rehearsal took each
(issue 33, hole 2: every path a reader can take through a bound block runs somewhere).

``arms(source)`` lists, in source order, every arm Python's AST shows: each ``if`` (true and
false, the false arm being the skipped body when there is no ``else``) and conditional
expression, each value after the first of an ``and``/``or`` (evaluated, or skipped because an
earlier value decided), each filter of a comprehension (kept, dropped), each loop body (and
``else``), each ``except`` handler and ``try``'s ``else``, each ``case``, each function and
lambda body. Comments cannot add or hide one. A repeated name gets ``#n``.

Whether a run took an arm is measured, not declared: the rehearsals' loader
(``tests/snippets/sealed.py``, ``execute``) traces the script's own code objects and writes, per
run, the arcs between consecutive instructions with their source positions (``Arcs``). An arm
whose code is a span of the source was taken when an instruction inside the span ran
(``executed``); an arm that is the absence of code (an ``if`` without ``else`` that was false, a
short-circuit, a dropped element) when a condition was entered more often than what follows it
when it holds (``more``). A span that compiles to no instruction cannot be measured and is
refused (``unmeasurable``). What no trace can see: which key of a dict a lookup took, a default
of ``dict.get`` or ``getattr`` (none in today's blocks), a branch inside a library the block calls.

``untaken(folder, passed, require_gpu)`` is the session's check (``tests/conftest.py``,
``pytest_sessionfinish``): for every bound block and every arm whose test in ``BRANCHES`` passed in
this session, a run started by that test's module took the arm; the GPU-only arms (their test is
a ``gpu`` test of ``tests/gpu/``: ``acc`` is not None only there) count only with ``REQUIRE_GPU=1``.
"""

from __future__ import annotations

import ast
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType

from tests.snippets.sealed import ast_sha256, code_key

Position = tuple[int | None, int | None, int | None, int | None]  # line, column, end line, end column
Span = tuple[int, int, int, int]
GPU_TESTS = "tests/gpu/"


@dataclass(frozen=True)
class Arm:
    """One arm: its name, its line, and how a run shows it was taken: ``executed`` (one span: an
    instruction inside ran) or ``more`` (two spans: the first evaluated more often than the second)."""

    name: str
    line: int
    kind: str
    spans: tuple[Span, ...]

    def taken(self, run: Taken) -> bool:
        if self.kind == "executed":
            return run.executed(self.spans[0])
        return run.entries(self.spans[0]) > run.entries(self.spans[1])


def inside(position: Position, span: Span) -> bool:
    line, col, end_line, end_col = position
    if line is None or col is None or end_line is None or end_col is None:
        return False
    return (span[0], span[1]) <= (line, col) and (end_line, end_col) <= (span[2], span[3])


def code_objects(source: str) -> list[CodeType]:
    """The module's code object and every one nested in it (functions, lambdas, comprehensions)."""
    found, pending = [], [compile(source, "<block>", "exec", dont_inherit=True)]
    while pending:
        code = pending.pop()
        found.append(code)
        pending += [const for const in code.co_consts if isinstance(const, CodeType)]
    return found


class Taken:
    """How many times each instruction of a block ran, over one or more runs: ``counts`` maps a
    ``code_key`` to ``{offset: count}``."""

    def __init__(self, source: str, counts: Iterable[dict[str, dict[int, int]]]):
        self.codes = {code_key(code): code for code in code_objects(source)}
        self.positions = {
            key: [(line, col, end_line, end_col) for line, end_line, col, end_col in code.co_positions()]
            for key, code in self.codes.items()
        }
        self.counts: dict[str, Counter[int]] = {key: Counter() for key in self.codes}
        for run in counts:
            for key, offsets in run.items():
                if key in self.counts:
                    self.counts[key].update({int(offset): count for offset, count in offsets.items()})

    def _inside(self, key: str, span: Span) -> list[int]:
        """The offsets of ``key``'s instructions whose position lies inside ``span``."""
        return [index * 2 for index, position in enumerate(self.positions[key]) if inside(position, span)]

    def executed(self, span: Span) -> bool:
        return any(self.counts[key][offset] for key in self.codes for offset in self._inside(key, span))

    def entries(self, span: Span) -> int:
        """How many times the code of ``span`` was entered: the runs of its first instruction in the
        code object it belongs to (not one defined inside it: a comprehension, a lambda)."""
        for key in self.codes:
            offsets = self._inside(key, span)
            if offsets and offsets[0] != 0:  # a nested code object starts inside the span it belongs to
                return self.counts[key][offsets[0]]
        return 0

    def measurable(self, span: Span) -> bool:
        return any(self._inside(key, span) for key in self.codes)


def span(nodes: Sequence[ast.AST]) -> Span:
    first, last = nodes[0], nodes[-1]
    return (first.lineno, first.col_offset, last.end_lineno, last.end_col_offset)  # type: ignore[attr-defined]


def _filters(node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Iterable[tuple[ast.expr, ast.AST]]:
    """Each filter of a comprehension and what is evaluated next when it holds."""
    result = node.key if isinstance(node, ast.DictComp) else node.elt
    for index, generator in enumerate(node.generators):
        after = node.generators[index + 1].iter if index + 1 < len(node.generators) else result
        for position, condition in enumerate(generator.ifs):
            yield condition, generator.ifs[position + 1] if position + 1 < len(generator.ifs) else after


def _arms_of(node: ast.AST) -> Iterable[tuple[str, int, str, tuple[Span, ...]]]:
    if isinstance(node, ast.If):
        test = ast.unparse(node.test)
        yield f"if {test}: true", node.lineno, "executed", (span(node.body),)
        if node.orelse:
            yield f"if {test}: false", node.lineno, "executed", (span(node.orelse),)
        else:
            yield f"if {test}: false", node.lineno, "more", (span([node.test]), span(node.body))
    elif isinstance(node, ast.IfExp):
        test = ast.unparse(node.test)
        yield f"ifexp {test}: true", node.lineno, "executed", (span([node.body]),)
        yield f"ifexp {test}: false", node.lineno, "executed", (span([node.orelse]),)
    elif isinstance(node, ast.BoolOp):
        word = "and" if isinstance(node.op, ast.And) else "or"
        for before, value in zip(node.values, node.values[1:], strict=False):
            text = ast.unparse(value)
            yield f"{word} {text}: evaluated", value.lineno, "executed", (span([value]),)
            yield f"{word} {text}: skipped", value.lineno, "more", (span([before]), span([value]))
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        for condition, after in _filters(node):
            text = ast.unparse(condition)
            yield f"filter {text}: kept", condition.lineno, "executed", (span([after]),)
            yield f"filter {text}: dropped", condition.lineno, "more", (span([condition]), span([after]))
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        loop = ast.unparse(node.test if isinstance(node, ast.While) else node.iter)
        yield f"loop {loop}: body", node.lineno, "executed", (span(node.body),)
        if node.orelse:
            yield f"loop {loop}: else", node.lineno, "executed", (span(node.orelse),)
    elif isinstance(node, (ast.Try, ast.TryStar)):
        for handler in node.handlers:
            kind = ast.unparse(handler.type) if handler.type else ""
            yield f"except {kind}: runs", handler.lineno, "executed", (span(handler.body),)
        if node.orelse:
            yield "try: else", node.orelse[0].lineno, "executed", (span(node.orelse),)
    elif isinstance(node, ast.Match):
        for case in node.cases:
            yield f"case {ast.unparse(case.pattern)}: runs", case.pattern.lineno, "executed", (span(case.body),)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield f"def {node.name}: runs", node.lineno, "executed", (span(node.body),)
    elif isinstance(node, ast.Lambda):
        yield f"lambda {ast.unparse(node.args)}: runs", node.lineno, "executed", (span([node.body]),)


def arms(source: str) -> list[Arm]:
    """Every arm of ``source``'s branches, in source order (module docstring)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for name, line, kind, spans in _arms_of(node):
            found.append(((node.lineno, node.col_offset), name, line, kind, spans))  # type: ignore[attr-defined]
    counted: Counter[str] = Counter()
    named = []
    for _, name, line, kind, spans in sorted(found, key=lambda arm: (arm[0], arm[1])):
        counted[name] += 1
        named.append(Arm(name if counted[name] == 1 else f"{name} #{counted[name]}", line, kind, spans))
    return named


@dataclass(frozen=True)
class Run:
    test: str  # the pytest node id that started it (module::name, parameters included)
    counts: dict[str, dict[int, int]]

    @property
    def module(self) -> str:
        return self.test.split("::")[0]


def unmeasurable(source: str) -> list[Arm]:
    """The arms with a span that compiles to no instruction (no run could show it taken)."""
    taken = Taken(source, [])
    return [arm for arm in arms(source) if not all(taken.measurable(span) for span in arm.spans)]


def runs(folder: Path) -> dict[str, list[Run]]:
    """The runs measured in ``folder``, by their script's ``ast_sha256``."""
    found: dict[str, list[Run]] = defaultdict(list)
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        found[record["ast"]].append(Run(record["test"], record["code"]))
    return found


def _ran(test: str, passed: set[str]) -> bool:
    return any(node == test or node.startswith(test + "[") for node in passed)


def untaken(
    folder: Path,
    passed: set[str],
    require_gpu: bool,
    blocks: dict[str, Path],
    branches: dict[tuple[str, str], str],
    root: Path,
) -> tuple[int, list[str]]:
    """How many arms were due (their test in ``branches`` passed: ``passed`` holds node ids;
    GPU-only arms only with ``require_gpu``), and one line for each due arm of ``blocks`` (title
    -> snippet file) that no run started by its test's module took, naming the file, the line
    and the arm."""
    measured = runs(folder)
    problems, due = [], 0
    for title, path in blocks.items():
        source = path.read_text(encoding="utf-8")
        by_module: dict[str, list[dict[str, dict[int, int]]]] = defaultdict(list)
        for run in measured.get(ast_sha256(source), []):
            by_module[run.module].append(run.counts)
        taken = {module: Taken(source, counts) for module, counts in by_module.items()}
        for arm in arms(source):
            test = branches.get((title, arm.name))
            if test is None or (test.startswith(GPU_TESTS) and not require_gpu) or not _ran(test, passed):
                continue  # an arm without a test: test_branches.py says so
            due += 1
            module = test.split("::")[0]
            if module not in taken or not arm.taken(taken[module]):
                elsewhere = sorted(name for name, run in taken.items() if arm.taken(run))
                where = f"; only runs of {', '.join(elsewhere)} took it" if elsewhere else ""
                problems.append(
                    f"{path.relative_to(root)}:{arm.line}: '{arm.name}': no run of {test} took this arm{where}"
                )
    return due, problems
