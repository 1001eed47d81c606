"""The fast paths of a JSON Lines block (:mod:`prep.sources.jsonl`): the text (and split)
field of every line at once, or None when the block must be parsed line by line to be sure.

The compiled scanner (``_jsonl``, src/prep/sources/_jsonl.c, built at install where a C
compiler is found, like the BPE trainer) reads the block in one pass in C, checks each line
as Python's json would (one object, strict UTF-8, RFC 8259 numbers and escapes, any depth)
and builds a str for each text only; without it pyarrow's JSON reader reads the block
(:func:`arrow_texts`). Either answers only what :class:`~prep.sources.jsonl.LineParser`
would give every line, and None otherwise: a blank line, a BOM, a dotted field name, a line
that either refuses or reads otherwise (a lone surrogate in the text, a missing, null or
non-string field, two objects on a line, NaN; the scanner also for a top-level key written
with an escape or an integer of hundreds of digits)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

Texts = tuple[list[str], list[str] | None]

# A line after the first that may be blank: an empty one, or one that starts with JSON
# white space (any such line of a block is found, and some that are not blank, which then
# take the exact path).
_MAYBE_BLANK = r"\n[\n \t\r]|\n$"
_MAX_ARROW_BLOCK = (1 << 31) - 2  # pyarrow's JSON reader takes an int32 block size


def _compiled() -> Callable[[Any, int, str, str | None], Texts | None] | None:
    try:
        from prep.sources import _jsonl  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _jsonl.texts  # type: ignore[no-any-return]


COMPILED = _compiled()


def native_texts(block: bytes | memoryview, rows: int, columns: tuple[str, str | None]
                 ) -> Texts | None:
    """``(texts, splits)`` of the ``rows`` whole lines of ``block`` (without the newline
    that ends its last line) read by the compiled scanner, exactly what :class:`LineParser`
    gives them; None when not sure (the scanner itself refuses a dotted field name), or
    when the scanner is not built."""
    if COMPILED is None:
        return None
    return COMPILED(block, rows, columns[0], columns[1])


def arrow_texts(block: bytes | memoryview, rows: int, columns: tuple[str, str | None]
                ) -> Texts | None:
    """``(texts, splits)`` of the ``rows`` whole lines of ``block`` (without the newline
    that ends its last line) read by pyarrow's JSON reader, exactly what :class:`LineParser`
    gives them; None when the block must be parsed line by line to be sure."""
    head = bytes(block[:3])
    if (not head or head[:1] in b" \t\r\n" or head == b"\xef\xbb\xbf"
            or len(block) > _MAX_ARROW_BLOCK or any("." in c for c in columns if c)):
        return None
    import pyarrow.compute as pc  # here: a run over Parquet never imports the JSON reader
    import pyarrow.json as pj

    names = [c for c in columns if c]
    # Not nullable: a missing or null field is the reader's error, a block for the exact
    # path (which says which); unexpected fields are never converted, whatever their type.
    schema = pa.schema([pa.field(c, pa.string(), nullable=False) for c in names])
    try:
        # The block as one string, without a copy: the reader does not check the UTF-8 of
        # fields it ignores, so the block is checked, then searched for a line that may be
        # blank (RE2, in C++).
        whole = pa.Array.from_buffers(pa.string(), 1, [
            None, pa.array([0, len(block)], pa.int32()).buffers()[1], pa.py_buffer(block)])
        whole.validate(full=True)
        if pc.match_substring_regex(whole, _MAYBE_BLANK)[0].as_py():
            return None
        table = pj.read_json(
            pa.BufferReader(block),
            read_options=pj.ReadOptions(use_threads=False, block_size=len(block) + 1),
            parse_options=pj.ParseOptions(explicit_schema=schema,
                                          unexpected_field_behavior="ignore"))
        if table.num_rows != rows:  # two objects on a line, a lone \r between them
            return None
        texts = table.column(0).to_pylist()
        splits = table.column(1).to_pylist() if columns[1] else None
    except (pa.ArrowException, UnicodeDecodeError):
        return None
    return texts, splits


# The compiled scanner where it is built, else pyarrow's reader (the same answers)
fast_texts = arrow_texts if COMPILED is None else native_texts
