"""What a source file is, told by its content: Parquet (``PAR1``), Arrow IPC (``ARROW1``,
the file form, or the stream form's continuation marker ``FF FF FF FF``), gzip (``1F 8B``)
or zstd (``28 B5 2F FD``) compressed JSON Lines, or plain JSON Lines (the first byte past a
UTF-8 BOM and white space is ``{``). A name that claims a kind (``.parquet``, ``.arrow``,
``.jsonl``/``.json``/``.ndjson``, ``.gz``, ``.zst``/``.zstd``) must agree with the content;
a file that disagrees is refused with both named, never read as either.

The kinds differ in constants only, kept as data (a :class:`Kind` each): how a message
names a row (Parquet and Arrow count rows from 0, JSON Lines counts lines from 1, as
editors do), what a column is called, the codec a JSON Lines file is decompressed with,
and whether counting its rows costs a read of the whole file. A :class:`Unit` is the piece
of a file one worker task reads; each kind's reader says how a file is cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from prep.errors import InputError


@dataclass(frozen=True)
class Kind:
    """One kind of source file: ``name`` (the reader's key), ``what`` (for messages),
    ``codec`` (pyarrow's compression name, JSON Lines only), how rows are named
    (``row_word``, ``first_row``), what a column is called (``column_word``), and
    ``stream``: its rows cost a read of the whole file to count (no footer says them, and
    gzip and zstd cannot seek), so a file is one stream unit."""

    name: str
    what: str
    codec: str | None = None
    row_word: str = "row"
    first_row: int = 0
    column_word: str = "column"
    stream: bool = False


PARQUET = Kind("parquet", "Parquet")
ARROW = Kind("arrow", "Arrow IPC", stream=True)
JSONL = Kind("jsonl", "JSON Lines", None, "line", 1, "field")
JSONL_GZ = Kind("jsonl", "gzip-compressed JSON Lines", "gzip", "line", 1, "field", stream=True)
JSONL_ZST = Kind("jsonl", "zstd-compressed JSON Lines", "zstd", "line", 1, "field", stream=True)

# (leading bytes, kind): the first that matches decides
_MAGIC = (
    (b"PAR1", PARQUET),
    (b"ARROW1", ARROW),
    (b"\xff\xff\xff\xff", ARROW),
    (b"\x1f\x8b", JSONL_GZ),
    (b"\x28\xb5\x2f\xfd", JSONL_ZST),
)
# (name ending, kind the name claims): longest endings first
_NAMES = (
    (".parquet", PARQUET),
    (".arrow", ARROW),
    (".feather", ARROW),
    (".gz", JSONL_GZ),
    (".zst", JSONL_ZST),
    (".zstd", JSONL_ZST),
    (".jsonl", JSONL),
    (".ndjson", JSONL),
    (".json", JSONL),
)
SNIFF_BYTES = 4096
_BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r\n"


def claimed(name: str) -> Kind | None:
    """The kind a file's name claims, None for a name that claims none."""
    low = name.lower()
    return next((k for end, k in _NAMES if low.endswith(end)), None)


def sniffed(head: bytes) -> Kind | None:
    """The kind the first bytes of a file show, None when they show none."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    rest = head[len(_BOM):] if head.startswith(_BOM) else head
    return JSONL if rest.lstrip(_JSON_SPACE).startswith(b"{") else None


def kind_of(path: str, fobj: IO[bytes]) -> Kind:
    """The kind of the open file ``fobj`` (read from its first bytes, then back at offset 0),
    checked against what its name ``path`` claims.

    Raises ``InputError`` for a name and a content that disagree (naming both) and for a
    file whose content is no kind prep reads and whose name claims none."""
    head = fobj.read(SNIFF_BYTES)
    fobj.seek(0)
    found, named = sniffed(head), claimed(path)
    if found is None and named is None:
        raise InputError(
            f"{path}: not a file prep reads (it starts with bytes {head[:8].hex(' ') or 'none'}"
            "); give Parquet, Arrow IPC, or JSON Lines (plain, .gz or .zst), or leave the "
            "file out of --source",
            path=path,
        )
    if found is None or named is None or found == named:
        # No magic: an empty or damaged file is read as its name says, and refused there
        # with the line or the footer that is wrong.
        return found or named  # type: ignore[return-value]
    raise InputError(
        f"{path}: its name says {named.what} but its content is {found.what} (it starts "
        f"with bytes {head[:4].hex(' ')}); rename the file to match what it holds, or "
        "replace it",
        path=path,
    )


def place(kind: Kind, path: str, row: int) -> str:
    """A row as messages name it: ``a.parquet row 12``, ``a.jsonl line 13`` (the same
    row: lines count from 1)."""
    return f"{path} {kind.row_word} {row + kind.first_row}"


@dataclass(frozen=True)
class Unit:
    """The piece of a file one task reads: ``rows`` rows from its first (-1: not counted, a
    stream read to its end that nothing needed counted up front); ``at`` is the row
    group for Parquet, the first byte of a line-aligned range ``at``..``end`` for plain JSON
    Lines (0, 0 for a whole stream: compressed JSON Lines, Arrow). ``stream``: a task that
    reads rows after the unit's first decodes the whole file before them (gzip and zstd
    cannot seek), so such a unit is cut only where too few files are left to keep the
    workers busy. ``blocks``: the main process reads the unit as it plans, in blocks of
    whole lines that workers parse (:func:`prep.sources.reading.read_blocks`)."""

    rows: int
    at: int = 0
    end: int = 0
    stream: bool = False
    blocks: bool = False
