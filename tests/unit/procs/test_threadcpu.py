"""Each thread's CPU over a stretch of work (``prep.procs.threadcpu``): a thread that works shows
its own seconds, one that ended keeps what the last sample saw, and the threads plus
``other`` add up to the process's CPU."""

from __future__ import annotations

import hashlib
import threading
import time

from prep.procs.threadcpu import OTHER, ThreadCpu


def work(started: threading.Event, release: threading.Event) -> None:
    data = b"x" * (1 << 20)
    h = hashlib.sha256()
    started.set()
    while not release.is_set():
        for _ in range(8):
            h.update(data)


def test_a_working_thread_and_one_that_ended_are_both_counted() -> None:
    cpu = ThreadCpu()
    process0 = time.process_time()
    started, release = threading.Event(), threading.Event()
    t = threading.Thread(target=work, args=(started, release), name="busy-one")
    t.start()
    started.wait()
    before = 0.0
    while before <= 0.0:  # until its own clock has moved: no wall time involved
        cpu.sample()
        before = cpu.spent().get("busy-one", 0.0)
    release.set()
    t.join()
    spent = cpu.spent()
    process = time.process_time() - process0
    assert spent["busy-one"] >= before > 0.0  # ended: its last reading stays
    assert spent[OTHER] >= 0.0
    assert sum(spent.values()) <= process + 0.01  # clocks read a little apart
    assert "MainThread" in spent
