"""The guide's launch lines as bash reads them: plain words, by allow-list (tests only).

The rehearsals read the command lines of the shell snippets they run (``launch/accelerate.sh``,
``launch/configs.sh``, ``launch/two_machines.sh``, ``checkpoints/to_hf.sh``) as words and start
those words themselves; the reader pastes the same lines into bash. Python's ``shlex`` is not
bash: it leaves ``$(…)`` and backticks as text, reads ``;`` and ``|`` as part of a word, and a
test that joins ``\\``-newline before splitting reads a comment ending in ``\\`` as going on
over the next line, which bash runs. So a line like
``… train_hf.py --lora --run_name "$(curl … | sh)"`` passed the Hugging Face rehearsal (the
Trainer takes any run name) and ran ``curl`` in the reader's shell.

``command_lines(path)`` is the one reader: it returns the words of each command line only when
every word is made of characters bash gives no meaning to (``PLAIN``: letters, digits and
``_ . / = : , + @ % -``), or is a ``$NAME`` the guide asks the reader to set (``PLACEHOLDERS``),
and the line starts with a command of ``COMMANDS`` (no ``NAME=value`` prefix); a line continues
only with `` \\`` at its end, outside a comment. For such lines bash's words are these words
(no quoting, expansion, globbing, operator or assignment is left to differ), and the function
checks that ``shlex`` agrees. Anything else raises ``ShellLineError`` naming the file and line.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

PLAIN = r"[A-Za-z0-9_./=:,+@%-]"
PLACEHOLDERS = frozenset({"MASTER_IP"})  # the first machine's address (two_machines.sh)
COMMANDS = frozenset({"accelerate", "torchrun", "python"})
WORD_RE = re.compile(rf"(?:{PLAIN}|\$[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_]))+")
PLACEHOLDER_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
BLANKS_RE = re.compile(r"[ \t]+")  # what separates words to bash (any other space is part of a word)
COMMENT_RE = re.compile(r"(?:^|(?<=[ \t]))#")  # bash: a # that starts a word starts a comment


class ShellLineError(ValueError):
    """A line of a rehearsed shell snippet that bash may read otherwise than as plain words."""


def _split_comment(line: str) -> tuple[str, str]:
    match = COMMENT_RE.search(line)
    return (line, "") if match is None else (line[: match.start()], line[match.start() :])


def command_lines(path: Path) -> list[list[str]]:
    """The words of each command line of ``path`` (module docstring), in order. Raises
    ShellLineError naming ``path`` and the line."""
    text = path.read_text(encoding="utf-8")
    commands: list[list[str]] = []
    words: list[str] = []
    start = 0
    for number, line in enumerate(text.split("\n"), start=1):
        where = f"{path.name}:{number}"
        code, comment = _split_comment(line)
        if comment.endswith("\\"):
            raise ShellLineError(
                f"{where}: a comment ending in a backslash (bash ends it at the line's end; "
                "a reader that joins lines hides the next one)"
            )
        continued = code.endswith("\\")
        if continued:
            if comment or not code[:-1].endswith((" ", "\t")):
                raise ShellLineError(f"{where}: a line continues only with ' \\' at its very end")
            code = code[:-1]
        line_words = BLANKS_RE.split(code.strip(" \t")) if code.strip(" \t") else []
        for word in line_words:
            if not WORD_RE.fullmatch(word):
                raise ShellLineError(
                    f"{where}: {word!r} is not a plain word to bash (allowed: letters, digits, "
                    f"'_./=:,+@%-' and ${', $'.join(sorted(PLACEHOLDERS))}: tests/snippets/shell_words.py)"
                )
            for name in PLACEHOLDER_RE.findall(word):
                if name not in PLACEHOLDERS:
                    raise ShellLineError(f"{where}: ${name} is not a placeholder the guide asks the reader to set")
        if not words:
            start = number
        words += line_words
        if continued:
            continue
        if words:
            if words[0] not in COMMANDS:
                raise ShellLineError(
                    f"{path.name}:{start}: the line starts with {words[0]!r}, not one of "
                    f"{', '.join(sorted(COMMANDS))} (a NAME=value prefix changes what runs)"
                )
            commands.append(words)
        words = []
    if words:
        raise ShellLineError(f"{path.name}:{start}: the last line continues past the end of the file")
    joined = "\n".join(" ".join(words) for words in commands)
    assert [shlex.split(line, comments=True) for line in joined.split("\n")] == commands, path  # shlex agrees
    return commands
