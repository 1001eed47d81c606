"""The document stream, exactly as docs/format.md ("The stream") pins it.

Files in sorted order (or a seeded permutation), rows in stored order, an optional
bounded-buffer document shuffle, then *visiting*: the consumer counts each row, feeds it to
the prefix digest, skips empty texts and splits the rest. Visiting happens where rows are
committed (see :class:`Cursor`), so counts and the digest never depend on how far reading
ran ahead.

Errors found while reading (a corrupt file, a missing column) and bad values (null text,
a bad split value) travel down the stream in order as :class:`Failure` or ``ERROR`` rows
and are raised only when the consumer visits them: the same input fails at the same row
whatever the batch size or read-ahead.
"""

from __future__ import annotations

import hashlib
import itertools
from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any, Union, overload

import numpy as np

from prep.errors import InputError, PrepError
from prep.partition import Part, part_range
from prep.recipe import Recipe
from prep.sources import Source, SourceFile, iter_batches
from prep.sources.kinds import place
from prep.split import column_split, hash_split_seeded, seeded_hash, val_threshold
from prep.stream.chain import chain

# A raw row: (text value, split value or None, index into the ordered files, row in file).
RawRow = tuple[Any, Any, int, int]


@dataclass(frozen=True)
class Failure:
    """A read error, in stream order; raised when the consumer reaches it."""

    error: PrepError


StreamItem = Union[RawRow, Failure]  # noqa: UP007 - a runtime alias on 3.10


def ordered_files(files: list[SourceFile], shuffle: bool, seed: int) -> list[SourceFile]:
    """The read order: sorted as given, or permuted by PCG64(SeedSequence([seed, 0]))."""
    if not shuffle:
        return list(files)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0])))
    return [files[int(i)] for i in rng.permutation(len(files))]


def read_rows(
    source: Source,
    files: list[SourceFile],
    text_column: str,
    split_column: str | None,
    first_file: int = 0,
) -> Iterator[StreamItem]:
    """Every row of every file in order from ``files[first_file]``; a read error ends the
    stream with a Failure."""
    for index, f in enumerate(files):
        if index < first_file:
            continue
        row = 0
        try:
            for texts, splits in iter_batches(source, f, text_column, split_column):
                if splits is None:
                    for text in texts:
                        yield (text, None, index, row)
                        row += 1
                else:
                    for text, sv in zip(texts, splits, strict=True):
                        yield (text, sv, index, row)
                        row += 1
        except PrepError as e:
            yield Failure(e)
            return


def shuffle_docs(items: Iterable[StreamItem], buffer: int, seed: int) -> Iterator[StreamItem]:
    """Bounded-buffer shuffle (docs/format.md, stream step 4); a Failure passes straight through."""
    if buffer <= 0:
        yield from items
        return
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 1])))
    buf: list[StreamItem] = []
    for t in items:
        if isinstance(t, Failure):
            yield t
            return
        if len(buf) < buffer:
            buf.append(t)
            continue
        i = int(rng.integers(0, len(buf)))
        yield buf[i]
        buf[i] = t
    rng.shuffle(buf)
    yield from buf


def document_stream(
    source: Source,
    files: list[SourceFile],
    recipe: Recipe,
    first_file: int = 0,
    rows_before: int = 0,
) -> Iterator[StreamItem]:
    """Rows leaving step 4, cut after ``max_documents`` visits. A continued stream (no
    document shuffle) starts at ``files[first_file]`` after ``rows_before`` visited rows."""
    rows = read_rows(source, files, recipe.text_column, recipe.split_column, first_file)
    items = shuffle_docs(rows, recipe.shuffle_buffer, recipe.seed)
    if recipe.max_documents is not None:
        items = itertools.islice(items, max(0, recipe.max_documents - rows_before))
    return items


def read_order(files: list[SourceFile], recipe: Recipe) -> list[SourceFile]:
    """The files this run reads, in order: the whole ordered list, or with ``--part I/N``
    part I's range of it (partition.py)."""
    ordered = ordered_files(files, recipe.shuffle_files, recipe.seed)
    if recipe.part is None:
        return ordered
    picked = part_range([f.size for f in ordered], Part.parse(recipe.part))
    return ordered[picked.start : picked.stop]


