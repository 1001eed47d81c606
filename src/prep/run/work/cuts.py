"""The stream cut into worker tasks, by position, never by timing: a task per unit of a
file (a Parquet row group, a line-aligned range of a plain JSON Lines file, a compressed
JSON Lines or an Arrow file whole; a big one cut into several, so that it keeps every
worker busy), or, with a shuffle buffer, per batch of rows the main process read and
shuffled. A task names its rows, so
its results are the same whichever worker runs it and whenever."""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass

from prep.errors import PrepError
from prep.procs.readahead import ReadAhead
from prep.sources import Block, Signature, Source, SourceFile, Unit, identify, read_blocks
from prep.stream.order import Failure, StreamItem

MIN_SPAN_ROWS = 1024  # a task's own cost (open, footer, first read) is small beside it


@dataclass(frozen=True)
class RowGroupTask:
    """File rows ``start``..``stop`` of ``unit`` (whose first row is ``first``) of file
    ``index``; a unit of no rows reads nothing (the file is only opened and checked); a
    ``stop`` of None reads to the unit's end (a stream whose rows nothing needed counted).
    Not ``planned``: a file the main process could not plan, whose worker says why.
    ``signature``: the file as the main process identified it (``open_identified``)."""

    index: int
    local: str
    signature: Signature | None
    unit: Unit
    first: int
    start: int
    stop: int | None
    hash_file: bool
    planned: bool = True


@dataclass(frozen=True)
class BlockTask:
    """File rows ``start``..``stop`` (None: all) of a block of whole lines of file
    ``index`` that the main process decompressed (``block``: first row, byte offset,
    bytes, how many rows); the worker parses them. The bytes travel as a
    ``pickle.PickleBuffer``: a forked worker reads them in its inbox (``prep.procs.pool``),
    not through its task pipe. ``signature`` and ``hash_file`` as for a
    :class:`RowGroupTask`: the worker still opens the file, to check and hash it."""

    index: int
    local: str
    signature: Signature | None
    block: Block
    start: int
    stop: int | None
    hash_file: bool


@dataclass(frozen=True)
class ItemsTask:
    """Stream items the main process read (a shuffled stream)."""

    items: list[StreamItem]


Task = RowGroupTask | BlockTask | ItemsTask
PlannedTask = RowGroupTask | BlockTask | ItemsTask  # ItemsTask: a planning error, in place


def row_group_tasks(source: Source, files: list[SourceFile], skip: int, limit: int | None,
                    begin: tuple[int, int] = (0, 0), cut: int = 1) -> Iterator[PlannedTask]:
    """Tasks for the stream's rows after the first ``skip`` and before ``limit``, planned
    from each file's units (``identify``). Every file reached gets a task even without rows
    to read (its worker opens it, so a missing column is still reported); a file that
    cannot be read or planned gets one, whose worker reports why. ``begin``: a continued
    stream's first file and the rows before it (a published dataset's files and rows, which
    are not opened). ``cut``: the workers; a unit is cut into up to that many tasks (see
    :func:`_cut`)."""
    first_file = begin[0]
    row: int | None = begin[1]  # None: after a file whose rows nothing needed counted
    ahead: dict[int, ReadAhead[Block]] = {}  # compressed files being decompressed
    try:
        for index, f in enumerate(files[first_file:], start=first_file):
            if limit is not None and row is not None and row >= limit:
                return
            local = source.local_path(f)  # for a Hub source: downloaded here, read there
            few = len(files) - index < cut  # too few files left: a stream is cut, so counted
            count = limit is not None or (row is not None and skip > row) or few
            signature, units = identify(source, f, count)
            if units is None:  # unreadable: one task, whose worker says why
                yield RowGroupTask(index, str(local), signature, Unit(1), 0, 0, None, True, False)
                row = None if row is None else row + 1
                continue
            if units[0].blocks and units[0].rows >= 0 and row is not None and (
                    row + units[0].rows <= skip):  # read before (a resume's replay): committed
                row += units[0].rows
                continue
            if units[0].blocks:  # decompressed here, parsed there
                _unzip_ahead(source, files, index, cut, ahead)
                with ahead.pop(index) as blocks:
                    row = yield from _block_tasks(blocks, f, index, str(local), signature, row,
                                                  skip, limit)
                if row == -1:
                    return
                continue
            if units[0].rows < 0:  # an uncounted stream, read to its end
                yield RowGroupTask(index, str(local), signature, units[0], 0, 0, None, True)
                row = None
                continue
            at = skip if row is None else row  # unknown, yet past the resume point: read all
            total = sum(u.rows for u in units)
            if total and at + total <= skip:  # committed before the resume point
                row = at + total
                continue
            spans: list[tuple[Unit, int, int, int]] = []
            first = 0
            for unit in units:
                lo = max(skip, at + first)
                hi = at + first + unit.rows if limit is None else min(limit, at + first + unit.rows)
                most = cut if not unit.stream or few else 1
                if lo < hi:
                    spans += _cut(unit, first, lo - at, hi - at, most)
                first += unit.rows
            for k, (unit, first, start, stop) in enumerate(spans or [(Unit(0), 0, 0, 0)]):
                yield RowGroupTask(index, str(local), signature, unit, first, start, stop,
                                   hash_file=k == 0)
            row = None if row is None else row + total
    finally:
        for reader in ahead.values():
            reader.close()


