"""How the tool that runs a block reads it: "the same code" is decided by that tool, not by
a highlighter.

Pygments marks the comments that ``hooks/render/comments.py`` translates, and Pygments is not the
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
language pass and rebuild. ``read_ahead(pairs)`` starts the bash readers of several blocks at
once (one process each, a couple of milliseconds apiece), so a page's blocks cost one wait.
"""

from __future__ import annotations

import ast
import io
import json
import shutil
import subprocess
import tokenize
from collections.abc import Callable, Iterable
from typing import TypeVar

import yaml

T = TypeVar("T")

# Pygments names a fence may use (pymdownx.highlight writes them as ``language-NAME``) and file suffixes.
LANGUAGE_NAMES = {
    "python": "python",
    "py": "python",
    "python3": "python",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
    "yaml": "yaml",
    "yml": "yaml",
    "json": "json",
}
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
    key = (language, code)
    if key not in _readings:
        reader = {
            "python": _python,
            "bash": lambda text: _bash_result(_bash_start(text)),
            "yaml": _yaml,
            "json": _json,
        }.get(language)
        if reader is None:
            known = ", ".join(sorted(set(LANGUAGE_NAMES.values())))
            _remember(key, ("", f"no reader for {language!r} code (verify/readers.py knows {known})"))
        else:
            _remember(key, _outcome(reader, code))
    reading, problem = _readings[key]
    if problem:
        raise ReadError(problem)
    return reading


def read_ahead(pairs: Iterable[tuple[str, str]]) -> None:
    """Read every ``(language, code)`` of ``pairs`` into the cache, the bash ones in parallel."""
    started: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    for language, code in pairs:
        if language == "bash" and (language, code) not in _readings and code not in started:
            try:
                started[code] = _bash_start(code)
            except ReadError as exc:
                _remember((language, code), ("", str(exc)))
    for code, process in started.items():
        _remember(("bash", code), _outcome(_bash_result, process))


_readings: dict[tuple[str, str], tuple[str, str]] = {}  # (language, code) -> (reading, problem)


def _remember(key: tuple[str, str], outcome: tuple[str, str]) -> None:
    if len(_readings) > 512:
        _readings.clear()
    _readings[key] = outcome


def _outcome(reader: Callable[[T], str], argument: T) -> tuple[str, str]:
    try:
        return reader(argument), ""
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
        raise ReadError(
            f"not valid Python ({f'line {exc.lineno}: {exc.msg}' if isinstance(exc, SyntaxError) else exc})"
        ) from None


def _bash_start(code: str) -> tuple[subprocess.Popen[bytes], str]:
    """The bash reader of ``code``, started: (process, code). Raises ReadError without bash."""
    bash = shutil.which("bash")
    if bash is None:
        raise ReadError("bash is not installed: it is the reader of shell blocks (bash 5.2 or later)")
    process = subprocess.Popen(
        [bash, "--norc", "--noprofile", "--pretty-print", "/dev/stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"LC_ALL": "C"},
    )
    return process, code


def _bash_result(started: tuple[subprocess.Popen[bytes], str]) -> str:
    process, code = started
    try:
        out, err = process.communicate(code.encode("utf-8"), timeout=BASH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise ReadError(f"bash --pretty-print did not finish in {BASH_TIMEOUT_S} s") from None
    error = err.decode("utf-8", "replace").strip()
    if process.returncode != 0 and "pretty-print" in error and "invalid option" in error:
        raise ReadError("bash 5.2 or later is needed to read shell blocks (bash --pretty-print)")
    if process.returncode != 0 or error:
        raise ReadError(f"bash cannot parse it ({error.splitlines()[-1] if error else f'exit {process.returncode}'})")
    return out.decode("utf-8", "surrogateescape")


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
