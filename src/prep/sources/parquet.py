"""Reading Parquet: one file's text (and split) column, record batch by record batch, with
pyarrow; a whole file is never held in memory."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from prep.errors import InputError, PrepError
from prep.sources.base import (
    SourceFile,
    check_unchanged,
)
from prep.sources.kinds import Kind, Unit

READ_BATCH_ROWS = 4096


# Text formats people hand to prep that it does not read: (what it is, the pyarrow module,
# its reader call).
_TSV = "read_csv({path}, parse_options=r.ParseOptions(delimiter=chr(9)))"
CONVERTERS = {
    ".csv": ("CSV", "pyarrow.csv", "read_csv({path})"),
    ".tsv": ("TSV", "pyarrow.csv", _TSV),
}


def not_parquet(name: str, local: Path, then: str | None = None) -> str | None:
    """For a CSV or TSV file (by its suffix): that prep does not read it, a pyarrow
    one-liner that converts it to Parquet beside itself, and ``then`` (default: the
    ``--source`` to give next); None for any other file."""
    kind = CONVERTERS.get(local.suffix.lower())
    if kind is None:
        return None
    what, module, call = kind
    target = local.with_suffix(".parquet")
    code = (
        f"import {module} as r, pyarrow.parquet as pq; "
        f"pq.write_table(r.{call.format(path=json.dumps(str(local)))}, "
        f"{json.dumps(str(target))})"
    )
    then = then or f"then give --source {shlex.quote(str(target))}"
    return (
        f"{name} is {what}: prep reads Parquet, Arrow IPC and JSON Lines. Convert it first, "
        "e.g.\n"
        f"  python -c {shlex.quote(code)}\n{then}"
    )


def is_string(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):  # pandas "category" columns
        return is_string(t.value_type)
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)) or (
        hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)
    )


def strings(col: pa.Array, f: SourceFile, first_row: int, name: str) -> list[Any]:
    """The column's values; raises ``InputError`` naming the first row that is not UTF-8."""
    try:
        return col.to_pylist()  # type: ignore[no-any-return]
    except UnicodeDecodeError as e:
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        raw = col.cast(pa.large_binary()).to_pylist()
        bad = next((i for i, v in enumerate(raw) if v is not None and not _utf8(v)), 0)
        raise InputError(
            f'{f.path} row {first_row + bad}: column "{name}" holds bytes that are not valid '
            f"UTF-8 ({e}); the file is damaged or was not written as text: remove or "
            "replace it",
            path=f.path,
            row=first_row + bad,
        ) from e


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _columns(text_column: str, split_column: str | None) -> list[str]:
    return [text_column] + ([split_column] if split_column else [])


def open_parquet(
    fobj: IO[bytes], f: SourceFile, text_column: str, split_column: str | None
) -> pq.ParquetFile:
    """Parse the footer of the open file ``fobj`` (opened by ``open_verified`` or
    ``open_identified``) for reading its text (and split) column.

    Raises ``InputError`` for unreadable Parquet, a missing column (naming those that
    exist) or a column that is not of a string type; ``IntegrityError`` when the file
    changed under the parser."""
    try:
        # buffer_size: stream each column chunk instead of reading it whole, so memory does
        # not grow with the row-group size the writer chose.
        pf = pq.ParquetFile(fobj, buffer_size=1 << 20)
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as e:  # ValueError: names not UTF-8
        check_unchanged(fobj, f)  # a file rewritten under the parser reads as garbage
        raise InputError(
            not_parquet(f.path, Path(str(fobj.name)))  # the local copy a Hub file is read from
            or f"{f.path}: not a readable Parquet file ({e}); remove or replace the file",
            path=f.path,
        ) from e
    columns = _columns(text_column, split_column)
    for col, flag in zip(columns, ("--text-column", "--split-column"), strict=False):
        if schema.get_field_index(col) < 0:
            have = ", ".join(f'"{n}"' for n in schema.names) or "none"
            raise InputError(
                f'{f.path}: no column "{col}"; it has {have}. Choose the column with {flag}',
                path=f.path,
            )
        t = schema.field(col).type
        if not is_string(t) and not pa.types.is_null(t):
            raise InputError(
                f'{f.path} row 0: column "{col}" holds {t}, expected a string; choose the '
                f"column with {flag}",
                path=f.path,
                row=0,
            )
    return pf


