"""Resumes without the interpreter's start-up: this process imports prep once, then forks a
fresh child for each command it reads (a JSON line ``{"argv": [...], "stderr": PATH}`` on
stdin) and answers its exit code (a JSON line). The child is what ``scripts/prepare.py``
(``argv[0] == "prepare"``) or ``python -m prep`` does, from the start-up guard to its exit
code, in a process of its own: its workers, signals and descriptors are its own. A crash
state costs its resume's own work only, not a second of imports (hundreds of states per
recorded run). Single-threaded, so that forking it is safe.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback

# Everything a run imports, once here, inherited by every child: gigatoken's import of
# awkward alone is seconds, and each of hundreds of resumes would pay it again.
import awkward  # noqa: F401
import gigatoken  # noqa: F401
import huggingface_hub  # noqa: F401
import numpy  # noqa: F401
import pyarrow.parquet  # noqa: F401
import tokenizers  # noqa: F401

import prep.api
import prep.cli.commands
import prep.encoders.gigatoken
import prep.merge
import prep.run.lifecycle
import prep.run.work.tasks
from prep.startup import guard, imported, settle

if threading.active_count() != 1:  # a fork would copy a lock some thread holds
    raise SystemExit(f"the fork server must be single-threaded: {threading.enumerate()}")


def child(argv: list[str], stderr: str) -> int:
    fd = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    try:
        guard()
        imported()  # as the entry points do once their imports are done (all are, here)
        commands = prep.cli.commands
        code = commands.run_prepare(argv[1:]) if argv[0] == "prepare" else commands.main(argv)
        settle()
    except BaseException:
        traceback.print_exc()
        code = 70
    sys.stderr.flush()
    return code


def serve() -> None:
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os._exit(child(req["argv"], req["stderr"]))
        _, status = os.waitpid(pid, 0)
        print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)


if __name__ == "__main__":
    serve()
