"""Reading Arrow IPC files, the file form (``ARROW1``) and the stream form that
``datasets.Dataset.save_to_disk`` and the ``datasets`` cache write: record batch by record
batch through the verified descriptor, the text (and split) column only turned into
Python strings. A file is one unit (its record batches are read in order; a task cut from
it reads past the batches before its rows without converting them). A dotted column name
reaches into struct columns (``metadata.text``) when no column has the whole name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import pyarrow as pa

from prep.errors import InputError
from prep.sources.base import SourceFile, check_unchanged
from prep.sources.kinds import Kind, Unit
from prep.sources.parquet import is_string, kept_batches

_FLAGS = ("--text-column", "--split-column")


def _reader(fobj: IO[bytes], f: SourceFile) -> Iterator[pa.RecordBatch]:
    """The file's record batches in order, either form; ``InputError`` when it is not
    readable Arrow IPC (checked unchanged first: a rewrite reads as garbage)."""
    try:
        head = fobj.read(6)
        fobj.seek(0)
        if head == b"ARROW1":
            file = pa.ipc.open_file(fobj)
            for i in range(file.num_record_batches):
                yield file.get_batch(i)
        else:
            yield from pa.ipc.open_stream(fobj)
    except (pa.ArrowException, OSError, ValueError) as e:
        check_unchanged(fobj, f)
        raise InputError(
            f"{f.path}: not readable Arrow IPC ({e}); remove or replace the file",
            path=f.path,
        ) from e


def _column(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    if name in batch.schema.names:
        return batch.column(name)
    top, *rest = name.split(".")
    if not rest or top not in batch.schema.names:
        return None
    col = batch.column(top)
    for part in rest:
        if not pa.types.is_struct(col.type) or col.type.get_field_index(part) < 0:
            return None
        col = col.field(part)
    return col


def _checked(batch: pa.RecordBatch, f: SourceFile, kind: Kind, name: str, flag: str,
             row: int) -> pa.Array:
    col = _column(batch, name)
    if col is None:
        have = ", ".join(f'"{n}"' for n in batch.schema.names) or "none"
        raise InputError(f'{f.path}: no column "{name}"; it has {have}. Choose the column '
                         f"with {flag}", path=f.path)
    if not is_string(col.type) and not pa.types.is_null(col.type):
        raise InputError(f'{f.path} {kind.row_word} {row}: column "{name}" holds {col.type}, '
                         f"expected a string; choose the column with {flag}",
                         path=f.path, row=row)
    return col


def count_rows(fobj: IO[bytes], f: SourceFile) -> list[Unit]:
    """The file as one unit with its row count (one read of its record batches)."""
    return [Unit(sum(b.num_rows for b in _reader(fobj, f)), stream=True)]


def read_batches(fobj: IO[bytes], f: SourceFile, kind: Kind, columns: tuple[str, str | None],
                 unit: Unit, first: int, start: int, stop: int | None
                 ) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """``(texts, splits)`` of file rows ``start``..``stop`` (None: to the end), per record
    batch; the columns are checked on the first batch even when it holds no row to keep.
    Raises ``InputError`` for a missing or non-string column, naming the columns there
    are, or a value that is not UTF-8; ``IntegrityError`` when the file changed."""

    def pick(batch: pa.RecordBatch, i: int, row: int) -> pa.Array:
        return _checked(batch, f, kind, columns[i] or "", _FLAGS[i], row)

    yield from kept_batches(_reader(fobj, f), fobj, f, kind, columns, pick, first, start, stop)
