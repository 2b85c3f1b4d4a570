"""How the tool that runs a block reads it: "the same code" is decided by that tool, not by
a highlighter.

Pygments marks the comments that ``hooks/comments.py`` translates, and Pygments is not the
tool that runs the code: it reads ``x=#y; echo $x`` as an assignment followed by a comment,
bash as an assignment of ``#y`` followed by ``echo``. So two versions of a block (the
default language's and a translation) are the same code when the tool's own reader gives
the same result for both:

- ``python``: ``ast.dump(ast.parse(bytes))`` of the UTF-8 file, after
  ``tokenize.detect_encoding`` says UTF-8 (a coding cookie or a byte-order mark would make
  Python decode the file otherwise; PEP 263);
- ``bash``: ``bash --pretty-print`` (bash 5.2 or later): bash's own parser prints the
  commands it read, without comments, and executes nothing; it runs with an empty
  environment and no start-up files (``BASH_ENV`` would be sourced otherwise);
- ``yaml``: ``yaml.safe_load`` (what Accelerate reads);
- ``json``: ``json.loads`` (what DeepSpeed reads).

``read_as(language, code)`` returns that reading as a string, or raises ``ReadError`` with the
reason the tool refuses the code. Results are cached: the same blocks come back in every
language pass and rebuild.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import shutil
import subprocess
import tokenize

import yaml

# Pygments names a fence may use (pymdownx.highlight writes them as ``language-NAME``) and file suffixes.
LANGUAGE_NAMES = {"python": "python", "py": "python", "python3": "python", "bash": "bash", "sh": "bash", "shell": "bash",
                  "yaml": "yaml", "yml": "yaml", "json": "json"}
SUFFIXES = {".py": "python", ".sh": "bash", ".yaml": "yaml", ".yml": "yaml", ".json": "json"}
BASH_TIMEOUT_S = 10


class ReadError(ValueError):
    """The tool cannot read the code (the message says why), or no reader knows the language."""


def language_of(name: str) -> str | None:
    """The reader for a fence language (``bash``, ``py``...) or a file name (``nccl_check.py``); None if none."""
    lowered = name.lower()
    if lowered in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[lowered]
    return next((language for suffix, language in SUFFIXES.items() if lowered.endswith(suffix)), None)


def read_as(language: str, code: str) -> str:
    """``code`` as the tool of ``language`` reads it (see the module's docstring). Raises ReadError."""
    reading, problem = _read(language, code)
    if problem:
        raise ReadError(problem)
    return reading


@functools.lru_cache(maxsize=256)
def _read(language: str, code: str) -> tuple[str, str]:
    """(reading, "") or ("", the problem)."""
    reader = {"python": _python, "bash": _bash, "yaml": _yaml, "json": _json}.get(language)
    if reader is None:
        return "", f"no reader for {language!r} code (verify/readers.py knows {', '.join(sorted(set(LANGUAGE_NAMES.values())))})"
    try:
        return reader(code), ""
    except ReadError as exc:
        return "", str(exc)


def _python(code: str) -> str:
    data = code.encode("utf-8")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise ReadError(f"Python cannot read its encoding ({exc})") from None
    if encoding != "utf-8":
        raise ReadError(f"Python reads it as {encoding!r}, not UTF-8 (a coding cookie or a byte-order mark)")
    try:
        return ast.dump(ast.parse(data))
    except (SyntaxError, ValueError) as exc:
        raise ReadError(f"not valid Python ({f'line {exc.lineno}: {exc.msg}' if isinstance(exc, SyntaxError) else exc})") from None


def _bash(code: str) -> str:
    bash = shutil.which("bash")
    if bash is None:
        raise ReadError("bash is not installed: it is the reader of shell blocks (bash 5.2 or later)")
    try:
        result = subprocess.run([bash, "--norc", "--noprofile", "--pretty-print", "/dev/stdin"], input=code.encode("utf-8"),
                                capture_output=True, timeout=BASH_TIMEOUT_S, env={"LC_ALL": "C"}, check=False)
    except subprocess.TimeoutExpired:
        raise ReadError(f"bash --pretty-print did not finish in {BASH_TIMEOUT_S} s") from None
    error = result.stderr.decode("utf-8", "replace").strip()
    if result.returncode != 0 and "pretty-print" in error and "invalid option" in error:
        raise ReadError("bash 5.2 or later is needed to read shell blocks (bash --pretty-print)")
    if result.returncode != 0 or error:
        raise ReadError(f"bash cannot parse it ({error.splitlines()[-1] if error else f'exit {result.returncode}'})")
    return result.stdout.decode("utf-8", "surrogateescape")


def _yaml(code: str) -> str:
    try:
        return repr(yaml.safe_load(code))
    except yaml.YAMLError as exc:
        raise ReadError(f"not valid YAML ({str(exc).splitlines()[0]})") from None


def _json(code: str) -> str:
    try:
        return repr(json.loads(code))
    except ValueError as exc:
        raise ReadError(f"not valid JSON ({exc})") from None
