"""Module-level task functions for worker-process tests (spawned workers import them).
Each is a generator, as ``OrderedPool`` expects."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np


def slow_echo(task: tuple[int, float]) -> Iterator[tuple[int, int]]:
    """Sleep ``task[1]`` seconds, then yield ``(task[0], this worker's pid)``."""
    time.sleep(task[1])
    yield task[0], os.getpid()


def parts(n: int) -> Iterator[tuple[int, int]]:
    """``n`` results for task ``n``: (n, 0), (n, 1), ..."""
    for k in range(n):
        yield n, k


def fail_on_three(n: int) -> Iterator[int]:
    yield n
    if n == 3:
        raise ValueError(f"task {n} failed")


def die_on_two(n: int) -> Iterator[int]:
    if n == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    yield n


def pid(_: object) -> Iterator[int]:
    yield os.getpid()


def failing_init() -> None:
    raise RuntimeError("cannot load the tokenizer")


def numbered(n: int) -> Iterator[tuple[int, int]]:
    """``n`` results for task ``n``, each ``(n, this worker's pid)``."""
    for _ in range(n):
        yield n, os.getpid()


def weight(_: object) -> int:
    return 1


HELD: list[bytes] = []  # what a ``hog`` worker keeps, task after task
HOG_BYTES = 256 << 20  # far above how much a fresh worker's resident size varies


def resident(_: object) -> Iterator[tuple[int, int]]:
    """(this worker's pid, its resident bytes now), holding nothing more."""
    from prep.procs.pool import resident_bytes

    yield os.getpid(), resident_bytes()


def hog(_: object) -> Iterator[tuple[int, int]]:
    """Keep 256 MiB more (written, so resident), then yield (pid, resident bytes)."""
    from prep.procs.pool import resident_bytes

    HELD.append(b"\x01" * HOG_BYTES)
    yield os.getpid(), resident_bytes()


DTYPES = ("uint8", "uint16", "uint32", "int64", "float64", "bool")


def numbered_array(tag: int, dtype: str, n: int) -> np.ndarray[Any, Any]:
    """``n`` values of ``dtype`` that depend on ``tag`` and their position, so a value
    from another array or another place shows."""
    values = np.arange(n, dtype=np.int64) * 2654435761 + tag * 1000003
    if dtype == "bool":
        return (values % 3 == 0).astype(bool)
    if dtype == "float64":
        return values.astype(np.float64) / 7
    return (values % np.iinfo(dtype).max).astype(dtype)


def arrays(task: int) -> Iterator[dict[str, np.ndarray[Any, Any]]]:
    """For each dtype: arrays of no values, a few, one page of bytes, several pages and
    twenty pages (more than a small arena), each ``numbered_array``; then a strided view and
    a Fortran-ordered 2-D array."""
    page = 1 << 16
    for dtype in DTYPES:
        size = np.dtype(dtype).itemsize
        lengths = (0, 100, page // size, (3 * page + 5) // size, 20 * page // size)
        yield {f"{dtype}/{n}": numbered_array(task + n, dtype, n) for n in lengths}
    big = numbered_array(task, "uint16", 8 * page)
    yield {"strided": big[::3], "fortran": np.asfortranarray(big.reshape(512, -1))}


def blocks(task: int) -> Iterator[list[np.ndarray[Any, Any]]]:
    """One to three results per task, of arrays of one to five pages of uint16."""
    for k in range(task % 3 + 1):
        yield [numbered_array(task * 10 + k, "uint16", ((task + k) % 5 + 1) << 15),
               numbered_array(task, "int64", 10)]


def pages_of(tag: int, pages: int) -> np.ndarray[Any, Any]:
    """``pages`` pages of int64 all equal to ``tag``."""
    return np.full(pages << 13, tag, dtype=np.int64)


def pages_then_die(task: int) -> Iterator[np.ndarray[Any, Any]]:
    """Task 0: four pages of its number; any other: this worker dies (SIGKILL)."""
    if task:
        os.kill(os.getpid(), signal.SIGKILL)
    yield pages_of(task, 4)


def pages_of_task(task: int) -> Iterator[np.ndarray[Any, Any]]:
    """Three pages of the task's number."""
    yield pages_of(task, 3)


def pack_on_request(arena: Any, requests: Any, replies: Any) -> None:
    """A process that sends ``arena.pack(pages_of(tag, pages))`` for each ``(tag, pages)``
    it is asked for, until it is sent None."""
    while (request := requests.get()) is not None:
        replies.put(arena.pack(pages_of(*request)))


def unpicklable(_: object) -> Iterator[Any]:
    """1, then a lock (which cannot be pickled), then 3."""
    yield 1
    yield threading.Lock()
    yield 3


def lent(task: tuple[int, Any]) -> Iterator[tuple[int, str, str]]:
    """For a task ``(n, buffer)``: ``(n, what the buffer arrived as, its SHA-256)``."""
    import hashlib

    n, buffer = task
    yield n, type(buffer).__name__, hashlib.sha256(buffer).hexdigest()
