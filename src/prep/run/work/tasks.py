"""Reading, preparing and tokenizing in worker processes; the main process commits in order.

Work is cut into tasks by position (:mod:`prep.run.work.cuts`). A worker reads its rows,
encodes them to UTF-8, computes their splits, tokenizes the documents and sends back the
prepared batches with their ids as one flat buffer per batch. The main process receives
them in task order (``procs.pool.OrderedPool``) and commits them, so the output is the same
for every ``--workers``, ``--threads``, batch size and interruption.

The first task of each file also hashes the file (the source identity); a read error
becomes an error row at its place, raised when the main process visits it, as in
the stream (docs/format.md).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prep.encoders import FlatEncoder
from prep.encoders.engine import (
    EngineChoice,
    EngineSpec,
    build_encoder,
    documents_by_engine,
    reference_of,
)
from prep.encoders.flatids import FlatIds
from prep.errors import IntegrityError, PrepError
from prep.procs.copiers import Copiers
from prep.procs.pool import InProcess, OrderedPool
from prep.procs.readahead import ReadAhead
from prep.recipe import Recipe
from prep.run.committed import RunState
from prep.run.telemetry import Measurements
from prep.run.work.crosscheck import CrossCheck, EngineMismatch, Rechecked
from prep.run.work.cuts import (
    BlockTask,
    ItemsTask,
    RowGroupTask,
    Task,
    item_tasks,
    row_group_tasks,
)
from prep.run.work.sizing import parts_advice, workers_for
from prep.run.work.tokenize import (
    Ids,
    Payload,
    RowByRow,
    in_vocabulary,
    laid_or_ids,
    per_document,
    tokenize,
)
from prep.sources import (
    Source,
    SourceFile,
    block_batches,
    open_identified,
    unit_batches,
    units_of,
)
from prep.split import SPLITS
from prep.state.checkpoint import StreamBase
from prep.stream.order import Batch, Failure, Preparer, StreamItem, batches
from prep.stream.writer import SplitWriter

logger = logging.getLogger(__name__)


@dataclass
class Piece:
    """One prepared batch and what the committing process appends for it (``payload``:
    its documents laid out per split, or its ids, see :func:`laid_or_ids`);
    ``file_sha256`` (file index, digest) on the first piece of a task that hashed its file."""

    batch: Batch
    payload: Payload
    file_sha256: tuple[int, str] | None = None
    checked: Rechecked = field(default_factory=Rechecked)  # what the cross-check re-encoded
    error: PrepError | None = None  # raised before anything of the batch is committed


@dataclass(frozen=True)
class Workers:
    """A run's open worker stream: its prepared batches (shed of their texts) with their
    payloads, in stream order; ``copiers`` write the shards' ids (None: this process does)."""

    batches: Iterable[tuple[Batch, Payload]]
    copiers: Copiers | None


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker needs to build its preparer and encoder (picklable)."""

    recipe: Recipe
    source: Source
    files: list[SourceFile]
    engine: EngineSpec
    batch_size: int
    out: str  # for the cross-check's message
    id_dtype: str  # the shards' (``ShardFormat.dtype_name``): ids are sent, and hashed, as such

    @classmethod
    def of(cls, recipe: Recipe, source: Source, files: list[SourceFile], engine: EngineSpec,
           batch_size: int, out: str, id_dtype: str) -> WorkerSettings:
        """Settings with a plain copy of ``source``: a worker reads the local files the
        main process resolved, never the network (a Hub source holds a session and a lock)."""
        return cls(recipe, source.local_view(), [replace(f) for f in files], engine,
                   batch_size, out, id_dtype)


@dataclass
class _Worker:
    settings: WorkerSettings
    preparer: Preparer
    encoder: FlatEncoder
    files: list[SourceFile] = field(default_factory=list)
    check: CrossCheck | None = None


_state: _Worker | None = None


def worker_of(settings: WorkerSettings, engine: FlatEncoder | None = None) -> _Worker:
    """A worker's state (the engine built here when not given): this process's (``_state``)
    in the main process just before forking, in a spawned worker, or for ``InProcess``."""
    files = [replace(f) for f in settings.files]
    encoder: FlatEncoder = engine if engine is not None else build_encoder(settings.engine)
    check = None
    if settings.engine.checked:
        check = CrossCheck(settings.engine.engine, reference_of(encoder), settings.out)
    return _Worker(settings, Preparer(settings.recipe, files), encoder, files, check)


def init_worker(settings: WorkerSettings) -> None:
    """A worker's start: nothing in a forked one (it inherited the state ``_pool`` set
    before the fork); in a spawned one, size the tokenizer's pool, build the engine."""
    global _state
    if _state is not None:
        return
    if settings.engine.threads is not None:
        os.environ["RAYON_NUM_THREADS"] = str(settings.engine.threads)
    _state = worker_of(settings)


