"""Both languages' code runs, for the blocks added after issue 19 (its hole 11): train_hf.py,
zero_to_hf.py and dcp_to_hf.py.

tests/snippets/test_languages_run_alike.py runs the French extraction of nccl_check.py,
train.py and train_fsdp2.py beside the Italian one; the Hugging Face script and the two
converters came later and only their Italian extraction ever ran. Their French blocks are
the same Python to the AST (the build checks it), but a script that reads its own text (its
``__file__``, a traceback's source line, ``inspect``) sees its comments, which differ: so
"the same AST" is not "runs alike", and only running both says so.

Here each language's extraction runs for real on CPU, one process each, after one import
(``fork_ranks.py`` jobs): train_hf.py trains the tiny model for 3 steps, the Trainer's own
line with ``--deepspeed ds_zero3.json`` (through ``record_hf.py``, as the Hugging Face
rehearsal runs it on CPU) leaves a ZeRO-3 checkpoint, train_fsdp2.py --tiny a DCP one; then
each language's converter turns the same checkpoint into a Hugging Face folder. What each
prints (timings masked) and every tensor it saves must be the same in both languages.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest

from tests.snippets.hf_checks import RECORD_HF, argv
from tests.snippets.launch import PRELOAD_HF, fork_jobs
from tests.snippets.sealed import SelfReads, effects, run_as_main, seal
from verify.extract import extract
from verify.languages import LANGUAGES

pytestmark = pytest.mark.slow

BLOCKS = ("train_hf.py", "zero_to_hf.py", "dcp_to_hf.py", "train_fsdp2.py", "ds_zero3.json")
TINY = ["--tiny", "--max_steps", "3", "--logging_steps", "1", "--seq_len", "32", "--per_device_train_batch_size", "2"]
RUNTIME_RE = re.compile(r"'(train_runtime|train_samples_per_second|train_steps_per_second)': '[^']*'")


def printed(text: str) -> list[str]:
    """The lines a run prints on stdout, without progress bars and timings (measured, never equal twice)."""
    lines = [line for line in re.split(r"[\r\n]", text) if line.strip() and "it/s]" not in line and "s/it]" not in line]
    return [RUNTIME_RE.sub(r"'\1': T", line) for line in lines]


def tensors(folder: Path) -> dict:
    from safetensors.torch import load_file

    (weights,) = folder.glob("*.safetensors")
    return load_file(weights)


@pytest.fixture(scope="module")
def runs(built_site, tmp_path_factory, zygote):
    root = tmp_path_factory.mktemp("hf-languages")
    folders = {}
    for lang in LANGUAGES:
        folders[lang] = root / f"extracted-{lang}"
        folders[lang].mkdir()
        extract(built_site, folders[lang], BLOCKS, lang=lang)
    first = folders[LANGUAGES[0]]
    # the ZeRO-3 run's own copy of the default language's script: each script's effects log is its runs' only
    zero3_script = root / "zero3-script" / "train_hf.py"
    zero3_script.parent.mkdir()
    zero3_script.write_bytes((first / "train_hf.py").read_bytes())
    jobs = [
        (root / f"train-{lang}", 1, folders[lang] / "train_hf.py", [*TINY, "--output_dir", "out"]) for lang in LANGUAGES
    ]
    jobs.append(
        (
            root / "zero3",
            1,
            RECORD_HF,
            [
                str(root / "zero3" / "record"),
                str(zero3_script),
                *TINY,
                "--deepspeed",
                str(first / "ds_zero3.json"),
                "--save_strategy",
                "steps",
                "--save_steps",
                "3",
                "--output_dir",
                "out",
            ],
        )
    )
    jobs.append((root / "dcp", 1, first / "train_fsdp2.py", ["--tiny", "--epochs", "1", "--out", "out"]))
    for cwd, *_ in jobs:
        cwd.mkdir()
    scripts = [folders[lang] / name for lang in LANGUAGES for name in BLOCKS if name.endswith(".py")]
    other = {
        folders[lang] / name: folders[LANGUAGES[(i + 1) % len(LANGUAGES)]] / name
        for i, lang in enumerate(LANGUAGES)
        for name in BLOCKS
        if name.endswith(".py")
    }
    scripts.append(zero3_script)
    other[zero3_script] = other[first / "train_hf.py"]
    # the loaders read sealed copies, nothing may open the scripts, and their code objects point
    # at the other language's text (sealed.py)
    sealed = seal(scripts, root / "sealed", decoys=other)
    converted = {}
    with SelfReads(scripts) as reads:
        # fork_ranks.py forked from the session's zygote (tests/conftest.py: torch, transformers,
        # DeepSpeed and accelerate imported once)
        done = fork_jobs(jobs, root, preload=PRELOAD_HF + ",deepspeed,accelerate", zygote=zygote, env=sealed)
        for (cwd, *_), run in zip(jobs, done):
            assert run.returncode == 0, f"{cwd.name}: {run.stderr[-3000:]}"
        with argv([]), warnings.catch_warnings():
            os.environ.update(sealed)
            warnings.simplefilter("ignore")
            try:
                for lang in LANGUAGES:
                    for name, checkpoint in (
                        ("zero_to_hf.py", root / "zero3" / "out" / "checkpoint-3"),
                        ("dcp_to_hf.py", root / "dcp" / "out" / "epoch-1"),
                    ):
                        out = root / f"{name.removesuffix('.py')}-{lang}"
                        run_as_main(str(folders[lang] / name), [str(checkpoint), str(out)], watch=False)
                        converted[(lang, name)] = out
            finally:
                del os.environ[next(iter(sealed))]
    return {
        "root": root,
        "folders": folders,
        "done": dict(zip(LANGUAGES, done)),
        "converted": converted,
        "self_reads": reads.opened(),
        "effects": {lang: sorted(set(effects(root / "sealed", folders[lang] / "train_hf.py"))) for lang in LANGUAGES},
    }


def test_no_script_reads_its_own_file(runs):
    """Issue 33, hole 3: what the comments say cannot change what a block does unless the
    block reads its own file; no process opened any of them during these runs (sealed.py)."""
    assert runs["self_reads"] == []


def test_train_hf_does_the_same_in_every_language(runs):
    """What train_hf.py's run did beyond its output (processes, sockets, files written, moved or
    removed: sealed.py) is the same in every language: a block that read its comments through
    its code objects could act only through a file elsewhere, which no output shows."""
    did = runs["effects"]
    assert any(line.startswith("write ./out/") for line in did[LANGUAGES[0]]), did[LANGUAGES[0]]
    assert all(did[lang] == did[LANGUAGES[0]] for lang in LANGUAGES), did


def test_the_languages_extract_different_text(runs):
    folders = runs["folders"]
    for name in ("train_hf.py", "zero_to_hf.py", "dcp_to_hf.py"):
        assert len({(folders[lang] / name).read_text(encoding="utf-8") for lang in LANGUAGES}) == len(LANGUAGES), name


def test_train_hf_prints_and_saves_the_same_in_every_language(runs):
    root, done = runs["root"], runs["done"]
    reference_lines = printed(done[LANGUAGES[0]].stdout)
    assert any("'loss'" in line for line in reference_lines) and any("world_size=1" in line for line in reference_lines)
    reference = tensors(root / f"train-{LANGUAGES[0]}" / "out")
    for lang in LANGUAGES[1:]:
        assert printed(done[lang].stdout) == reference_lines, lang
        saved = tensors(root / f"train-{lang}" / "out")
        assert saved.keys() == reference.keys() and all((saved[k] == reference[k]).all() for k in reference), lang


@pytest.mark.parametrize("name", ["zero_to_hf.py", "dcp_to_hf.py"])
def test_each_converter_writes_the_same_folder_in_every_language(runs, name):
    converted = runs["converted"]
    reference = converted[(LANGUAGES[0], name)]
    assert (reference / "config.json").is_file()
    for lang in LANGUAGES[1:]:
        other = converted[(lang, name)]
        assert sorted(p.name for p in other.iterdir()) == sorted(p.name for p in reference.iterdir()), lang
        assert (other / "config.json").read_bytes() == (reference / "config.json").read_bytes(), lang
        first, second = tensors(reference), tensors(other)
        assert second.keys() == first.keys() and all((second[k] == first[k]).all() for k in first), (lang, name)
