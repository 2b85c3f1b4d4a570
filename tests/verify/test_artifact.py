"""The check of the site as uploaded (verify/artifact.py), on a copy of the built site with
the attacks of issue 19 planted in the HTML the build wrote (what a later rewrite, a
detached process or an unchecked file type could leave there). Each attack is refused with
one line naming the file; the untouched site passes, and its manifest and archive hold
exactly the files and bytes that were checked. The expected hashes come from hashlib, the
archive is read back with tarfile."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile

import pytest

from tests.conftest import REPO_ROOT
from tests.verify.artifact_refusal import refused
from verify.artifact import is_part_of

NCCL = '<span class="filename">nccl_check.py</span><pre><span></span><code>'
FIRST_LINE = '<span class="c1"># nccl_check.py: avvialo con  torchrun --nproc_per_node=4 nccl_check.py</span>'


def plant(site, page, old, new):
    path = site / page
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{page} no longer holds {old[:60]!r}: update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_built_site_passes_and_the_manifest_and_archive_are_what_was_checked(site, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "verify.artifact",
            str(site),
            "--manifest",
            str(tmp_path / "m.json"),
            "--tar",
            str(tmp_path / "a.tar"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    on_disk = {
        path.relative_to(site).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in site.rglob("*")
        if path.is_file()
    }
    listed = {entry["path"]: entry["sha256"] for entry in json.loads((tmp_path / "m.json").read_text())["files"]}
    assert listed == on_disk and "index.html" in listed and "fr/index.html" in listed
    with tarfile.open(tmp_path / "a.tar") as tar:
        archived = {
            member.name.removeprefix("./"): hashlib.sha256(tar.extractfile(member).read()).hexdigest()
            for member in tar.getmembers()
            if member.isfile()
        }
        folders = {member.name for member in tar.getmembers() if member.isdir()}
    assert archived == on_disk
    assert folders == {"."} | {f"./{path.relative_to(site).as_posix()}" for path in site.rglob("*") if path.is_dir()}


@pytest.mark.parametrize("name", ["evil.htm", "assets/x.svg", "fr/notes.txt", "assets/pyodide/loader.py", ".nojekyll"])
def test_a_file_of_no_listed_type_fails(site, name):
    """Hole 4: `.htm` files under docs/ were published verbatim; every test read *.html only."""
    (site / name).parent.mkdir(parents=True, exist_ok=True)
    (site / name).write_text("<script>alert(1)</script>", encoding="utf-8")
    refused(site, name, "FILE_TYPES")


@pytest.mark.parametrize(
    "name",
    [
        "assets/pyodide/pyodide.asm.wasm",
        "assets/pyodide/pyodide.asm.wasm.zst",
        "assets/pyodide/pyodide.mjs",
        "assets/pyodide/pyodide.asm.js",
        "assets/pyodide/python_stdlib.zip",
        "assets/pyodide/pyodide-lock.json",
        "assets/pyodide/micropip-0.9-py3-none-any.whl",
        "assets/vram.zip",
        "assets/vram.zip.zst",
        "assets/vram-bundle.zip",
        "assets/pyodide-stdlib.zip.zst",
        "assets/fzstd/index.mjs",
        "assets/fzstd/index.js",
    ],
)
def test_the_calculators_runtime_files_are_listed_by_name_and_bytes(site, name):
    """The runtime the finder's worker runs is the pinned npm package's files and the
    checkout's calculator, byte for byte (tests/verify/test_artifact_calculator.py): other
    bytes at those paths, or another file beside them, are refused."""
    (site / name).parent.mkdir(parents=True, exist_ok=True)
    (site / name).write_bytes(b"\0")
    refused(site, name)


def test_a_symbolic_link_fails(site):
    (site / "assets" / "env.js").symlink_to("/proc/self/environ")
    refused(site, "assets/env.js", "symbolic link")


def test_a_commented_line_shown_live_fails(site):
    """Hole 2: the `#` of a commented line in <span hidden>: the extraction and the hash see
    the comment, a browser shows and copies the live line."""
    plant(site, "index.html", NCCL + FIRST_LINE, NCCL + '<span class="c1"><span hidden>#</span> nccl_check.py</span>')
    refused(site, "index.html", "nccl_check.py", "<span hidden")


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        (
            f'<div class="language-python highlight">{NCCL}',
            f'<div data-copy="import os; os.system(\'x\')"><div class="language-python highlight">{NCCL}',
            "data-copy",
        ),
        ("<footer", '<div id="__code_0" hidden><pre><code>import os</code></pre></div><footer', '__code_0'),
    ],
)
def test_the_copy_button_copies_the_block_itself(site, old, new, match):
    """Hole 3: Material copies the closest [data-copy] ancestor, or the first #__code_N."""
    plant(site, "index.html", old, new)
    refused(site, "index.html", match)


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("<footer", "<script>document.querySelector('code').textContent='x'</script><footer", "inline <script>"),
        ("<footer", '<script type="Application/JSON">{}</script><footer', "inline <script>"),
        ("<footer", '<script src="assets/lang-switch.js" onload="alert(1)"></script><footer', "<script src="),
        ("<footer", '<script src="https://evil.example/x.js"></script><footer', "<script src="),
        ("<footer", '<script src="assets/missing.js"></script><footer', "<script src="),
        ("<footer", '<script type="application/json">x = 1</script><footer', "not JSON"),
        ("<footer", '<a href="javascript:alert(1)">x</a><footer', "nh3"),
        ("<footer", '<a href="java&#9;script:alert(1)">x</a><footer', "nh3"),
        ("<footer", '<img src="../assets/images/favicon.png" onerror="alert(1)" alt=""><footer', "nh3"),
        ("<footer", '<iframe src="https://evil.example/"></iframe><footer', "nh3"),
        ("<footer", '<p style="display:none">x</p><footer', "nh3"),
        ("<footer", '<form action="https://evil.example/"><footer', "nh3"),
        ("<footer", '<svg><a href="javascript:alert(1)"><text>x</text></a></svg><footer', "nh3"),
        ("<footer", '<img src="data:image/svg+xml,%3Csvg%3E" alt=""><footer', "<img src="),
        # a data: URL anywhere else is a file the site does not hold: a link that downloads a
        # script which never ran, or opens a page of its own (the scheme as a browser reads it)
        ("<footer", '<a href="data:text/x-python;base64,cHJpbnQoMSk=">nccl_check.py</a><footer', "a data: URL"),
        ("<footer", '<a href=" DATA:text/html,x">x</a><footer', "a data: URL"),
        ("<footer", '<a href="da&#9;ta:application/octet-stream,x">x</a><footer', "a data: URL"),
        ("<footer", '<img src="DATA:image/svg+xml;base64,PHN2Zy8+" alt=""><footer', "<img src="),
        ("<footer", '<meta http-equiv="refresh" content="0;url=https://evil.example/"><footer', "http-equiv"),
        ("<footer", '<style>.highlight .nf{display:none}</style><footer', "'display'"),
        ("<footer", '<style>@import "https://evil.example/a.css";</style><footer', "@-rule"),
        ("<footer", '<p id="top">x</p><footer', 'id="top" twice'),
        ("<footer", '<img src="https://evil.example/pixel.png" alt=""><footer', "<img src="),
        ("<footer", '<img src="../../../etc/x.png" alt=""><footer', "<img src="),
        ("</head>", '<link rel="stylesheet" href="https://evil.example/a.css"></head>', "<link rel='stylesheet'"),
        ("</head>", '<link rel="preload" as="script" href="../assets/finder.js"></head>', "<link rel='preload'"),
        ("</head>", '<link rel="canonical" href="https://evil.example/"></head>', "<link rel='canonical'"),
        (
            '<meta http-equiv="Content-Security-Policy" content="default-src \'self\';',
            '<meta http-equiv="Content-Security-Policy" content="default-src *;',
            "Content-Security-Policy",
        ),
    ],
)
def test_active_or_unlisted_content_in_a_page_fails(site, old, new, match):
    plant(site, "fr/index.html", old, new)
    refused(site, "fr/index.html", match)


