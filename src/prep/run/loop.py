"""Read -> tokenize -> commit, with checkpoints between batches.

Reading, preparing (UTF-8, split hashes) and tokenizing run in worker processes
(:mod:`prep.run.work.tasks`); this process receives their batches in stream order and commits
them (prefix digest, separators, rollover, writes), after the run-time cross-check of a
fast engine (:mod:`prep.run.work.crosscheck`). Only the committing thread changes the run's
state, in stream order, so the output does not depend on ``--workers``.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterator

from prep.errors import InputError, Interrupted, PrepError
from prep.procs.threadcpu import ThreadCpu
from prep.progress import Reporter, Snapshot, silent
from prep.run.committed import RunState
from prep.run.finish import finish
from prep.run.telemetry import Measurements
from prep.run.work.tasks import open_workers
from prep.run.work.tokenize import Docs, Payload, Whole, per_document
from prep.split import SPLITS, TRAIN
from prep.state.checkpoint import StreamBase
from prep.state.manifest import Manifest
from prep.stream.order import DOC, EMPTY, Batch, StreamItem

logger = logging.getLogger(__name__)

StopRequested = Callable[[], bool]
SAMPLE_EVERY = 8  # batches between readings of the threads' clocks (a thread that ends
# in between is counted up to its last reading; the rest of its time goes to "other")


def commit_batch(state: RunState, batch: Batch, payload: Payload) -> bool:
    """Visit the batch's rows in order; True when ``--train-tokens`` is reached.
    ``payload``: the documents laid out per split by a worker (:class:`Whole`, see
    :func:`prep.stream.writer.lay_out_splits`), or their ids (:class:`RowByRow`: a
    ``FlatIds``, or one array per document ending with the ``InputError`` of a document that
    cannot be encoded) for a batch committed row by row."""
    if isinstance(payload, Whole):
        state.cursor.link_all(batch.digests)
        state.cursor.empty_rows_skipped += len(batch.kinds) - len(batch.doc_splits)
        for name, laid in zip(SPLITS, payload.laid, strict=True):
            state.writers[name].add_laid(laid)
        return False
    return _commit_rows(state, batch, per_document(payload.ids))


def _commit_rows(state: RunState, batch: Batch, ids: Docs) -> bool:
    """Visit the batch's rows one by one: raises a row's error at its place, stops at the
    token budget."""
    cursor, writers = state.cursor, state.writers
    train_budget = state.recipe.train_tokens
    train = writers["train"]
    d = 0
    for i, kind in enumerate(batch.kinds):
        if kind == DOC:
            doc = ids[d]
            if isinstance(doc, PrepError):
                raise doc
            cursor.link(batch.digest(i))
            split = batch.doc_splits[d]
            writers[SPLITS[split]].add(doc, batch.doc_sizes[d])
            d += 1
            if split == TRAIN and train_budget is not None and train.n_tokens >= train_budget:
                return True
        elif kind == EMPTY:
            cursor.link(batch.digest(i))
            cursor.empty_rows_skipped += 1
        else:
            raise batch.errors[i]
    return False


def _total_rows(state: RunState) -> int | None:
    """The rows this run's stream holds, capped at ``--max-documents``: a continued stream's
    published rows (from its manifest) and the footers of the files after them only, so an
    incremental refresh opens none of the published files."""
    limit = state.recipe.max_documents
    first, before = StreamBase.start(state.base)
    rows = state.source.total_rows(state.files[first:])
    if rows is None:
        return limit
    return before + rows if limit is None else min(before + rows, limit)


class ProgressReport:
    """Snapshots for the reporter: where this process started, and the totals now."""

    def __init__(self, state: RunState, reporter: Reporter) -> None:
        self.state, self.reporter = state, reporter
        self.total_rows = _total_rows(state)
        self.start = (state.cursor.rows_visited, *self._sizes())

    def _sizes(self) -> tuple[int, int]:
        ws = self.state.writers.values()
        return sum(w.n_tokens for w in ws), sum(w.text_bytes for w in ws)

    def __call__(self, final: bool = False) -> None:
        tokens, text_bytes = self._sizes()
        snap = Snapshot(
            rows=self.state.cursor.rows_visited,
            total_rows=self.total_rows,
            tokens=tokens,
            text_bytes=text_bytes,
            seconds=time.monotonic() - self.state.t0,
            start_rows=self.start[0],
            start_tokens=self.start[1],
            start_bytes=self.start[2],
        )
        self.reporter(snap, final)


def run_loop(
    state: RunState,
    stream: Iterator[StreamItem],
    stop_requested: StopRequested,
    measured: Measurements,
    reporter: Reporter = silent,
) -> None:
    """Commit the stream to the end (or the train budget), checkpointing every
    ``--checkpoint-interval`` seconds and on a stop request (then raises ``Interrupted``);
    ``measured`` is told what the run measured of itself (for the provenance)."""
    interval = state.opts.checkpoint_interval
    last_ckpt = time.monotonic()
    on_seal = state.out.commit_on_seal
    rolled = state.rolled()
    report = ProgressReport(state, reporter)
    with open_workers(state, stream, measured) as workers:
        measured.copiers = workers.copiers  # for their CPU time, once they end
        cpu0 = time.process_time()  # after loading the engine: the per-GB work only
        thread0 = time.thread_time()  # the committing thread's own share of it
        threads = ThreadCpu()  # and every other thread's, while they all live
        for k, (batch, payload) in enumerate(workers.batches, 1):
            reached = commit_batch(state, batch, payload)
            for w in state.writers.values():
                w.flush()  # to the page cache every batch; fsync only at checkpoints
            if reached:
                break
            now = time.monotonic()
            if stop_requested():
                state.checkpoint()
                raise Interrupted(
                    f"stopped on request; checkpoint at row {state.cursor.rows_visited:,}.",
                    resume=[*state.out.resume_args(), "--resume"],
                )
            if now - last_ckpt >= interval or (on_seal and state.sealed_since(rolled)):
                state.checkpoint()
                last_ckpt, rolled = now, state.rolled()
            report()
            if k % SAMPLE_EVERY == 0:
                threads.sample()
        measured.threads_cpu = threads.spent()
    measured.main_cpu = time.process_time() - cpu0
    measured.commit_thread_cpu = time.thread_time() - thread0
    state.finished = True
    state.checkpoint()
    if measured.cross_check is not None:
        measured.cross_check.summary()
    report(final=True)


def discard_if_empty(state: RunState) -> bool:
    """Bad input before anything was committed: remove the empty staging directory so the
    corrected command can simply be run again. True when it is gone."""
    staging = state.out.staging
    if state.fresh and state.committed_rows == 0:
        shutil.rmtree(staging, ignore_errors=True)
    return not staging.exists()


def execute(
    state: RunState,
    stream: Iterator[StreamItem] | None,
    stop_requested: StopRequested,
    reporter: Reporter = silent,
) -> Manifest:
    """Run to the end of the stream (unless the run already finished), then write the
    manifest into staging (:func:`prep.run.finish.finish`); returns it. On any failure the
    open shards are closed, never sealed; bad input keeps the committed part, and says so."""
    measured = Measurements()
    try:
        if not state.finished:
            if stream is None:
                raise RuntimeError("an unfinished run without a stream")
            run_loop(state, stream, stop_requested, measured, reporter)
        return finish(state, measured)
    except InputError as e:
        state.close()
        if discard_if_empty(state):
            raise
        raise e.with_hint(
            f"(the committed part stays in {state.out.staging}; a fixed source is a new "
            "source: delete that directory and run again)"
        ) from e
    except BaseException:
        state.close()
        raise
