"""The publish gate: a publication build (``GUIDE_PUBLISH=1``, ``make publish``) shows only
code that ran on a GPU.

``open_gate`` (at the start of the build) refuses to build unless the verification record
(default ``verification/nccl_check.json``, or ``GUIDE_VERIFICATION_RECORD``) is a passing
GPU run of the exact ``snippets/nccl_check.py`` the pages include (``verify.record``) whose
``gpu_tests`` are the counts of the JUnit report beside it (``gpu-tests.xml``, written by the
gpu tests themselves: ``check_gpu_tests``), unless
every other block the record hashed can still be its snippet file (``check_recorded_blocks``,
before the notebooks run), and unless ``site_url`` is the published address rather than the
local default (canonical links and the sitemap would point at 127.0.0.1). ``insert_note``
(on every built page) puts the note under the page's ``nccl_check.py`` block (where, when
and what it measured, or, in a development build, "not verified in this build"), and
``check_verified_block`` checks, on the page as published, that the block is that code, and
that every other block the record hashed (its ``blocks``: training scripts, configs) is the
code the GPU job ran.
``GUIDE_ALLOW_FIXTURE_RECORD=1`` (tests only) accepts a record marked as a fixture, which
the page then labels as test data.

Pure: no MkDocs import; raises RenderError.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from hooks.errors import RenderError
from hooks.render.verification_note import insert_after_block, render_note
from verify.extract import ExtractError, blocks_in_html, compare_code, titled_code
from verify.junit import COUNTS, JUnitError, junit_counts
from verify.languages import DEFAULT_LANGUAGE
from verify.record import DEFAULT_RECORD, SNIPPET, RecordError, check_record, load_record, snippet_sha256

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0", ""}


@dataclass(frozen=True)
class Verified:
    """The record a publication build shows, and the text of the snippet it verified."""

    record: dict
    snippet: str


def check_site_url(site_url: str | None) -> None:
    """Raise RenderError unless ``site_url`` is a public https address (not the local default)."""
    parts = urlsplit(site_url or "")
    if parts.scheme != "https" or (parts.hostname or "") in LOCAL_HOSTS:
        raise RenderError(
            f"publish build refused: mkdocs.yml: site_url is {site_url!r}, not the published address; "
            "set SITE_URL to it (https://…), or canonical links and the sitemap point there"
        )


def open_gate(root: Path, snippets_dir: Path, site_url: str | None, environ: Mapping[str, str]) -> Verified | None:
    """None for a development build; for ``GUIDE_PUBLISH=1`` the checked record. Raises RenderError."""
    if environ.get("GUIDE_PUBLISH") != "1":
        return None
    check_site_url(site_url)
    record_path = root / environ.get("GUIDE_VERIFICATION_RECORD", str(DEFAULT_RECORD))
    try:
        snippet = (snippets_dir / SNIPPET).read_bytes()
        record = check_record(
            load_record(record_path),
            snippet_sha256(snippet),
            str(record_path),
            allow_fixture=environ.get("GUIDE_ALLOW_FIXTURE_RECORD") == "1",
        )
    except (OSError, RecordError) as exc:
        raise RenderError(f"publish build refused: {exc}") from None
    check_gpu_tests(record, record_path.with_name("gpu-tests.xml"))
    check_recorded_blocks(record, snippets_dir, root)
    return Verified(record, snippet.decode("utf-8"))


def check_gpu_tests(record: dict, junit: Path) -> None:
    """The record's ``gpu_tests`` counts are those of the JUnit report ``junit`` that the gpu
    job uploaded with it (a record edited after the run, or written without the tests' report,
    says otherwise). Raises RenderError naming the report."""
    try:
        counts = junit_counts(junit)
    except JUnitError as exc:
        raise RenderError(f"publish build refused: {exc}") from None
    recorded = {key: record["gpu_tests"].get(key) for key in COUNTS}
    if recorded != counts:
        raise RenderError(
            f"publish build refused: {junit}: the record's gpu_tests {recorded} are not the counts of this report "
            f"{counts}; rerun `make gpu-check`"
        )


def can_show(data: bytes, digest: str) -> bool:
    """Whether a block that shows the snippet file ``data`` can have the SHA-256 ``digest``: the
    file's bytes, or one section of it (a contiguous run of its lines, pymdownx.snippets' section
    markers left out, joined by newlines, with or without the last one), as
    ``verify.artifact.is_part_of`` accepts a block."""
    if snippet_sha256(data) == digest:
        return True
    from verify.artifact import section_lines  # only for a file that changed since the run

    lines = [line.encode("utf-8") for line in section_lines(data.decode("utf-8", "replace"))]
    for start in range(len(lines)):
        run = hashlib.sha256()
        for end in range(start, len(lines)):
            if end > start:
                run.update(b"\n")
            run.update(lines[end])
            ended = run.copy()
            ended.update(b"\n")
            if digest in (run.hexdigest(), ended.hexdigest()):
                return True
    return False


def check_recorded_blocks(record: dict, snippets_dir: Path, root: Path) -> None:
    """Before anything is built (a publication build executes every notebook first): each block
    the record hashed (its ``blocks``) can still be the code the GPU job ran, that is the one
    file of ``snippets/`` named by the block's title (``verify.artifact``: a titled block shows
    that file or a section of it) ``can_show`` the recorded digest. A block whose file was edited
    after the GPU run refuses the build here, naming the file; ``check_verified_block`` still
    checks every block on the pages as published. Raises RenderError."""
    from verify.artifact import snippet_files  # verify.artifact's imports: publication builds only

    for title, recorded in sorted(record["blocks"].items()):
        files = snippet_files(snippets_dir, title)
        if len(files) != 1:
            continue  # no such file or several: the pages' checks name the block
        if not can_show(files[0].read_bytes(), recorded):
            where = files[0].relative_to(root) if files[0].is_relative_to(root) else files[0]
            raise RenderError(
                f"publish build refused: {where.as_posix()}: the {title} block is not the code the GPU record "
                f"ran (sha256 {recorded[:12]}…), neither this file nor a section of it; rerun `make gpu-check`"
            )


def check_verified_block(html: str, lang: str, verified: Verified | None) -> None:
    """In a publication build, every block of the page that the GPU job ran must be the code
    the record hashed. The ``nccl_check.py`` block: the snippet's bytes in the default
    language, the same Python (bytes, encoding, AST) in the others. Every block named in the
    record's ``blocks`` (the training scripts, the configs): in the default language, code
    whose SHA-256 is the recorded one; in the others the build's same-code check
    (``hooks/checks/same_code.py``) holds each block to the default language's. Raises RenderError
    naming the block."""
    if verified is None:
        return
    if lang == DEFAULT_LANGUAGE:
        for block in blocks_in_html(html, lang, ""):
            recorded = verified.record["blocks"].get(block.name)
            if recorded is not None and snippet_sha256(block.code.encode("utf-8")) != recorded:
                raise RenderError(
                    f"publish build refused: the {block.name} block ({lang}) is not the code the GPU record "
                    f"ran (sha256 {recorded[:12]}…); rerun `make gpu-check`"
                )
    if (code := titled_code(html, SNIPPET)) is None:
        return
    if lang == DEFAULT_LANGUAGE:
        same = snippet_sha256(code.encode("utf-8")) == verified.record["snippet_sha256"]
    else:
        try:
            compare_code(SNIPPET, (verified.snippet, "the verified snippet"), (code, f"this page ({lang})"))
            same = True
        except ExtractError:
            same = False
    if not same:
        raise RenderError(f"publish build refused: the {SNIPPET} block ({lang}) is not the code the record verified")


def insert_note(html: str, lang: str, verified: Verified | None) -> str:
    """``html`` with the note under its ``nccl_check.py`` block (unchanged without one): the
    record's run, or "not verified in this build". Raises RenderError."""
    return insert_after_block(html, SNIPPET, render_note(verified.record if verified else None, lang))
