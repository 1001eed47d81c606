"""Reading Parquet: one file's text (and split) column, record batch by record batch, with
pyarrow; a whole file is never held in memory."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from prep.errors import InputError, PrepError
from prep.sources.base import Source, SourceFile, check_unchanged, open_verified

READ_BATCH_ROWS = 4096


# Text formats people hand to prep: (what it is, the pyarrow module, its reader call).
_TSV = "read_csv({path}, parse_options=r.ParseOptions(delimiter=chr(9)))"
CONVERTERS = {
    ".jsonl": ("JSON Lines", "pyarrow.json", "read_json({path})"),
    ".ndjson": ("JSON Lines", "pyarrow.json", "read_json({path})"),
    ".json": ("JSON (pyarrow reads one object per line)", "pyarrow.json", "read_json({path})"),
    ".csv": ("CSV", "pyarrow.csv", "read_csv({path})"),
    ".tsv": ("TSV", "pyarrow.csv", _TSV),
}


def not_parquet(name: str, local: Path, then: str | None = None) -> str | None:
    """For a JSON Lines, JSON or CSV file (by its suffix): that prep reads Parquet only, a
    pyarrow one-liner that converts it beside itself, and ``then`` (default: the
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
        f"{name} is {what}, not Parquet: prep reads Parquet only. Convert it first, e.g.\n"
        f"  python -c {shlex.quote(code)}\n{then}"
    )


def _is_string(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):  # pandas "category" columns
        return _is_string(t.value_type)
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)) or (
        hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)
    )


def _strings(col: pa.Array, f: SourceFile, first_row: int, name: str) -> list[Any]:
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


def iter_batches(
    source: Source, f: SourceFile, text_column: str, split_column: str | None
) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """Yield ``(texts, splits)`` per record batch of one file, in stored order.

    Raises ``InputError`` for unreadable Parquet, a missing column (naming those that
    exist) or a column that is not of a string type; ``IntegrityError`` when the file
    changes while it is read (no row read after the change is yielded): the file is hashed
    and parsed through one descriptor (``prep.sources.base``)."""
    with open_verified(source, f) as fobj:
        yield from _parse(fobj, f, text_column, split_column)


def _parse(
    fobj: IO[bytes], f: SourceFile, text_column: str, split_column: str | None
) -> Iterator[tuple[list[Any], list[Any] | None]]:
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
    columns = [text_column] + ([split_column] if split_column else [])
    for col, flag in zip(columns, ("--text-column", "--split-column"), strict=False):
        if schema.get_field_index(col) < 0:
            have = ", ".join(f'"{n}"' for n in schema.names) or "none"
            raise InputError(
                f'{f.path}: no column "{col}"; it has {have}. Choose the column with {flag}',
                path=f.path,
            )
        t = schema.field(col).type
        if not _is_string(t) and not pa.types.is_null(t):
            raise InputError(
                f'{f.path} row 0: column "{col}" holds {t}, expected a string; choose the '
                f"column with {flag}",
                path=f.path,
                row=0,
            )
    row = 0
    try:
        # One row group at a time, single-threaded: memory stays bounded by one row group
        # (pyarrow would otherwise decode several ahead); decoding is cheap next to
        # tokenizing.
        for group in range(pf.num_row_groups):
            for batch in pf.iter_batches(
                batch_size=READ_BATCH_ROWS, columns=columns, row_groups=[group], use_threads=False
            ):
                check_unchanged(fobj, f)  # these bytes are the hashed ones: pass them on
                texts = _strings(batch.column(0), f, row, text_column)
                splits = _strings(batch.column(1), f, row, split_column) if split_column else None
                row += batch.num_rows
                yield texts, splits
        check_unchanged(fobj, f)
    except PrepError:
        raise
    except (pa.ArrowException, OSError, ValueError) as e:
        check_unchanged(fobj, f)
        raise InputError(
            f"{f.path}: Parquet data is corrupt ({e}); remove or replace the file",
            path=f.path,
        ) from e
