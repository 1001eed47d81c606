"""Module-level task functions for worker-process tests (spawned workers import them)."""

from __future__ import annotations

import os
import signal
import time


def slow_echo(task: tuple[int, float]) -> tuple[int, int]:
    """Sleep ``task[1]`` seconds, then return ``(task[0], this worker's pid)``."""
    time.sleep(task[1])
    return task[0], os.getpid()


def fail_on_three(n: int) -> int:
    if n == 3:
        raise ValueError(f"task {n} failed")
    return n


def die_on_two(n: int) -> int:
    if n == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return n


def pid(_: object) -> int:
    return os.getpid()
