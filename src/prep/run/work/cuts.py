"""The stream cut into worker tasks, by position, never by timing: a task per Parquet row
group (a big one cut into several, so that it keeps every worker busy), or, with a shuffle
buffer, per batch of rows the main process read and shuffled. A task names its rows, so
its results are the same whichever worker runs it and whenever."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from prep.sources import Signature, Source, SourceFile, identify
from prep.stream.order import Failure, StreamItem

MIN_SPAN_ROWS = 1024  # a task's own cost (open, footer, first read) is small beside it


@dataclass(frozen=True)
class RowGroupTask:
    """File rows ``start``..``stop`` of row group ``group`` (whose first row is ``first``)
    of file ``index``; group -1 reads nothing (the file is only opened and checked).
    ``signature``: the file as the main process identified it (``open_identified``)."""

    index: int
    local: str
    signature: Signature | None
    group: int
    first: int
    start: int
    stop: int
    hash_file: bool


@dataclass(frozen=True)
class ItemsTask:
    """Stream items the main process read (a shuffled stream)."""

    items: list[StreamItem]


Task = RowGroupTask | ItemsTask


def row_group_tasks(source: Source, files: list[SourceFile], skip: int, limit: int | None,
                    begin: tuple[int, int] = (0, 0), cut: int = 1) -> Iterator[RowGroupTask]:
    """Tasks for the stream's rows after the first ``skip`` and before ``limit``, planned
    from the Parquet footers. Every file reached gets a task even without rows to read (its
    worker opens it, so a missing column is still reported); a file whose footer cannot be
    read gets one, whose worker reports why. ``begin``: a continued stream's first file and
    the rows before it (a published dataset's files and rows, which are not opened).
    ``cut``: the workers; a row group is cut into up to that many tasks (see
    :func:`_cut`)."""
    first_file, row = begin
    for index, f in enumerate(files[first_file:], start=first_file):
        if limit is not None and row >= limit:
            return
        local = source.local_path(f)  # for a Hub source: downloaded here, read there
        signature, sizes = identify(source, f)
        sizes = sizes or [1]  # unreadable: one task, whose worker says why
        total = sum(sizes)
        if total and row + total <= skip:  # committed before the resume point
            row += total
            continue
        spans: list[tuple[int, int, int, int]] = []
        first = 0
        for group, n in enumerate(sizes):
            lo = max(skip, row + first)
            hi = row + first + n if limit is None else min(limit, row + first + n)
            if lo < hi:
                spans += _cut(group, first, lo - row, hi - row, cut)
            first += n
        for k, (group, first, start, stop) in enumerate(spans or [(-1, 0, 0, 0)]):
            yield RowGroupTask(index, str(local), signature, group, first, start, stop,
                               hash_file=k == 0)
        row += total


def _cut(group: int, first: int, start: int, stop: int, most: int
         ) -> Iterator[tuple[int, int, int, int]]:
    """Rows ``start``..``stop`` of a row group as up to ``most`` spans of equal rows, none
    under ``MIN_SPAN_ROWS``: a big row group (one file written at once holds a single one)
    keeps that many workers busy instead of one, and a run's last groups do not leave the
    other workers idle. Each span's worker decodes the group from its start (Parquet has
    no row offset to seek to), so groups are cut no finer than the workers need."""
    k = max(1, min(most, (stop - start) // MIN_SPAN_ROWS))
    bounds = [start + (stop - start) * i // k for i in range(k + 1)]
    for lo, hi in itertools.pairwise(bounds):
        yield group, first, lo, hi


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
