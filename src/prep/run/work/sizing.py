"""How many workers one run keeps busy, and what to run instead on a machine with more cores.

Each thread of a run's main process (committing, receiving the workers' results, handing
over the writes) does a fixed amount of CPU work per GB of text whatever the number of
workers; each worker does a fixed amount too (the copier processes that write the ids,
one per 8 workers, grow with them). A run therefore keeps about ``WORKER_S_PER_GB /
SERIAL_S_PER_GB`` workers busy with the fast engine, ``SERIAL_S_PER_GB`` being the busiest
of those threads' (both figures measured by ``benchmarks/workers.py``, real text, GPT-2:
docs/performance.md); past that, more workers wait for that thread. ``--part I/N`` runs
(independent processes, each with its own committing thread, merged by ``prep merge``) use
the rest of the machine.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence

from prep.partition import argv_without
from prep.procs.pool import default_workers

WORKER_S_PER_GB = 9.5  # one worker's CPU seconds per GB of text (gigatoken, GPT-2)
SERIAL_S_PER_GB = 0.17  # the main process's busiest thread (the committing one)
KEPT_BUSY = int(WORKER_S_PER_GB / SERIAL_S_PER_GB)

_DROPPED = ("--workers", "--part")  # options the advised command sets itself (and --resume)
# A source this small (its files' bytes in all, compressed: a few hundred documents) is
# tokenized in the main process when --workers is not given: one core does it in a few
# hundredths of a second, about what starting and ending worker processes costs.
IN_PROCESS_BYTES = 256 << 10


def workers_for(asked: int | None, threads: int | None, recycle: int | None,
                source_bytes: int) -> int:
    """How many worker processes a run starts: ``--workers`` (``asked``), else one per core
    the process may use, or none (0: it tokenizes itself) for a source of at most
    ``IN_PROCESS_BYTES`` as stored, with one tokenizer thread (a pool of its own needs a
    worker) and no ``--recycle-workers`` (workers to recycle were asked for)."""
    if asked is not None:
        return asked
    if (threads or 1) == 1 and recycle is None and source_bytes <= IN_PROCESS_BYTES:
        return 0
    return default_workers()


def parts_advice(workers: int, argv: Sequence[str] | None, out: str,
                 part: str | None = None, kept_busy: int = KEPT_BUSY) -> str | None:
    """The log line for a run of ``workers`` workers that cannot keep them all busy (None
    when it can): how many it keeps busy, and the ``--part`` commands that would use all of
    them, built from the run's own ``argv`` (None: the library, not a command line)."""
    if workers <= kept_busy:
        return None
    said = (f"--workers {workers}: one run keeps about {kept_busy} workers busy (the busiest "
            f"thread of its main process does ~{SERIAL_S_PER_GB} CPU s per GB of text, a "
            f"worker ~{WORKER_S_PER_GB}); ")
    if part is not None:
        return said + f"this part ({part}) could be split into more parts (--part I/N)"
    parts = math.ceil(workers / kept_busy)
    each = math.ceil(workers / parts)
    if argv is None:
        return said + (f"to use {workers} cores, run {parts} parts side by side "
                       f"(--part I/{parts} --workers {each}, I = 0..{parts - 1}), then "
                       f"prep merge {shlex.quote(out)}")
    options = " ".join(shlex.quote(a) for a in argv_without(argv, _DROPPED, ("--resume",)))
    return said + (f"to use {workers} cores, run {parts} parts side by side, then merge "
                   f"them: for i in $(seq 0 {parts - 1}); do prep prepare {options} "
                   f"--part $i/{parts} --workers {each} & done; wait; "
                   f"prep merge {shlex.quote(out)}")

