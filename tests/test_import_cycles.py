"""No two modules of verify/ or vram/ import each other, directly or through others (an import
inside a function counts: it is a cycle all the same, only postponed). Read from each module's
syntax tree. hooks/ joins the list once its reorganisation into rooms is merged (a branch in
flight imports hooks.tables and hooks.timing both ways)."""

from __future__ import annotations

import ast

from tests.conftest import REPO_ROOT

PACKAGES = ("verify", "vram")


def imports_of(path, module: str, modules: set[str]) -> set[str]:
    """The modules of PACKAGES that ``module`` (at ``path``) imports, anywhere in its body
    (``from package import name`` imports the submodule ``package.name`` when there is one,
    otherwise the package)."""
    package = module.rpartition(".")[0] if path.name != "__init__.py" else module
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        found |= {name for name in names if name.partition(".")[0] in PACKAGES}
    return found


def import_graph() -> dict[str, set[str]]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
            modules[name] = path
    return {name: {other for other in imports_of(path, name, set(modules)) if other in modules and other != name}
            for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that is on one (depth-first search)."""
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in done:
                visit(nxt, path + [nxt])
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return found


def test_the_detector_sees_a_postponed_cycle():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"]]


def test_no_module_imports_itself_back():
    assert cycles(import_graph()) == []