def _unzip_ahead(source: Source, files: list[SourceFile], index: int, most: int,
                 ahead: dict[int, ReadAhead[Block]]) -> None:
    """Decompress the compressed files among ``files[index:index + most]`` not yet read
    in threads of their own, a few blocks ahead each (pyarrow's decoders release the GIL):
    one file is one serial stream, so many files keep many workers fed."""
    for j in range(index, min(len(files), index + max(most, 1))):
        if j in ahead:
            continue
        signature, units = identify(source, files[j], count=False)  # whether to, not rows
        if units and units[0].blocks and (j == index or units[0].rows < 0):  # not skipped
            ahead[j] = ReadAhead(read_blocks(source, files[j], signature), depth=4,
                                 name="prep-unzip")


def _block_tasks(blocks: Iterable[Block], f: SourceFile, index: int, local: str,
                 signature: Signature | None, row: int | None, skip: int, limit: int | None
                 ) -> Generator[PlannedTask, None, int | None]:
    """The tasks of a file read in ``blocks`` (``read_blocks``) from stream row ``row``
    (None: unknown, yet past the resume point); returns the stream row after the file
    (None: unknown), or -1 after a read error (ended by a task that raises it, in
    place)."""
    at = skip if row is None else row
    emitted, total = False, 0
    try:
        for first, offset, data, rows in blocks:
            total = first + rows
            lo = max(skip, at + first)
            hi = at + total if limit is None else min(limit, at + total)
            if lo < hi:  # the file's first task hashes it
                yield BlockTask(index, local, signature,
                                (first, offset, pickle.PickleBuffer(data), rows), lo - at,
                                hi - at, not emitted)
                emitted = True
            if limit is not None and at + total >= limit:
                return at + total
    except PrepError as e:
        yield ItemsTask([Failure(e)])
        return -1
    if not emitted and total == 0 and at >= skip:  # reached, no rows: opened and hashed
        yield BlockTask(index, local, signature, (0, 0, b"", 0), 0, 0, True)
    if signature is not None:  # read to its end: a later plan skips it unread
        f.units = (signature, (Unit(total, stream=True, blocks=True),))
    return None if row is None else at + total


def _cut(unit: Unit, first: int, start: int, stop: int, most: int
         ) -> Iterator[tuple[Unit, int, int, int]]:
    """Rows ``start``..``stop`` of a unit as up to ``most`` spans of equal rows, none
    under ``MIN_SPAN_ROWS``: a big unit (one Parquet file written at once holds a single
    row group; a compressed JSON Lines file is one stream) keeps that many workers busy
    instead of one, and a run's last units do not leave the other workers idle. Each
    span's worker decodes the unit from its start (neither Parquet nor gzip and zstd have
    a row offset to seek to), so units are cut no finer than the workers need."""
    k = max(1, min(most, (stop - start) // MIN_SPAN_ROWS))
    bounds = [start + (stop - start) * i // k for i in range(k + 1)]
    for lo, hi in itertools.pairwise(bounds):
        yield unit, first, lo, hi


def item_tasks(stream: Iterator[StreamItem], size: int) -> Iterator[ItemsTask]:
    """Tasks of ``size`` stream items read by the main process (a shuffled stream); the
    last one ends at a Failure."""
    while True:
        items = list(itertools.islice(stream, size))
        if not items:
            return
        yield ItemsTask(items)
        if isinstance(items[-1], Failure):
            return
