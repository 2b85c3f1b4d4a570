"""One worker of a launch, forked from the zygote instead of importing its stack (tests only).

Usage: the same as ``record_hf.py`` (``forked_worker.py RECORD_DIR SCRIPT [ARGS...]``), with
``HF_ZYGOTE`` in the environment: the path of the socket of ``zygote.py``. Sends this
process's argv (``record_hf.py`` in place of this file), environment, working directory and
standard streams to the zygote, which forks a child that runs ``record_hf.main()`` as this
process; waits for its exit status and exits with it. A SIGTERM or SIGINT from the launcher
(torchrun stops every worker when one fails) is passed on to the child. Imports only the
standard library. A zygote that goes away before the status exits 1.
"""

import array
import json
import os
import signal
import socket
import sys
from pathlib import Path

RECORD_HF = Path(__file__).with_name("record_hf.py")


def main() -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(os.environ["HF_ZYGOTE"])
    request = {"argv": [str(RECORD_HF), *sys.argv[1:]], "env": dict(os.environ), "cwd": os.getcwd()}
    conn.sendmsg([json.dumps(request).encode() + b"\n"],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    replies = conn.makefile("r", encoding="utf-8")
    child = json.loads(replies.readline())["pid"]

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    line = replies.readline()
    return json.loads(line)["exit"] if line else 1


if __name__ == "__main__":
    sys.exit(main())
