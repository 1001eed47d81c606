"""The first thing every ``prep`` process does: take SIGTERM/SIGINT before anything else.

Importing numpy, pyarrow and tokenizers takes a large part of a second. A signal in that
window would otherwise kill the process by the signal (exit 143 or 130) instead of the
documented exit 75. :func:`guard` is therefore the first statement of every entry point, and
this module and ``prep/__init__.py`` import only the standard library, so nothing of prep's
runs before it. Until a command takes the signals over, nothing has been touched (no lock,
no staging, no file): a signal then ends the process at once, with exit 75 and a line saying
so, whatever the command. A command that writes takes them over (``prep.cli.commands``) before it
touches anything, and from then on a signal is a stop request it acts on at its next safe
point. :func:`settle` and :func:`leave` cover the other end: once the command has returned, a
signal while the process exits must not turn a finished job into death by the signal, and
nothing left running may hold up the exit.

A signal ignored by the parent (``SIG_IGN`` is inherited: a background job of a
non-interactive shell starts with SIGINT ignored) is taken over all the same: a stop request
is never dropped without a word.

:func:`dump_stacks_on_signal` (part of :func:`guard`, and of every worker's start) makes
SIGUSR1 print each thread's Python stack to stderr, and nothing else: a run that seems stuck,
from cron or in a test, says where it is (``kill -USR1 PID``) and goes on. Each started
worker answers it too; a spawned worker that is still starting, and multiprocessing's
resource tracker, do not (the signal would end them), so send it to processes one by one,
never to the process group (docs/operations.md).
"""

from __future__ import annotations

import gc
import os
import signal
import sys

TYPE_CHECKING = False  # typing itself costs milliseconds before the guard (mypy knows this)
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any, NoReturn

SIGNALS = (signal.SIGTERM, signal.SIGINT)
# Modules a dependency loads when it can but prep's own processes never need: gigatoken
# hands each encoded batch back as an awkward Array when awkward imports (a tenth to a third
# of a second of import in every process that encodes, and ~40 MiB), and as numpy views of
# one flat buffer otherwise, which is all prep uses (encoders/gigatoken.py).
UNNEEDED = ("awkward",)
# The variables OpenBLAS (numpy's) reads its thread count from, in its order. numpy starts
# that many threads less one as it imports, and each spins about a tenth of a CPU second
# before it sleeps: prep never multiplies a matrix, and on two cores that spinning costs the
# importing thread about 5% of a small run's time.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
EXIT_STOPPED = 75  # prep.errors.EXIT_TEMPFAIL, which this module must not import (too late)
_taken_over = False  # a command has installed its own handlers: it decides from now on


def _leave_at_once(signum: int, frame: FrameType | None) -> None:
    if _taken_over:  # the command is over (its handlers restored ours): its outcome stands
        return
    name = signal.Signals(signum).name
    message = (f"prep: stopped: {name} before anything was written; nothing was changed. "
               "Rerun the same command\n")
    err = sys.__stderr__
    try:  # said where it can be; the exit code says it anyway
        if err is not None and err.fileno() == 2:
            os.write(2, message.encode())
    finally:
        os._exit(EXIT_STOPPED)


def guard() -> None:
    """From now on, until a command takes them over (:func:`take_over`), SIGTERM and SIGINT
    end the process at once with exit 75 (it has touched nothing); SIGUSR1 dumps stacks."""
    for s in SIGNALS:
        signal.signal(s, _leave_at_once)
    dump_stacks_on_signal()
    keep_out_unneeded()
    no_blas_threads()
    # The imports that follow create the objects the process keeps to its end (modules,
    # classes, functions): the collector would walk them again and again meanwhile, about
    # 6% of their time. imported() turns it back on.
    gc.disable()


def imported() -> None:
    """After an entry point's imports (:func:`guard` held the collector off): what they
    created is set aside for good (``gc.freeze``: never walked again, and never written to
    in a forked child), and the collector runs again for what the command creates."""
    gc.freeze()
    gc.enable()


