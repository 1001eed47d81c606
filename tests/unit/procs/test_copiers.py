"""Copier processes, real ones, writing into real files: arrays on arena pages land at the
offsets they are given, whichever copier takes them and in whatever order; the kernel's own
count of the bytes each process wrote says the copiers wrote them, not this process; an
array off the arenas is left to the caller; a failed write raises its errno here; a killed
copier leaves its writes to the caller; closed copiers end by themselves."""

from __future__ import annotations

import errno
import logging
import multiprocessing
import os
import random
import resource
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prep.procs.arena import PAGE, Arena
from prep.procs.copiers import Copiers, _stop, copiers_for

FORK = multiprocessing.get_context("fork")


def on_arena(arena: Arena | None, array: np.ndarray[Any, Any]) -> Any:
    """``array`` as the main process receives it from a worker: on the arena's pages."""
    assert arena is not None
    got = arena.unpack(arena.pack(array))
    assert arena.place_of(got) is not None
    return got


def written_by(pid: int) -> int:
    """The bytes process ``pid`` has passed to write calls (the kernel's count)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError(f"no wchar in /proc/{pid}/io")


@pytest.fixture
def arenas() -> list[Arena | None]:
    return [Arena(64 * PAGE), None, Arena(64 * PAGE)]


@pytest.fixture
def copiers(arenas: list[Arena | None]) -> Iterator[Copiers]:
    c = Copiers(FORK, arenas, 2)
    yield c
    c.close()


def test_arrays_land_at_their_offsets_written_by_the_copiers(
    arenas: list[Arena | None], copiers: Copiers, tmp_path: Path
) -> None:
    rng = np.random.default_rng(5)
    parts = [rng.integers(0, 65535, size, dtype=np.uint16)
             for size in (PAGE, 3 * PAGE + 7, 5 * PAGE // 2 + 1, 2 * PAGE)]
    received = [on_arena(arenas[0 if k % 2 else 2], p) for k, p in enumerate(parts)]
    offsets = np.concatenate(([0], np.cumsum([p.nbytes for p in parts])[:-1]))
    before = sum(written_by(pid) for pid in copiers.pids())
    order = list(range(len(parts)))
    random.Random(3).shuffle(order)
    path = tmp_path / "ids.bin"
    with open(path, "w+b") as f, ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda k: copiers.write(f.fileno(), received[k], int(offsets[k])),
                             order))
    assert done == [True] * len(parts)
    assert path.read_bytes() == np.concatenate(parts).tobytes()
    total = sum(p.nbytes for p in parts)
    assert sum(written_by(pid) for pid in copiers.pids()) - before == total
    assert copiers.written == total


def test_an_array_off_the_arenas_is_left_to_the_caller(copiers: Copiers, tmp_path: Path) -> None:
    path = tmp_path / "ids.bin"
    with open(path, "w+b") as f:
        assert not copiers.write(f.fileno(), np.arange(PAGE, dtype=np.uint16), 0)
    assert path.read_bytes() == b""
    assert copiers.written == 0


def test_a_failed_write_raises_its_errno_and_the_copier_goes_on(
    arenas: list[Arena | None], copiers: Copiers, tmp_path: Path
) -> None:
    ids = on_arena(arenas[0], np.arange(PAGE, dtype=np.uint16))
    with open("/dev/full", "wb") as full, pytest.raises(OSError) as info:
        copiers.write(full.fileno(), ids, 0)
    assert info.value.errno == errno.ENOSPC
    with open(os.devnull, "rb") as read_only, pytest.raises(OSError) as info:
        copiers.write(read_only.fileno(), ids, 0)
    assert info.value.errno == errno.EBADF
    path = tmp_path / "ids.bin"
    with open(path, "w+b") as f:
        assert copiers.write(f.fileno(), ids, 0)
    assert path.read_bytes() == ids.tobytes()


def test_a_killed_copier_leaves_its_writes_to_the_caller(
    arenas: list[Arena | None], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    copiers = Copiers(FORK, arenas, 1)
    try:
        ids = on_arena(arenas[2], np.arange(PAGE, dtype=np.uint16))
        (pid,) = copiers.pids()
        os.kill(pid, signal.SIGKILL)
        path = tmp_path / "ids.bin"
        with caplog.at_level(logging.WARNING, "prep.procs.copiers"), open(path, "w+b") as f:
            assert not copiers.write(f.fileno(), ids, 0)
            assert not copiers.write(f.fileno(), ids, 0)  # none left: at once
        assert copiers.count == 0
        assert path.read_bytes() == b""
        assert [r.getMessage() for r in caplog.records].count(
            "a copier process ended (killed?); the main process writes the ids it would have "
            "written") == 1
    finally:
        copiers.close()


def test_closed_copiers_end_by_themselves(arenas: list[Arena | None]) -> None:
    copiers = Copiers(FORK, arenas, 3)
    procs = list(copiers._procs)
    copiers.close()
    assert [p.exitcode for p in procs] == [0, 0, 0]  # told to stop, not killed
    assert copiers.cpu_seconds >= 0


def test_closing_wakes_a_thread_waiting_for_a_copier(
    arenas: list[Arena | None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The only copier is busy (held here, as a write under way holds it) and another
    write waits for it when the copiers are closed, as at the end of a run's stream: that
    write is left to its caller at once, not after a poll of the queue (made an hour long
    here: the wait used to last until it ran out, half a second at the end of every run
    that met it)."""
    monkeypatch.setattr("prep.procs.copiers.POLL_SECONDS", 3600.0)
    copiers = Copiers(FORK, arenas, 1)
    held = copiers._take()
    assert held is not None
    idle = copiers._idle = _Watched(copiers._idle)  # type: ignore[assignment]
    ids = on_arena(arenas[0], np.arange(PAGE, dtype=np.uint16))
    got: list[bool] = []
    with open(tmp_path / "ids.bin", "w+b") as f:
        waiting = threading.Thread(target=lambda: got.append(copiers.write(f.fileno(), ids, 0)),
                                   daemon=True)
        waiting.start()
        assert idle.waiting.wait(60), "the write never asked for a copier"
        closing = threading.Thread(target=copiers.close)
        closing.start()
        waiting.join(60)  # at once when woken; an hour when not
        alive = waiting.is_alive()
        _stop(held)  # its copier may end now, and close() with it
        closing.join()
    assert not alive
    assert got == [False]  # no copier: the caller writes these ids


