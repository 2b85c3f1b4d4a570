"""The counts of a JUnit XML report (pytest's ``--junitxml``): what the gpu tests said.

``junit_counts(path)`` -> ``{"passed", "failed", "skipped", "errors"}``, from the report's
``testsuite`` element (pytest writes one, inside ``testsuites``): ``tests`` minus the other
three is ``passed``. Raises JUnitError (one line naming the file) for a missing, unreadable or
malformed report. The record's ``gpu_tests`` holds these counts (``verify.write_record``),
and the publish build compares them with the report (``hooks/checks/publish_gate.py``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

COUNTS = ("passed", "failed", "skipped", "errors")
MAX_BYTES = 10 * 2**20  # a report of a few hundred tests is some kilobytes


class JUnitError(ValueError):
    """The report is missing, unreadable or not a pytest JUnit report."""


def junit_counts(path: Path) -> dict[str, int]:
    """Counts of the report at ``path``. Raises JUnitError."""
    if path.is_symlink() or not path.is_file():
        raise JUnitError(f"{path}: no JUnit report of the gpu tests (a plain file)")
    if path.stat().st_size > MAX_BYTES:
        raise JUnitError(f"{path}: {path.stat().st_size} bytes, more than a report of the gpu tests ({MAX_BYTES})")
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise JUnitError(f"{path}: not a readable JUnit report ({exc})") from None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if root.tag not in ("testsuite", "testsuites") or len(suites) != 1:
        raise JUnitError(f"{path}: expected one <testsuite>, found {len(suites)} under <{root.tag}>")
    try:
        total, failed, skipped, errors = (
            int(suites[0].get(key, "")) for key in ("tests", "failures", "skipped", "errors")
        )
    except ValueError:
        raise JUnitError(f"{path}: <testsuite> without integer tests, failures, skipped and errors") from None
    if min(total, failed, skipped, errors) < 0 or failed + skipped + errors > total:
        raise JUnitError(
            f"{path}: inconsistent counts (tests {total}, failures {failed}, skipped {skipped}, errors {errors})"
        )
    return {"passed": total - failed - skipped - errors, "failed": failed, "skipped": skipped, "errors": errors}
