"""What `npm ci` may install, checked before it runs (the Makefile's ``node_modules`` target,
the check-site job): npm reads a project's ``.npmrc`` and follows a lock entry's ``resolved``,
and either can make `npm ci --ignore-scripts` run a program of the checkout (a ``git``
command of the checkout's choosing, fetched for a git dependency) outside every scope of the
GPU run. Allowed, and nothing else:

- no npm, Yarn or pnpm configuration file at the repository root (``NPM_CONFIG_FILES``);
- ``package.json``: only ``dependencies``, each an exact version (``1.2.3``);
- ``package-lock.json``: every package an ``npm`` registry tarball with a sha512 ``integrity``
  (``resolved`` absent, or under ``REGISTRY``), no link, git, file or workspace entry, and the
  direct dependencies at package.json's versions.

    python3 -m verify.npm_sources [REPOSITORY]   # exit 1 with one line per fault

Standard library only: it runs before any virtual environment exists.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

REGISTRY = "https://registry.npmjs.org/"
NPM_CONFIG_FILES = (".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", "pnpm-workspace.yaml")
PACKAGE_KEYS = {"name", "private", "description", "license", "dependencies"}
EXACT_VERSION = re.compile(r"\d+\.\d+\.\d+")
INTEGRITY = re.compile(r"sha512-[A-Za-z0-9+/]{86}==")
LOCK_ENTRY_KEYS = {
    "version",
    "resolved",
    "integrity",
    "license",
    "dependencies",
    "peerDependencies",
    "engines",
    "optionalDependencies",
    "peerDependenciesMeta",
    "funding",
    "bin",
    "deprecated",
    "os",
    "cpu",
}


def faults(repository: Path) -> list[str]:
    """Every reason ``repository``'s npm files may install something other than registry
    tarballs with sha512 integrity (module docstring), one line each naming the file and the
    key; empty when none. Unreadable or malformed JSON is a fault, never a traceback."""
    found = [
        f"{name}: an npm configuration file in the checkout (npm would read it); remove it"
        for name in NPM_CONFIG_FILES
        if (repository / name).exists()
    ]
    package, lock = _json(repository / "package.json", found), _json(repository / "package-lock.json", found)
    if package is None or lock is None:
        return found
    allowed = ", ".join(sorted(PACKAGE_KEYS))
    found.extend(
        f"package.json: key {key!r} is not allowed (only {allowed})" for key in sorted(set(package) - PACKAGE_KEYS)
    )
    wanted = package.get("dependencies", {})
    for name, spec in sorted(wanted.items()):
        if not isinstance(spec, str) or not EXACT_VERSION.fullmatch(spec):
            found.append(f"package.json: dependencies.{name} = {spec!r} is not an exact registry version (1.2.3)")
    packages = lock.get("packages")
    if not isinstance(packages, dict):
        return [*found, "package-lock.json: no 'packages' table (lockfileVersion 3 expected)"]
    for path, entry in sorted(packages.items()):
        if path == "":
            continue
        where = f"package-lock.json: packages[{path!r}]"
        if not isinstance(entry, dict) or not path.startswith("node_modules/"):
            found.append(f"{where}: not a node_modules/ entry")
            continue
        found.extend(
            f"{where}: key {key!r} is not allowed (a link, workspace or non-registry entry)"
            for key in sorted(set(entry) - LOCK_ENTRY_KEYS)
        )
        resolved = entry.get("resolved")
        if resolved is not None and not (isinstance(resolved, str) and resolved.startswith(REGISTRY)):
            found.append(f"{where}: resolved {resolved!r} is not a tarball of {REGISTRY}")
        if not isinstance(entry.get("integrity"), str) or not INTEGRITY.fullmatch(entry["integrity"]):
            found.append(f"{where}: no sha512 integrity")
        name = path.rsplit("node_modules/", 1)[1]
        if path.count("node_modules/") == 1 and name in wanted and entry.get("version") != wanted[name]:
            found.append(f"{where}: version {entry.get('version')!r}, package.json pins {wanted[name]!r}")
    return found


def _json(path: Path, found: list[str]) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        found.append(f"{path.name}: cannot be read as JSON ({exc})")
        return None
    if not isinstance(value, dict):
        found.append(f"{path.name}: not a JSON object")
        return None
    return value


def main(argv: list[str]) -> int:
    repository = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    found = faults(repository)
    for line in found:
        print(f"npm sources refused: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