class _Watched:
    """A copier queue that says when a thread is about to wait on it."""

    def __init__(self, queue: Any) -> None:
        self.queue, self.waiting = queue, threading.Event()

    def get(self, timeout: float | None = None) -> Any:
        self.waiting.set()
        return self.queue.get(timeout=timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.queue, name)


def test_a_file_it_cannot_send_is_left_to_the_caller_and_the_copier_stays(
    arenas: list[Arena | None], copiers: Copiers, tmp_path: Path
) -> None:
    """A descriptor that is no open file cannot go with the order: that write is the
    caller's (whose own write then says why), and the copier, which never got the order,
    stays in service and still ends when told (not after the wait for a stuck one)."""
    ids = on_arena(arenas[0], np.arange(PAGE, dtype=np.uint16))
    never_open = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # descriptors stop below it
    assert not copiers.write(never_open, ids, 0)
    assert copiers.count == 2
    path = tmp_path / "ids.bin"
    with open(path, "w+b") as f:
        assert copiers.write(f.fileno(), ids, 0) and copiers.write(f.fileno(), ids, ids.nbytes)
    assert path.read_bytes() == ids.tobytes() * 2
    procs = list(copiers._procs)
    copiers.close()
    assert [p.exitcode for p in procs] == [0, 0]  # told to stop, not killed


def test_one_copier_per_eight_workers() -> None:
    assert [copiers_for(n) for n in (1, 2, 8, 9, 16, 64)] == [1, 1, 1, 2, 2, 8]