def test_a_page_without_the_policy_fails(site):
    text = (site / "gpu-finder/index.html").read_text(encoding="utf-8")
    start = text.index('<meta http-equiv="Content-Security-Policy"')
    (site / "gpu-finder/index.html").write_text(text[:start] + text[text.index(">", start) + 1 :], encoding="utf-8")
    refused(site, "gpu-finder/index.html", "Content-Security-Policy")


def test_a_block_that_is_not_its_snippet_fails(site):
    plant(site, "index.html", NCCL + FIRST_LINE, NCCL + FIRST_LINE.replace("avvialo", "lancialo"))
    refused(site, "nccl_check.py", "byte for byte")


def test_a_french_block_that_runs_otherwise_fails(site):
    text = (site / "fr/index.html").read_text(encoding="utf-8")
    start = text.index(NCCL)
    line_end = text.index("\n", text.index("import", start))
    (site / "fr/index.html").write_text(text[:line_end] + "\nimport antigravity" + text[line_end:], encoding="utf-8")
    refused(site, "nccl_check.py", "fr")


def test_a_block_may_show_one_section_of_its_snippet_and_nothing_else():
    """pymdownx.snippets' sections (``--8<-- "file:name"``): a contiguous run of the file's
    lines, its markers left out; lines skipped, reordered or edited are not the file."""
    snippet = "import os\n# --8<-- [start:run]\nx = 1\ny = 2\n# --8<-- [end:run]\nprint(x)\n"
    assert is_part_of(snippet, snippet) and is_part_of("x = 1\ny = 2\n", snippet)
    for shown in ("x = 1\nprint(x)\n", "y = 2\nx = 1\n", "x = 1  # changed\ny = 2\n", "", "x = 1\ny = 3\n"):
        assert not is_part_of(shown, snippet), shown


