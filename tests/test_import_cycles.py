"""The import structure of hooks/, verify/ and vram/, read from each module's syntax tree (an
import inside a function counts: a cycle all the same, only postponed):

- no two modules import each other, directly or through others;
- imports point one way: ``hooks/`` may use ``vram/`` and ``verify/``; ``verify/`` and ``vram/``
  never import ``hooks/`` (the site's languages live in ``verify/languages.py``, below both);
- ``hooks/`` is rooms: directly in it only the hook file, ``make serve``'s entry point and what
  every room shares (``HOOKS_TOP_LEVEL``); every other module lives in a subpackage;
- only the hook file, ``serve.py`` and ``workarounds/`` import MkDocs: the rest is plain functions;
- each workaround says which upstream issue it works around and when it can go."""

from __future__ import annotations

import ast

from tests.conftest import REPO_ROOT

PACKAGES = ("hooks", "verify", "vram", "bench")
HOOKS_TOP_LEVEL = {"__init__.py", "mkdocs_glue.py", "serve.py", "errors.py", "cache.py"}


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
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
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
    return {
        name: {other for other in imports_of(path, name, set(modules)) if other in modules and other != name}
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that is on one (depth-first search)."""
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in done:
                visit(nxt, [*path, nxt])
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return found


def test_the_detector_sees_a_postponed_cycle():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"]]


def test_no_module_imports_itself_back():
    assert cycles(import_graph()) == []


def test_the_graph_sees_the_rooms_of_hooks():
    graph = import_graph()
    assert "hooks.render.tables" in graph["hooks.render.markdown"]
    assert "hooks.data.load" in graph["hooks.finder.compute"]  # `from hooks.data import load as data_module`


def test_verify_and_vram_never_import_hooks():
    graph = import_graph()
    back = {
        name: sorted(other for other in imports if other.partition(".")[0] == "hooks")
        for name, imports in graph.items()
        if name.partition(".")[0] in {"verify", "vram"}
    }
    assert {name: imports for name, imports in back.items() if imports} == {}


def test_hooks_holds_rooms_not_loose_modules():
    hooks = REPO_ROOT / "hooks"
    loose = sorted(
        path.name
        for path in hooks.iterdir()
        if path.is_file() and path.name not in HOOKS_TOP_LEVEL and path.name != "README.md"
    )  # the room's guide
    assert loose == []
    rooms = [path for path in hooks.iterdir() if path.is_dir() and path.name != "__pycache__"]
    assert rooms and all((room / "__init__.py").is_file() for room in rooms)
    assert [
        room.name for room in rooms if any(child.is_dir() and child.name != "__pycache__" for child in room.iterdir())
    ] == []


def test_each_workaround_names_its_upstream_issue_and_when_it_can_go():
    workarounds = sorted((REPO_ROOT / "hooks" / "workarounds").glob("[!_]*.py"))
    assert workarounds
    for path in workarounds:
        doc = ast.get_docstring(ast.parse(path.read_bytes())) or ""
        assert "can go" in doc, f"{path.name}: say when it can go"
        assert "#" in doc or "0.26" in doc, f"{path.name}: name the upstream issue or the version it works around"


def test_only_the_glue_serve_and_workarounds_import_mkdocs():
    hooks = REPO_ROOT / "hooks"
    allowed = {hooks / "mkdocs_glue.py", hooks / "serve.py", *(hooks / "workarounds").glob("*.py")}
    importers = []
    for path in sorted(hooks.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(name.partition(".")[0] == "mkdocs" for name in names) and path not in allowed:
                importers.append(str(path.relative_to(REPO_ROOT)))
    assert importers == []
