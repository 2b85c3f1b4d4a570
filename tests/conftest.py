"""Shared fixtures: the repository paths, one strict build of the site per session,
and the gpu / browser markers (skip without the hardware, fail when it is required)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
CASES = SHARED / "cases"
SEEDS = SHARED / "seeds"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def build_command(
    dest: Path, *extra: str, env: dict[str, str] | None = None, config: Path | None = None
) -> tuple[list[str], Path, dict[str, str]]:
    """The command line, working directory and environment of ``build_site``."""
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(dest), *extra]
    if config is not None:
        cmd += ["-f", str(config)]
    full_env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **(env or {})}
    return cmd, config.parent if config else REPO_ROOT, full_env


def build_site(
    dest: Path, *extra: str, env: dict[str, str] | None = None, config: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``mkdocs build --strict`` into ``dest``; returns the completed process."""
    cmd, cwd, full_env = build_command(dest, *extra, env=env, config=config)
    return subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="session")
def forked_build_site():
    """``build_site`` with the same command, working directory and environment, run by a
    process that imported MkDocs' stack once (tests/site/mkdocs_zygote.py), one per worker for
    the session (the modules that build copies share it: about a CPU-second of imports each).
    Each build still imports the project's code from its own folder."""
    from tests.site.mkdocs_zygote import ZygoteBuilder

    builder = ZygoteBuilder(build_command(Path("unused"))[2])
    count = 0

    def build(dest: Path, *extra: str, env: dict[str, str] | None = None, config: Path | None = None):
        nonlocal count
        count += 1
        cmd, cwd, full_env = build_command(dest, *extra, env=env, config=config)
        return builder.run(cmd, full_env, cwd, logs=dest.parent / f"mkdocs-logs-{count}")

    yield build
    builder.close()


@pytest.fixture(scope="session")
def shared_cases() -> Path:
    assert CASES.is_dir(), f"the handed cases are missing: {CASES}"
    return CASES


