"""One run over a staging directory: start fresh or verify-and-restore, then stream,
tokenize and write with checkpoints, and finish by writing the manifest into staging.

Commit points are between batches only: every split's open file is fsynced, then the
checkpoint is replaced atomically. Counts and the prefix digest advance as rows are
committed, never as they are read ahead, so the output does not depend on batch size,
threads, checkpoint interval or interruptions.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from hashlib import sha256
from pathlib import Path
from typing import Any

from prep import checkpoint as ckpt
from prep.binfile import BinWriter
from prep.checkpoint import Checkpoint, Progress, RunFacts
from prep.encoders import Encoder, load_encoder
from prep.errors import InputError, IntegrityError, Interrupted, PrepError
from prep.fsio import fsync_dir
from prep.manifest import (
    SplitTotals,
    build_manifest,
    build_provenance,
    write_manifest,
    write_provenance,
)
from prep.progress import Reporter, Snapshot, silent
from prep.publish import OutputPaths, create_staging, write_failure
from prep.readahead import ReadAhead
from prep.recipe import Recipe, RunOptions
from prep.resume import (
    check_recipe,
    check_source,
    check_tokenizer,
    check_versions,
    output_versions,
    unnamed_files,
    verify_files,
)
from prep.sources import Source, count_rows, hash_and_check, resolve_source
from prep.split import SPLITS, TRAIN
from prep.stream import (
    DOC,
    EMPTY,
    Batch,
    Cursor,
    Failure,
    Preparer,
    batches,
    document_stream,
    ordered_files,
)
from prep.writer import SplitState, SplitWriter

logger = logging.getLogger(__name__)

StopRequested = Callable[[], bool]


def _source_json(source: Source) -> dict[str, Any]:
    return {
        "kind": source.kind,
        "uri": source.uri,
        "root": source.root,
        "cwd": source.extra.get("cwd", os.getcwd()),
        "revision": source.revision,
        "files": [f.identity() for f in source.files],
    }


def _load_encoder(opts: RunOptions, recipe: Recipe, revision: str | None = None) -> Encoder:
    return load_encoder(
        recipe.tokenizer,
        doc_sep_id=recipe.doc_sep_id,
        no_doc_sep=recipe.no_doc_sep,
        tokenizer_id=recipe.tokenizer_id,
        token=opts.token,
        revision=revision,
        threads=opts.threads,
    )


def _tokenize(batches: Iterable[Batch], encoder: Encoder) -> Iterator[tuple[Batch, list[Any]]]:
    """Ids per document. A document the tokenizer cannot encode becomes an ``InputError`` in
    its place, raised when it is visited (so the documents before it still count)."""
    for batch in batches:
        docs_utf8 = [b for b, k in zip(batch.utf8, batch.kinds, strict=True) if k == DOC]
        ids: list[Any]
        try:
            ids = encoder.encode_batch(batch.docs, docs_utf8)  # type: ignore[arg-type]
        except Exception:  # tokenizers raises a bare Exception: find the document
            ids = []
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
        yield batch, ids


@dataclass
class Job:
    """One run over a staging directory, fresh or restored."""

    paths: OutputPaths
    recipe: Recipe
    opts: RunOptions
    source: Source
    encoder: Encoder
    stop_requested: StopRequested
    argv: list[str] | None
    run_facts: RunFacts
    cursor: Cursor = field(default_factory=Cursor)
    finished: bool = False
    fresh: bool = True
    writers: dict[str, SplitWriter] = field(default_factory=dict)
    reporter: Reporter = silent
    total_rows: int | None = None
    _start: tuple[int, int, int] = (0, 0, 0)
    _stream: Iterator[Any] | None = None
    _final_digest: str | None = None  # a finished stream's digest, from the checkpoint
    versions: dict[str, str] = field(default_factory=lambda: output_versions())
    _committed_rows: int = 0  # rows of the last checkpoint this job wrote
    _t0: float = field(default_factory=time.monotonic)

    # -- starting ---------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        paths: OutputPaths,
        recipe: Recipe,
        opts: RunOptions,
        stop_requested: StopRequested,
        argv: list[str] | None,
        *,
        source: Source | None = None,
        refresh: dict[str, Any] | None = None,
    ) -> Job:
        """Resolve the source (unless given) and tokenizer, then create staging with its
        first checkpoint. ``refresh`` says what changed, for a refresh build."""
        if source is None:
            source = resolve_source(recipe.source, opts.token)
        source.extra["cwd"] = os.getcwd()
        encoder = _load_encoder(opts, recipe)
        facts = RunFacts(source_mtimes={f.path: f.mtime_ns for f in source.files}, refresh=refresh)
        job = cls(paths, recipe, opts, source, encoder, stop_requested, argv, facts)
        job._make_writers(paths.building)

        def populate(building: Path) -> None:
            for w in job.writers.values():
                w.start()
                w.sync()
            job._save_checkpoint(building)
            for w in job.writers.values():
                w.close()

        create_staging(paths, populate)
        logger.info(
            "started %s from %s (%d source files)", paths.staging, recipe.source, len(source.files)
        )
        job._make_writers(paths.staging)
        for split, w in job.writers.items():
            state = SplitState.empty(split)
            if state.open is None:
                raise RuntimeError("an empty split state has an open file")
            path = paths.staging / state.open.name
            w.restore(state, BinWriter.resume(path, encoder.identity.vocab_size, 0, sha256()))
        job._stream = job._new_stream()
        return job

    @classmethod
    def restore(
        cls,
        paths: OutputPaths,
        opts: RunOptions,
        typed: dict[str, Any],
        stop_requested: StopRequested,
        argv: list[str] | None,
    ) -> Job:
        """Verify staging against its checkpoint (reading only), then reopen it."""
        t_verify = time.monotonic()
        cp = ckpt.load(paths.staging)
        check_recipe(paths.staging, cp.recipe, typed)
        recipe = cp.recipe
        base = Path(cp.source.get("cwd", os.getcwd()))
        source = resolve_source(recipe.source, opts.token, base, cp.source.get("revision"))
        source.extra["cwd"] = str(base)
        check_source(paths.staging, cp, source)
        encoder = _load_encoder(opts, recipe, cp.tokenizer.get("revision"))
        check_tokenizer(paths.staging, cp, encoder.identity)
        versions = output_versions()
        check_versions(paths.staging, cp, versions, opts.allow_version_change)
        facts = replace(cp.run, resumes=cp.run.resumes + 1)
        job = cls(
            paths,
            recipe,
            opts,
            source,
            encoder,
            stop_requested,
            argv,
            facts,
            fresh=False,
            versions=versions,
        )
        opened = verify_files(paths.staging, cp, encoder.identity.vocab_size)
        job.finished = cp.progress.finished
        if not job.finished:
            job._stream = job._new_stream()
            job._replay(cp.progress)
        else:
            job.cursor.rows_visited = cp.progress.rows_visited
        job.cursor.empty_rows_skipped = cp.progress.empty_rows_skipped
        # Files the reader had hashed ahead of the committed rows, which the replay did not
        # reach: check them too while staging is still untouched.
        for f in source.files:
            if f.sha256 is None and f.expected_sha256 is not None:
                hash_and_check(source, f)
        # Everything verified: only now change staging.
        for extra in unnamed_files(paths.staging, cp):
            logger.info("removing %s (written after the last checkpoint)", extra.name)
            extra.unlink()
        job._make_writers(paths.staging)
        for split, w in job.writers.items():
            op = opened.get(split)
            bw = None
            if op is not None:
                bw = BinWriter.resume(op.path, encoder.identity.vocab_size, op.n, op.hasher)
            w.restore(cp.splits[split], bw)
        fsync_dir(paths.staging)
        if job.finished:
            job._final_digest = cp.progress.prefix_sha256
        logger.info(
            "resuming %s at row %s (%s docs; train %s tokens, val %s tokens); verified and "
            "replayed in %.2f s",
            paths.staging,
            f"{cp.progress.rows_visited:,}",
            f"{cp.progress.docs_written:,}",
            f"{cp.splits['train'].n_tokens:,}",
            f"{cp.splits['val'].n_tokens:,}",
            time.monotonic() - t_verify,
        )
        return job

    def _new_stream(self) -> Iterator[Any]:
        files = ordered_files(self.source.files, self.recipe.shuffle_files, self.recipe.seed)
        self._files = files
        return document_stream(self.source, files, self.recipe)

    def _replay(self, progress: Progress) -> None:
        """Re-read the committed prefix (no tokenizing) and check its digest."""
        replay_stream = self._stream
        if replay_stream is None:
            raise RuntimeError("no stream to replay")
        t = time.monotonic()
        for i in range(progress.rows_visited):
            if i % 4096 == 0 and self.stop_requested():
                raise Interrupted(
                    "stopped by a signal while replaying the source; nothing was changed. "
                    f"Resume with: prep prepare --out {self.paths.final} --resume"
                )
            item = next(replay_stream, None)
            if item is None:
                raise IntegrityError(
                    f"the source now ends after {self.cursor.rows_visited:,} rows, but "
                    f"{progress.rows_visited:,} were committed; the source changed. Restore "
                    "it, or start a new run with a new --out"
                )
            if isinstance(item, Failure):
                raise item.error
            text = item[0]
            if not isinstance(text, str):
                raise IntegrityError(
                    f"{self._files[item[2]].path} row {item[3]} is no longer a string; the "
                    "source changed since the run started"
                )
            self.cursor.visit(text.encode())
        if self.cursor.prefix_sha256 != progress.prefix_sha256:
            raise IntegrityError(
                f"the first {progress.rows_visited:,} rows of the source differ from those "
                "the run committed (prefix digest mismatch); the source changed. Restore it, "
                "or start a new run with a new --out"
            )
        logger.info(
            "replayed %s rows in %.1f s; prefix digest matches",
            f"{progress.rows_visited:,}",
            time.monotonic() - t,
        )

    def _make_writers(self, directory: Path) -> None:
        ident = self.encoder.identity
        self.writers = {
            split: SplitWriter(
                directory=directory,
                split=split,
                vocab_size=ident.vocab_size,
                sep_id=ident.doc_sep_id,
                append_sep=self.recipe.sep_position == "append",
                max_file_tokens=self.recipe.max_file_tokens,
            )
            for split in SPLITS
        }

    # -- running ----------------------------------------------------------------------------

    def execute(self) -> dict[str, Any]:
        """Run to the end of the stream and write the manifest into staging; returns it."""
        try:
            if not self.finished:
                self._loop()
            return self._finish()
        except Interrupted:
            self._close()
            raise
        except InputError as e:
            self._close()
            if not self._discard_if_empty():
                e.args = (
                    f"{e}\n(the committed part stays in {self.paths.staging}; a fixed source "
                    "is a new source: delete that directory and run again)",
                )
            raise
        except PrepError:
            self._close()
            raise
        except OSError as e:
            self._close()
            raise write_failure(e, self.paths) from e
        except BaseException:
            self._close()
            raise

    def _loop(self) -> None:
        stream = self._stream
        if stream is None:
            raise RuntimeError("no stream")
        preparer = Preparer(self.recipe, self._files)
        interval = self.opts.checkpoint_interval
        last_ckpt = time.monotonic()
        self.total_rows = count_rows(self.source, self.recipe.max_documents)
        self._start = (
            self.cursor.rows_visited,
            sum(w.n_tokens for w in self.writers.values()),
            sum(w.text_bytes for w in self.writers.values()),
        )
        # Three stages, each in its own thread: read and prepare (Parquet, UTF-8, split
        # hashes), tokenize (releases the GIL), commit (here). Committing batch k overlaps
        # tokenizing batch k+1, so the tokenizer never waits for the writer.
        prepared = ReadAhead(batches(stream, preparer, self.opts.batch_size), depth=2)
        with prepared, ReadAhead(_tokenize(prepared, self.encoder), depth=1) as tokenized:
            for batch, ids in tokenized:
                reached = self._commit(batch, ids)
                for w in self.writers.values():
                    w.flush()  # to the page cache every batch; fsync only at checkpoints
                if reached:
                    break
                now = time.monotonic()
                if self.stop_requested():
                    self._checkpoint()
                    raise Interrupted(
                        f"stopped by a signal; checkpoint at row {self.cursor.rows_visited:,}. "
                        f"Resume with: prep prepare --out {self.paths.final} --resume"
                    )
                if now - last_ckpt >= interval:
                    self._checkpoint()
                    last_ckpt = now
                self._report()
        self.finished = True
        self._checkpoint()
        self._report(final=True)

    def _commit(self, batch: Batch, ids: list[Any]) -> bool:
        """Visit the batch's rows in order; True when ``--train-tokens`` is reached."""
        cursor, writers = self.cursor, self.writers
        train_budget = self.recipe.train_tokens
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

    def _elapsed(self) -> float:
        return self.run_facts.active_seconds + (time.monotonic() - self._t0)

    def _save_checkpoint(self, directory: Path) -> None:
        progress = Progress(
            rows_visited=self.cursor.rows_visited,
            docs_written=sum(w.n_docs for w in self.writers.values()),
            empty_rows_skipped=self.cursor.empty_rows_skipped,
            prefix_sha256=self._final_digest or self.cursor.prefix_sha256,
            finished=self.finished,
        )
        cp = Checkpoint(
            recipe=self.recipe,
            source=_source_json(self.source),
            tokenizer=self.encoder.identity.to_json(),
            versions=self.versions,
            progress=progress,
            splits={s: w.state() for s, w in self.writers.items()},
            run=replace(self.run_facts, active_seconds=self._elapsed()),
            written_at=time.time(),
        )
        ckpt.save(directory, cp)
        self._committed_rows = progress.rows_visited

    def _checkpoint(self) -> None:
        """The commit point: fsync the open files, then replace the checkpoint."""
        for w in self.writers.values():
            w.sync()
        self._save_checkpoint(self.paths.staging)
        logger.debug("checkpoint at row %s", f"{self.cursor.rows_visited:,}")

    def _report(self, final: bool = False) -> None:
        self.reporter(
            Snapshot(
                rows=self.cursor.rows_visited,
                total_rows=self.total_rows,
                tokens=sum(w.n_tokens for w in self.writers.values()),
                text_bytes=sum(w.text_bytes for w in self.writers.values()),
                seconds=time.monotonic() - self._t0,
                start_rows=self._start[0],
                start_tokens=self._start[1],
                start_bytes=self._start[2],
            ),
            final,
        )

    def _close(self) -> None:
        for w in self.writers.values():
            w.close()

    def _discard_if_empty(self) -> bool:
        """Bad input before anything was committed: remove the empty staging directory so
        the corrected command can simply be run again. True when it is gone."""
        if self.fresh and self._committed_rows == 0:
            shutil.rmtree(self.paths.staging, ignore_errors=True)
        return not self.paths.staging.exists()

    # -- finishing --------------------------------------------------------------------------

    def _finish(self) -> dict[str, Any]:
        staging = self.paths.staging
        totals: dict[str, SplitTotals] = {}
        for split, w in self.writers.items():
            files = w.finish()
            totals[split] = SplitTotals(
                w.n_tokens, w.n_docs, w.text_bytes, w.text_tokens, tuple(files)
            )
        if totals["train"].n_tokens == 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise InputError(
                f"the train split is empty after {self.cursor.rows_visited:,} rows "
                f"({self.cursor.empty_rows_skipped:,} empty): nothing to publish. Check the "
                "source, --text-column, --split-column and --val-fraction"
            )
        for f in self.source.files:  # files never reached still belong to the identity
            hash_and_check(self.source, f)
        read_order = ordered_files(self.source.files, self.recipe.shuffle_files, self.recipe.seed)
        source = {
            "kind": self.source.kind,
            "uri": self.source.uri,
            "revision": self.source.revision,
            "text_column": self.recipe.text_column,
            "split_column": self.recipe.split_column,
            "files": [f.identity() for f in read_order],
            "rows_visited": self.cursor.rows_visited,
            "empty_rows_skipped": self.cursor.empty_rows_skipped,
            "prefix_sha256": self._final_digest or self.cursor.prefix_sha256,
        }
        manifest = build_manifest(
            recipe=self.recipe,
            dataset=self.recipe.dataset or self.paths.final.name,
            tokenizer=self.encoder.identity,
            source=source,
            totals=totals,
        )
        tokens = sum(t.n_tokens for t in totals.values())
        text_bytes = sum(t.text_bytes for t in totals.values())
        provenance = build_provenance(
            started_at=self.run_facts.started_at,
            finished_at=time.time(),
            active_seconds=self._elapsed(),
            resumes=self.run_facts.resumes,
            tokens=tokens,
            text_bytes=text_bytes,
            source_mtimes=self.run_facts.source_mtimes,
            argv=self.argv,
            refresh=self.run_facts.refresh,
        )
        write_provenance(staging, provenance)
        write_manifest(staging, manifest)  # a manifest in staging means "ready to publish"
        return manifest
