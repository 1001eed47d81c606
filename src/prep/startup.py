"""The first thing a ``prepare`` process does: catch SIGTERM/SIGINT before the heavy imports.

Importing numpy, pyarrow and tokenizers takes a large part of a second. A signal in that
window would otherwise kill the process by the signal (exit 143 or 130) instead of the
documented exit 75. :func:`guard` records such signals (stdlib only, so it is cheap to
import); the CLI installs its real handlers and then :func:`take_pending` hands over what
arrived in between, so no signal is lost. :func:`settle` covers the other end: once the
command has returned, a signal while the interpreter exits must not turn a finished job into
death by the signal.

:func:`dump_stacks_on_signal` (part of :func:`guard`, and of every worker's start) makes
SIGUSR1 print each thread's Python stack to stderr, and nothing else: a run that seems stuck,
from cron or in a test, says where it is (``kill -USR1 PID``) and goes on. Each started
worker answers it too; a spawned worker that is still starting, and multiprocessing's
resource tracker, do not (the signal would end them), so send it to processes one by one,
never to the process group (docs/operations.md).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_pending: list[int] = []


def _record(signum: int, frame: FrameType | None) -> None:
    _pending.append(signum)


def guard() -> None:
    """Record SIGTERM/SIGINT until the CLI's handlers take over; SIGUSR1 dumps stacks."""
    for s in SIGNALS:
        signal.signal(s, _record)
    dump_stacks_on_signal()


def dump_stacks_on_signal() -> None:
    """From now on SIGUSR1 writes every thread's Python stack to stderr (``faulthandler``,
    which does it from the signal handler itself, so even a process whose threads are all
    blocked answers) and the process goes on. Where there is no SIGUSR1, nothing."""
    usr1 = getattr(signal, "SIGUSR1", None)
    # The process's own stderr, not sys.stderr (a caller may have replaced that: pytest
    # does), and only while it is file descriptor 2: with 2 closed, a later file could be
    # given that number, and the dump would land in it (a shard).
    err = sys.__stderr__
    with contextlib.suppress(OSError, RuntimeError, ValueError):  # never stop a run
        if usr1 is not None and err is not None and err.fileno() == 2:
            os.fstat(2)
            faulthandler.register(usr1, file=err, all_threads=True)


def take_pending() -> list[int]:
    """Signals recorded by :func:`guard` so far (call after installing the real handlers,
    so that any later signal reaches those)."""
    taken = list(_pending)
    _pending.clear()
    return taken


def settle() -> None:
    """Ignore SIGTERM/SIGINT from now on: the command has finished and its exit code is
    known. Python resets its own handlers to the default while it shuts down, so without this a
    signal in the last instants (after publishing) would kill the process (exit 143 or 130)."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