def open_stream(
    source: Source, recipe: Recipe, first_file: int = 0, rows_before: int = 0
) -> tuple[list[SourceFile], Iterator[StreamItem]]:
    """The files in read order and the document stream over them, from the first row (or,
    continuing a published stream, from ``files[first_file]`` after ``rows_before`` rows)."""
    files = read_order(source.files, recipe)
    source.plan_reads(files[first_file:])
    return files, document_stream(source, files, recipe, first_file, rows_before)


# Row kinds in a prepared batch.
DOC = 0
EMPTY = 1
ERROR = 2


ROW_DIGEST_BYTES = 32
GENESIS_SHA256 = "0" * 64  # the prefix digest of an empty stream
_NO_DIGEST = bytes(ROW_DIGEST_BYTES)  # an error row's place (it is never visited)


def row_digest(utf8: bytes) -> bytes:
    """A visited row's own digest, SHA-256 of its UTF-8 bytes: what the prefix chain links
    (computed where the row is prepared, so the committing process never hashes text)."""
    return hashlib.sha256(utf8).digest()


class Places(Sequence[tuple[str, int]]):
    """``(file, row)`` per document, compact: each file once, each row's file and row
    number in arrays."""

    def __init__(self, where: Sequence[tuple[str, int]]) -> None:
        files: dict[str, int] = {}
        self._file_of = array("I", [files.setdefault(path, len(files)) for path, _ in where])
        self._rows = array("q", [row for _, row in where])
        self._files = tuple(files)

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, k: int) -> tuple[str, int]: ...

    @overload
    def __getitem__(self, k: slice) -> Sequence[tuple[str, int]]: ...

    def __getitem__(self, k: int | slice) -> tuple[str, int] | Sequence[tuple[str, int]]:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        return self._files[self._file_of[k]], self._rows[k]


@dataclass
class Batch:
    """Rows prepared for tokenizing and committing, in stream order.

    ``kinds[i]`` is DOC, EMPTY or ERROR; ``digests`` holds each row's :func:`row_digest`
    (32 bytes per row, zeros for an error row); ``utf8[i]`` the row's text bytes (None for
    an error row); ``docs`` the DOC rows' texts in order, ``doc_splits`` their splits and
    ``doc_sizes`` their UTF-8 lengths; ``errors`` maps an ERROR row's position to its
    exception. A batch sent to the committing process is :meth:`shed` of its texts."""

    kinds: MutableSequence[int] = field(default_factory=list)
    digests: bytearray = field(default_factory=bytearray)
    utf8: list[bytes | None] = field(default_factory=list)
    docs: list[str] = field(default_factory=list)
    doc_splits: MutableSequence[int] = field(default_factory=list)
    doc_sizes: MutableSequence[int] = field(default_factory=list)
    doc_where: Sequence[tuple[str, int]] = field(default_factory=list)  # (file, row) per DOC
    errors: dict[int, PrepError] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.kinds)

    def doc_utf8(self) -> list[bytes]:
        """The DOC rows' UTF-8 bytes, in order (a DOC row always has them)."""
        return [b for b, k in zip(self.utf8, self.kinds, strict=True) if k == DOC and b is not None]

    def refuse(self, error: PrepError, utf8: bytes | None = None) -> None:
        """Append an ERROR row: its exception, no digest (it is never visited)."""
        self.errors[len(self.kinds)] = error
        self.kinds.append(ERROR)
        self.digests += _NO_DIGEST
        self.utf8.append(utf8)

    def digest(self, i: int) -> bytes:
        """Row ``i``'s digest."""
        return bytes(self.digests[i * ROW_DIGEST_BYTES : (i + 1) * ROW_DIGEST_BYTES])

    def shed(self) -> Batch:
        """Drop the texts (the committing process needs their digests and sizes only):
        the batch crosses a pipe without a copy of the text, its per-row lists as arrays
        (a list of 512 ints or tuples costs the receiver tens of microseconds to unpickle,
        an array almost nothing)."""
        self.utf8, self.docs = [], []
        self.kinds = array("b", self.kinds)
        self.doc_splits = array("b", self.doc_splits)
        self.doc_sizes = array("q", self.doc_sizes)
        self.doc_where = Places(self.doc_where)
        return self