def run_root(tmp_path_factory) -> Path:
    """The folder this run's workers share: under pytest-xdist each worker's base temp folder
    is ``<run root>/<worker id>``, so a session fixture (run once per worker) can leave there
    what the other worker reuses; without xdist, the session's base temp folder."""
    basetemp = tmp_path_factory.getbasetemp()
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def shared_build(tmp_path_factory, name: str, env: dict[str, str] | None = None) -> Path:
    """``mkdocs build --strict`` of this checkout into ``<run root>/name``, once per run
    (whichever worker asks first builds it under a file lock; the other waits and reads it).
    The tests that read it must not modify it (copy it first)."""
    from filelock import FileLock

    root = run_root(tmp_path_factory)
    dest, done = root / name, root / f"{name}.built"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(dest, ignore_errors=True)
            result = build_site(dest, env=env)
            assert result.returncode == 0, f"strict build ({env or 'default'}) failed:\n{result.stderr[-4000:]}"
            done.touch()
    return dest


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The whole site, both languages, built once per run with ``mkdocs build --strict``
    (shared by the xdist workers; read it, never modify it)."""
    return shared_build(tmp_path_factory, "built-site")


@pytest.fixture(scope="session")
def frozen_data_dir(tmp_path_factory) -> Path:
    """A data folder with the frozen test catalogue (tests/catalogue.py), written once per
    session (read it, never modify it: ``data_dir`` of tests/hooks gives a copy to break)."""
    from tests.catalogue import frozen_data

    return frozen_data(tmp_path_factory.mktemp("frozen-catalogue") / "data")


@pytest.fixture
def frozen_catalogue(frozen_data_dir, monkeypatch) -> Path:
    """Every reader of the data (the render layer, the finder, ``vram``'s command line) reads
    the frozen test catalogue (tests/catalogue.py) for this test. Returns its data folder."""
    import hooks.data.load
    import vram.catalogue

    monkeypatch.setattr(hooks.data.load, "DATA_DIR", frozen_data_dir)
    monkeypatch.setattr(vram.catalogue, "DATA_DIR", frozen_data_dir)
    return frozen_data_dir


@pytest.fixture
def repo_copy(tmp_path) -> Path:
    """A throwaway copy of the sources, for tests that break an input on purpose."""
    dest = tmp_path / "repo"
    ignore = shutil.ignore_patterns(
        ".venv",
        "site",
        ".git",
        ".cache",
        "__pycache__",
        "node_modules",
        "test-artifacts",
        "screenshots",
        ".pytest_cache",
        ".hypothesis",
    )
    shutil.copytree(REPO_ROOT, dest, ignore=ignore)
    if (REPO_ROOT / "node_modules").is_dir():  # Pyodide, which the build copies into the site: read, not copied
        (dest / "node_modules").symlink_to(REPO_ROOT / "node_modules", target_is_directory=True)
    return dest


# The build's caches under .cache/ (hooks/cache.py): each entry is named after the SHA-256 of
# the inputs it was made from (executed notebooks, mkdocs-jupyter's HTML, the pruned notebook
# stylesheets, finder.json, compiled templates, the finder's packed WebAssembly and archives, the
# rendered pages, their search entries, the calibration plot, the data files and Python blocks
# found valid), so a copy reuses an entry only where its own inputs are the same. Every store a
# development build writes (tests/site/test_build_errors.py checks that an unbroken copy
# with these writes none): one left out is computed again by every build of a copy (the rendered
# pages alone, about 2 CPU-seconds a build)
BUILD_CACHES = (
    "notebooks",
    "mkdocs-jupyter",
    "notebook-css",
    "finder",
    "templates",
    "packed",
    "pages",
    "search",
    "calibration",
    "data-checked",
    "block-names",
    "typeset",
)


def copy_build_caches(copy: Path, names: tuple[str, ...] = BUILD_CACHES) -> None:
    """Copy the checkout's build caches ``names`` (``BUILD_CACHES``) into ``copy``'s ``.cache``."""
    for name in names:
        if (REPO_ROOT / ".cache" / name).is_dir():
            shutil.copytree(REPO_ROOT / ".cache" / name, copy / ".cache" / name)


@pytest.fixture(scope="session")
def compiled_code(tmp_path_factory) -> Path:
    """The checkout's own code (hooks/, vram/, verify/) compiled once, as ``__pycache__/*.pyc``
    files in a folder of the same layout, for copies of the sources: each build of a copy
    would compile it again. Python uses such a file only while its source has the size and
    modification time it records (a copy keeps both: ``shutil.copytree``; an edit changes
    them), and names the copy's own file in tracebacks."""
    import importlib.util
    import py_compile

    out = tmp_path_factory.mktemp("compiled")
    for folder in ("hooks", "vram", "verify"):
        for source in (REPO_ROOT / folder).rglob("*.py"):
            if "__pycache__" not in source.parts:
                cached = importlib.util.cache_from_source(str(out / source.relative_to(REPO_ROOT)))
                py_compile.compile(str(source), cfile=cached, doraise=True)
    return out


@pytest.fixture
def warm_repo_copy(repo_copy, built_site, compiled_code) -> Path:
    """``repo_copy`` with the checkout's build caches, as the ``built_site`` build left them,
    and its code compiled: a copy is built as a clone that was built once before would be
    (what it changes misses the caches and is computed again), without converting the
    unchanged notebooks, recomputing the finder's answers and compiling the code per copy. A
    publication build reads none of the caches."""
    copy_build_caches(repo_copy)
    shutil.copytree(compiled_code, repo_copy, dirs_exist_ok=True)
    return repo_copy


@pytest.fixture(scope="session")
def zygote(tmp_path_factory):
    """``{"SCRIPT_ZYGOTE": socket}`` of one script_zygote.py serving for the session, after one
    import of ``tests.snippets.launch.WORKER_IMPORTS`` with the rehearsal environment (what torch
    reads when it is imported, OMP_NUM_THREADS=1 included) and an empty HF_HOME (accelerate
    reads the path of its default config under it when imported: none of this machine's):
    give it to ``launch.torchrun``, ``single_process``, ``fork_ranks_cmd`` or ``fork_jobs``, which
    fork the scripts from it."""
    from tests.snippets.launch import CPU_REHEARSAL, WORKER_IMPORTS
    from tests.snippets.script_zygote import serving

    folder = tmp_path_factory.mktemp("zygote")
    with serving(WORKER_IMPORTS, {**os.environ, **CPU_REHEARSAL, "HF_HOME": str(folder / "hf-home")}, folder) as env:
        yield env


@pytest.fixture(autouse=True)
def one_torch_thread():
    """torch in a test process computes on one thread: ``make test`` runs two workers on two
    cores, where a second OpenMP thread per worker only waits for a core, spinning (measured on
    tests/vram/test_activations_oracle.py: 17 CPU-seconds with two threads, 7 with one). Only
    once a test module has imported torch; the processes tests start keep their own setting."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def _browser_available() -> bool:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return Path(CHROMIUM).exists()


def _hunspell_available() -> bool:
    dictionaries = Path("/usr/share/hunspell")
    return shutil.which("hunspell") is not None and all(
        (dictionaries / f"{name}.dic").exists() for name in ("it_IT", "fr_FR")
    )


def _bitsandbytes_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("bitsandbytes") is not None


def pytest_runtest_setup(item):
    for marker, available, flag in (
        ("gpu", _cuda_available, "REQUIRE_GPU"),
        ("browser", _browser_available, "REQUIRE_BROWSER"),
        ("spelling", _hunspell_available, "REQUIRE_SPELLING"),
        ("bitsandbytes", _bitsandbytes_available, "REQUIRE_BITSANDBYTES"),
    ):
        if item.get_closest_marker(marker) is None or available():
            continue
        if os.environ.get(flag) == "1":
            pytest.fail(f"{flag}=1 but this test needs a {marker} that is not available here", pytrace=False)
        pytest.skip(f"no {marker} here (set {flag}=1 to make this a failure)")


# What each kind of change can break, and so what to run for it (CONTRIBUTING.md, "Adding
# things"): `make test-KIND` runs `pytest -m KIND`; every test under these paths gets the
# marker KIND (pyproject.toml registers them; tests/test_documents.py checks each selects tests).
CHANGE_KINDS: dict[str, tuple[str, ...]] = {
    "page": ("tests/site", "tests/hooks/test_conventions.py"),
    "snippet": ("tests/snippets", "tests/hooks/test_comments.py", "tests/site/test_code_compiles.py"),
    # today's catalogue (the frozen test catalogue keeps every other test of pages and the finder still)
    "card": (
        "tests/vram/test_cards.py",
        "tests/vram/test_guide_claims.py",
        "tests/finder/test_needs_claims.py",
        "tests/test_one_definition.py",
        "tests/browser/test_finder.py",
        "tests/browser/test_finder_jobs.py",
        "tests/site/test_built_site.py",
    ),
    "model": (
        "tests/vram/test_models_oracle.py",
        "tests/vram/test_models.py",
        "tests/vram/test_models_cli.py",
        "tests/finder",
    ),
    "translation": (
        "tests/hooks",
        "tests/site/test_gates_i18n.py",
        "tests/site/test_gates_typography.py",
        "tests/site/test_gates_spelling.py",
    ),
    "number": ("tests/hooks/test_tables.py", "tests/hooks/test_numbers.py", "tests/vram"),
    "allowlist": ("tests/verify", "tests/site"),
}


# Files of fewer tests than this that are not marked slow are the end of the run (below)
FEW_TESTS = 10


def heavy_files_first(items: list) -> list:
    """The items, file by file (each file's in their order), in the order ``make test``'s two
    workers take the files (``--dist loadfile --no-loadscope-reorder``): the files of at least
    ``FEW_TESTS`` tests or marked ``slow`` (they build the site or start processes: most of the
    run's time), most tests first as pytest-xdist would order them, then the other files, most
    tests first. A file of a few slow tests handed out last kept one worker busy while the
    other had nothing left; the small files of quick tests now fill the end instead."""
    files: dict[Path, list] = {}
    for item in items:
        files.setdefault(Path(str(item.path)), []).append(item)

    def last(tests: list) -> bool:
        return len(tests) < FEW_TESTS and not any(test.get_closest_marker("slow") for test in tests)

    ordered = sorted(files.values(), key=lambda tests: (last(tests), -len(tests)))
    return [item for tests in ordered for item in tests]


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.path)).resolve().relative_to(REPO_ROOT).as_posix()
        for kind, paths in CHANGE_KINDS.items():
            if any(path == where or path.startswith(where + "/") for where in paths):
                item.add_marker(kind)
    items[:] = heavy_files_first(items)


# Every arm of every bound block is taken by a run of the test tests/snippets/branches.py names for
# it (issue 33, hole 2): the loader of the rehearsals (tests/snippets/sealed.py) writes what each
# run of a block executed into the folder REHEARSAL_ARMS names, one per session, made here before
# xdist starts its workers (they and every process they start inherit it); at the end of the
# session the controller checks the arms whose test passed, and reports a failure naming each
# arm no run took (ArmsCheck.NODE).
class ArmsCheck:
    NODE = "tests/snippets/test_branches.py::every arm was taken by a run of its test"

    def __init__(self, folder: Path, outer: str | None):
        self.folder, self.outer = folder, outer  # outer: the folder of a session this one runs inside
        self.passed: set[str] = set()
        self.summary = ""

    def pytest_runtest_logreport(self, report):  # the controller also gets every worker's reports
        if report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    def pytest_sessionfinish(self, session):
        from _pytest.reports import TestReport

        from tests.snippets.branches import untaken_in_session

        try:
            checked, problems = untaken_in_session(self.folder, self.passed, os.environ.get("REQUIRE_GPU") == "1")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            # a session run by a test (pytest.main, tests/verify/test_gpu_run_without_gpu.py) gives the
            # process back the folder of the session around it, whose later rehearsals write there
            from tests.snippets.sealed import ARMS

            if self.outer is None:
                os.environ.pop(ARMS, None)
            else:
                os.environ[ARMS] = self.outer
        if checked:
            self.summary = (
                f"arms of the bound blocks: {checked - len(problems)} of {checked} taken by their test's runs"
            )
        if problems:
            path, name = self.NODE.split("::")
            report = TestReport(self.NODE, (path, None, name), {}, "failed", "\n".join(problems), "call")
            session.config.hook.pytest_runtest_logreport(report=report)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.summary:
            terminalreporter.write_line(self.summary)


def pytest_configure(config):
    import tempfile

    from tests.snippets.sealed import ARMS

    if hasattr(config, "workerinput"):  # an xdist worker: the controller made the folder
        return
    outer = os.environ.get(ARMS)
    folder = Path(tempfile.mkdtemp(prefix="rehearsal-arms-"))
    os.environ[ARMS] = str(folder)
    config.pluginmanager.register(ArmsCheck(folder, outer), "arms-check")
