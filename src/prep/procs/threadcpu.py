"""CPU seconds spent by each thread of this process over a stretch of work: how the main
process's serial share is measured (``_PROVENANCE.json``'s ``main_threads_cpu_seconds``).

Each live Python thread's own CPU clock (``pthread_getcpuclockid``) is read at the start, at
every :meth:`ThreadCpu.sample` (the committing loop takes one every
``prep.run.loop.SAMPLE_EVERY`` batches: a few microseconds each) and at the end; a thread
that ended keeps its last reading. What no reading saw (the last instants of an ended
thread, threads Python does not know) is ``other``: the process's CPU time less the
threads named.
"""

from __future__ import annotations

import threading
import time

OTHER = "other"  # threads that ended in between, and threads Python does not know


def _clocks() -> dict[tuple[int, str], float]:
    """(thread ident, name) -> CPU seconds, for every live Python thread whose clock this
    platform can read."""
    out = {}
    for t in threading.enumerate():
        if t.ident is None:
            continue
        try:
            out[(t.ident, t.name)] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except (AttributeError, OSError):  # not POSIX, or it ended just now
            continue
    return out


class ThreadCpu:
    """Started at construction; :meth:`spent` gives each thread's CPU seconds since then."""

    def __init__(self) -> None:
        self._start = _clocks()
        self._last = dict(self._start)
        self._process = time.process_time()

    def sample(self) -> None:
        """Read every live thread's clock again."""
        self._last.update(_clocks())

    def spent(self) -> dict[str, float]:
        """Thread name -> CPU seconds since the start (threads of one name, one after the
        other, added up), and :data:`OTHER`."""
        self.sample()
        out: dict[str, float] = {}
        for (ident, name), last in self._last.items():
            out[name] = out.get(name, 0.0) + last - self._start.get((ident, name), 0.0)
        total = time.process_time() - self._process
        out[OTHER] = max(0.0, total - sum(out.values()))
        return out
