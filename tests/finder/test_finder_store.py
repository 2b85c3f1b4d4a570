"""assets/finder.json kept in .cache/finder (hooks/finder/compute.py ``finder_json(store=...)``):
reused only under the SHA-256 of every input of its computation, never by a publication build.

The key's coverage is checked against what a computation really imports (a library added to
the calculator's imports without a place in the key fails here), and each kind of input is
edited to show that it changes the key. Expected JSON: the computation itself, with no store.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

from hooks.cache import CODE_DIRS, Memo
from hooks.finder import compute
from tests.conftest import REPO_ROOT

DATA_DIR = REPO_ROOT / "snippets" / "data"

pytestmark = pytest.mark.slow


@pytest.fixture
def data_copy(tmp_path):
    dest = tmp_path / "data"
    shutil.copytree(DATA_DIR, dest)
    return dest


def test_a_stored_text_is_reused_under_its_digest_and_never_without_a_store(data_copy, tmp_path, monkeypatch):
    monkeypatch.setattr(compute, "_json_memo", Memo())
    store = tmp_path / "store"
    computed = compute.finder_json(data_copy, store=store)
    (stored,) = store.glob("*.json")
    assert stored.name == f"{compute.inputs_digest(data_copy)}.json"
    assert stored.read_text(encoding="utf-8") == computed

    stored.write_text('{"forged":true}', encoding="utf-8")  # what anyone who writes the checkout can do
    monkeypatch.setattr(compute, "_json_memo", Memo())  # a new build process
    assert compute.finder_json(data_copy, store=store) == '{"forged":true}'  # proves the store is read
    assert compute.finder_json(data_copy, store=None) == computed  # a publication build: computed
    # an edited input names another entry: test_the_digest_changes_with_every_kind_of_input


def test_the_digest_changes_with_every_kind_of_input(data_copy, tmp_path, monkeypatch):
    root = tmp_path / "root"
    for folder in CODE_DIRS:
        shutil.copytree(REPO_ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(compute.data_module, "REPO_ROOT", root)
    seen = {compute.inputs_digest(data_copy)}

    def changed() -> bool:
        digest = compute.inputs_digest(data_copy)
        new = digest not in seen
        seen.add(digest)
        return new

    config = data_copy / "models" / "llama-3.1-8b.json"
    config.write_bytes(config.read_bytes().replace(b'"rms_norm_eps": 1e-05', b'"rms_norm_eps": 1e-06'))
    assert changed(), "a model's config.json"
    (data_copy / "gpus.yaml").write_text((data_copy / "gpus.yaml").read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert changed(), "a data file"
    for code in ("vram/job.py", "hooks/data/schemas.py", "verify/languages.py"):
        (root / code).write_text((root / code).read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
        assert changed(), code
    monkeypatch.setattr(compute, "LANGUAGES", ("it", "fr", "de"))
    assert changed(), "the site's languages"
    monkeypatch.setattr(compute, "library_versions", lambda: ("python=3.11.7", "pydantic=0.0"))
    assert changed(), "a library's version"


def _distribution_key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_digest_names_every_library_the_computation_imports():
    """Run the computation in a fresh interpreter; every module it imports with a file is
    Python's own, the checkout's (CODE_DIRS), or belongs to a distribution of LIBRARIES."""
    script = (
        "import sys; before = set(sys.modules)\n"
        "from hooks.finder.compute import finder_data; finder_data()\n"
        "for name in sorted(set(sys.modules) - before):\n"
        "    print(name, getattr(sys.modules[name], '__file__', None) or '-')"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    owners = metadata.packages_distributions()
    covered = {_distribution_key(name) for name in compute.LIBRARIES}
    outside = set()
    for line in out.splitlines():
        name, _, file = line.partition(" ")
        path = Path(file).resolve()
        if file == "-" or path.is_relative_to(REPO_ROOT) or path.is_relative_to(stdlib):
            continue  # built in, the checkout's own code, or Python's library
        distributions = {_distribution_key(owner) for owner in owners.get(name.partition(".")[0], [])}
        if not distributions & covered:
            outside.add(f"{name} ({', '.join(sorted(distributions)) or path})")
    assert not outside, f"imported by the computation, not in compute.LIBRARIES: {sorted(outside)}"
    assert {"pydantic", "pyyaml", "babel"} <= covered


def test_a_publication_build_passes_no_store():
    spec = importlib.util.spec_from_file_location("glue_under_test", REPO_ROOT / "hooks" / "mkdocs_glue.py")
    glue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(glue)
    glue._build["verified"] = None  # a development build
    assert glue.unless_publication(compute.STORE_DIR) == compute.STORE_DIR
    glue._build["verified"] = object()  # the publish gate's record: a publication build
    assert glue.unless_publication(compute.STORE_DIR) is None
