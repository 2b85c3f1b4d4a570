"""The publish build (GUIDE_PUBLISH=1) refuses a missing, stale or failed record and shows a
good one under the NCCL check in both languages; a development build says it is not verified.

The good record is verification/fixtures/nccl_check.json (``"fixture": true``), accepted
only with GUIDE_ALLOW_FIXTURE_RECORD=1 and then labelled as test data on the page.
"""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from hooks.checks.publish_gate import check_site_url
from hooks.errors import RenderError
from tests.verify.records import changed, current_sha256, fixture_record, run_date, write_record
from verify.artifact import check_site

pytestmark = pytest.mark.slow

PUBLISH = {"GUIDE_PUBLISH": "1", "GUIDE_ALLOW_FIXTURE_RECORD": "1", "SITE_URL": "https://vramfarm.github.io/guide/"}


def notes(site, lang_dir=""):
    page = site / lang_dir / "index.html"
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select(".verification")


def refused(result) -> str:
    assert result.returncode != 0, "the publish build should have been refused"
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    return errors[0]


def test_development_build_says_not_verified_in_both_languages(built_site):
    it, fr = notes(built_site), notes(built_site, "fr")
    assert len(it) == len(fr) == 1
    assert "verification-none" in it[0]["class"] and "verification-none" in fr[0]["class"]
    assert it[0].get_text().startswith("Non verificato in questa build")
    assert fr[0].get_text().startswith("Non vérifié dans cette version")


def test_no_record_is_refused(repo_copy, tmp_path, forked_build_site):
    error = refused(forked_build_site(tmp_path / "out", env=PUBLISH, config=repo_copy / "mkdocs.yml"))
    assert "publish build refused" in error and "verification/nccl_check.json: no verification record" in error


def test_stale_record_is_refused(repo_copy, tmp_path, forked_build_site):
    write_record(repo_copy / "verification" / "nccl_check.json", fixture_record(repo_copy))
    with open(repo_copy / "snippets" / "nccl_check.py", "a") as snippet:  # the snippet changed after the GPU run
        snippet.write("print('changed')\n")
    error = refused(forked_build_site(tmp_path / "out", env=PUBLISH, config=repo_copy / "mkdocs.yml"))
    assert f"sha256 {current_sha256(repo_copy)[:12]}" in error and "stale" in error


def test_failed_or_skipped_run_is_refused(repo_copy, tmp_path, forked_build_site):
    path = write_record(
        tmp_path / "failed.json", fixture_record(repo_copy, status="fail", failures=["pytest -m gpu: 1 skipped"])
    )
    error = refused(
        forked_build_site(
            tmp_path / "out", env={**PUBLISH, "GUIDE_VERIFICATION_RECORD": str(path)}, config=repo_copy / "mkdocs.yml"
        )
    )
    assert "records a 'fail' run" in error and "1 skipped" in error


def test_a_malformed_record_is_one_line_naming_it(repo_copy, tmp_path, forked_build_site):
    """integrity.md: ``allreduce_per_s: "fast"`` used to end in a Babel traceback."""
    path = write_record(tmp_path / "fast.json", changed(fixture_record(repo_copy), "measured.allreduce_per_s", "fast"))
    error = refused(
        forked_build_site(
            tmp_path / "out", env={**PUBLISH, "GUIDE_VERIFICATION_RECORD": str(path)}, config=repo_copy / "mkdocs.yml"
        )
    )
    assert error.endswith(
        f"publish build refused: {path}: measured.allreduce_per_s: Input should be a valid number (got 'fast')"
    ), error


def test_a_local_site_url_is_refused_naming_the_setting(repo_copy, tmp_path, forked_build_site):
    """integrity.md, Publishing: SITE_URL unset leaves canonical links and the sitemap at 127.0.0.1."""
    write_record(repo_copy / "verification" / "nccl_check.json", fixture_record(repo_copy))
    env = {key: value for key, value in PUBLISH.items() if key != "SITE_URL"}
    error = refused(forked_build_site(tmp_path / "out", env=env, config=repo_copy / "mkdocs.yml"))
    assert (
        "publish build refused: mkdocs.yml: site_url is 'http://127.0.0.1:8000/', not the published address; set SITE_URL"
        in error
    )


@pytest.mark.parametrize(
    "site_url",
    [
        None,
        "",
        "http://127.0.0.1:8000/",
        "https://localhost/guide/",
        "http://vramfarm.github.io/guide/",
        "https://0.0.0.0/",
        "https://[::1]/",
    ],
)
def test_only_a_public_https_site_url_publishes(site_url):
    with pytest.raises(RenderError, match=r"mkdocs\.yml: site_url is .*; set SITE_URL"):
        check_site_url(site_url)
    check_site_url("https://vramfarm.github.io/guide/")


def test_fixture_is_refused_without_the_test_switch(repo_copy, tmp_path, forked_build_site):
    write_record(repo_copy / "verification" / "nccl_check.json", fixture_record(repo_copy))
    error = refused(
        forked_build_site(
            tmp_path / "out",
            env={"GUIDE_PUBLISH": "1", "SITE_URL": PUBLISH["SITE_URL"]},
            config=repo_copy / "mkdocs.yml",
        )
    )
    assert "is a test fixture, not a GPU run" in error


def never_run_code(repo):
    """The notebooks of ``repo`` with every code cell's code kept, comments and all, under
    ``if False:``: a publication build executes each notebook afresh (its own kernel, no cache),
    and here does so in a second instead of the notebooks' measurements and plots (about 9
    CPU-seconds each, which every build of a fresh checkout runs: ``built_site``)."""
    import textwrap

    import nbformat

    for path in (repo / "docs").glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = "if False:\n" + textwrap.indent(cell.source, "    ", lambda line: True)
        nbformat.write(nb, path)


