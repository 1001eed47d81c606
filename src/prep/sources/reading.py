"""Reading a source file whatever its kind: the one place that maps a :class:`Kind` to its
reader (:mod:`prep.sources.parquet`, :mod:`prep.sources.jsonl`, :mod:`prep.sources.arrow`).

The main process plans (:func:`identify`: the file's signature and its units with their
rows, through one descriptor, remembered per signature so a resume's replay and its run
count a file once); a worker reads one unit's rows (:func:`unit_batches`) from the file it
opened with ``open_identified``; a shuffled stream reads whole files here
(:func:`iter_batches`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import IO, Any

from prep.errors import InputError, PrepError
from prep.sources import arrow, jsonl, jsonl_blocks, parquet
from prep.sources.base import Signature, Source, SourceFile, check_unchanged, open_verified
from prep.sources.base import signature_of as _signature_of
from prep.sources.kinds import Kind, Unit, kind_of

Batches = Iterator[tuple[list[Any], list[Any] | None]]
_Read = Callable[[IO[bytes], SourceFile, Kind, tuple[str, str | None], Unit, int, int,
                  "int | None"], Batches]

_COUNT: dict[str, Callable[[IO[bytes], SourceFile, Kind], list[Unit]]] = {
    "parquet": lambda fobj, f, kind: parquet.count_groups(fobj, f),
    "jsonl": lambda fobj, f, kind: jsonl_blocks.count_lines(fobj, f, kind, f.size),
    "arrow": lambda fobj, f, kind: arrow.count_rows(fobj, f),
}
# A stream kind (Kind.stream) read in blocks by the main process, by its blocks reader
_BLOCKS = {"jsonl": jsonl_blocks.blocks}
# (first row, byte offset, whole lines, how many); the lines as read, or as a task carries
# them (a pickle.PickleBuffer, which a worker gets as bytes or as a view of its inbox)
Block = tuple[int, int, "bytes | memoryview | pickle.PickleBuffer", int]
_READ: dict[str, _Read] = {
    "parquet": parquet.read_batches,
    "jsonl": jsonl.read_batches,
    "arrow": arrow.read_batches,
}


def file_kind(fobj: IO[bytes], f: SourceFile) -> Kind:
    """The open file's kind (recorded in ``f.kind``, which names its rows in messages).
    Raises ``InputError`` for a name and a content that disagree."""
    f.kind = kind_of(f.path, fobj)
    return f.kind


def units_of(fobj: IO[bytes], f: SourceFile, count: bool = True, count_blocks: bool = False
             ) -> list[Unit]:
    """The open file's units with their rows (the footer for Parquet, one read for plain
    JSON Lines); a compressed JSON Lines or an Arrow file is one stream unit, whose rows are
    counted (one read) only when ``count``, else -1. A compressed JSON Lines file is read
    in ``blocks``, which count its rows as they are read, so it is counted here only when
    ``count_blocks`` too. Raises ``InputError`` for a file that cannot be planned."""
    kind = file_kind(fobj, f)
    blocks = kind.stream and kind.name in _BLOCKS
    if kind.stream and not (count and (count_blocks or not blocks)):
        return [Unit(-1, stream=True, blocks=blocks)]
    units = _COUNT[kind.name](fobj, f, kind)
    return [replace(u, blocks=True) for u in units] if blocks else units


def identify(source: Source, f: SourceFile, count: bool = True, count_blocks: bool = False
             ) -> tuple[Signature | None, list[Unit] | None]:
    """What the main process fixes before workers read ``f``: the file's signature and its
    units (``count``, ``count_blocks``: see :func:`units_of`), both through one descriptor
    (remembered in ``f.units`` for that signature); None for what cannot be read (the
    worker that opens the file then reports why)."""
    try:
        with open(source.local_path(f), "rb") as fobj:
            sig = _signature_of(fobj)
            known = f.units[1] if f.units is not None and f.units[0] == sig else None
            if known is not None and (not count or all(u.rows >= 0 for u in known)):
                return sig, list(known)
            try:  # checked against this descriptor's signature while it is read
                units = units_of(fobj, replace(f, signature=sig), count, count_blocks)
            except PrepError:
                return sig, None
            f.units = (sig, tuple(units))
            return sig, units
    except OSError:
        return None, None


def read_blocks(source: Source, f: SourceFile, signature: Signature | None) -> Iterator[Block]:
    """In the main process, as it plans: the decompressed text of a ``blocks`` unit in
    blocks of whole lines (the one serial stage of a compressed file: decompressing, never
    parsing), read through a descriptor checked to be the file ``signature`` names and
    checked unchanged after every read. Raises ``InputError`` for damaged data (after the
    blocks before it), ``IntegrityError`` for a file that is not or no longer that one."""
    try:
        fobj = open(source.local_path(f), "rb")  # noqa: SIM115 - closed below
    except OSError as e:
        raise InputError(f"{f.path}: cannot read the source file ({e.strerror or e})",
                         path=f.path) from e
    with fobj:
        g = replace(f, signature=_signature_of(fobj))
        if signature is not None and g.signature != signature:
            check_unchanged(fobj, replace(g, signature=signature))
        kind = file_kind(fobj, g)
        yield from _BLOCKS[kind.name](fobj, g, kind)


def block_batches(fobj: IO[bytes], f: SourceFile, columns: tuple[str, str | None], block: Block,
                  start: int, stop: int | None) -> Batches:
    """In a worker: ``(texts, splits)`` of file rows ``start``..``stop`` (None: all) of a
    block :func:`read_blocks` read, the open file's kind naming its rows."""
    first, at, data, rows = block
    yield from jsonl.block_batches(f, file_kind(fobj, f), columns, memoryview(data), first,
                                   rows, at, start, stop)


def unit_batches(fobj: IO[bytes], f: SourceFile, columns: tuple[str, str | None], unit: Unit,
                 first: int, start: int, stop: int | None) -> Batches:
    """In a worker: ``(texts, splits)`` of file rows ``start``..``stop`` (None: to the end)
    of ``unit`` (whose first row is ``first``) of the open file, checked unchanged after
    every read. Raises ``InputError`` for bad input, naming its row."""
    kind = file_kind(fobj, f)
    yield from _READ[kind.name](fobj, f, kind, columns, unit, first, start, stop)


def iter_batches(source: Source, f: SourceFile, text_column: str, split_column: str | None
                 ) -> Batches:
    """``(texts, splits)`` per batch of one whole file, in stored order, hashed and parsed
    through one descriptor. Raises ``InputError`` for bad input, ``IntegrityError`` when
    the file changes while it is read (no row read after the change is yielded)."""
    columns = (text_column, split_column)
    with open_verified(source, f) as fobj:
        units = units_of(fobj, f, count=False)  # a stream is read to its end: never counted
        fobj.seek(0)
        first = 0
        for unit in units or [Unit(0)]:
            yield from unit_batches(fobj, f, columns, unit, first, first, None)
            fobj.seek(0)
            first += unit.rows
        check_unchanged(fobj, f)
