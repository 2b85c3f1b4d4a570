"""The rehearsals' guard against a block that reads its own comments (tests/snippets/sealed.py),
tried on the constructs an attacker would use (issue 33, hole 3: "a snippet that reads its own
comment line runs the French translation"). Each toy block has an Italian and a French text
that differ only in a comment; its payload prints a line when it finds the French comment.
Run as the rehearsals run the guide's blocks (fork_ranks.py from the session's zygote, sealed
sources, the other language's text behind the code objects), every construct is caught: an
open of the file itself (inotify, whatever the path or the process), or, for what reads the
code objects, the two languages' runs printing otherwise or acting otherwise (a file written
beside their folders, which no output shows), which the rehearsals compare. The clean block
passes. The guard does not know these constructs: the list below is the attack,
not the defence."""

from __future__ import annotations

import pytest

from tests.snippets.launch import fork_jobs
from tests.snippets.sealed import SelfReads, effects, seal
from verify.languages import LANGUAGES

pytestmark = pytest.mark.slow

COMMENTS = {"it": "# il commento in italiano", "fr": "# le commentaire en français"}
READS = {  # construct -> how the payload gets its own text
    "open(__file__)": "open(__file__, encoding='utf-8').read()",
    "open(sys.argv[0])": "open(sys.argv[0], encoding='utf-8').read()",
    "pathlib": "__import__('pathlib').Path(__file__).read_text(encoding='utf-8')",
    "linecache": "''.join(__import__('linecache').getlines(__file__))",
    "tokenize": "__import__('tokenize').open(__file__).read()",
    "a copy": "(__import__('shutil').copy(__file__, 'copy.txt'), open('copy.txt', encoding='utf-8').read())[1]",
    "a subprocess": "__import__('subprocess').run(['cat', __file__], capture_output=True, text=True).stdout",
    "inspect the module": "__import__('inspect').getsource(sys.modules['__main__'])",
    "inspect a function": "__import__('inspect').getsource(marker)",
    "a traceback": "''.join(__import__('traceback').format_stack())",
    "a function's source, then a file elsewhere": "__import__('inspect').getsource(marker)",
    "nothing (clean)": "''",
}
ACTS = {  # how the payload acts on what it read: a line on its output, or only a file beside its folder
    "a function's source, then a file elsewhere": "open('../dropped.txt', 'a').write('x') if 'français' in text else None\nprint('plain')",
}
PRINTS = "print('PAYLOAD' if 'français' in text else 'plain')"
PAYLOAD = "\n{comment}\nimport sys\n\n\ndef marker():  {comment}\n    return 0\n\n\ntext = {read}  {comment}\n{act}\n"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory, zygote):
    root = tmp_path_factory.mktemp("self-reads")
    scripts, jobs = {}, []
    for index, (name, read) in enumerate(READS.items()):
        for lang in LANGUAGES:
            folder = root / f"block{index}-{lang}"
            folder.mkdir()
            script = folder / "block.py"
            act = ACTS.get(name, PRINTS)
            script.write_text(PAYLOAD.format(comment=COMMENTS[lang], read=read, act=act), encoding="utf-8")
            scripts[(name, lang)] = script
            jobs.append((folder, 1, script, []))
    other = {
        scripts[(name, lang)]: scripts[(name, LANGUAGES[(i + 1) % len(LANGUAGES)])]
        for name in READS
        for i, lang in enumerate(LANGUAGES)
    }
    sealed = seal(list(scripts.values()), root / "sealed", decoys=other)
    with SelfReads(list(scripts.values())) as every:
        done = fork_jobs(jobs, root, zygote=zygote, env=sealed)
    opened = set(every.opened())
    return {
        key: (run, script in opened, effects(root / "sealed", script))
        for (key, script), run in zip(scripts.items(), done)
    }


@pytest.mark.parametrize("construct", list(READS))
def test_every_way_of_reading_itself_is_caught(guarded, construct):
    runs = {lang: guarded[(construct, lang)] for lang in LANGUAGES}
    for lang, (run, _, _) in runs.items():
        assert run.returncode == 0, (construct, lang, run.stderr[-2000:])
    opened = any(was_opened for _, was_opened, _ in runs.values())
    printed = {lang: run.stdout for lang, (run, _, _) in runs.items()}
    did = {
        lang: tuple(sorted(set(done))) for lang, (_, _, done) in runs.items()
    }  # processes, sockets, files (sealed.py)
    differs = len(set(printed.values())) > 1 or len(set(did.values())) > 1
    if construct == "nothing (clean)":
        assert not opened and not differs and printed[LANGUAGES[0]] == "plain\n"
    else:
        assert opened or differs, f"{construct}: not caught ({printed})"


def test_a_rehearsed_block_sees_no_variable_that_tells_it_is_rehearsed(tmp_path):
    """The loader takes the rehearsal's own settings (``sealed.TELLS``) out of the environment
    while the block runs, so ``os.environ`` is the one a reader's run has plus torchrun's; the
    allow-list of verify/block_names.py refuses the other ways to read them."""
    import os
    import subprocess
    import sys

    from tests.snippets.launch import SEALED

    block = tmp_path / "block.py"
    block.write_text(
        "import os\nprint(sorted(name for name in os.environ if 'REHEARSAL' in name or 'PYTEST' in name"
        " or 'ZYGOTE' in name))\n",
        encoding="utf-8",
    )
    tells = {
        "REHEARSAL_SEALED": str(tmp_path / "none"),
        "REHEARSAL_ARMS": "",
        "PYTEST_CURRENT_TEST": "t.py::t (call)",
        "SCRIPT_ZYGOTE": str(tmp_path / "z.sock"),
    }
    done = subprocess.run(
        [sys.executable, str(SEALED), str(block)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **tells},
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
    direct = subprocess.run(
        [sys.executable, str(block)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **tells},
        check=False,
    )
    assert direct.stdout != "[]\n"  # the control: without the loader the block sees them
