"""Both languages' code runs (issue 19, hole 11): the French page's blocks were compared with
the Italian ones by AST but never run, so a snippet that reads its own comments (its
``__file__``, a traceback's source line) could behave otherwise in French. Every runnable
block is extracted from each language's pages and run on CPU with two gloo ranks
(``fork_ranks.py``: the unmodified script, torchrun's environment); what each prints and
the weights it saves must be the same in both languages. Only the NCCL check's timings
(measured, so never equal twice) are masked."""

from __future__ import annotations

import re

import pytest
import torch
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

from tests.snippets.launch import PRELOAD_HF, fork_jobs
from tests.snippets.sealed import SelfReads, effects, seal
from verify.extract import extract
from verify.languages import LANGUAGES

pytestmark = pytest.mark.slow

RUNS = {  # block -> arguments (one short epoch: the same code path as the guide's)
    "nccl_check.py": [],
    "train.py": ["--epochs", "1", "--out", "out"],
    "train_fsdp2.py": ["--tiny", "--epochs", "1", "--out", "out"],
}
TIMINGS_RE = re.compile(r"[\d.]+ (all-reduce/s|GB/s|tokens/s per GPU|s\))")  # what a clock measured


@pytest.fixture(scope="module")
def runs(built_site, tmp_path_factory, zygote):
    """{(lang, block): (run, its folder)} for every runnable block in every language: each the
    unmodified script on 2 forked gloo ranks (``fork_ranks.py``), all after one import of torch
    (the session's zygote's)."""
    root = tmp_path_factory.mktemp("languages")
    jobs = {}
    for lang in LANGUAGES:
        folder = root / f"extracted-{lang}"
        folder.mkdir()
        extract(built_site, folder, tuple(RUNS), lang=lang)
        for name, args in RUNS.items():
            work = folder / name.removesuffix(".py")
            work.mkdir()
            jobs[(lang, name)] = (work, 2, folder / name, args)
    scripts = [job[2] for job in jobs.values()]
    other = {
        root / f"extracted-{lang}" / name: root / f"extracted-{LANGUAGES[(i + 1) % len(LANGUAGES)]}" / name
        for i, lang in enumerate(LANGUAGES)
        for name in RUNS
    }
    # the ranks read sealed copies, nothing may open the scripts, and their code objects point
    # at the other language's text (sealed.py)
    sealed = seal(scripts, root / "sealed", decoys=other)
    # the NCCL check sums 1 MiB (as the 32-rank rehearsal does): its timings are masked here anyway
    with SelfReads(scripts) as reads:
        done = fork_jobs(
            list(jobs.values()), root, preload=PRELOAD_HF, zygote=zygote, env={"NCCL_CHECK_MIB": "1", **sealed}
        )
    found = {key: (run, job[0]) for (key, job), run in zip(jobs.items(), done)}
    found["self_reads"] = reads.opened()
    # what each run did (as a set: two ranks may race to make the same folder)
    found["effects"] = {key: sorted(set(effects(root / "sealed", job[2]))) for key, job in jobs.items()}
    return found


def test_no_script_reads_its_own_file(runs):
    """Issue 33, hole 3: a snippet that reads its own comment line ran the French translation
    (the Italian block printed nothing, the French one ran a payload). Comments are the only
    difference between the languages' blocks and no tool reads them, so a block behaves
    otherwise in French only by reading its own file: no process opened any of these scripts
    while they ran (inotify on each file, tests/snippets/sealed.py), whatever construct would."""
    assert runs["self_reads"] == []
    for name in RUNS:  # the processes, sockets and files each run made: the same in every language (sealed.py)
        assert all(runs["effects"][(lang, name)] == runs["effects"][(LANGUAGES[0], name)] for lang in LANGUAGES), name


def test_the_languages_extract_different_text(runs):
    """The comments really differ (else this module would prove nothing)."""
    texts = {
        lang: (runs[(lang, "nccl_check.py")][1].parent / "nccl_check.py").read_text(encoding="utf-8")
        for lang in LANGUAGES
    }
    assert len(set(texts.values())) == len(LANGUAGES)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_language_prints_the_same(runs, name):
    outputs = {}
    for lang in LANGUAGES:
        run, _ = runs[(lang, name)]
        assert run.returncode == 0, f"{lang} {name}: {run.stderr[-2000:]}"
        outputs[lang] = sorted(TIMINGS_RE.sub(r"T \1", line) for line in run.stdout.splitlines())
    assert outputs[LANGUAGES[0]], name
    for lang in LANGUAGES[1:]:
        assert outputs[lang] == outputs[LANGUAGES[0]], f"{name}: {lang} printed otherwise than {LANGUAGES[0]}"


def test_every_language_saves_the_same_weights(runs, tmp_path):
    def tensors(state):
        return {key: value for key, value in state.items() if isinstance(value, torch.Tensor)}

    ddp = {
        lang: torch.load(runs[(lang, "train.py")][1] / "out" / "checkpoint.pt", weights_only=True) for lang in LANGUAGES
    }
    fsdp = {}
    for lang in LANGUAGES:
        dcp_to_torch_save(runs[(lang, "train_fsdp2.py")][1] / "out" / "epoch-1" / "model", tmp_path / f"{lang}.pt")
        fsdp[lang] = torch.load(tmp_path / f"{lang}.pt", weights_only=False)
    for states in (ddp, fsdp):
        reference = states[LANGUAGES[0]]
        flat = tensors(reference.get("model", reference))
        assert flat
        for lang in LANGUAGES[1:]:
            other = tensors(states[lang].get("model", states[lang]))
            assert other.keys() == flat.keys() and all(torch.equal(other[k], flat[k]) for k in flat), lang
