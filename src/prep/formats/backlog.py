"""Jobs run in background threads and taken back in the order they were submitted, with a
bound on how much is in flight: what the writes of an open shard's ids
(:mod:`prep.formats.idfile`) and the sealing of rolled-over shards
(:mod:`prep.formats.sealing`) both are.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

R = TypeVar("R")


class Backlog(Generic[R]):
    """Up to ``threads`` jobs at a time; each job has a weight (1, or the bytes it covers),
    and :meth:`submit` first takes back the oldest jobs while the pending weight would pass
    ``limit`` (:meth:`room`; one job, however heavy, always runs). The thread pool starts
    with the first job."""

    def __init__(self, threads: int, name: str, limit: int) -> None:
        self._threads = threads
        self._name = name
        self._limit = limit
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque[tuple[Future[R], int]] = deque()
        self._weight = 0

    def __len__(self) -> int:
        """Jobs submitted and not taken back yet."""
        return len(self._pending)

    def finished(self) -> bool:
        """Whether every job submitted has finished (taken back or not): taking them back
        would not wait."""
        return all(future.done() for future, _ in self._pending)

    def room(self, weight: int) -> Iterator[R]:
        """Take back the oldest jobs, yielding their results in order, while the pending
        weight plus ``weight`` would pass the limit. A failed job raises its error; the
        results yielded before it are the caller's already."""
        while self._pending and self._weight + weight > self._limit:
            yield self.take()

    def drain(self) -> Iterator[R]:
        """Take back every pending job, yielding the results in order (as :meth:`room`)."""
        while self._pending:
            yield self.take()

    def submit(self, weight: int, fn: Callable[..., R], *args: Any) -> None:  # Any: fn's
        """Start ``fn(*args)``, after making room (the results taken back are dropped: go
        through :meth:`room` first to keep them)."""
        for _ in self.room(weight):
            pass
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix=self._name)
        self._pending.append((self._pool.submit(fn, *args), weight))
        self._weight += weight

    def take(self) -> R:
        """The oldest job's result, once it is done (its error raised, the job dropped)."""
        future, weight = self._pending.popleft()
        self._weight -= weight
        return future.result()

    def drop(self) -> list[BaseException]:
        """Wait for every pending job and drop it; returns the errors they raised."""
        errors = []
        while self._pending:
            error = self._pending.popleft()[0].exception()
            if error is not None:
                errors.append(error)
        self._weight = 0
        return errors

    def shutdown(self, cancel: bool = False) -> None:
        """Stop the threads. Without ``cancel`` nothing may be pending; with it the jobs not
        started yet are dropped (the running ones finish first)."""
        if self._pending and not cancel:
            raise RuntimeError(f"{self._name}: jobs still pending")
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
            self._pool = None
        self._pending.clear()
        self._weight = 0
