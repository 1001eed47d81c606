"""Reading JSON Lines: plain, gzip or zstd (docs/format.md, "JSON Lines").

A line is the bytes up to and including a ``\\n`` (a last line without one is a line like
any other); line N is file row N-1. Each line is one JSON object holding the text field;
a blank line (nothing but spaces, tabs and a ``\\r``) is a row with an empty text, counted
and skipped like an empty text in Parquet. A ``\\r\\n`` line end is a line end (``\\r`` is
JSON white space); a UTF-8 BOM is dropped at the start of a file and refused anywhere
else; the text is the decoded JSON string, unchanged (``\\u0000`` is a NUL character in
it); a lone surrogate escape cannot be UTF-8 and is refused. Only the text (and split)
field is looked at: any other field may change its type from line to line.

A plain file is cut into line-aligned byte ranges by the main process (one read that
counts lines: each range's first line number is known before a worker parses it); a
compressed file is one stream (gzip and zstd cannot seek), which the main process
decompresses once as it plans, into blocks of whole lines that workers parse
(:func:`blocks`, :func:`block_batches`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import IO, Any

import pyarrow as pa

from prep.errors import InputError, PrepError
from prep.sources.base import SourceFile, check_unchanged
from prep.sources.kinds import Kind, Unit, place

CHUNK_BYTES = 1 << 22
RANGE_BYTES = 1 << 20  # a plain file's task: a range of about this many bytes
BLOCK_BYTES = 1 << 20  # a compressed file's task: whole lines of about this many bytes
BATCH_ROWS = 4096
_BOM = "\ufeff"
_BLANK = " \t\r"
_loads = json.JSONDecoder().decode


def _stream(fobj: IO[bytes], kind: Kind) -> IO[bytes]:
    """The file's JSON Lines bytes from its start: decompressed through pyarrow for a
    compressed kind. pyarrow closes what it reads from when it is done, so it reads a
    duplicate of the descriptor (the same open file: the same bytes and signature), and the
    caller's file stays open."""
    if kind.codec is None:
        return fobj
    fobj.seek(0)
    dup = open(os.dup(fobj.fileno()), "rb")  # noqa: SIM115 - pyarrow's stream closes it
    return pa.input_stream(dup, compression=kind.codec)  # type: ignore[no-any-return]


def _damaged(f: SourceFile, kind: Kind, lines: int, at: int, e: Exception) -> InputError:
    what = str(e)
    cut = "runcated" in what
    return InputError(
        f"{f.path}: the {kind.codec} data {'ends mid-frame' if cut else 'is corrupt'} after "
        f"line {lines} (byte {at:,} of the decompressed text; {what}); the file is "
        f"{'truncated' if cut else 'damaged'}: download or copy it again",
        path=f.path,
        row=lines,
    )


def _chunks(fobj: IO[bytes], f: SourceFile, kind: Kind, unit: Unit, size: int = 0
            ) -> Iterator[tuple[int, bytes]]:
    """``(offset, bytes)`` of the unit's text in chunks (offsets in the decompressed text),
    the file checked unchanged after each read. Raises ``InputError`` for damaged
    compressed data, as ``OSError`` from the decoder (``lines`` is filled in by the
    caller)."""
    stream = _stream(fobj, kind)
    if kind.codec is None:
        fobj.seek(unit.at)
    left = unit.end - unit.at if kind.codec is None else -1
    at = unit.at
    size = size or CHUNK_BYTES
    while left != 0:
        data = stream.read(size if left < 0 else min(size, left))
        check_unchanged(fobj, f)
        if not data:
            return
        yield at, data
        at += len(data)
        left -= len(data) if left > 0 else 0


def lines_of(fobj: IO[bytes], f: SourceFile, kind: Kind, unit: Unit, skip: int = 0
             ) -> Iterator[tuple[int, bytes]]:
    """``(byte offset, line)`` for each line of the unit after its first ``skip`` (each
    line without its ``\\n``; skipped lines are counted, never parsed). Raises
    ``InputError`` for damaged compressed data, naming the last whole line."""
    tail, tail_at, seen = b"", unit.at, 0
    try:
        for at, data in _chunks(fobj, f, kind, unit):
            if tail:
                data, at = tail + data, tail_at
            if seen + data.count(b"\n") < skip:  # a whole chunk of skipped lines
                cut = data.rfind(b"\n") + 1
                seen += data.count(b"\n", 0, cut)
                tail, tail_at = data[cut:], at + cut
                continue
            pos = 0
            while True:
                nl = data.find(b"\n", pos)
                if nl < 0:
                    break
                if seen >= skip:
                    yield at + pos, data[pos:nl]
                seen += 1
                pos = nl + 1
            tail, tail_at = data[pos:], at + pos
    except OSError as e:
        raise _damaged(f, kind, seen, tail_at, e) from e
    if tail and seen >= skip:
        yield tail_at, tail


