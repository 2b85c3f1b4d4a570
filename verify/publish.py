"""The publication build (``make publish``, the ``publish`` job): the strict build with
``GUIDE_PUBLISH=1`` in a scope of its own, ended and waited for, then the artifact check of the
site in a fresh process.

``python -m verify.publish SITE_DIR --manifest FILE --tar FILE`` (run after ``python -m
verify.config mkdocs.yml``). The build runs the checkout's code: the hooks, and the notebooks
it executes afresh. A process it leaves running (a notebook cell's detached child, a hook's
thread turned process) could otherwise go on writing into ``SITE_DIR`` after the build
returned: change a number of a page or of ``assets/finder-results.json`` while or after the
artifact check reads it, and before the upload. So the build is the first process of a PID
namespace (``verify.scope``): when it ends, the kernel kills every process it started, and
this returns only once all of them are gone. In its scope the build writes only ``SITE_DIR``
(its own empty ``/tmp``, ``/var/tmp``, ``/dev/shm`` and home aside); the checkout, the
virtual environment, the runner's files (the upload action a later step runs, ``$GITHUB_ENV``)
and the user's home are read-only to it (``verify/scope_init.py``). The verification record
(``GUIDE_VERIFICATION_RECORD``, ``verification/nccl_check.json`` by default) is visible
read-only. Then ``python -m verify.artifact`` checks ``SITE_DIR`` as the build left it and
writes the manifest and the archive from the bytes it checked.

Exit status: the build's when it failed (124 when it ran past ``BUILD_TIMEOUT_S``), else the
check's; 2 with one line where no scope can be made here (PUBLISHING.md says what the machine
needs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from verify.scope import TIMED_OUT, ScopeError, check_scope, run_scoped

REPO_ROOT = Path(__file__).resolve().parent.parent
RECORD = "verification/nccl_check.json"  # hooks/checks/publish_gate.py's default
BUILD_TIMEOUT_S = 1500  # the publish job's 30 minutes, less the set-up and the check
GRACE_S = 10.0


@dataclass(frozen=True)
class Steps:
    """The publication's two commands; tests replace them with stand-ins."""

    python: str = sys.executable

    def build(self, site: Path) -> list[str]:
        return [self.python, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]

    def build_writable(self, site: Path) -> list[Path]:
        """What the build may write: the site's folder, nothing else of the checkout (a
        publication build uses nothing of ``.cache/``: ``hooks/mkdocs_glue.py``)."""
        return [site]

    def check(self, site: Path, manifest: Path, tar: Path) -> list[str]:
        return [self.python, "-m", "verify.artifact", str(site), "--manifest", str(manifest), "--tar", str(tar)]


def record_folder(environ: dict[str, str]) -> Path:
    """The folder of the record the build reads (shown read-only in its scope)."""
    return (REPO_ROOT / environ.get("GUIDE_VERIFICATION_RECORD", RECORD)).resolve().parent


def main(argv: list[str] | None = None, steps: Steps = Steps()) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.publish", description=__doc__.splitlines()[0])
    parser.add_argument("site_dir", type=Path)
    parser.add_argument("--manifest", type=Path, required=True, help="every file's path, size and SHA-256 (JSON)")
    parser.add_argument("--tar", type=Path, required=True, help="the checked files, as the Pages artifact")
    args = parser.parse_args(argv)
    site = args.site_dir.resolve()
    try:
        check_scope()
    except ScopeError as exc:
        print(f"verify.publish: error: {exc}", file=sys.stderr)
        return 2
    site.mkdir(parents=True, exist_ok=True)  # a bind's mount point; MkDocs empties it, never removes it
    binds = [(folder, True) for folder in steps.build_writable(site)]
    record = record_folder(dict(os.environ))
    if record.is_dir():
        binds.insert(0, (record, False))
    build = run_scoped(
        steps.build(site),
        BUILD_TIMEOUT_S,
        env={"GUIDE_PUBLISH": "1"},
        cwd=REPO_ROOT,
        grace_s=GRACE_S,
        binds=tuple(binds),
        capture=False,
    )
    # every process of the build is gone here: what site/ holds now is what the build wrote
    if build.returncode == TIMED_OUT:
        print(
            f"verify.publish: error: the publication build ran past {BUILD_TIMEOUT_S} s; its scope was ended",
            file=sys.stderr,
        )
    if build.returncode != 0:
        print(f"verify.publish: error: the publication build failed (exit {build.returncode})", file=sys.stderr)
        return build.returncode
    return subprocess.run(steps.check(site, args.manifest, args.tar), check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
