"""Reading JSON Lines: plain, gzip or zstd (docs/format.md, "JSON Lines").

A line is the bytes up to and including a ``\\n`` (a last line without one is a line like
any other); line N is file row N-1. Each line is one JSON object holding the text field;
a blank line (nothing but spaces, tabs and a ``\\r``) is a row with an empty text, counted
and skipped like an empty text in Parquet. A ``\\r\\n`` line end is a line end (``\\r`` is
JSON white space); a UTF-8 BOM is dropped at the start of a file and refused anywhere
else; the text is the decoded JSON string, unchanged (``\\u0000`` is a NUL character in
it); a lone surrogate escape cannot be UTF-8 and is refused. Only the text (and split)
field is looked at: any other field may change its type from line to line.

The main process cuts a file into whole lines (:mod:`prep.sources.jsonl_blocks`: a plain
file's line-aligned ranges, a compressed file's blocks) that workers parse
(:func:`block_batches`; a reader of a whole file, such as a shuffled stream's, reads the
same blocks itself: :func:`read_batches`).

A worker parses a block of whole lines (a compressed file's block, a plain file's range)
with a fast path first (:func:`~prep.sources.jsonl_fast.fast_texts`: the compiled scanner,
else pyarrow's JSON reader; no Python object per line but the text), and with the exact
line-by-line parser (:class:`LineParser`, Python's json) whenever the fast path is not sure
to give what the rules say: a blank line, a BOM, bytes that are not UTF-8, a dotted field
name, or any line it refuses or might read otherwise (a lone surrogate in the text, a
missing, null or non-string field, two objects on a line, NaN). Those blocks, and every
refusal, take the exact path; the rest read as it would have read them.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

from prep.errors import InputError, PrepError
from prep.sources.base import SourceFile
from prep.sources.jsonl_blocks import blocks, chunks, damaged, newlines
from prep.sources.jsonl_fast import fast_texts
from prep.sources.kinds import Kind, Unit, place

_BOM = "\ufeff"
_BLANK = " \t\r"
_loads = json.JSONDecoder().decode
# Python's json recurses once a nesting level and stops at the recursion limit (1,000), where
# the fast paths have no limit: a deeper line is decoded again in a thread of this stack with
# the limit raised to this depth (a million levels fit in it, measured), and deeper still by
# a fast path alone, so that both paths read the same lines.
_DEEP_STACK = 1 << 30
_DEEP_LEVELS = 1_000_000


def _deep_loads(line: str) -> Any:
    """``_loads(line)`` for a line nested deeper than the recursion limit (see above)."""
    out: dict[str, Any] = {}

    def decode() -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, min(len(line), _DEEP_LEVELS) + 64))
        try:
            out["value"] = _loads(line)
        except (ValueError, RecursionError) as e:
            out["error"] = e
        finally:
            sys.setrecursionlimit(limit)

    previous = threading.stack_size(_DEEP_STACK)
    try:
        worker = threading.Thread(target=decode, name="prep-deep-json")
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def block_batches(f: SourceFile, kind: Kind, columns: tuple[str, str | None],
                  block: bytes | memoryview, first: int, rows: int, at: int, start: int,
                  stop: int | None) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """In a worker: ``(texts, splits)`` of file rows ``start``..``stop`` (None: all) of a
    block of ``rows`` whole lines (:mod:`prep.sources.jsonl_blocks`) whose first line is row
    ``first`` at byte ``at``, in one batch. Raises ``InputError`` at the first bad line,
    after the lines before it."""
    fast = fast_texts(block, rows, columns)
    if fast is not None:
        lo, hi = max(start - first, 0), rows if stop is None else min(stop - first, rows)
        if lo < hi:
            texts, splits = fast
            yield texts[lo:hi], None if splits is None else splits[lo:hi]
        return
    parser = LineParser(f, kind, columns)
    block = bytes(block)  # the exact path (rare) searches it

    def parsed() -> Iterator[tuple[str, Any]]:
        pos = 0
        for row in range(first, first + rows):
            nl = block.find(b"\n", pos)
            raw = block[pos:] if nl < 0 else block[pos:nl]
            if row >= start and (stop is None or row < stop):
                yield parser.parse(row, at + pos, raw)
            pos = nl + 1

    yield from _batched(parsed(), bool(columns[1]))


def _batched(parsed: Iterator[tuple[str, Any]], split: bool
             ) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """``(texts, splits)`` (splits None unless ``split``) of the ``parsed`` lines, in one
    batch; the lines parsed before a ``PrepError`` are yielded before it is raised."""
    texts: list[Any] = []
    splits: list[Any] = []
    try:
        for text, value in parsed:
            texts.append(text)
            splits.append(value)
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
            try:
                obj = _loads(line)
            except RecursionError:
                obj = _deep_loads(line)
        except RecursionError as e:  # deeper than the thread's stack: a fast path alone
            got = fast_texts(raw, 1, (self.text_field, self.split_field))
            if got is None:
                raise self._refuse(row, at, f"nested more than {_DEEP_LEVELS:,} levels deep",
                                   "flatten the line or remove it") from e
            texts, splits = got
            return texts[0], None if splits is None else splits[0]
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
    if kind.codec is None:  # a line-aligned range: one block of whole lines
        try:
            data = b"".join(chunk for _, chunk in chunks(fobj, f, kind, unit))
        except OSError as e:
            raise damaged(f, kind, 0, unit.at, e) from e
        if data:
            body = memoryview(data)[:-1] if data.endswith(b"\n") else memoryview(data)
            yield from block_batches(f, kind, columns, body, first,
                                     newlines(body, 0, len(body)) + 1, unit.at, start, stop)
        return
    for row, at, lines, rows in blocks(fobj, f, kind):  # a whole stream, in blocks
        if stop is not None and row >= stop:
            return
        if row + rows > start:
            yield from block_batches(f, kind, columns, lines, row, rows, at, start, stop)