def count_lines(fobj: IO[bytes], f: SourceFile, kind: Kind, size: int) -> list[Unit]:
    """The file's units with their line counts, in one read: line-aligned ranges of about
    ``RANGE_BYTES`` for a plain file, the whole stream for a compressed one. Raises
    ``InputError`` for damaged compressed data."""
    whole = Unit(0, 0, size if kind.codec is None else 0)
    units: list[Unit] = []
    start, lines, last, done = 0, 0, b"\n", 0
    try:
        for at, data in _chunks(fobj, f, kind, whole):
            done = at + len(data)
            pos = 0
            while kind.codec is None and at + len(data) - start > RANGE_BYTES:
                nl = data.find(b"\n", max(pos, start + RANGE_BYTES - at))
                if nl < 0:
                    break
                lines += data.count(b"\n", pos, nl + 1)
                units.append(Unit(lines, start, at + nl + 1))
                start, lines, pos = at + nl + 1, 0, nl + 1
            lines += data.count(b"\n", pos)
            last = data[-1:]
    except OSError as e:
        raise _damaged(f, kind, sum(u.rows for u in units) + lines, done, e) from e
    lines += last != b"\n"
    end = size if kind.codec is None else 0
    if lines or not units:
        units.append(Unit(lines, start if kind.codec is None else 0, end, kind.codec is not None))
    return units


def blocks(fobj: IO[bytes], f: SourceFile, kind: Kind) -> Iterator[tuple[int, int, bytes, int]]:
    """In the main process: the decompressed text of a compressed file as ``(first line,
    byte offset, whole lines, how many)`` blocks of about ``BLOCK_BYTES`` (without the
    newline that ends the block's last line), decompressed once, never parsed: each block
    is cut at the last newline of what was read, its lines counted once, here. Raises
    ``InputError`` for damaged data, after the blocks before it."""
    tail, tail_at, row = b"", 0, 0
    try:
        for at, data in _chunks(fobj, f, kind, Unit(0), BLOCK_BYTES):
            if tail:
                data, at = tail + data, tail_at
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # a line longer than a block: read on
                tail, tail_at = data, at
                continue
            body = data[: cut - 1]
            lines = body.count(b"\n") + 1
            yield row, at, body, lines
            row += lines
            tail, tail_at = data[cut:], at + cut
    except OSError as e:
        raise _damaged(f, kind, row, tail_at, e) from e
    if tail:  # a last line without its newline (the tail holds none)
        yield row, tail_at, tail, 1


def block_batches(f: SourceFile, kind: Kind, columns: tuple[str, str | None], block: bytes,
                  first: int, rows: int, at: int, start: int, stop: int | None
                  ) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """In a worker: ``(texts, splits)`` of file rows ``start``..``stop`` (None: all) of a
    block of ``rows`` whole lines (from :func:`blocks`) whose first line is row ``first`` at
    byte ``at``, in one batch. Raises ``InputError`` at the first bad line, after the lines
    before it."""
    parser = LineParser(f, kind, columns)

    def parsed() -> Iterator[tuple[str, Any]]:
        pos = 0
        for row in range(first, first + rows):
            nl = block.find(b"\n", pos)
            raw = block[pos:] if nl < 0 else block[pos:nl]
            if row >= start and (stop is None or row < stop):
                yield parser.parse(row, at + pos, raw)
            pos = nl + 1

    yield from _batched(parsed(), bool(columns[1]), None)


def _batched(parsed: Iterator[tuple[str, Any]], split: bool, size: int | None
             ) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """``(texts, splits)`` (splits None unless ``split``) of the ``parsed`` lines, in
    batches of ``size`` (None: one); the lines parsed before a ``PrepError`` are yielded
    before it is raised."""
    texts: list[Any] = []
    splits: list[Any] = []
    try:
        for text, value in parsed:
            texts.append(text)
            splits.append(value)
            if len(texts) == size:
                yield texts, splits if split else None
                texts, splits = [], []
    except PrepError:
        if texts:
            yield texts, splits if split else None
        raise
    if texts:
        yield texts, splits if split else None


