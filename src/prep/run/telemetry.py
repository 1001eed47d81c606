"""What a run measured of itself: the provenance's telemetry, never part of a checkpoint.

The committed state (:mod:`prep.run.committed`) is what a checkpoint records and a resume
restores; these are this process's measurements (how the ids were computed, by how many
workers, the CPU it spent), written into ``_PROVENANCE.json`` only. A resume measures
afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.procs.copiers import Copiers
from prep.run.work.crosscheck import Rechecked


@dataclass
class Measurements:
    """This process's measurements of its run, filled in as the run goes (None: not
    measured, as for a resume of a finished run, which commits nothing)."""

    engine: str | None = None  # how the ids were computed
    workers: int | None = None  # worker processes of this process's stream
    cross_check: Rechecked | None = None  # what the cross-check of a fast engine re-encoded
    main_cpu: float | None = None  # CPU seconds of this process while committing
    commit_thread_cpu: float | None = None  # of them, the committing thread's own
    threads_cpu: dict[str, float] | None = None  # each thread's, by name (prep.procs.threadcpu)
    copiers: Copiers | None = None  # that wrote the shards' ids (their CPU, once ended)
