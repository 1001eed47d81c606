"""The running SHA-256 of an append-only file, fed in a background thread.

The committing thread writes ids and moves on; one worker thread per file reads the same
byte ranges back (``os.pread`` from the page cache, so no buffer of the caller is kept
alive or read after it returned) and feeds the hash, in the order they were written.
hashlib and ``pread`` release the GIL, so this runs beside the committing thread.
"""

from __future__ import annotations

import os

from prep.errors import IntegrityError
from prep.formats.backlog import Backlog
from prep.fsio import Hasher

CHUNK = 1 << 20  # bytes per pread: bounded memory, and few calls
MAX_BEHIND = 64 << 20  # bytes written but not yet hashed before update() waits


class RunningHash:
    """Feeds ``inner`` the ranges :meth:`update` names, in order, in a worker thread.

    :meth:`hexdigest` waits for every pending range first, so it is the hash of exactly
    what was handed over. At most ``max_behind`` bytes (or one range, if larger) are
    pending: :meth:`update` waits for the oldest ones beyond that. An error while reading
    (a file cut short by another program: ``IntegrityError`` naming ``where``) is raised by
    the next call that waits for it."""

    def __init__(self, inner: Hasher, where: str = "the open shard",
                 max_behind: int = MAX_BEHIND) -> None:
        self._inner = inner
        self._where = where
        self._ranges: Backlog[None] = Backlog(1, "prep-hash", max_behind)  # one: in order

    def update(self, fd: int, start: int, length: int) -> None:
        """Hash bytes ``[start, start + length)`` of the open file ``fd`` (already
        written, so that ``pread`` sees them) after the ranges handed over before."""
        if length:
            self._ranges.submit(length, self._feed, fd, start, length)

    def _feed(self, fd: int, start: int, length: int) -> None:
        end = start + length
        while start < end:
            chunk = os.pread(fd, min(CHUNK, end - start), start)
            if not chunk:  # only another program cuts a file prep is writing
                raise IntegrityError(
                    f"{self._where} ends at byte {start:,} although {end:,} bytes were "
                    "written to it: something else truncated it while prep was writing; "
                    "rerun with --resume (it cuts the file back to the last checkpoint)")
            self._inner.update(chunk)
            start += len(chunk)

    def hexdigest(self) -> str:
        """The hash of every range handed over (waits for the pending ones)."""
        for _ in self._ranges.drain():
            pass
        return self._inner.hexdigest()

    def close(self) -> None:
        """Drop the pending ranges (the one being read finishes first) and stop the
        thread; call before the file is closed. The hash is unusable afterwards."""
        self._ranges.shutdown(cancel=True)