def no_blas_threads() -> None:
    """Before numpy is imported: OpenBLAS starts no thread of its own (``BLAS_THREADS``),
    unless the user set its thread count. Only entry points call this (through
    :func:`guard`): a library caller's process keeps what it has."""
    if "numpy" not in sys.modules and not any(v in os.environ for v in BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def keep_out_unneeded() -> None:
    """In a process prep owns (an entry point's, or a worker's: a library caller's process
    keeps whatever it imports): the :data:`UNNEEDED` modules become unimportable, unless
    something has imported them already."""
    for name in UNNEEDED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: "not importable"


def take_over(handler: Callable[[int, FrameType | None], None]) -> dict[int, Any]:
    """Install ``handler`` for SIGTERM and SIGINT (also where the parent left them ignored);
    returns the handlers it replaced, for :func:`hand_back`. Once this is called, the start-up
    guard no longer ends the process: the caller has begun work and decides."""
    global _taken_over
    _taken_over = True
    return {s: signal.signal(s, handler) for s in SIGNALS}


def hand_back(old: dict[int, Any]) -> None:
    """Put back what :func:`take_over` replaced. The start-up guard then stays in place but
    does nothing: the command's outcome (published, or an error with its own message) stands."""
    for s, h in old.items():
        signal.signal(s, h)


def dump_stacks_on_signal() -> None:
    """From now on SIGUSR1 writes every thread's Python stack to stderr and the process goes
    on. Where there is no SIGUSR1, nothing.

    A Python handler (:func:`_dump_stacks`), not ``faulthandler``'s C one: that one reads the
    other threads' states without the interpreter's lock and crashed a run (SIGSEGV) when a
    thread started or ended during the dump. The Python handler runs in the main thread as
    soon as it is back in the interpreter: at once when it waits (a lock, a queue, a sleep,
    a read: all interrupted by the signal), after the call when it is inside a long one; for
    a process stuck in native code, ``py-spy dump --native --pid PID`` answers instead."""
    usr1 = getattr(signal, "SIGUSR1", None)
    # The process's own stderr, not sys.stderr (a caller may have replaced that: pytest
    # does), and only while it is file descriptor 2: with 2 closed, a later file could be
    # given that number, and the dump would land in it (a shard).
    err = sys.__stderr__
    if usr1 is None or err is None:
        return
    try:
        if err.fileno() == 2:
            os.fstat(2)
            signal.signal(usr1, _dump_stacks)
    except (OSError, RuntimeError, ValueError):
        return  # never stop a run for it


def _dump_stacks(signum: int, frame: FrameType | None) -> None:
    """Every thread's Python stack, in ``faulthandler``'s layout (the interrupted main
    thread is the ``Current thread``), written to file descriptor 2 in one call."""
    try:
        import threading
        import traceback

        names = {t.ident: t.name for t in threading.enumerate()}
        main = threading.main_thread().ident
        out = []
        for ident, top in sys._current_frames().items():
            where = frame if ident == main and frame is not None else top
            head = "Current thread" if ident == main else "Thread"
            out.append(f"{head} 0x{ident:016x} [{names.get(ident, '?')}] "
                       "(most recent call first):\n")
            out.extend(f'  File "{f.filename}", line {f.lineno} in {f.name}\n'
                       for f in reversed(traceback.extract_stack(where)))
            out.append("\n")
        os.write(2, "".join(out).encode("utf-8", "replace"))
    except Exception:  # a dump must never stop the process it describes
        pass


def settle() -> None:
    """Ignore SIGTERM/SIGINT from now on: the command has finished and its exit code is
    known. Python resets its own handlers to the default while it shuts down, so without this a
    signal in the last instants (after publishing) would kill the process (exit 143 or 130)."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)


def leave(code: int) -> NoReturn:
    """End a command-line process with ``code`` once its command has returned, without the
    interpreter's shutdown: :func:`settle`, flush the log handlers and the standard streams,
    then ``os._exit``.

    By then the job is done: every file it wrote is fsynced (the commit protocol), the lock
    is released and every worker ended. What the shutdown would still run (joining threads,
    exit handlers, the static destructors of C++ libraries) can only hang: a stopped run
    printed its last line and never exited when a pyarrow I/O thread, stopped in the middle
    of a read by the finalizing interpreter, left pyarrow's thread pool waiting forever in
    its destructor (issue 23). Only the entry points call this: ``prep.prepare()`` returns
    to its caller, whose process exits as it will."""
    settle()
    logging = sys.modules.get("logging")  # imported by the command if it logged at all
    if logging is not None:
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # closed or broken: nothing more can be said there
            pass
    os._exit(code)
