"""Replaying the committed prefix on resume: the rows a checkpoint says were committed are
read again (never tokenized), fed to the prefix digest and recounted, and must match.

An unshuffled stream is read by worker processes, in the tasks a run plans
(``prep.run.work.cuts``), each checking that it reads the file the main process identified;
the main process only hashes and counts, in order. A shuffled stream is read here (the
shuffle needs the whole stream in one place).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

from prep.errors import IntegrityError, Interrupted, PrepError
from prep.procs.pool import OrderedPool
from prep.recipe import Recipe
from prep.run.resume.claims import ReplayCounts
from prep.run.work.cuts import Task, row_group_tasks
from prep.run.work.tasks import prepared, record_digest
from prep.sources import Source, SourceFile, identify
from prep.split import SPLITS
from prep.state.checkpoint import Checkpoint, StreamBase
from prep.stream.order import DOC, Batch, Cursor, Preparer, StreamItem

logger = logging.getLogger(__name__)

StopRequested = Callable[[], bool]
_SIGNAL_CHECK_ROWS = 4096  # replayed rows between looks at the stop flag


def replay(
    stream: Iterator[StreamItem],
    preparer: Preparer,
    cp: Checkpoint,
    stop_requested: StopRequested,
    final: Path | str,
    parallel: tuple[Source, list[SourceFile], int] | None = None,
    wanted: dict[str, set[int]] | None = None,
) -> tuple[Cursor, ReplayCounts]:
    """Re-read the committed prefix (no tokenizing) and check its digest; returns the
    cursor after it and what the rows recount (empty rows, documents and text bytes per
    split: ``preparer`` carries the checkpoint's recipe, which decides the splits). With
    ``parallel`` (the source, the files in read order and a worker count; only for an
    unshuffled stream) worker processes read the rows and ``stream`` is not read. The
    texts of the documents ``wanted`` (per split, their ordinals) are kept in the counts.
    Raises ``IntegrityError`` when the source changed, ``Interrupted`` on a stop request."""
    rows, base = cp.progress.rows_visited, cp.progress.base
    cursor, counts = base_cursor(base), base_counts(base)
    counts.wanted = wanted or {}
    start = cursor.rows_visited
    t = time.monotonic()
    if parallel is None:
        prepared = _serial(stream, preparer, rows - start)
    else:
        source, files, workers = parallel
        begin = StreamBase.start(base)
        prepared = replay_in_workers(source, files, cp.recipe, begin, rows, workers,
                                     bool(counts.wanted))
    with closing(prepared):  # leaving early ends the workers now, not at garbage collection
        while True:
            if stop_requested():
                raise Interrupted(
                    "stopped on request while replaying the source; nothing was changed.",
                    resume=["--out", str(final), "--resume"],
                )
            batch = next(prepared, None)
            if batch is None:
                break
            _visit(batch, cursor, counts)
    if cursor.rows_visited < rows:
        raise IntegrityError(
            f"the source now ends after {cursor.rows_visited:,} rows, but {rows:,} were "
            "committed; the source changed. Restore it, or start a new run with a new --out"
        )
    if cursor.prefix_sha256 != cp.progress.prefix_sha256:
        raise IntegrityError(
            f"the first {rows:,} rows of the source differ from those the run committed "
            "(prefix digest mismatch); the source changed. Restore it, or start a new run "
            "with a new --out"
        )
    logger.info(
        "replayed %s rows in %.1f s; prefix digest matches",
        f"{rows - start:,}",
        time.monotonic() - t,
    )
    return cursor, counts


def base_cursor(base: StreamBase | None) -> Cursor:
    """A cursor at the start of a stream, or after the published stream it continues."""
    if base is None:
        return Cursor()
    return Cursor(base.rows_visited, base.empty_rows_skipped, base.prefix_sha256)


def base_counts(base: StreamBase | None) -> ReplayCounts:
    """What the rows before a continued stream's start count (they are not replayed)."""
    if base is None:
        return ReplayCounts()
    return ReplayCounts(base.empty_rows_skipped, dict(base.docs), dict(base.text_bytes))


def _serial(
    stream: Iterator[StreamItem], preparer: Preparer, rows: int
) -> Generator[Batch, None, None]:
    """The first ``rows`` items of ``stream``, prepared in batches; a short last batch
    when the stream ends early."""
    left = rows
    while left > 0:
        batch = preparer.prepare(list(itertools.islice(stream, min(_SIGNAL_CHECK_ROWS, left))))
        if len(batch) == 0:
            return
        left -= len(batch)
        yield batch


def _visit(batch: Batch, cursor: Cursor, counts: ReplayCounts) -> None:
    """Feed a replayed batch to the digest and the counts; a row that fails now was
    committed when it read, so the source changed."""
    if batch.errors:
        raise _changed_row(batch.errors[min(batch.errors)])
    cursor.link_all(batch.digests)
    counts.empty_rows += len(batch.kinds) - len(batch.doc_splits)
    texts: list[str | None] = [*batch.docs] or [None] * len(batch.doc_splits)  # if kept
    for split, size, text in zip(batch.doc_splits, batch.doc_sizes, texts, strict=True):
        counts.add_doc(SPLITS[split], size, text)
    if batch.kinds:
        counts.last_split = SPLITS[batch.doc_splits[-1]] if batch.kinds[-1] == DOC else None


def stream_rows(source: Source, files: list[SourceFile], base: StreamBase | None) -> int | None:
    """How many rows the stream over ``files`` (the read order) holds before any budget,
    from each file's units (after the published rows ``base`` continues), counting a file
    whose rows the replay did not (a compressed file read in blocks that the replay did not
    read to its end, or at all: a shuffled stream); None when a file cannot be read."""
    first, total = StreamBase.start(base)
    for f in files[first:]:
        _, units = identify(source, f, count_blocks=True)
        if units is None or any(u.rows < 0 for u in units):  # unreadable, or a stream
            return None
        total += sum(u.rows for u in units)
    return total


def _changed_row(err: PrepError) -> IntegrityError:
    """A committed row that now fails to read: the source changed since it was read."""
    if isinstance(err, IntegrityError):
        return err
    changed = IntegrityError(
        f"{err}\nThis row was committed when the run read it, so the source changed since "
        "the run started. Restore it, or start a new run with a new --out",
        path=err.path,
    )
    changed.__cause__ = err
    return changed


# -- in worker processes -----------------------------------------------------------------


@dataclass
class Replayed:
    """A task's rows, prepared (without their texts: digests and sizes are enough), and on its
    first piece the digest of the file it hashed."""

    batch: Batch
    file_sha256: tuple[int, str] | None = None


_replay_state: tuple[Source, list[SourceFile], Recipe, Preparer, bool] | None = None


def init_replay(source: Source, files: list[SourceFile], recipe: Recipe, texts: bool) -> None:
    """A replay worker's start: nothing in a forked one (it inherited the state); in a
    spawned one (a platform without fork), the state ``replay_in_workers`` set."""
    global _replay_state
    if _replay_state is None:
        _replay_state = (source, files, recipe, Preparer(recipe, files), texts)


def replay_task(task: Task) -> Iterator[Replayed]:
    """In a worker: the task's rows prepared in batches (no tokenizing), the documents'
    texts dropped unless the state asks for them; at least one piece per task."""
    if _replay_state is None:
        raise RuntimeError("worker not initialised")
    source, files, recipe, preparer, texts = _replay_state
    for batch, sha in prepared(source, files, recipe, preparer, task, _SIGNAL_CHECK_ROWS):
        docs = batch.docs
        batch.shed()
        yield Replayed(replace(batch, docs=docs) if texts else batch, sha)


def replay_in_workers(
    source: Source,
    files: list[SourceFile],
    recipe: Recipe,
    start: tuple[int, int],
    rows: int,
    workers: int,
    texts: bool = False,
) -> Generator[Batch, None, None]:
    """Rows up to ``rows`` of the (unshuffled) stream over ``files`` from ``start`` (the
    first file and the rows before it: a published stream this one continues, whose files
    it does not open again; else ``(0, 0)``), prepared in batches by ``workers`` processes,
    in order, with the documents' texts when ``texts``; the files a worker hashed get their
    digest in ``files``."""
    global _replay_state
    _replay_state = None
    state = (source.local_view(), [replace(f) for f in files], recipe, texts)
    init_replay(*state)
    # arena_bytes=0: a replayed batch carries digests and counts, no buffer worth an arena
    with OrderedPool(replay_task, workers, init_replay, state, arena_bytes=0) as pool:
        for piece in pool.map(row_group_tasks(source, files, start[1], rows, start, workers)):
            record_digest(files, piece.file_sha256)
            yield piece.batch