class Preparer:
    """Turns stream items into :class:`Batch` es: UTF-8 once, empty check, split."""

    def __init__(self, recipe: Recipe, files: list[SourceFile]) -> None:
        self.files = files
        self.text_column = recipe.text_column
        self.split_column = recipe.split_column
        self.seeded = seeded_hash(recipe.seed)
        self.threshold = val_threshold(recipe.val_fraction)

    def _where(self, item: RawRow) -> str:
        f = self.files[item[2]]
        return place(f.kind, f.path, item[3])

    def prepare(self, items: list[StreamItem]) -> Batch:
        b = Batch()
        where: list[tuple[str, int]] = []
        b.doc_where = where
        for item in items:
            if isinstance(item, Failure):
                b.refuse(item.error)
                continue
            text = item[0]
            if not isinstance(text, str):
                what = "null" if text is None else f"a {type(text).__name__}"
                b.refuse(InputError(
                    f"{self._where(item)}: {self.files[item[2]].kind.column_word} "
                    f'"{self.text_column}" is {what}, expected '
                    "a string; drop or fill such rows in the source, or choose the column "
                    "with --text-column",
                    path=self.files[item[2]].path,
                    row=item[3],
                ))
                continue
            data = text.encode()
            if not text or text.isspace():  # empty after str.strip(), without the copy
                b.kinds.append(EMPTY)
                b.digests += row_digest(data)
                b.utf8.append(data)
                continue
            if self.split_column is None:
                split = hash_split_seeded(data, self.seeded, self.threshold)
            else:
                found = column_split(item[1])
                if found is None:
                    b.refuse(InputError(
                        f'{self._where(item)}: split column "{self.split_column}" holds '
                        f"{item[1]!r}; only 'train' and 'val' are allowed. Fix the value or "
                        "use the content-hash split (drop --split-column)",
                        path=self.files[item[2]].path,
                        row=item[3],
                    ), data)
                    continue
                split = found
            b.kinds.append(DOC)
            b.digests += row_digest(data)
            b.utf8.append(data)
            b.docs.append(text)
            b.doc_splits.append(split)
            b.doc_sizes.append(len(data))
            where.append((self.files[item[2]].path, item[3]))
        return b



class Cursor:
    """What has been visited: rows, empty rows skipped, and the prefix digest.

    The digest is a chain, one link per visited row: ``c = SHA-256(c || SHA-256(UTF-8
    bytes))`` from 32 zero bytes. Its hex value is all the state there is, so a stream can
    be continued from what a manifest or checkpoint recorded (``Cursor(rows, empty,
    digest)``) without reading the rows before it again; and a row's own digest can be
    computed wherever the row is read (:func:`row_digest`), leaving 64 bytes per row to
    hash in order."""

    def __init__(
        self, rows_visited: int = 0, empty_rows_skipped: int = 0, digest: str = GENESIS_SHA256
    ) -> None:
        self.rows_visited = rows_visited
        self.empty_rows_skipped = empty_rows_skipped
        self._chain = bytes.fromhex(digest)

    def visit(self, utf8: bytes) -> None:
        """Visit one row by its text."""
        self.link(row_digest(utf8))

    def link(self, digest: bytes) -> None:
        """Visit one row by its :func:`row_digest`."""
        self._chain = hashlib.sha256(self._chain + digest).digest()
        self.rows_visited += 1

    def link_all(self, digests: bytes | bytearray) -> None:
        """Visit rows by their digests, concatenated in order (the links compiled where
        :mod:`prep.stream.chain` was built: this runs for every row, on the committing thread)."""
        self._chain = chain(self._chain, digests)
        self.rows_visited += len(digests) // ROW_DIGEST_BYTES

    @property
    def prefix_sha256(self) -> str:
        return self._chain.hex()


def batches(stream: Iterator[StreamItem], preparer: Preparer, size: int) -> Iterator[Batch]:
    """Stream items in lists of ``size``, prepared; ends after a Failure (raised when the
    consumer visits it)."""
    while True:
        items = list(itertools.islice(stream, size))
        if not items:
            return
        yield preparer.prepare(items)
        if isinstance(items[-1], Failure):
            return
