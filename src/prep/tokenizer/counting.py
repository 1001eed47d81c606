"""Counting pieces: the phase between reading the corpus and merging when training with a
pre-tokenizer (docs/tokenizer.md, "Pre-tokenization").

The train documents (the corpus the first phase wrote, in stream order) are split by the
pattern in batches and their distinct pieces counted, so memory follows the number of
distinct pieces, not the corpus's size. Every ``--checkpoint-interval`` the table so far
and the number of documents it holds are committed (:class:`~.snapshot.CountCheckpoint`);
a resume skips those documents and counts on. The table is a function of the pieces'
multiset alone (sorted by bytes), so it is the same whatever the batches, the workers or
the interruptions; the finished one is written to ``pieces.bin``, the merge phase's input.
"""

from __future__ import annotations

import logging
import mmap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from prep.errors import IntegrityError, Interrupted
from prep.fsio import atomic_write_bytes
from prep.tokenizer.pieces import PieceTable
from prep.tokenizer.pretokenize import Splitter
from prep.tokenizer.snapshot import CountCheckpoint

logger = logging.getLogger(__name__)

PIECES_FILE = "pieces.bin"
BATCH_BYTES = 4_000_000  # text per batch at most (and per look at the clock and signals)

Shards = list[tuple[np.ndarray, np.ndarray]]  # (byte ids, document lengths) per train shard


def _drop_pages(ids: np.ndarray) -> None:
    """Give back the pages of a shard's map once read (file-backed, so they would count in
    the process's RSS until the kernel needed them: the whole corpus, twice its size)."""
    base: object = ids
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "_mmap", None) or getattr(base, "base", None)
    if isinstance(base, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        base.madvise(mmap.MADV_DONTNEED)


def documents(shards: Shards, skip: int) -> Iterator[str]:
    """The train documents' texts in order, after the first ``skip``."""
    seen = 0
    for ids, lengths in shards:
        if seen + lengths.size <= skip:
            seen += int(lengths.size)
            continue
        ends = np.cumsum(lengths)
        for k in range(max(skip - seen, 0), int(lengths.size)):
            start = int(ends[k - 1]) if k else 0  # one document read at a time: the map
            yield ids[start : int(ends[k])].astype(np.uint8).tobytes().decode("utf-8")
        seen += int(lengths.size)
        _drop_pages(ids)


def load_pieces(staging: Path) -> PieceTable | None:
    """The finished table, or None when counting has not finished."""
    path = staging / PIECES_FILE
    if not path.is_file():
        return None
    try:
        return PieceTable.from_bytes(path.read_bytes())
    except ValueError as e:
        raise IntegrityError(f"{path}: {e}; delete {staging} to start over", path=path) from e


def count(staging: Path, shards: Shards, pre_tokenizer: str, batch_docs: int,
          interval: float, stop: Callable[[], bool]) -> PieceTable:
    """Phase 2 with a pre-tokenizer: the finished piece table, from the last checkpoint
    on. Raises ``Interrupted`` after a checkpoint when ``stop()``."""
    done = load_pieces(staging)
    if done is not None:
        return done
    saved = CountCheckpoint.load(staging)
    table, counted = (saved.table, saved.documents) if saved else (PieceTable((), ()), 0)
    if saved:
        logger.info("counting pieces: resumed after %s documents", f"{counted:,}")
    splitter, pending = Splitter(pre_tokenizer), Counter[str]()
    batch: list[str] = []
    size, last = 0, time.monotonic()

    def flush() -> None:
        nonlocal counted, batch, size
        splitter.count(batch, pending)
        counted += len(batch)
        batch, size = [], 0

    for text in documents(shards, counted):
        batch.append(text)
        size += len(text)
        if len(batch) < batch_docs and size < BATCH_BYTES:
            continue
        flush()
        stopping = stop()
        if stopping or time.monotonic() - last >= interval:
            table, pending = table.merged(pending), Counter()
            CountCheckpoint(counted, table).save(staging)
            if stopping:
                raise Interrupted(f"stopped after counting the pieces of {counted:,} "
                                  "documents, checkpointed; rerun the same command with "
                                  "--resume to continue")
            logger.info("counting pieces: %s documents, %s distinct pieces, checkpointed",
                        f"{counted:,}", f"{len(table.pieces):,}")
            last = time.monotonic()
    flush()
    table = table.merged(pending)
    atomic_write_bytes(staging / PIECES_FILE, table.to_bytes())
    CountCheckpoint.remove(staging)  # the finished table is in PIECES_FILE now
    logger.info("counting pieces: %s documents, %s distinct pieces (%s in all)",
                f"{counted:,}", f"{len(table.pieces):,}", f"{sum(table.counts):,}")
    return table
