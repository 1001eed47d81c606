"""Sealing a split's shards in background threads, their records kept in order.

A rolled-over shard's :meth:`~prep.formats.ShardWriter.seal` (header rewrite, fsync, the
whole-file SHA-256, companion files) does not need the committing thread, which goes on
with the next shard. Whoever reads the sealed records (a checkpoint, the manifest) first
waits for them (:meth:`Sealing.wait`): a checkpoint never lists a shard that is not durable
and hashed, and an error raised while sealing is raised there, as it was raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prep.formats.backlog import Backlog
from prep.formats.base import ShardWriter
from prep.state.shards import FileRecord

logger = logging.getLogger(__name__)

MAX_PENDING = 2  # seals in flight before submit() waits for the oldest (open files, disk)


def seal_record(file: ShardWriter, n_docs: int,
                on_sealed: Callable[[FileRecord], None] | None = None,
                first_doc_at: int | None = None) -> FileRecord:
    """Seal ``file`` and return its record (``first_doc_at`` as
    :class:`~prep.state.shards.FileRecord` has it), after telling ``on_sealed`` of it (in
    this thread); on failure the file is closed (it stays an open shard on disk, which
    resume handles) and the error raised."""
    try:
        sha, companions = file.seal()
    except BaseException:
        file.close()
        raise
    record = FileRecord(file.name, file.n, n_docs, sha, companions, first_doc_at)
    if on_sealed is not None:
        on_sealed(record)
    return record


class Sealing:
    """The seals of one split's shards, in the order they were submitted."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self._seals: Backlog[FileRecord] = Backlog(max_pending, "prep-seal", max_pending)

    @property
    def pending(self) -> int:
        """Shards submitted whose records :meth:`wait` has not returned yet."""
        return len(self._seals)

    def finished(self) -> bool:
        """Whether every submitted seal is done (:meth:`wait` would not wait)."""
        return self._seals.finished()

    def submit(self, file: ShardWriter, n_docs: int, into: list[FileRecord],
               on_sealed: Callable[[FileRecord], None] | None = None,
               first_doc_at: int | None = None) -> None:
        """Start sealing ``file`` (nothing is appended to it any more), after appending to
        ``into`` the records of earlier seals it had to wait for to stay within
        ``max_pending``. ``on_sealed`` is told of its record as soon as it is sealed, in
        the sealing thread (before :meth:`wait` returns it)."""
        for record in self._seals.room(1):
            into.append(record)
        self._seals.submit(1, seal_record, file, n_docs, on_sealed, first_doc_at)

    def wait(self, into: list[FileRecord]) -> None:
        """Append to ``into`` the record of every pending seal, in order, as each is done.
        The first seal that failed raises its exception; the records before it are in
        ``into`` already (the later seals stay pending)."""
        for record in self._seals.drain():
            into.append(record)

    def abandon(self) -> None:
        """Error path: let the pending seals end and drop them (their errors are only
        logged: the error being handled is the one to report); stop the threads."""
        for error in self._seals.drop():
            logger.debug("a background seal failed during cleanup: %s", error)
        self.shutdown()

    def shutdown(self) -> None:
        """Stop the threads once nothing is pending (the split is finished)."""
        self._seals.shutdown()
