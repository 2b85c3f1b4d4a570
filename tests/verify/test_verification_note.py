"""The note's render functions (hooks/render/verification_note.py), without MkDocs."""

from __future__ import annotations

import pytest

from hooks.errors import RenderError
from hooks.render.verification_note import insert_after_block, render_note
from tests.verify.records import fixture_record, one_gpu_record, run_date
from verify.extract import titled_code

BLOCK = (
    '<li><div class="highlight"><span class="filename">nccl_check.py</span><pre><span></span><code>'
    '<span class="kn">import</span> os\n</code></pre></div><p>next</p></li>'
)


def test_development_note_in_both_languages():
    assert "Non verificato in questa build" in render_note(None, "it")
    assert "Non vérifié dans cette version" in render_note(None, "fr")


def test_one_gpu_says_1_gpu_and_claims_no_busbw():
    record = one_gpu_record()
    record["fixture"] = False
    it, fr = render_note(record, "it"), render_note(record, "fr")
    assert f"eseguito su 1 GPU (NVIDIA H200) il {run_date('it')}: 1.234,5 all-reduce al secondo di 1,07\u00a0GB." in it
    assert (
        f"exécuté sur 1 GPU (NVIDIA H200) le {run_date('fr')} : 1\u202f234,5 all-reduce par seconde de 1,07\u00a0Go."
        in fr
    )
    for note in (it, fr):
        assert "busbw 0" not in note and "algbw" not in note and "×" not in note and "collegate" not in note
    assert "DATI DI PROVA" not in it and 'class="admonition success verification"' in it


def test_several_gpus_in_the_readers_locale():
    it, fr = render_note(fixture_record(), "it"), render_note(fixture_record(), "fr")
    assert f"8 × NVIDIA H100 80GB HBM3 collegate via NVLink il {run_date('it')}: 239,5 all-reduce al secondo" in it
    assert "algbw 257,1\u00a0GB/s, busbw 449,9\u00a0GB/s" in it
    assert f"8 × NVIDIA H100 80GB HBM3 reliées par NVLink le {run_date('fr')} : 239,5 all-reduce par seconde" in fr
    assert "algbw 257,1\u00a0Go/s, busbw 449,9\u00a0Go/s" in fr


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