def test_good_record_is_shown_under_the_check_in_both_languages(repo_copy, tmp_path, forked_build_site):
    write_record(repo_copy / "verification" / "nccl_check.json", fixture_record(repo_copy))
    never_run_code(repo_copy)
    site = tmp_path / "out"
    result = forked_build_site(site, env=PUBLISH, config=repo_copy / "mkdocs.yml")
    assert result.returncode == 0, result.stderr[-3000:]
    sha = current_sha256(repo_copy)
    expected = {
        "": [
            "8 × NVIDIA H100 80GB HBM3 collegate via NVLink",
            run_date("it"),
            "239,5 all-reduce al secondo di 1,07\u00a0GB",
            "algbw 257,1\u00a0GB/s",
            "busbw 449,9\u00a0GB/s",
            "PyTorch 2.13.0+cu128, CUDA 12.8, NCCL 2.27.5",
            "DATI DI PROVA",
        ],
        "fr": [
            "8 × NVIDIA H100 80GB HBM3 reliées par NVLink",
            run_date("fr"),
            "239,5 all-reduce par seconde de 1,07\u00a0Go",
            "algbw 257,1\u00a0Go/s",
            "busbw 449,9\u00a0Go/s",
            "PyTorch 2.13.0+cu128, CUDA 12.8, NCCL 2.27.5",
            "DONNÉES DE TEST",
        ],
    }
    for lang_dir, phrases in expected.items():
        [note] = notes(site, lang_dir)
        assert note["data-snippet-sha256"] == sha
        text = note.get_text()
        for phrase in phrases:
            assert phrase in text, f"{lang_dir or 'it'}: {phrase!r} not in {text!r}"
        # right under the check: the element before the note is the nccl_check.py block
        block = note.find_previous_sibling("div", class_="highlight")
        assert block is not None and block.select_one("span.filename").get_text() == "nccl_check.py"
    # the published site passes the check of the artifact (verify/artifact.py), note included
    check_site(site, repo_copy / "snippets", repo_copy / "vram", repo_copy / "docs", repo_copy / "overrides")


def test_every_block_the_record_hashed_is_checked_on_the_page(built_site):
    """The gate, on the built pages: with the record of these snippets every block passes in
    both languages; a record whose digest of train.py, a DeepSpeed JSON or the FSDP2 YAML is
    another (the block edited after the GPU run) is refused naming that block."""
    import hashlib
    import re

    from hooks.checks.publish_gate import Verified, check_verified_block
    from tests.conftest import REPO_ROOT

    record = fixture_record()
    verified = Verified(record, (REPO_ROOT / "snippets" / "nccl_check.py").read_text(encoding="utf-8"))
    pages = {
        "it": (built_site / "index.html").read_text(encoding="utf-8"),
        "fr": (built_site / "fr" / "index.html").read_text(encoding="utf-8"),
    }
    for lang, html in pages.items():
        check_verified_block(html, lang, verified)
    for title in ("train.py", "train_fsdp2.py", "ds_zero3.json", "accelerate_fsdp2.yaml", "zero_to_hf.py"):
        older = {**record["blocks"], title: hashlib.sha256(b"the code the GPU job ran\n").hexdigest()}
        with pytest.raises(
            RenderError, match=rf"the {re.escape(title)} block \(it\) is not the code the GPU record ran"
        ):
            check_verified_block(pages["it"], "it", Verified({**record, "blocks": older}, verified.snippet))


def test_a_training_script_edited_after_the_record_fails_the_publish_build(repo_copy, tmp_path, forked_build_site):
    """Refused before anything is built: a publication build executes every notebook first, and
    the record already says the block that shows this file is not the code the GPU job ran."""
    record = fixture_record(repo_copy)
    write_record(repo_copy / "verification" / "nccl_check.json", record)
    script = repo_copy / "snippets" / "train.py"
    script.write_text(script.read_text(encoding="utf-8").replace("lr=1e-3", "lr=1e-2"), encoding="utf-8")
    result = forked_build_site(tmp_path / "out", env=PUBLISH, config=repo_copy / "mkdocs.yml")
    error = refused(result)
    assert error.endswith(
        f"publish build refused: snippets/train.py: the train.py block is not the code the GPU record ran "
        f"(sha256 {record['blocks']['train.py'][:12]}…), neither this file nor a section of it; "
        "rerun `make gpu-check`"
    ), error
    assert "executing docs/memory-notebook" not in result.stderr and not (tmp_path / "out" / "index.html").exists()


def test_a_block_may_show_a_section_of_its_file():
    """The early check refuses only a digest that no block showing the file can have: the
    file's bytes, or a run of its lines (a section: pymdownx.snippets' markers left out),
    with or without the last newline; an edited line is neither."""
    import hashlib

    from hooks.checks.publish_gate import can_show

    data = b"import os\n# --8<-- [start:run]\nx = 1\ny = 2\n# --8<-- [end:run]\nprint(x)\n"
    for shown in (data, b"x = 1\ny = 2\n", b"x = 1\ny = 2", b"import os\nx = 1\n", b"print(x)\n"):
        assert can_show(data, hashlib.sha256(shown).hexdigest()), shown
    for shown in (b"x = 1\ny = 3\n", b"x = 1\nprint(x)\n", b"y = 2\nx = 1\n", b"# --8<-- [start:run]\nx = 1\n"):
        assert not can_show(data, hashlib.sha256(shown).hexdigest()), shown
