"""Module-level task functions for worker-process tests (spawned workers import them).
Each is a generator, as ``OrderedPool`` expects."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator


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