def test_a_process_checks_each_page_once_per_content(site, monkeypatch):
    """The check keeps, for the life of the process, the pages that passed, under their bytes
    and the site's file list: a second check of the same site checks no page again; a page
    changed since is checked again (and refused), and a refused page is checked again the next time."""
    from verify import artifact

    checked = []
    check_page = artifact.check_page
    monkeypatch.setattr(artifact, "check_page", lambda page, *args: (checked.append(page), check_page(page, *args))[1])
    monkeypatch.setattr(artifact, "_PASSED_PAGES", set())
    artifact.check_site(site, REPO_ROOT / "snippets")
    pages = sorted(path.relative_to(site).as_posix() for path in site.rglob("*.html"))
    assert sorted(checked) == pages
    artifact.check_site(site, REPO_ROOT / "snippets")
    assert sorted(checked) == pages, "a page that passed was checked again"
    plant(site, "fr/index.html", "<footer", '<iframe src="https://evil.example/"></iframe><footer')
    for _ in range(2):
        refused(site, "fr/index.html", "nh3")
    assert checked[len(pages) :] == ["fr/index.html", "fr/index.html"]
    plant(site, "fr/index.html", '<iframe src="https://evil.example/"></iframe><footer', "<footer")
    # another file list (a page's links may name the new file): every page is checked again
    (site / "assets" / "notebook" / "plots" / "another.png").write_bytes(b"\x89PNG\r\n")
    checked.clear()
    artifact.check_site(site, REPO_ROOT / "snippets")
    assert sorted(checked) == pages


def test_a_stylesheet_is_parsed_once_per_content(tmp_path, monkeypatch):
    """The installed mkdocs-jupyter's stylesheets are parsed once per process for each text (by
    its SHA-256), so an edited installed stylesheet is read and parsed again: the rule it no
    longer has is refused."""
    import tinycss2

    from verify import artifact

    installed = tmp_path / "mkdocs_jupyter"
    folder = installed / "templates" / "mkdocs_html" / "assets"
    folder.mkdir(parents=True)
    (folder / "jupyter.css").write_text(".jp-Cell { color: red }\n.jp-Other { color: blue }\n", encoding="utf-8")
    (folder / "notes.txt").write_text(".jp-Cell { display: none }\n", encoding="utf-8")  # not a stylesheet
    monkeypatch.setattr(artifact.resources, "files", lambda package: installed if package == "mkdocs_jupyter" else None)
    parsed = []
    parse = tinycss2.parse_stylesheet
    monkeypatch.setattr(tinycss2, "parse_stylesheet", lambda text, **kw: (parsed.append(text), parse(text, **kw))[1])
    monkeypatch.setattr(artifact, "_PARSED_RULES", {})
    files = {"assets/notebook/page.0123456789abcdef.css": b".jp-Cell { color: red }\n"}
    artifact.check_notebook_stylesheets(files)
    artifact.check_notebook_stylesheets(files)
    assert len(parsed) == 2  # the installed stylesheet and the page's, once each
    (folder / "jupyter.css").write_text(".jp-Other { color: blue }\n", encoding="utf-8")
    with pytest.raises(artifact.ArtifactError, match=r"page\.0123456789abcdef\.css: '\.jp-Cell"):
        artifact.check_notebook_stylesheets(files)
    assert len(parsed) == 3