def open_task(source: Source, files: list[SourceFile], columns: tuple[str, str | None],
              task: RowGroupTask | BlockTask
              ) -> tuple[Iterator[StreamItem], tuple[int, str] | None]:
    """In a worker: the task's rows as stream items (a read error ends them with a
    Failure) and, when the task hashes its file, ``(file index, digest)``. The file is
    opened once, checked to be the one the main process identified, hashed (first task of
    a file) and parsed through that descriptor. Raises ``PrepError`` for a file that
    cannot be opened or hashed."""
    f = files[task.index]
    f.local = Path(task.local)  # resolved (for a Hub source, downloaded) by the main process
    fobj = open_identified(source, f, task.signature, task.hash_file)
    sha = (task.index, str(f.sha256)) if task.hash_file else None

    def items() -> Iterator[StreamItem]:
        row = task.start
        try:
            with fobj:
                if isinstance(task, BlockTask):
                    read = block_batches(fobj, f, columns, task.block, task.start, task.stop)
                elif not task.planned:  # the main process could not plan it: say why
                    units_of(fobj, f)
                    raise IntegrityError(
                        f"source file {f.path} could not be read when the run planned it "
                        "but can now: it changed while the run read it. Rerun with --resume "
                        "once nothing writes the source", path=f.path)
                else:
                    read = unit_batches(fobj, f, columns, task.unit, task.first, task.start,
                                        task.stop)
                for texts, splits in read:
                    for k, text in enumerate(texts):
                        yield (text, None if splits is None else splits[k], task.index, row)
                        row += 1
        except PrepError as e:
            yield Failure(e)

    return items(), sha


def task_items(source: Source, files: list[SourceFile], recipe: Recipe, task: Task
               ) -> tuple[Iterator[StreamItem], tuple[int, str] | None]:
    """In a worker: the task's stream items and, when the task hashes its file, ``(file
    index, digest)``; a file that cannot be opened becomes a Failure at its place."""
    if isinstance(task, ItemsTask):
        return iter(task.items), None
    try:
        return open_task(source, files, (recipe.text_column, recipe.split_column), task)
    except PrepError as e:
        return iter([Failure(e)]), None


def prepared(source: Source, files: list[SourceFile], recipe: Recipe, preparer: Preparer,
             task: Task, size: int) -> Iterator[tuple[Batch, tuple[int, str] | None]]:
    """In a worker (a run's or a resume's replay): the task's rows prepared in batches of
    ``size``, the first with ``(file index, digest)`` when the task hashed its file; at
    least one batch (an empty one) per task, so that digest always comes back."""
    items, sha = task_items(source, files, recipe, task)
    sent = False
    for batch in batches(items, preparer, size):
        yield batch, None if sent else sha
        sent = True
    if not sent:
        yield Batch(), sha


def record_digest(files: list[SourceFile], file_sha256: tuple[int, str] | None) -> None:
    """Give the main process's file the digest a worker computed, if it sent one."""
    if file_sha256 is not None:
        index, sha = file_sha256
        files[index].sha256 = sha


def run_task(task: Task) -> Iterator[Piece]:
    """In a worker: :func:`run_task_with` its state."""
    if _state is None:
        raise RuntimeError("worker not initialised")
    return run_task_with(_state, task)


def run_task_with(w: _Worker, task: Task) -> Iterator[Piece]:
    """Read (or take) the task's rows, prepare them in batches, tokenize, with the worker
    state ``w``; at least one piece per task."""
    settings = w.settings
    for batch, sha in prepared(settings.source, w.files, settings.recipe, w.preparer, task,
                               settings.batch_size):
        yield _piece(w, batch, sha) if len(batch) else Piece(batch, RowByRow(FlatIds.of([])), sha)


def _piece(w: _Worker, batch: Batch, sha: tuple[int, str] | None) -> Piece:
    """A prepared batch tokenized, checked and, where it can be, laid out per split
    (:func:`laid_or_ids`): that work is done here, in parallel, and the committing process
    only appends."""
    identity = w.settings.engine.identity
    before = documents_by_engine(w.encoder)
    ids = in_vocabulary(tokenize(w.encoder, batch), batch, identity.vocab_size)
    checked, error = _cross_check(w.check, batch, ids)
    checked.by_engine = {k: n - before.get(k, 0)
                         for k, n in documents_by_engine(w.encoder).items()}
    if isinstance(ids, FlatIds):
        ids = ids.as_dtype(w.settings.id_dtype)
    payload = (RowByRow(ids) if error is not None
               else laid_or_ids(batch, ids, identity, w.settings.recipe))
    return Piece(batch.shed(), payload, sha, checked, error)


def _cross_check(check: CrossCheck | None, batch: Batch, ids: Ids
                 ) -> tuple[Rechecked, PrepError | None]:
    """Run the cross-check on a batch here, in the worker (the reference's cost is spread
    over the workers instead of serialised in the main process): what it re-encoded, and
    the mismatch it found, if any."""
    if check is None or not check.wants(batch):
        return Rechecked(), None
    before = replace(check.done)
    error = None
    try:
        check.check(batch, per_document(ids))
    except EngineMismatch as e:
        error = e
    return check.done.since(before), error


