"""One append-only file of little-endian ids behind an optional fixed-size header: what every
format's token file is made of.

The header (``header(n)`` bytes, the same length for every n; empty for headerless files)
is written with n = 0 when the file is created and rewritten with the real n on
:meth:`IdFileWriter.seal`. The committed ids are recorded as a chain of the appended
segments' digests (:mod:`prep.formats.segments`), so a checkpoint can name exactly the
committed prefix; on resume the file is cut back to it. The ids are copied into the file
at the offsets the appends gave them by background threads, so the committing thread only
hands them over; while a run's workers are up, those threads have copier processes do it
(``copier``, :mod:`prep.procs.copiers`), so the copy costs the main process nothing.
A sync waits for every write. The whole file's SHA-256 (the
manifest's, a plain ``sha256sum``) is computed once, when it is sealed
(:func:`prep.formats.sealhash.sealed_sha256`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError, InputError
from prep.formats.backlog import Backlog
from prep.formats.base import MAX_TOKENS, Copier, IdScan
from prep.formats.sealhash import sealed_sha256
from prep.formats.segments import SegmentChain
from prep.fsio import Hasher, fsync_dir, hash_file, make_dirs, pwrite_all
from prep.state.shards import Companion

HeaderFn = Callable[[int], bytes]


def no_header(n: int) -> bytes:
    """The header of a headerless file: nothing."""
    return b""


def check_ids(ids: npt.NDArray[Any], vocab_size: int, *, where: str) -> None:
    """Raise ``InputError`` if any id is outside ``[0, vocab_size)``."""
    if ids.size == 0:
        return
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise InputError(
            f"{where}: token id {bad:,} is outside the vocabulary [0, {vocab_size:,}); "
            "the tokenizer and --doc-sep-id must agree with the vocabulary size"
        )


@dataclass(frozen=True)
class IdFileOpen:
    """An open file whose first ``n`` ids were checked; ``segments`` is their chain, from
    which the reopened writer goes on. ``doc_lengths`` are the committed documents' lengths
    for formats that index them."""

    name: str
    n: int
    segments: SegmentChain
    doc_lengths: tuple[int, ...] | None = None
    scan: IdScan = field(default_factory=IdScan)  # what the check saw of ``count_id``


WRITE_BEHIND = 8 << 20  # bytes appended and not yet written before an append waits
INLINE_BYTES = 64 << 10  # fewer are written by the appending thread itself


def _write_at(fd: int, ids: npt.NDArray[Any], offset: int, copier: Copier | None) -> None:
    """Write the bytes of ``ids`` (contiguous) at ``offset`` of the open file ``fd``:
    through ``copier`` where it can, else here."""
    if copier is None or not copier.write(fd, ids, offset):
        pwrite_all(fd, ids.data.cast("B"), offset)


class IdFileWriter:
    """Appends ids to one file; :meth:`seal` makes it complete and durable.

    ``ids_chain`` is the chain of exactly ``n`` ids (after :meth:`sync`, durable ones), over
    the ``segments`` appended."""

    def __init__(
        self,
        path: Path,
        dtype: np.dtype[Any],
        vocab_size: int,
        header: HeaderFn = no_header,
        *,
        name: str | None = None,
        _resume: tuple[int, SegmentChain] | None = None,
    ) -> None:
        self.path = path
        self._name = name or path.name  # the shard's name: its path from the directory
        in_folder = self._name != path.name
        self.vocab_size = vocab_size
        self.dtype = dtype
        self._header = header
        head = header(0)
        self._ids_at = len(head)  # the same for every n
        n, chain = _resume if _resume is not None else (0, SegmentChain())
        self.n = n
        self._chain = chain
        self._end = self._ids_at + n * self.dtype.itemsize  # where the next ids go
        self._writes: Backlog[None] | None = None  # made at the first append
        self.copier: Copier | None = None  # who writes the ids appended from now on
        self._file: IO[bytes]
        if _resume is None:
            if in_folder:
                make_dirs(path.parent)
            self._file = open(path, "w+b")  # noqa: SIM115 - lives as long as the writer
            if in_folder:  # the checkpoint fsyncs only the top directory before naming it
                fsync_dir(path.parent)
        else:
            self._file = open(path, "r+b")  # noqa: SIM115
            self._file.truncate(self._end)
            # A crash while sealing may have left the real n in the header: reset it.
        self._file.write(head)
        self._file.flush()  # the ids are written at their offsets, beside this buffer

    @property
    def name(self) -> str:
        return self._name

    @property
    def ids_chain(self) -> str:
        """The chain of the segments appended so far (not the header)."""
        return self._chain.hexdigest()

    @property
    def segments(self) -> tuple[int, ...]:
        """The appended segments' lengths in ids, in order."""
        return tuple(self._chain.lengths)

    @property
    def doc_lengths(self) -> tuple[int, ...] | None:
        """The documents' lengths, for formats that index them (None here)."""
        return None

    def append(self, ids: npt.NDArray[Any], doc_lengths: Sequence[int] = (),
               digest: bytes | None = None) -> None:
        """Append ids (any integer dtype) of whole documents of ``doc_lengths`` ids, each
        within the vocabulary: the worker that tokenized them did (``run.work.tokenize``), so
        the committing thread does not read them again. ``digest``: the SHA-256 of ``ids``'
        bytes, when they are already in this file's dtype and whoever made them hashed them
        (else they are hashed here). Raises ``FormatError`` past 2**31-1 ids; nothing is
        written then."""
        if self.n + ids.size > MAX_TOKENS:
            raise FormatError(f"{self.path.name}: more than 2**31-1 ids in one file")
        if not ids.size:
            return
        if digest is None or ids.dtype != self.dtype or not ids.flags.c_contiguous:
            ids = np.ascontiguousarray(ids, dtype=self.dtype)
            digest = hashlib.sha256(ids.data).digest()
        # Written by a background thread (the copy into the page cache is the committing
        # thread's largest per-byte cost), in order, at the offset this append gives it;
        # sync and seal wait for the writes, so a checkpoint names only written bytes.
        # With copiers, as many writes at a time as there are copiers to take them. A few
        # ids (a batch's val documents) cost less to write here than to hand over.
        if ids.nbytes < INLINE_BYTES:
            pwrite_all(self._file.fileno(), ids.data.cast("B"), self._end)
        else:
            self._submit(ids)
        self._end += ids.nbytes
        self._chain.add(int(ids.size), digest)
        self.n += int(ids.size)

    def _submit(self, ids: npt.NDArray[Any]) -> None:
        """Have a background thread write ``ids`` at the end, through the copier if any."""
        copier = self.copier
        if self._writes is None:
            threads = copier.count if copier is not None and copier.count else 1
            self._writes = Backlog(threads, "prep-write", WRITE_BEHIND * threads)
        self._writes.submit(ids.nbytes, _write_at, self._file.fileno(), ids, self._end,
                            copier)

    def moved_to(self, directory: Path) -> None:
        """The file's directory was renamed; the file stays open."""
        self.path = directory / self._name

    def sync(self) -> None:
        """Wait for the writes, fsync: everything appended so far is durable. A write that
        failed (a full disk) raises its error here, if no append raised it before."""
        self._written()
        self._file.flush()
        os.fsync(self._file.fileno())

    def _written(self) -> None:
        """Wait for every write handed to the background thread (raising a failed one's
        error)."""
        if self._writes is not None:
            for _ in self._writes.drain():
                pass

    def seal(self) -> tuple[str, tuple[Companion, ...]]:
        """Write the real header, fsync, close; return the SHA-256 of the whole file (and
        the companion files, none here), read back once (in another process for a large
        file: :func:`~prep.formats.sealhash.sealed_sha256`). May run in another thread than
        the appends (:class:`prep.formats.sealing.Sealing`), once they are over."""
        header = self._header(self.n)
        self._written()
        if self._writes is not None:
            self._writes.shutdown()
        if header:
            self._file.seek(0)
            self._file.write(header)
        self.sync()
        # Through the open handle: the directory may have been renamed since it was created.
        sha = sealed_sha256(self._file, self._ids_at + self.n * self.dtype.itemsize)
        self._file.close()
        return sha, ()

    def close(self) -> None:
        """Close without sealing (on an error path); the file stays an open file. The
        writes not started are dropped (the one under way ends first)."""
        if self._writes is not None:
            self._writes.shutdown(cancel=True)
        if not self._file.closed:
            self._file.close()


