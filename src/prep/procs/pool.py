"""Worker processes that run a generator function over tasks and stream the results back
in task order.

Task ``i`` goes to worker ``i % N`` and the main process reads worker ``i % N``'s results
until that task ends, so the order of results is the order of tasks whatever finishes
first, and the output cannot depend on the number of workers. Each worker's result queue
holds at most ``depth`` results and each worker has at most ``ahead`` tasks queued, which
bounds memory however large a task is. A forked worker sends the large numpy buffers of its
results through its shared-memory ``arena.Arena`` rather than the queue's pipe, so the main
process receives them without copying them, and its copiers (``copiers``) write them into
the shards from there. The other way, a task's large buffers (a compressed file's blocks of
text, wrapped in ``pickle.PickleBuffer``) reach a forked worker through its inbox, an arena
of the same kind, and only their places cross the task pipe.

Workers are forked where the platform allows (they start at once, with everything the
parent loaded: its caller must not have used a thread pool a child would need, see
``fork``) and spawned otherwise. They ignore SIGINT and SIGTERM (the main process alone
decides when to stop, checkpoints, and then ends them) and die with the main process
(Linux: the kernel kills them at its death, so a killed run's lock is released at once;
elsewhere they notice within a second).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.queues import Queue
from typing import Any, Generic, TypeVar

from prep.errors import PrepError
from prep.procs.arena import (
    DEFAULT_BYTES,
    Arena,
    Packed,
    arena_or_none,
    borrow,
    pack,
    unpack,
)
from prep.procs.copiers import Copiers, copiers_or_none
from prep.procs.cores import available_cores
from prep.procs.launch import Context, Handle, Launcher, Spawner, Zygote, adopt
from prep.procs.readahead import DONE, Raised, ReadAhead

T = TypeVar("T")
R = TypeVar("R")

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5
# A worker's inbox: room for the blocks of its tasks in flight (``ahead`` of about 2 MiB)
INBOX_BYTES = 16 << 20
RETIRE_SECONDS = 5.0
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
DIED = (
    "a worker process ended without a result (killed, or out of memory); rerun with "
    "--resume, with fewer --workers if memory is short"
)
_ITEM, _END, _ERROR = 0, 1, 2
_MISSING = object()


class WorkerDied(PrepError):
    """A worker process ended without a result (killed, out of memory)."""


def resident_bytes() -> int:
    """This process's resident set size now, in bytes (Linux ``/proc/self/statm``: one
    small read); 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return 0


@dataclass(frozen=True)
class Retirement:
    """When a worker retires, after the task during which it happened: once the items it
    yielded since it started weigh ``after`` (``weigh(item)``, or one per task without
    ``weigh``), or once its resident memory passes ``rss`` bytes (read after each task)."""

    after: int | None = None
    weigh: Callable[[Any], int] | None = None
    rss: int | None = None

    def due(self, worn: int) -> bool:
        """Whether a worker that has done ``worn`` retires now."""
        if self.after is not None and worn >= self.after:
            return True
        return self.rss is not None and resident_bytes() > self.rss


def _serve(fn: Callable[[T], Iterable[R]], init: Callable[..., None] | None,
           init_args: tuple[Any, ...], retire: Retirement | None,
           tasks: Queue[Packed | None], results: Queue[tuple[int, object]],
           arena: Arena | None, inbox: Arena | None, parent: int) -> None:
    adopt(parent)
    try:
        if init is not None:
            init(*init_args)
    except BaseException as e:  # report it at the first task, in order
        results.put((_ERROR, e))
        return
    weigh = None if retire is None else retire.weigh
    worn = 0
    while True:
        packed = tasks.get()
        if packed is None:
            return
        try:
            task = borrow(packed, inbox)
            for item in fn(task):
                worn += 0 if weigh is None else weigh(item)
                results.put((_ITEM, pack(item, arena)))
        except BaseException as e:
            results.put((_ERROR, e))
            return
        worn += 1 if weigh is None else 0
        if retire is not None and retire.due(worn):
            results.put((_END, True))  # the tasks queued behind this one wait for a successor
            return
        results.put((_END, False))


