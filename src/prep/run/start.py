"""A fresh run: create staging with its first checkpoint already in it.

Staging is assembled under a temporary sibling (the first shard of each split, empty, and
the first checkpoint) and renamed into place, so a staging directory always has a
checkpoint. The shards stay open across the rename and the run continues writing them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from prep.encoders.engine import EngineChoice
from prep.outputs import Output
from prep.recipe import Recipe, RunOptions
from prep.run.committed import RunState, lock_not_checked, make_writers, output_format
from prep.run.inputs import Inputs
from prep.sources import Source
from prep.state.changes import output_versions
from prep.state.checkpoint import RunFacts
from prep.state.provenance import RefreshNote
from prep.stream.order import StreamItem, open_stream

logger = logging.getLogger(__name__)


def run_facts(source: Source, refresh: RefreshNote | None) -> RunFacts:
    """A new run's facts: the source's mtimes (for the next refresh) and what it refreshes."""
    return RunFacts(source_mtimes={f.path: f.mtime_ns for f in source.files}, refresh=refresh)


def start(
    out: Output,
    recipe: Recipe,
    opts: RunOptions,
    inputs: Inputs,
    refresh: RefreshNote | None = None,
    check_lock: Callable[[], None] = lock_not_checked,
) -> tuple[RunState, Iterator[StreamItem]]:
    """Create staging for a new run; returns its state and the stream from the first row.
    ``refresh`` says what changed, for a refresh build; ``check_lock`` raises once the
    output's lock is no longer this run's (checked at every commit)."""
    source, encoder = inputs.source, inputs.encoder
    fmt = output_format(recipe, encoder.identity)
    facts = run_facts(source, refresh)
    files, stream = open_stream(source, recipe)
    writers = make_writers(out.building, recipe, encoder.identity, fmt, out.sealed)
    state = RunState(
        out, recipe, opts, source, encoder, fmt, facts, output_versions(), writers, files,
        check_lock=check_lock,
    )

    def populate(building: Path) -> None:
        for w in writers.values():
            w.start()
            w.sync()
        state.save_checkpoint(building)

    stage(state, populate)
    logger.info(
        "started %s from %s (%d source files)", out.staging, recipe.source, len(source.files)
    )
    return state, stream


def stage(state: RunState, populate: Callable[[Path], None]) -> None:
    """Create the staging directory with ``populate(building)`` (its first files and
    checkpoint), then point the writers at it; on any failure the run's files are closed.
    The engine is chosen meanwhile, in a thread (:class:`EngineChoice`): staging mostly
    waits on the disk, the network or hashing that frees the GIL."""
    state.choice = EngineChoice(state.opts.engine, state.encoder, state.opts.threads).start()
    try:
        state.out.create_staging(populate)
    except BaseException:
        state.close()
        raise
    for w in state.writers.values():
        w.moved_to(state.out.staging)
