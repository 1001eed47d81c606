"""JSON Lines bytes cut into whole lines, never parsed (docs/format.md, "JSON Lines"): what
the main process reads of a file before workers parse it (:mod:`prep.sources.jsonl`).

A plain file is cut into line-aligned byte ranges of about ``RANGE_BYTES`` (:func:`count_lines`:
one read that counts lines, so each range's first line number is known before a worker
parses it). A compressed file is one stream (gzip and zstd cannot seek), decompressed once
into blocks of whole lines of about ``BLOCK_BYTES`` (:func:`blocks`), each cut at the last
newline of a read and its lines counted here; a block is the read itself wherever no line
began in an earlier read, so it reaches a worker's inbox (``prep.procs.pool``) without
another copy. Damaged compressed data is refused by name (:func:`damaged`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO

import numpy as np
import pyarrow as pa

from prep.errors import InputError
from prep.sources.base import SourceFile, check_unchanged
from prep.sources.kinds import Kind, Unit

CHUNK_BYTES = 1 << 22
RANGE_BYTES = 1 << 21  # a plain file's task: a range of about this many bytes
BLOCK_BYTES = 1 << 21  # a compressed file's task: whole lines of about this many bytes


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


def damaged(f: SourceFile, kind: Kind, lines: int, at: int, e: Exception) -> InputError:
    what = str(e)
    cut = "runcated" in what
    return InputError(
        f"{f.path}: the {kind.codec} data {'ends mid-frame' if cut else 'is corrupt'} after "
        f"line {lines} (byte {at:,} of the decompressed text; {what}); the file is "
        f"{'truncated' if cut else 'damaged'}: download or copy it again",
        path=f.path,
        row=lines,
    )


def chunks(fobj: IO[bytes], f: SourceFile, kind: Kind, unit: Unit, size: int = 0,
            reuse: bool = False) -> Iterator[tuple[int, bytes]]:
    """``(offset, bytes)`` of the unit's text in chunks (offsets in the decompressed text),
    the file checked unchanged after each read. ``reuse``: a plain file's chunks are read
    into one buffer, each valid until the next is asked for (a read that only counts need
    not have new pages faulted in for every chunk). Raises ``InputError`` for damaged
    compressed data, as ``OSError`` from the decoder (``lines`` is filled in by the
    caller)."""
    stream = _stream(fobj, kind)
    if kind.codec is None:
        fobj.seek(unit.at)
    left = unit.end - unit.at if kind.codec is None else -1
    at = unit.at
    size = size or CHUNK_BYTES
    buffer = bytearray(size) if reuse and kind.codec is None else None
    while left != 0:
        want = size if left < 0 else min(size, left)
        if buffer is None:
            data = stream.read(want)
        else:
            if len(buffer) != want:  # the last read of the unit
                buffer = bytearray(want)
            got = fobj.readinto(buffer)  # type: ignore[attr-defined]
            if got < want:
                del buffer[got:]
            data = buffer  # type: ignore[assignment]  # read as the bytes it holds
        check_unchanged(fobj, f)
        if not data:
            return
        yield at, data
        at += len(data)
        left -= len(data) if left > 0 else 0


def newlines(data: bytes | bytearray | memoryview, start: int, end: int) -> int:
    """How many newlines ``data[start:end]`` holds: a vector compare, about three times as
    fast as ``bytes.count``."""
    return int(np.count_nonzero(np.frombuffer(data, np.uint8, end - start, start) == 10))


def count_lines(fobj: IO[bytes], f: SourceFile, kind: Kind, size: int) -> list[Unit]:
    """The file's units with their line counts, in one read: line-aligned ranges of about
    ``RANGE_BYTES`` for a plain file, the whole stream for a compressed one. Raises
    ``InputError`` for damaged compressed data."""
    whole = Unit(0, 0, size if kind.codec is None else 0)
    units: list[Unit] = []
    start, lines, last, done = 0, 0, b"\n", 0
    try:
        for at, data in chunks(fobj, f, kind, whole, reuse=True):
            done = at + len(data)
            pos = 0
            while kind.codec is None and at + len(data) - start > RANGE_BYTES:
                nl = data.find(b"\n", max(pos, start + RANGE_BYTES - at))
                if nl < 0:
                    break
                lines += newlines(data, pos, nl + 1)
                units.append(Unit(lines, start, at + nl + 1))
                start, lines, pos = at + nl + 1, 0, nl + 1
            lines += newlines(data, pos, len(data))
            last = data[-1:]
    except OSError as e:
        raise damaged(f, kind, sum(u.rows for u in units) + lines, done, e) from e
    lines += last != b"\n"
    end = size if kind.codec is None else 0
    if lines or not units:
        units.append(Unit(lines, start if kind.codec is None else 0, end, kind.codec is not None))
    return units


def blocks(fobj: IO[bytes], f: SourceFile, kind: Kind
           ) -> Iterator[tuple[int, int, bytes | memoryview, int]]:
    """In the main process: the decompressed text of a compressed file as ``(first line,
    byte offset, whole lines, how many)`` blocks of about ``BLOCK_BYTES`` (without the
    newline that ends the block's last line), decompressed once, never parsed: each block
    is cut at the last newline of what was read, its lines counted once, here. Raises
    ``InputError`` for damaged data, after the blocks before it."""
    parts: list[bytes] = []  # a line begun in earlier reads (no newline in them), from tail_at
    tail_at, row = 0, 0
    try:
        for at, data in chunks(fobj, f, kind, Unit(0), BLOCK_BYTES):
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # a line longer than a block: read on
                tail_at = tail_at if parts else at
                parts.append(data)
                continue
            lines = newlines(data, 0, cut - 1) + 1
            # The read itself, or (a line begun before it) one copy into the block.
            body: bytes | memoryview = memoryview(data)[: cut - 1]
            if parts:
                body = b"".join([*parts, body])
            yield row, tail_at if parts else at, body, lines
            row += lines
            parts, tail_at = [data[cut:]] if cut < len(data) else [], at + cut
    except OSError as e:
        raise damaged(f, kind, row, tail_at, e) from e
    if parts:  # a last line without its newline
        yield row, tail_at, b"".join(parts), 1