def field_of(obj: dict[str, Any], name: str) -> tuple[bool, Any]:
    """``(found, value)`` of a field: ``name`` as a key, else a dotted path into nested
    objects (``metadata.text``)."""
    if name in obj:
        return True, obj[name]
    node: Any = obj
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


_TYPES = {dict: "an object", list: "a list", bool: "a boolean", int: "a number",
          float: "a number", type(None): "null"}


class LineParser:
    """One file's lines to ``(text, split value)``; every refusal names the file, the line,
    its byte offset and the fix."""

    def __init__(self, f: SourceFile, kind: Kind, columns: tuple[str, str | None]) -> None:
        self.f, self.kind = f, kind
        self.text_field, self.split_field = columns

    def _refuse(self, row: int, at: int, what: str, fix: str) -> InputError:
        where = place(self.kind, self.f.path, row)
        return InputError(f"{where} (byte {at:,}): {what}; {fix}", path=self.f.path, row=row)

    def parse(self, row: int, at: int, raw: bytes) -> tuple[str, Any]:
        """Line ``row`` (file row, from 0), read at byte ``at``. Raises ``InputError``."""
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self._refuse(row, at + e.start, f"invalid UTF-8 ({e.reason})",
                               "JSON Lines must be UTF-8: re-encode the file (iconv -t UTF-8)"
                               " or replace it") from e
        if line.startswith(_BOM):
            if at != 0:
                raise self._refuse(row, at, "a UTF-8 byte order mark (EF BB BF) starts the "
                                   "line; only a file's first line may start with one",
                                   "remove it (were two files joined with cat?)")
            line = line[1:]
        if not line.strip(_BLANK):
            return "", None
        try:
            obj = _loads(line)
        except ValueError as e:
            pos = getattr(e, "pos", 0)
            raise self._refuse(row, at + len(line[:pos].encode("utf-8", "surrogatepass")),
                               f"not JSON ({getattr(e, 'msg', e)})",
                               "each line must be one JSON object: fix or remove the line") from e
        if not isinstance(obj, dict):
            raise self._refuse(row, at, f"{_TYPES.get(type(obj), 'a string')} is not a JSON "
                               "object", "each line must be one JSON object: fix or remove "
                               "the line")
        found, text = field_of(obj, self.text_field)
        if not found:
            have = ", ".join(f'"{k}"' for k in list(obj)[:8]) or "none"
            raise self._refuse(row, at, f'no field "{self.text_field}" (it has {have})',
                               "choose the text field with --text-column")
        if not isinstance(text, str):
            raise self._refuse(row, at, f'field "{self.text_field}" is '
                               f"{_TYPES.get(type(text), 'not a string')}, expected a string",
                               "fix the line, or choose the text field with --text-column")
        if "\\u" in line:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:
                raise self._refuse(row, at, f'field "{self.text_field}" holds a lone '
                                   f"surrogate escape (\\u{ord(text[e.start]):04x}), which "
                                   "is no character and cannot be UTF-8",
                                   "fix the line (a broken \\uD83D\\uDE00-style pair?)") from e
        split = None
        if self.split_field is not None:
            found, split = field_of(obj, self.split_field)
            if not found:
                raise self._refuse(row, at, f'no field "{self.split_field}"',
                                   "give every line its split, or drop --split-column")
        return text, split


def read_batches(fobj: IO[bytes], f: SourceFile, kind: Kind, columns: tuple[str, str | None],
                 unit: Unit, first: int, start: int, stop: int | None
                 ) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """``(texts, splits)`` of file rows ``start``..``stop`` (None: to the end) of the unit
    whose first row is ``first``, in batches. Raises ``InputError`` at the first bad line
    (the lines before it are yielded first), ``IntegrityError`` when the file changed."""
    parser = LineParser(f, kind, columns)

    def parsed() -> Iterator[tuple[str, Any]]:
        row = start
        for at, raw in lines_of(fobj, f, kind, unit, start - first):
            if stop is not None and row >= stop:
                return
            yield parser.parse(row, at, raw)
            row += 1

    yield from _batched(parsed(), bool(columns[1]), BATCH_ROWS)
