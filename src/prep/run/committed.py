"""The committed state of a run and the checkpoint it writes.

Commit points are between batches only: every split's open shard is fsynced, then the
checkpoint is replaced atomically (:meth:`RunState.checkpoint`). Counts and the prefix
digest advance as rows are committed, never as they are read ahead, so the output does not
depend on batch size, threads, checkpoint interval or interruptions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from prep.encoders import Encoder
from prep.encoders.engine import EngineChoice
from prep.formats import ShardFormat, get_format
from prep.outputs import Output
from prep.recipe import Recipe, RunOptions
from prep.sources import Source, SourceFile
from prep.split import SPLITS
from prep.state import checkpoint as ckpt
from prep.state.checkpoint import Checkpoint, Progress, RunFacts, StreamBase
from prep.state.identity import TokenizerIdentity
from prep.state.shards import FileRecord
from prep.stream.order import Cursor
from prep.stream.writer import SplitWriter

logger = logging.getLogger(__name__)


def output_format(recipe: Recipe, identity: TokenizerIdentity) -> ShardFormat:
    """The recipe's ``--format``/``--dtype`` (writing the tokenizer's id where the layout
    records a name); raises ``UsageError`` (before anything is written) when the dtype
    cannot hold the vocabulary."""
    fmt = get_format(recipe.format, recipe.dtype, identity.tokenizer_id)
    fmt.dtype_name(identity.vocab_size)
    return fmt


def make_writers(
    directory: Path,
    recipe: Recipe,
    identity: TokenizerIdentity,
    fmt: ShardFormat,
    on_sealed: Callable[[FileRecord], None] | None,
) -> dict[str, SplitWriter]:
    """One writer per split, in ``directory``; each tells ``on_sealed`` of a shard it sealed
    (in the sealing thread)."""
    return {
        split: SplitWriter(
            directory=directory,
            fmt=fmt,
            split=split,
            vocab_size=identity.vocab_size,
            sep_id=identity.doc_sep_id,
            append_sep=recipe.sep_position == "append",
            max_file_tokens=recipe.max_file_tokens,
            fixed=recipe.pack == "fixed",
            on_sealed=on_sealed,
        )
        for split in SPLITS
    }


def lock_not_checked() -> None:
    """A run that holds no lock (tests drive runs without one): nothing to check."""
    return None


@dataclass
class RunState:
    """Everything a run has committed or holds open, and what it needs to say so in a
    checkpoint. ``files`` is the source's read order; ``final_digest`` a finished stream's
    digest from its checkpoint (no stream is read again then). What the run measures of
    itself for the provenance is not here (:class:`prep.run.telemetry.Measurements`)."""

    out: Output
    recipe: Recipe
    opts: RunOptions
    source: Source
    encoder: Encoder
    fmt: ShardFormat
    facts: RunFacts
    versions: dict[str, str]
    writers: dict[str, SplitWriter]
    files: list[SourceFile]
    cursor: Cursor = field(default_factory=Cursor)
    finished: bool = False
    fresh: bool = True
    final_digest: str | None = None
    base: StreamBase | None = None  # the published stream an incremental refresh continues
    committed_rows: int = 0  # rows of the last checkpoint this process wrote
    choice: EngineChoice | None = None  # a new run's engine, chosen while it stages
    t0: float = field(default_factory=time.monotonic)
    check_lock: Callable[[], None] = lock_not_checked  # raises once the lock is not ours

    @property
    def prefix_sha256(self) -> str:
        return self.final_digest or self.cursor.prefix_sha256

    def elapsed(self) -> float:
        """Active seconds over the run and its resumes."""
        return self.facts.active_seconds + (time.monotonic() - self.t0)

    def record(self) -> Checkpoint:
        """The checkpoint of what is committed now (call after syncing the writers)."""
        progress = Progress(
            rows_visited=self.cursor.rows_visited,
            docs_written=sum(w.n_docs for w in self.writers.values()),
            empty_rows_skipped=self.cursor.empty_rows_skipped,
            prefix_sha256=self.prefix_sha256,
            finished=self.finished,
            base=self.base,
        )
        return Checkpoint(
            recipe=self.recipe,
            source=self.source.identity(),
            tokenizer=self.encoder.identity,
            versions=self.versions,
            progress=progress,
            splits={s: w.state() for s, w in self.writers.items()},
            run=replace(self.facts, active_seconds=self.elapsed()),
            written_at=time.time(),
        )

    def save_checkpoint(self, directory: Path) -> Checkpoint:
        cp = self.record()
        ckpt.save(directory, cp)
        self.committed_rows = cp.progress.rows_visited
        return cp

    def checkpoint(self) -> None:
        """The commit point: fsync the open shards, then replace the checkpoint (unless
        the lock was lost: then another run may be writing here, so commit nothing); then
        tell the output (a bucket uploads the shards it names)."""
        self.check_lock()
        for w in self.writers.values():
            w.sync()
        cp = self.save_checkpoint(self.out.staging)
        logger.debug("checkpoint at row %s", f"{self.cursor.rows_visited:,}")
        self.out.committed(cp)

    def rolled(self) -> int:
        """Shards rolled over so far, over every split."""
        return sum(w.rolled for w in self.writers.values())

    def sealed_since(self, rolled: int) -> bool:
        """Whether shards were rolled over since ``rolled`` (a :meth:`rolled` value) and
        are all sealed: a checkpoint now names them without waiting for a seal."""
        return self.rolled() > rolled and all(w.seals_done() for w in self.writers.values())

    def close(self) -> None:
        """Close every open shard without sealing (error paths); wait for the engine's
        choice if one is under way."""
        if self.choice is not None:
            self.choice.join()
        for w in self.writers.values():
            w.close()
