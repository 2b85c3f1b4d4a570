"""The note's render functions (hooks/verification.py), without MkDocs."""

from __future__ import annotations

import pytest

from hooks.errors import RenderError
from hooks.verification import insert_after_block, render_note
from verify.extract import titled_code
from tests.verify.records import fixture_record

BLOCK = ('<li><div class="highlight"><span class="filename">nccl_check.py</span><pre><span></span><code>'
         '<span class="kn">import</span> os\n</code></pre></div><p>next</p></li>')


def test_development_note_in_both_languages():
    assert "Non verificato in questa build" in render_note(None, "it")
    assert "Non vérifié dans cette version" in render_note(None, "fr")


def test_record_note_in_the_readers_locale():
    record = fixture_record(fixture=False)
    record["gpu"] = {"model": "NVIDIA H200", "count": 1}
    record["links"] = {"classes": []}  # one GPU: no pairs, no link to name
    record["measured"].update(allreduce_per_s=1234.5, algbw_gb_per_s=1325.5, busbw_gb_per_s=0.0)
    it, fr = render_note(record, "it"), render_note(record, "fr")
    assert "1 × NVIDIA H200 il 12 novembre 2026 alle 14:03 UTC" in it and "collegate" not in it
    assert "1.234,5 all-reduce al secondo" in it and "algbw 1.325,5\u00a0GB/s" in it
    assert "1\u202f234,5 all-reduce par seconde" in fr and "algbw 1\u202f325,5\u00a0Go/s" in fr
    assert "DATI DI PROVA" not in it and 'class="admonition success verification"' in it


def test_fixture_is_labelled_and_classes_are_joined():
    record = fixture_record()
    record["links"]["classes"] = ["nvlink", "cross-cpu"]
    it, fr = render_note(record, "it"), render_note(record, "fr")
    assert "DATI DI PROVA" in it and "collegate via NVLink e un percorso che attraversa la CPU" in it
    assert "DONNÉES DE TEST" in fr and "reliées par NVLink et un chemin qui traverse le CPU" in fr


def test_unknown_link_class_or_bad_date_is_an_error():
    with pytest.raises(RenderError, match="link_classes lacks infiniband"):
        render_note(fixture_record(links={"classes": ["infiniband"]}), "it")
    with pytest.raises(RenderError, match="utc '12/11/2026'"):
        render_note(fixture_record(utc="12/11/2026"), "fr")


def test_note_goes_right_after_the_titled_block():
    out = insert_after_block(BLOCK, "nccl_check.py", "<p>NOTE</p>")
    assert out == BLOCK.replace("</div><p>next</p>", "</div><p>NOTE</p><p>next</p>")
    assert insert_after_block(BLOCK, "train.py", "<p>NOTE</p>") == BLOCK
    assert titled_code(BLOCK, "nccl_check.py") == "import os\n"
    assert titled_code(BLOCK, "train.py") is None
