"""Where rows come from: an ordered list of Parquet files with identities, read in batches.

A source resolves to a root and a list of :class:`SourceFile` sorted by their path relative
to the root (POSIX strings). Each file's SHA-256 is computed when the file is first read
(and checked against an expected value, on resume). Rows are streamed in record batches
with pyarrow; a whole file is never held in memory.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from prep.errors import InputError, IntegrityError, PrepError, UsageError
from prep.fsio import file_sha256

_GLOB_CHARS = set("*?[")
READ_BATCH_ROWS = 4096


@dataclass
class SourceFile:
    """One Parquet file. ``sha256`` is filled when the file is read (or hashed at finish);
    ``expected_sha256`` comes from a checkpoint and is checked then."""

    path: str  # relative to the source root, POSIX
    local: Path
    size: int
    mtime_ns: int = 0
    sha256: str | None = None
    expected_sha256: str | None = None

    def identity(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


@dataclass
class Source:
    """A resolved source: kind, the URI as given, the root, revision and files in
    sorted order (before any file shuffle)."""

    kind: str
    uri: str
    root: str
    files: list[SourceFile]
    revision: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def local_path(self, f: SourceFile) -> Path:
        """The local file to read (a Hub source downloads it here)."""
        return f.local


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


def _has_glob(spec: str) -> bool:
    return any(c in _GLOB_CHARS for c in spec)


def _glob_root(spec: str) -> Path:
    parts = Path(spec).parts
    lead: list[str] = []
    for part in parts:
        if _has_glob(part):
            break
        lead.append(part)
    return Path(*lead) if lead else Path(".")


def resolve_local(spec: str, base: Path | None = None) -> Source:
    """Resolve a local file, directory (recursive ``*.parquet``) or glob; a relative
    ``spec`` is taken relative to ``base`` (default: the current directory).

    Raises ``InputError`` when nothing matches, naming what was looked for."""
    given = spec
    if base is not None and not os.path.isabs(spec):
        spec = os.path.join(base, spec)
    if _has_glob(spec):
        root = _glob_root(spec)
        matches = [Path(m) for m in glob.glob(spec, recursive=True)]
        paths = [m for m in matches if m.is_file()]
        if not paths:
            raise InputError(
                f"--source {given}: the pattern matches no files; check the pattern and the "
                "current directory",
                path=spec,
            )
    else:
        p = Path(spec)
        if p.is_dir():
            root = p
            paths = [q for q in p.rglob("*.parquet") if q.is_file()]
            if not paths:
                others = sorted(q for q in p.rglob("*") if q.suffix.lower() in CONVERTERS)
                then = f"and the others like it, then run again with --source {given}"
                hint = f"; {not_parquet(others[0].name, others[0], then)}" if others else ""
                raise InputError(
                    f"--source {given}: the directory holds no *.parquet files (searched "
                    f"recursively){hint}",
                    path=spec,
                )
        elif p.is_file():
            root = p.parent
            paths = [p]
        elif given.startswith("hf:"):  # hf:OWNER/NAME is the tokenizer's form, not a path
            raise UsageError(
                f"--source {given}: a Hub dataset is written hf://datasets/OWNER/NAME"
                f"[@REVISION][/GLOB] (hf:OWNER/NAME is the form for --tokenizer); did you "
                f"mean --source hf://datasets/{given[3:].lstrip('/')}?",
                path=spec,
            )
        else:
            raise InputError(
                f"--source {given}: no such file or directory; give a Parquet file, a "
                "directory of them, a glob, or hf://datasets/OWNER/NAME",
                path=spec,
            )
    for q in paths:  # a text file named outright (or by a glob): say so before any work
        if q.suffix.lower() in CONVERTERS:
            raise InputError(str(not_parquet(q.name, Path(os.path.abspath(q)))), path=q)
    root_abs = Path(os.path.abspath(root))
    files = []
    for q in paths:
        st = q.stat()
        # abspath, not resolve(): a symlink (the Hugging Face cache links snapshots to
        # blobs) keeps the name it has under the root.
        rel = Path(os.path.abspath(q)).relative_to(root_abs).as_posix()
        files.append(
            SourceFile(
                path=rel, local=Path(os.path.abspath(q)), size=st.st_size, mtime_ns=st.st_mtime_ns
            )
        )
    files.sort(key=lambda f: f.path)
    return Source(kind="parquet", uri=given, root=str(root_abs), files=files)


def resolve_source(
    spec: str, token: str | None, base: Path | None = None, revision: str | None = None
) -> Source:
    """The source's file list: ``hf://`` through the Hub (pinned to ``revision`` when given,
    as on resume), anything else local (relative to ``base``)."""
    if spec.startswith("hf://"):
        from prep.hub import resolve_hub_source

        return resolve_hub_source(spec, token=token, revision=revision)
    return resolve_local(spec, base)


def hash_and_check(source: Source, f: SourceFile) -> None:
    """Fill ``f.sha256`` (once) and refuse a file whose bytes changed since recorded.

    Raises ``IntegrityError`` for changed bytes, ``InputError`` for a file that cannot be
    read (permissions, vanished): bad input, not a failure of the output side."""
    if f.sha256 is None:
        local = source.local_path(f)
        try:
            size = os.path.getsize(local)
            sha = file_sha256(local) if size == f.size else None
        except OSError as e:
            raise InputError(
                f"{f.path}: cannot read the source file ({e.strerror or e}); fix its "
                "permissions or restore it",
                path=f.path,
            ) from e
        if sha is None:
            raise IntegrityError(
                f"source file {f.path} is {size:,} bytes, but {f.size:,} were recorded; the "
                "source changed during or since the run. Start a new run (new --out) to use "
                "the new data",
                path=f.path,
            )
        f.sha256 = sha
    if f.expected_sha256 is not None and f.sha256 != f.expected_sha256:
        raise IntegrityError(
            f"source file {f.path} changed since the run started (SHA-256 {f.sha256[:12]}… "
            f"is not the recorded {f.expected_sha256[:12]}…); the dataset cannot continue "
            "from different data. Restore the original file or start a new run (new --out)",
            path=f.path,
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
    exist) or a column that is not of a string type."""
    local = source.local_path(f)
    hash_and_check(source, f)
    try:
        # buffer_size: stream each column chunk instead of reading it whole, so memory does
        # not grow with the row-group size the writer chose.
        pf = pq.ParquetFile(local, buffer_size=1 << 20)
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as e:  # ValueError: names not UTF-8
        raise InputError(
            not_parquet(f.path, local)
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
                texts = _strings(batch.column(0), f, row, text_column)
                splits = _strings(batch.column(1), f, row, split_column) if split_column else None
                row += batch.num_rows
                yield texts, splits
    except PrepError:
        raise
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputError(
            f"{f.path}: Parquet data is corrupt ({e}); remove or replace the file",
            path=f.path,
        ) from e


def count_rows(source: Source, limit: int | None) -> int | None:
    """Total rows from the Parquet footers of local files (for progress and ETA), capped
    at ``limit``; None for remote sources or when a footer cannot be read."""
    if source.kind != "parquet":
        return limit
    total = 0
    try:
        for f in source.files:
            total += pq.ParquetFile(f.local).metadata.num_rows
    except (pa.ArrowException, OSError, ValueError):
        return limit
    return min(total, limit) if limit is not None else total
