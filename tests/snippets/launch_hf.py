"""Run several launch lines, one after the other, from one launcher process (tests only).

Usage: python launch_hf.py JOBS.json. JOBS.json is a list of ``{"name", "launcher", "args",
"log", "env"}``: ``launcher`` is ``accelerate`` (the words after ``accelerate launch``, through
accelerate's own parser and ``launch_command``, which picks the launcher and starts
torchrun's agent in this process) or ``torchrun`` (the words after ``torchrun``, through
``torch.distributed.run``). Each job's workers write to its ``log`` (stdout and stderr, the
file descriptors they inherit), with ``env`` added to the environment they inherit. Writes ``{name: exit status}`` as JSON on the last line of
stdout.

Why one process: the launchers themselves (accelerate's CLI and torchrun's agent) import
torch and accelerate; once for all lines instead of once per line keeps the rehearsal's CPU
time to the workers' own.
"""

import json
import os
import sys
import traceback


def run_job(job: dict) -> int:
    if job["launcher"] == "accelerate":
        from accelerate.commands.launch import launch_command, launch_command_parser

        launch_command(launch_command_parser().parse_args(job["args"]))
    else:
        from torch.distributed.run import get_args_parser, run

        run(get_args_parser().parse_args(job["args"]))
    return 0


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        jobs = json.load(f)
    saved = os.dup(1), os.dup(2)
    status = {}
    for job in jobs:
        saved_env = dict(os.environ)
        os.environ.update(job.get("env", {}))
        with open(job["log"], "w", encoding="utf-8") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                status[job["name"]] = run_job(job)
            except BaseException:  # a failed launch (ChildFailedError, SystemExit): noted, the next job runs
                traceback.print_exc()
                status[job["name"]] = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.environ.clear()
                os.environ.update(saved_env)
    print(json.dumps(status), flush=True)


if __name__ == "__main__":
    main()
