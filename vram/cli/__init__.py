"""Command line: ``python -m vram params|estimate|serve|lora|job|time ...`` (the ``vram`` entry point).

Bad input exits with status 2 and ONE line on stderr (``vram: error: ...``) quoting what
the user typed, never a traceback: numbers are read exactly (no float), a fraction, an
out-of-range or absurd value is refused. ``--json`` prints one JSON object on stdout.

One module per group of commands: ``memory`` (params, estimate, serve, lora), ``job`` (one
"find the GPU" job, as the site's finder answers it) and ``time`` (time per step and run,
its cost, the decoding bound); ``common`` holds what they share (one-line errors, argument
types, sizes in both units). Not part of the bundle the browser runs (only ``vram/*.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .common import OneLineParser, fail
from .job import add_job_command
from .memory import add_memory_commands
from .time import add_time_command

COMMANDS = "{params,estimate,serve,lora,job,time}"


def build_parser() -> OneLineParser:
    """The ``python -m vram`` argument parser (one-line errors, exit 2)."""
    parser = OneLineParser(prog="vram", description="GPU memory calculator for multi-GPU training and serving.")
    sub = parser.add_subparsers(dest="command", required=True, metavar=COMMANDS)
    for command in (*add_memory_commands(sub), add_job_command(sub)):
        command.add_argument("--json", action="store_true", help="print one JSON object")
    add_time_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns 0, or exits 2 with one line on stderr for bad input.

    A reader that closes the pipe early (``| head -1``) ends the command quietly, with
    status 1, as the Python documentation recommends for SIGPIPE (``signal`` module notes).
    """
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
        sys.stdout.flush()
    except ValueError as exc:  # includes ConfigError: bad numbers, files, keys
        fail(str(exc))
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at devnull so that flush cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