def hash_ids_prefix(
    path: Path,
    n: int,
    width: int,
    start: int,
    count_id: int | None = None,
    into: Hasher | None = None,
    every: bool = False,
) -> CountingHasher:
    """A ``hashlib.sha256`` (or ``into``) fed the first ``n`` ids of ``path`` (from byte
    ``start``), which also scans them for ``count_id`` in the same pass (keeping every
    position with ``every``).

    Raises ``FormatError`` if the file holds fewer ids."""
    h = CountingHasher(into or hashlib.sha256(), count_id, np.dtype(f"<u{width}"), every)
    try:
        hash_file(path, h, start=start, length=n * width)
    except EOFError as e:
        raise FormatError(
            f"{path.name}: holds fewer than the {n:,} committed ids", path=path
        ) from e
    return h


class CountingHasher:
    """A hasher that also scans the ids it is fed for one id (resume counts separators, so
    documents, while it hashes a shard, and notes where the first and last ones are);
    ``inner`` holds the hash, ``scan`` what was seen."""

    def __init__(self, inner: Hasher, count_id: int | None, dtype: np.dtype[Any],
                 every: bool = False) -> None:
        self.inner, self.count_id, self.dtype = inner, count_id, dtype
        self._every: list[int] | None = [] if every else None
        self.count = 0
        self._seen = 0  # ids scanned so far
        self._head: list[int] = []
        self._tail: list[int] = []
        self._first: int | None = None
        self._last: int | None = None
        self._carry = b""  # a chunk may end inside an id

    def update(self, chunk: bytes | memoryview, /) -> None:
        self.inner.update(chunk)
        if self.count_id is None:
            return
        data = self._carry + bytes(chunk)
        whole = len(data) - len(data) % self.dtype.itemsize
        self._carry = data[whole:]
        ids = np.frombuffer(data[:whole], dtype=self.dtype)
        if ids.size == 0:
            return
        at = np.flatnonzero(ids == self.count_id)
        self.count += int(at.size)
        if at.size:
            self._head = (self._head + (at[:2] + self._seen).tolist())[:2]
            self._tail = (self._tail + (at[-2:] + self._seen).tolist())[-2:]
            if self._every is not None:
                self._every.extend((at + self._seen).tolist())
        if self._first is None:
            self._first = int(ids[0])
        self._last = int(ids[-1])
        self._seen += int(ids.size)

    @property
    def scan(self) -> IdScan:
        every = None if self._every is None else tuple(self._every)
        return IdScan(self.count, tuple(self._head), tuple(self._tail), self._first, self._last,
                      every)

    def hexdigest(self) -> str:
        return self.inner.hexdigest()