def text_bytes(piece: Piece) -> int:
    """The UTF-8 bytes of the documents in a piece: what ``--recycle-workers`` counts."""
    return sum(piece.batch.doc_sizes)


def _pool(settings: WorkerSettings, workers: int, engine: FlatEncoder, retire: dict[str, Any]
          ) -> OrderedPool[Task, Piece] | InProcess[Task, Piece]:
    """Forked workers that inherit ``engine`` (one tokenizer thread each: nothing to
    inherit from a thread pool), or spawned ones that build their own (``--threads`` > 1),
    each retired as ``retire`` says (see :func:`open_workers`); or none, in this process."""
    global _state
    if workers == 0:  # its own state: nothing global another run here could replace
        return InProcess(functools.partial(run_task_with, worker_of(settings, engine)))
    if (settings.engine.threads or 1) > 1:
        return OrderedPool(run_task, workers, init_worker, (settings,), depth=4, fork=False,
                           **retire)
    # The main process may have used tokenizers' thread pool (probes, cross-check): say
    # that no child uses one, so a forked child neither warns nor waits on absent threads.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    _state = worker_of(settings, engine)
    # init_worker too: where the platform cannot fork, the pool spawns instead
    return OrderedPool(run_task, workers, init_worker, (settings,), depth=4, **retire)


@contextmanager
def worker_stream(settings: WorkerSettings, workers: int, tasks: Iterable[Task],
                  files: list[SourceFile], engine: FlatEncoder, check: Rechecked | None = None,
                  retire: dict[str, Any] | None = None,
                  writers: Iterable[SplitWriter] = (),
                  ) -> Iterator[Workers]:
    """Prepared batches (shed of their texts) with their ``Piece.payload``, in stream order,
    computed by ``workers`` processes (0: this one); a batch the workers' cross-check
    refused raises here, before it is handed on (``check`` adds up what was re-encoded).
    The files a worker hashed get their digest in ``files`` (the main process's list).
    While the workers are up, ``writers`` write the shards' ids through the pool's copiers
    (``prep.procs.copiers``); this process writes them again once they end."""

    def pieces() -> Iterator[tuple[Batch, Payload]]:
        for piece in pool.map(tasks):
            record_digest(files, piece.file_sha256)
            if check is not None:
                check.add(piece.checked)
            if piece.error is not None:
                raise piece.error
            yield piece.batch, piece.payload

    pool = _pool(settings, workers, engine, retire or {})
    writers = list(writers)
    # Leaving early (a stop, an error, the train budget) ends the workers first: the
    # read-ahead thread, waiting on them, then sees them gone and ends at once.
    with ReadAhead(pieces(), depth=4) as ahead, pool:
        for w in writers:
            w.write_through(pool.copiers)
        try:
            yield Workers(ahead, pool.copiers)
        finally:
            for w in writers:
                w.write_through(None)


def open_workers(state: RunState, stream: Iterator[StreamItem], measured: Measurements
                 ) -> AbstractContextManager[Workers]:
    """The run's worker stream (:class:`Workers`, batches in stream order): the engine
    chosen (``--engine``), the tasks planned from the resume point, the cross-check armed
    for an engine other than the reference, a worker retired after ``--recycle-workers``
    bytes of text or holding more than ``--worker-memory``. ``stream`` is read here only
    when the recipe shuffles documents (it needs the whole stream). ``measured`` is told
    the engine, the workers and what the cross-check re-encodes. More workers than one run
    keeps busy are said at once, with the ``--part`` commands (built from the run's command
    line, ``opts.argv``) that would keep them busy."""
    opts, recipe = state.opts, state.recipe
    # a new run chose while it staged; a resume chooses here
    choice = state.choice or EngineChoice(opts.engine, state.encoder, opts.threads)
    spec, engine = choice.result()
    measured.engine = spec.engine
    workers = measured.workers = workers_for(opts.workers, opts.threads, opts.recycle_workers,
                                             sum(f.size for f in state.files))
    tasks: Iterable[Task]
    if recipe.shuffle_buffer == 0:
        tasks = row_group_tasks(state.source, state.files, state.cursor.rows_visited,
                                recipe.max_documents, StreamBase.start(state.base), workers)
    else:
        tasks = item_tasks(stream, opts.batch_size)
    out = str(state.out)
    if spec.checked:  # the workers check; this process adds up what they re-encoded
        measured.cross_check = Rechecked()
    writer = state.writers[SPLITS[0]]
    settings = WorkerSettings.of(recipe, state.source, state.files, spec, opts.batch_size, out,
                                 writer.fmt.dtype_name(writer.vocab_size))
    advice = parts_advice(workers, opts.argv, out, recipe.part) if spec.commit_bound else None
    if advice is not None:
        logger.info("%s", advice)
    retire = {"retire_after": opts.recycle_workers, "weigh": text_bytes,
              "retire_rss": opts.worker_memory}
    return worker_stream(settings, workers, tasks, state.files, engine, measured.cross_check,
                         retire, state.writers.values())