def count_groups(fobj: IO[bytes], f: SourceFile) -> list[Unit]:
    """The file's row groups as units (rows from the footer). Raises ``InputError`` for
    unreadable Parquet."""
    try:
        meta = pq.ParquetFile(fobj).metadata
    except (pa.ArrowException, OSError, ValueError) as e:
        check_unchanged(fobj, f)
        raise InputError(f"{f.path}: not a readable Parquet file ({e}); remove or replace the "
                         "file", path=f.path) from e
    return [Unit(meta.row_group(g).num_rows, g) for g in range(meta.num_row_groups)]


# The column array of a record batch: (batch, 0 for the text column or 1 for the split
# column, the batch's first file row); raises ``InputError`` for a missing or unfit column.
Pick = Callable[[pa.RecordBatch, int, int], pa.Array]


def kept_batches(batches: Iterable[pa.RecordBatch], fobj: IO[bytes], f: SourceFile, kind: Kind,
                 columns: tuple[str, str | None], pick: Pick, first: int,
                 start: int | None = None, stop: int | None = None
                 ) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """``(texts, splits)`` per record batch of ``batches`` (of Parquet or Arrow IPC,
    ``kind``), whose first is file row ``first``, keeping file rows ``start``..``stop`` only
    (default: all); the text and split columns (``columns``, named) taken by ``pick``, which
    checks them on the first batch even when it holds no row to keep.

    Raises ``InputError`` for corrupt data or a value that is not UTF-8, naming its row;
    ``IntegrityError`` when the file changed since it was identified (checked after every
    record batch read, so no row read after a change is yielded)."""
    text_column, split_column = columns
    row = first
    try:
        for k, batch in enumerate(batches):
            check_unchanged(fobj, f)  # these bytes are the hashed ones: pass them on
            n = batch.num_rows
            if k == 0:
                pick(batch, 0, row)
                if split_column:
                    pick(batch, 1, row)
            lo = 0 if start is None else min(max(start - row, 0), n)
            hi = n if stop is None else min(max(stop - row, 0), n)
            if lo < hi:
                part = batch if (lo, hi) == (0, n) else batch.slice(lo, hi - lo)
                texts = strings(pick(part, 0, row + lo), f, row + lo, text_column)
                splits = (strings(pick(part, 1, row + lo), f, row + lo, split_column)
                          if split_column else None)
                yield texts, splits
            row += n
            if stop is not None and row >= stop:
                return
    except PrepError:
        raise
    except (pa.ArrowException, OSError, ValueError) as e:
        check_unchanged(fobj, f)
        raise InputError(
            f"{f.path}: {kind.what} data is corrupt ({e}); remove or replace the file",
            path=f.path,
        ) from e


def read_batches(fobj: IO[bytes], f: SourceFile, kind: Kind, columns: tuple[str, str | None],
                 unit: Unit, first: int, start: int, stop: int | None
                 ) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """``(texts, splits)`` per record batch of file rows ``start``..``stop`` (None: to the
    end of the group) of row group ``unit.at``, whose first row is ``first`` (the footer
    and the columns are checked first: :func:`open_parquet`). Raises as
    :func:`kept_batches`."""
    pf = open_parquet(fobj, f, *columns)

    def batches() -> Iterator[pa.RecordBatch]:  # started where its errors are caught
        # Single-threaded, one group at a time: memory stays bounded by a record batch
        # (pyarrow would otherwise decode several ahead); decoding is cheap next to
        # tokenizing.
        if unit.rows:
            yield from pf.iter_batches(batch_size=READ_BATCH_ROWS, columns=_columns(*columns),
                                       row_groups=[unit.at], use_threads=False)

    yield from kept_batches(batches(), fobj, f, kind, columns,
                            lambda part, i, row: part.column(i), first, start, stop)