class _Planner(ReadAhead[T]):
    """Iterates the tasks in a thread, at most ``depth`` ahead; ``take`` hands them out."""

    def __init__(self, tasks: Iterable[T], depth: int) -> None:
        self._error: BaseException | None = None
        self._ended = False
        super().__init__(iter(tasks), max(depth, 1), name="prep-planner")

    def take(self, block: bool) -> T | object:  # a task, or _MISSING
        """The next task; ``_MISSING`` when there is none yet (``block`` False) or none
        left. Raises what the task iterator raised once every task before it was taken."""
        if not self._ended:
            try:
                task = self._queue.get() if block else self._queue.get_nowait()
            except queue.Empty:
                return _MISSING
            if task is not DONE and not isinstance(task, Raised):
                return task
            self._ended = True
            self._error = task.error if isinstance(task, Raised) else None
        if block and self._error is not None:  # nothing in flight any more: its turn
            error, self._error = self._error, None
            raise error
        return _MISSING


class OrderedPool(Generic[T, R]):
    """``fn(task)`` (a generator) for each task in ``workers`` processes; the items it
    yields come back in task order. ``fork`` (the default where the platform has it) or
    not: a forked worker inherits the caller's state, so ``init`` may be None.

    ``retire_after``: a worker retires after the task during which the items it yielded
    since it started reached that weight (``weigh(item)``, or one per task without
    ``weigh``); ``retire_rss``: after a task that leaves it holding more than that many
    resident bytes (:class:`Retirement`). A fresh worker then takes over its slot and the
    tasks queued there. A forked replacement comes from a zygote forked here (see
    ``launch``), so it starts from the caller's state at construction, whatever the caller's
    threads do by then. This bounds what a long run's workers hold (caches, allocator pools
    that keep their peak).

    ``fn``, ``init``, ``weigh`` and the tasks must be picklable (module-level functions).
    An exception raised by ``init`` or ``fn`` re-raises in the consumer at its place; a
    worker that dies raises ``WorkerDied``. Use as a context manager: leaving it ends the
    workers at once, dropping work in flight. The workers start at construction, so they
    load while the caller prepares.

    ``arena_bytes``: the size of each forked worker's shared-memory arena (``arena``; 0: none,
    every result through the pipe); ``inbox_bytes``: of its inbox, for its tasks' large
    buffers (0: none, every task through the pipe)."""

    def __init__(
        self,
        fn: Callable[[T], Iterable[R]],
        workers: int,
        init: Callable[..., None] | None = None,
        init_args: tuple[Any, ...] = (),
        depth: int = 2,
        ahead: int = 2,
        fork: bool = True,
        retire_after: int | None = None,
        weigh: Callable[[R], int] | None = None,
        arena_bytes: int = DEFAULT_BYTES,
        retire_rss: int | None = None,
        inbox_bytes: int = INBOX_BYTES,
    ) -> None:
        can_fork = fork and sys.platform.startswith("linux")
        ctx: Context = (multiprocessing.get_context("fork") if can_fork
                        else multiprocessing.get_context("spawn"))
        self._ahead = ahead
        self._tasks = [ctx.Queue() for _ in range(workers)]
        self._results = [ctx.Queue(maxsize=depth) for _ in range(workers)]
        retire = None
        if retire_after is not None or retire_rss is not None:
            retire = Retirement(retire_after, weigh, retire_rss)
        # Created before any fork, so every worker of a slot, first or successor, maps it.
        self._arenas = [arena_or_none(arena_bytes if can_fork else 0) for _ in range(workers)]
        self._inboxes = [arena_or_none(inbox_bytes if can_fork else 0) for _ in range(workers)]
        # Forked now too, so they map every arena (and write what comes through them).
        self.copiers: Copiers | None = copiers_or_none(ctx, self._arenas, workers)
        args = [(fn, init, init_args, retire, self._tasks[i], self._results[i],
                 self._arenas[i], self._inboxes[i]) for i in range(workers)]
        self._launcher: Launcher
        if can_fork and retire is not None:
            self._launcher = Zygote(_serve, args, "prep-worker")
        else:  # forked from here, now (the only safe time), or spawned
            self._launcher = Spawner(ctx, _serve, args, "prep-worker")
        self._procs: list[Handle] = []
        try:
            self._procs.extend(self._launcher.start(i) for i in range(workers))
        except ChildProcessError as e:
            self.close()
            raise WorkerDied(DIED) from e
        self.retired = 0

    def map(self, tasks: Iterable[T]) -> Iterator[R]:
        """Items of ``fn(task)`` for each task, in task order. Tasks are never None (None
        tells a worker to stop); call ``map`` again only after the last one is drained.

        ``tasks`` is iterated in a planner thread, so a slow step there (a download) never
        holds up the results of tasks already queued; an exception it raises comes out
        after them, in order."""
        n = len(self._procs)
        planner = _Planner(tasks, n * self._ahead)
        queued = done = 0
        lent: deque[Packed] = deque()  # the tasks in flight, as sent
        try:
            while True:
                while queued - done < n * self._ahead:
                    task = planner.take(block=queued == done)
                    if task is _MISSING:
                        break
                    lent.append(pack(task, self._inboxes[queued % n]))
                    self._tasks[queued % n].put(lent[-1])
                    queued += 1
                if queued == done:
                    return
                yield from self._results_of(done % n)
                inbox, ended = self._inboxes[done % n], lent.popleft()
                if inbox is not None:  # the task has ended: its worker is done with them
                    inbox.free(ended)
                done += 1
        finally:
            planner.close()

    def _results_of(self, w: int) -> Iterator[R]:
        """The items of the task worker ``w`` is on, up to its end."""
        while True:
            kind, item = self._get(w)
            if kind == _ITEM:
                yield unpack(item, self._arenas[w])
            elif kind == _END:
                if item:
                    self._replace(w)
                return
            else:
                raise item

    def _get(self, w: int) -> tuple[int, Any]:
        while True:
            try:
                return self._results[w].get(timeout=POLL_SECONDS)  # type: ignore[no-any-return]
            except queue.Empty:
                if not self._procs[w].is_alive():
                    raise WorkerDied(DIED) from None

    def _replace(self, w: int) -> None:
        """Start a successor for worker ``w``, which retired: everything it sent has been
        read, so it is exiting (or is ended now)."""
        old = self._procs[w]
        old.join(timeout=RETIRE_SECONDS)
        if old.is_alive():
            old.kill()
            old.join()
        try:
            self._procs[w] = self._launcher.start(w)
        except ChildProcessError as e:
            raise WorkerDied(DIED) from e
        self.retired += 1
        logger.debug("worker %d retired (pid %s); pid %s takes over", w, old.pid,
                     self._procs[w].pid)

    def shared_buffers(self) -> int:
        """How many buffers came through the workers' arenas so far (the others, in-band)."""
        return sum(a.shared for a in self._arenas if a is not None)

    def pids(self) -> list[int]:
        """The workers' process ids."""
        return [p.pid for p in self._procs if p.pid is not None]

    def close(self) -> None:
        """End the workers now: work in flight is dropped. The copiers end after the
        writes under way."""
        if self.copiers is not None:
            self.copiers.close()
        for p in self._procs:
            if p.is_alive():
                p.kill()
        for p in self._procs:
            p.join(timeout=5)
        self._launcher.close()
        for q in (*self._tasks, *self._results):
            q.cancel_join_thread()
            q.close()

    def __enter__(self) -> OrderedPool[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InProcess(Generic[T, R]):
    """``fn(task)`` for each task in this process, in task order: :class:`OrderedPool`'s
    interface without processes, for work smaller than what starting them costs (forking,
    the queues, the arenas and copiers, then ending them: ~0.05 s of a run that tokenizes
    one document in a millisecond). The caller has set up what ``fn`` needs here."""

    copiers: Copiers | None = None  # the ids are written by the main process

    def __init__(self, fn: Callable[[T], Iterable[R]]) -> None:
        self._fn = fn

    def map(self, tasks: Iterable[T]) -> Iterator[R]:
        for task in tasks:
            yield from self._fn(task)

    def close(self) -> None:
        """Nothing runs beside the caller."""

    def __enter__(self) -> InProcess[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_workers() -> int:
    """One worker per core this process may use (its affinity and its cgroup's quota)."""
    return available_cores()
