"""Read -> tokenize -> commit, with checkpoints between batches.

Three stages, each in its own thread: read and prepare (Parquet, UTF-8, split hashes),
tokenize (:func:`tokenize_batch`, which releases the GIL), commit (the calling thread).
Committing batch k overlaps tokenizing batch k+1, so the tokenizer never waits for the
writer. :func:`tokenize_batch` is a plain function of an encoder and a batch, returning
numpy id buffers: the stage that may move into worker processes. Only the committing
thread changes the run's state, in stream order.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prep.encoders import Encoder
from prep.errors import InputError, Interrupted, PrepError
from prep.progress import Reporter, Snapshot, silent
from prep.readahead import ReadAhead
from prep.run.finish import finish
from prep.run.state import RunState
from prep.split import SPLITS, TRAIN
from prep.state.manifest import Manifest
from prep.stream import DOC, EMPTY, Batch, Preparer, StreamItem, batches

logger = logging.getLogger(__name__)

StopRequested = Callable[[], bool]
Ids = Any  # a numpy id array, or the InputError of a document that cannot be encoded


def tokenize_batch(encoder: Encoder, batch: Batch) -> list[Ids]:
    """Ids per document of ``batch``. A document the tokenizer cannot encode becomes an
    ``InputError`` in its place, raised when it is committed (so the documents before it
    still count)."""
    docs_utf8 = [b for b, k in zip(batch.utf8, batch.kinds, strict=True) if k == DOC]
    try:
        return list(encoder.encode_batch(batch.docs, docs_utf8))  # type: ignore[arg-type]
    except Exception:  # tokenizers raises a bare Exception: find the document
        ids: list[Ids] = []
        for k, (text, data) in enumerate(zip(batch.docs, docs_utf8, strict=True)):
            try:
                ids.extend(encoder.encode_batch([text], [data]))  # type: ignore[list-item]
            except Exception as e:
                path, row = batch.doc_where[k]
                ids.append(
                    InputError(
                        f"{path} row {row}: the tokenizer cannot encode this document "
                        f"({e}); fix the tokenizer (for example give its model an "
                        "unk_token) or remove the row",
                        path=path,
                        row=row,
                    )
                )
                break
        return ids


def _tokenized(items: Iterable[Batch], encoder: Encoder) -> Iterator[tuple[Batch, list[Ids]]]:
    for batch in items:
        yield batch, tokenize_batch(encoder, batch)


def commit_batch(state: RunState, batch: Batch, ids: list[Ids]) -> bool:
    """Visit the batch's rows in order; True when ``--train-tokens`` is reached."""
    cursor, writers = state.cursor, state.writers
    train_budget = state.recipe.train_tokens
    train = writers["train"]
    d = 0
    for i, kind in enumerate(batch.kinds):
        if kind == DOC:
            if isinstance(ids[d], PrepError):
                raise ids[d]
            data = batch.utf8[i]
            cursor.visit(data)  # type: ignore[arg-type]
            split = batch.doc_splits[d]
            writers[SPLITS[split]].add(ids[d], len(data))  # type: ignore[arg-type]
            d += 1
            if split == TRAIN and train_budget is not None and train.n_tokens >= train_budget:
                return True
        elif kind == EMPTY:
            cursor.visit(batch.utf8[i])  # type: ignore[arg-type]
            cursor.empty_rows_skipped += 1
        else:
            raise batch.errors[i]
    return False


class ProgressReport:
    """Snapshots for the reporter: where this process started, and the totals now."""

    def __init__(self, state: RunState, reporter: Reporter) -> None:
        self.state, self.reporter = state, reporter
        self.total_rows = state.source.total_rows(state.recipe.max_documents)
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
    reporter: Reporter = silent,
) -> None:
    """Commit the stream to the end (or the train budget), checkpointing every
    ``--checkpoint-interval`` seconds and on a stop request (then raises ``Interrupted``)."""
    preparer = Preparer(state.recipe, state.files)
    interval = state.opts.checkpoint_interval
    last_ckpt = time.monotonic()
    report = ProgressReport(state, reporter)
    prepared = ReadAhead(batches(stream, preparer, state.opts.batch_size), depth=2)
    with prepared, ReadAhead(_tokenized(prepared, state.encoder), depth=1) as tokenized:
        for batch, ids in tokenized:
            reached = commit_batch(state, batch, ids)
            for w in state.writers.values():
                w.flush()  # to the page cache every batch; fsync only at checkpoints
            if reached:
                break
            now = time.monotonic()
            if stop_requested():
                state.checkpoint()
                raise Interrupted(
                    f"stopped on request; checkpoint at row {state.cursor.rows_visited:,}. "
                    f"Resume with: prep prepare --out {state.paths.final} --resume"
                )
            if now - last_ckpt >= interval:
                state.checkpoint()
                last_ckpt = now
            report()
    state.finished = True
    state.checkpoint()
    report(final=True)


def discard_if_empty(state: RunState) -> bool:
    """Bad input before anything was committed: remove the empty staging directory so the
    corrected command can simply be run again. True when it is gone."""
    staging = state.paths.staging
    if state.fresh and state.committed_rows == 0:
        shutil.rmtree(staging, ignore_errors=True)
    return not staging.exists()


def execute(
    state: RunState,
    stream: Iterator[StreamItem] | None,
    stop_requested: StopRequested,
    argv: list[str] | None,
    reporter: Reporter = silent,
) -> Manifest:
    """Run to the end of the stream (unless the run already finished), then write the
    manifest into staging (:func:`prep.run.finish.finish`); returns it. On any failure the
    open shards are closed, never sealed; bad input keeps the committed part, and says so."""
    try:
        if not state.finished:
            if stream is None:
                raise RuntimeError("an unfinished run without a stream")
            run_loop(state, stream, stop_requested, reporter)
        return finish(state, argv)
    except InputError as e:
        state.close()
        if discard_if_empty(state):
            raise
        raise e.with_hint(
            f"(the committed part stays in {state.paths.staging}; a fixed source is a new "
            "source: delete that directory and run again)"
        ) from e
    except BaseException:
        state.close()
        raise
