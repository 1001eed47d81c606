"""Worker processes that run a function over tasks and give the results back in task order.

The main process keeps the order (it commits results as they come back in order), so the
output cannot depend on how many workers there are or which finished first. At most
``depth`` tasks are in flight, which bounds memory.

Workers are ``spawn``ed (never forked: a forked child would inherit a tokenizer's thread
pool without its threads), ignore SIGINT and SIGTERM (the main process alone decides when
to stop, checkpoints, and then ends them), and exit on their own within a second if the
main process dies (SIGKILL leaves no one to end them).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

from prep.errors import PrepError

T = TypeVar("T")
R = TypeVar("R")

ORPHAN_CHECK_SECONDS = 1.0
DIED = (
    "a worker process ended without a result (killed, or out of memory); rerun with "
    "--resume, with fewer --workers if memory is short"
)


class WorkerDied(PrepError):
    """A worker process ended without a result (killed, out of memory)."""


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(ORPHAN_CHECK_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def _worker_init(parent: int, init: Callable[..., None] | None, args: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if init is not None:
        init(*args)


class OrderedPool(Generic[T, R]):
    """``fn(task)`` for each task in ``workers`` spawned processes, results in task order.

    ``fn``, ``init`` and the tasks must be picklable (module-level functions). An exception
    raised by ``fn`` re-raises in the consumer at its task's place; a worker that dies
    raises ``WorkerDied``. Use as a context manager: leaving it ends the workers at once,
    without waiting for tasks in flight."""

    def __init__(
        self,
        fn: Callable[[T], R],
        workers: int,
        init: Callable[..., None] | None = None,
        init_args: tuple[Any, ...] = (),
        depth: int | None = None,
    ) -> None:
        self._fn = fn
        self._depth = depth or 2 * workers
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=(os.getpid(), init, init_args),
        )

    def map(self, tasks: Iterable[T]) -> Iterator[R]:
        """Results of ``tasks`` in order, with at most ``depth`` tasks in flight."""
        pending: deque[Future[R]] = deque()
        it = iter(tasks)
        exhausted = False
        while True:
            while not exhausted and len(pending) < self._depth:
                try:
                    task = next(it)
                except StopIteration:
                    exhausted = True
                    break
                pending.append(self._submit(task))
            if not pending:
                return
            try:
                result = pending.popleft().result()
            except BrokenProcessPool as e:
                raise WorkerDied(DIED) from e
            yield result

    def _submit(self, task: T) -> Future[R]:
        try:
            return self._pool.submit(self._fn, task)
        except BrokenProcessPool as e:
            raise WorkerDied(DIED) from e

    def close(self) -> None:
        """End the workers now: tasks in flight are dropped."""
        procs = list((self._pool._processes or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(timeout=5)

    def __enter__(self) -> OrderedPool[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
