"""How worker processes start, and how a retired worker is replaced while the run goes on.

A forked worker starts at once with everything the main process loaded (the tokenizer
engine above all). But a fork is only safe from a process whose other threads hold no lock
the child could need (an allocator's, pyarrow's, a logging handler's), and the main process
is such a process only while it sets up, before its reading threads start. Replacements are
needed later, while those threads run. So ``Zygote`` forks one single-threaded process at
that safe point, and that process forks every worker, the first ones and the replacements,
on request: a replacement starts with the main process's state of that moment (the engine
loaded, its caches empty, fresh allocator arenas), at no load cost, whenever it is asked for.

``Spawner`` starts each worker as a fresh interpreter (where fork is not available, or not
wanted because the engine must build its own thread pool): a replacement pays the whole
start again (imports, engine).

Both return ``Handle`` s. Every process started here ignores SIGINT and SIGTERM (the main
process alone decides when to stop) and dies with its parent (``adopt``): the zygote with the
main process, a worker with whoever started it. Linux needs nothing more (the kernel kills
them at their parent's death); elsewhere a watcher notices within a second.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.util
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, ForkProcess, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

from prep.startup import dump_stacks_on_signal, keep_out_unneeded

ORPHAN_CHECK_SECONDS = 1.0
POLL_SECONDS = 0.5
STOP_SECONDS = 5.0

Context = ForkContext | SpawnContext  # what a worker is started in


class Handle(Protocol):
    """A started worker process, as ``multiprocessing.Process`` exposes it."""

    @property
    def pid(self) -> int | None: ...

    def is_alive(self) -> bool: ...

    def kill(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...


class Launcher(Protocol):
    """Starts the worker of a slot: ``target(*args[slot], parent pid)``."""

    def start(self, slot: int) -> Handle: ...

    def close(self) -> None: ...


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(ORPHAN_CHECK_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies (prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux: the watcher still ends it
        pass


def adopt(parent: int, watch: bool = True) -> None:
    """In a child of ``parent``: ignore SIGINT and SIGTERM, dump stacks on SIGUSR1 and keep
    out the modules it does not need (``prep.startup``), and die with the parent (with a
    watcher thread when ``watch``; a process that forks must not have one, and checks
    ``os.getppid()`` itself)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    dump_stacks_on_signal()  # a forked child has these already; a spawned one needs them
    keep_out_unneeded()
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
    if watch:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


class Spawner:
    """Workers started by the main process itself, in ``context`` (spawn, or fork where
    the caller knows it is safe)."""

    def __init__(self, context: Context, target: Callable[..., None], args: list[tuple[Any, ...]],
                 name: str) -> None:
        self._ctx, self._target, self._args, self._name = context, target, args, name

    def start(self, slot: int) -> Handle:
        p = self._ctx.Process(target=self._target, args=(*self._args[slot], os.getpid()),
                              name=f"{self._name}-{slot}", daemon=True)
        p.start()
        return p

    def close(self) -> None:
        """Nothing to end: the caller ends the workers it was handed."""


class _Forked:
    """A worker the zygote forked: not this process's child, so it is watched and signalled
    through a pidfd, which keeps naming that process even after the zygote has reaped it."""

    _fd = -1

    def __init__(self, pid: int) -> None:
        self.pid: int | None = pid
        self._fd = os.pidfd_open(pid)  # the zygote reaps it only after a later request

    def is_alive(self) -> bool:
        return not select.select([self._fd], [], [], 0)[0]

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._fd, signal.SIGKILL)

    def join(self, timeout: float | None = None) -> None:
        select.select([self._fd], [], [], timeout)

    def __del__(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)


class Zygote:
    """A process forked now, which forks the workers (``start``) whenever asked. Linux only
    (pidfds). ``close`` ends it and every worker it forked, and returns once they are reaped.
    Raises ``ChildProcessError`` from ``start`` if the zygote has died."""

    def __init__(self, target: Callable[..., None], args: list[tuple[Any, ...]],
                 name: str) -> None:
        ctx = multiprocessing.get_context("fork")
        self._conn, theirs = ctx.Pipe()
        # Not a daemon: multiprocessing refuses children to a daemonic process.
        self._proc = ctx.Process(target=_zygote, name=f"{name}-zygote",
                                 args=(target, args, theirs, os.getpid(), name))
        self._proc.start()
        theirs.close()
        # Also at exit, before multiprocessing waits for its non-daemon children.
        self._stop = multiprocessing.util.Finalize(self, _stop, (self._proc, self._conn),
                                                   exitpriority=10)

    def start(self, slot: int) -> Handle:
        self._conn.send(slot)
        return _Forked(self._reply())

    def _reply(self) -> int:
        while not self._conn.poll(POLL_SECONDS):
            if not self._proc.is_alive():
                raise ChildProcessError("the process that starts workers has died")
        return self._conn.recv()  # type: ignore[no-any-return]

    def close(self) -> None:
        self._stop()


def _stop(proc: BaseProcess, conn: Connection[int | None, int | None]) -> None:
    """End the zygote: it ends and reaps its workers first, unless it does not answer."""
    if proc.is_alive():
        try:
            conn.send(None)
            while not conn.poll(POLL_SECONDS) and proc.is_alive():
                pass
        except OSError:
            pass
        proc.join(timeout=STOP_SECONDS)
        if proc.is_alive():
            proc.kill()
    proc.join()
    conn.close()


def _zygote(target: Callable[..., None], args: list[tuple[Any, ...]],
            conn: Connection[int | None, int | None], parent: int, name: str) -> None:
    """The zygote's loop: fork the worker of each slot it is sent (replacing that slot's
    previous worker, which has retired), until it is sent None; then end its workers."""
    adopt(parent, watch=False)
    # Objects inherited from here are never collected in a worker: keep the collector off
    # them, so it does not write to (and copy) every page holding one in every worker.
    gc.freeze()
    ctx = multiprocessing.get_context("fork")
    workers: dict[int, ForkProcess] = {}
    while True:
        if not conn.poll(ORPHAN_CHECK_SECONDS):
            if os.getppid() != parent:
                os._exit(1)
            continue
        try:
            slot = conn.recv()
        except EOFError:
            slot = None
        if slot is None:
            break
        retired = workers.pop(slot, None)
        if retired is not None:
            retired.join()
        p = ctx.Process(target=target, args=(*args[slot], os.getpid()),
                        name=f"{name}-{slot}", daemon=True)
        p.start()
        workers[slot] = p
        conn.send(p.pid)
    for p in workers.values():
        p.kill()
    for p in workers.values():
        p.join()
    conn.send(0)
