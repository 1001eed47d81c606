"""Per-split writers: separator placement, rollover, exact counts.

A split's shards are numbered from 0 and named by the output format. How they are cut is
the recipe's ``--pack``:

- ``whole``: before a document (separator included) that would push the open shard past
  ``max_file_tokens``, the open shard is sealed and the next one started, unless the open
  shard is still empty: a long document fills a shard alone. So no shard starts or ends
  mid-document and no empty shard precedes a non-empty one.
- ``fixed``: the open shard is filled to exactly ``max_file_tokens`` ids and the next one
  started when more ids come, so a document may run on across any number of shards and
  every shard but a split's last is full. A shard's record counts the documents that start
  in it and says where the first of them starts (``first_doc_at``, its length when none
  does); its document pieces (:func:`prep.state.shards.pieces`) are what an indexed format
  indexes. A document of no ids at a cut starts in the next shard, at the end of the
  stream in the last one.

The split's stream, the concatenation of its shards, is the same under both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import InputError
from prep.formats import ShardFormat, ShardWriter
from prep.formats.base import MAX_TOKENS, Copier
from prep.formats.sealing import Sealing
from prep.split import SPLITS
from prep.state.shards import FileRecord, OpenFile, SplitState, piece_lengths


def needs_rollover(open_tokens: int, doc_tokens: int, max_file_tokens: int) -> bool:
    """Whether a document of ``doc_tokens`` (separator included) must start a new file."""
    return open_tokens > 0 and open_tokens + doc_tokens > max_file_tokens


@dataclass(frozen=True)
class Laid:
    """Documents of one split as they will be appended: their ids with the separators in
    place, each document's length with its separator, and their texts' UTF-8 length."""

    ids: npt.NDArray[Any]
    lengths: npt.NDArray[np.int64]
    text_bytes: int
    digest: bytes | None = None  # SHA-256 of ``ids``' bytes, when they are the file's dtype


def lay_out(ids: npt.NDArray[Any], lengths: npt.NDArray[np.int64], text_bytes: int,
            sep_id: int | None, append_sep: bool) -> Laid:
    """Documents given as one buffer of their ids and their lengths, with ``sep_id`` after
    (``append_sep``) or before each one; what :meth:`SplitWriter.add_laid` takes. A pure
    function of its arguments, so worker processes lay out batches in parallel."""
    if sep_id is None or len(lengths) == 0:
        return Laid(ids, lengths, text_bytes)
    ends = np.cumsum(lengths)
    at = ends if append_sep else ends - lengths
    return Laid(np.insert(ids, at, sep_id), lengths + 1, text_bytes)


def lay_out_splits(ids: npt.NDArray[Any], offsets: npt.NDArray[np.int64],
                   splits: Sequence[int], sizes: Sequence[int], sep_id: int | None,
                   append_sep: bool) -> tuple[Laid, ...] | None:
    """A batch's documents (document ``i``'s ids ``ids[offsets[i]:offsets[i + 1]]``, its
    split ``splits[i]`` and its text's UTF-8 length ``sizes[i]``), laid out per split in
    split order (``SPLITS``), their order kept within each split; None when a document
    (with its separator) is too long for any file, so that the batch is committed one
    document at a time and the error names that document at its place."""
    lengths = np.diff(offsets)
    if len(lengths) and int(lengths.max()) + (sep_id is not None) > MAX_TOKENS:
        return None
    split_of = np.asarray(splits, dtype=np.int8)
    size = np.asarray(sizes, dtype=np.int64)
    laid = []
    for split in range(len(SPLITS)):
        pick = split_of == split
        if pick.all():
            laid.append(lay_out(ids, lengths, int(size.sum()), sep_id, append_sep))
        else:
            laid.append(lay_out(ids[np.repeat(pick, lengths)], lengths[pick],
                                int(size[pick].sum()), sep_id, append_sep))
    return tuple(laid)


@dataclass(frozen=True)
class Piece:
    """Ids ``begin:end`` of a batch that go into one shard (:func:`whole_pieces`,
    :func:`fixed_pieces`): ``docs`` documents start in them, the first at ``first`` from
    ``begin`` (None: none does), and they are document pieces of ``lengths`` ids; a new
    shard is started first when ``new_file``."""

    begin: int
    end: int
    docs: int
    first: int | None
    lengths: list[int]
    new_file: bool


def whole_pieces(lengths: npt.NDArray[np.int64], file_tokens: int, max_file_tokens: int
                 ) -> list[Piece]:
    """How documents of ``lengths`` ids go into shards under ``--pack whole`` when the open
    shard holds ``file_tokens`` already: each into the open shard or, when
    :func:`needs_rollover`, a new one (a pure function of its arguments)."""
    ends = np.cumsum(lengths)
    pos, base, held, new_file, out = 0, 0, file_tokens, False, []
    while pos < len(lengths):
        fit = max(pos, int(np.searchsorted(ends, base + max_file_tokens - held, side="right")))
        if fit == pos:  # the next document does not fit the open shard
            if needs_rollover(held, int(lengths[pos]), max_file_tokens):
                held, new_file = 0, True
                continue
            fit = pos + 1  # an empty shard takes a document of any size alone
        end = int(ends[fit - 1])
        out.append(Piece(base, end, fit - pos, 0, lengths[pos:fit].tolist(), new_file))
        held, new_file = held + end - base, False
        pos, base = fit, end
    return out


def fixed_pieces(lengths: npt.NDArray[np.int64], file_tokens: int, max_file_tokens: int
                 ) -> list[Piece]:
    """How documents of ``lengths`` ids, laid out one after the other, go into shards of
    exactly ``max_file_tokens`` ids when the open shard holds ``file_tokens`` already: the
    open shard is filled, then a new one, and so on (a pure function of its arguments)."""
    starts = np.cumsum(lengths) - lengths
    total, pos, base, held, out = int(lengths.sum()), 0, 0, file_tokens, []
    while base < total or pos < len(lengths):
        new_file = held == max_file_tokens
        held = 0 if new_file else held
        end = min(total, base + max_file_tokens - held)
        # An empty document at a cut starts in the next shard; at the end, in this one.
        hi = int(np.searchsorted(starts, end, side="right" if end == total else "left"))
        piece = piece_lengths(starts[pos:hi], base, end)
        first = int(starts[pos]) - base if hi > pos else None
        out.append(Piece(base, end, hi - pos, first, piece.tolist(), new_file))
        held += end - base
        pos, base = hi, end
    return out


@dataclass
class SplitWriter:
    """Appends whole documents of one split to its files in ``directory``.

    Documents are buffered and written in one call per :meth:`flush`; :meth:`state` is
    exact only after :meth:`sync` (the pipeline syncs before every checkpoint). A
    rolled-over shard is sealed in the background (:mod:`prep.formats.sealing`); ``sealed`` lists
    the shards whose seal is done, and :meth:`state` and :meth:`finish` wait for the rest."""

    directory: Path
    fmt: ShardFormat
    split: str
    vocab_size: int
    sep_id: int | None
    append_sep: bool
    max_file_tokens: int
    fixed: bool = False  # --pack fixed (see the module docstring)
    sealed: list[FileRecord] = field(default_factory=list)
    n_tokens: int = 0
    n_docs: int = 0
    text_bytes: int = 0
    text_tokens: int = 0
    _file: ShardWriter | None = None
    _file_docs: int = 0
    _file_tokens: int = 0  # including pending
    _file_first: int | None = None  # fixed: where the open shard's first document starts
    _pending: list[npt.NDArray[Any]] = field(default_factory=list)
    _pending_lengths: list[int] = field(default_factory=list)
    _pending_digest: bytes | None = None  # of the one pending piece, when it is a whole Laid
    _sealing: Sealing = field(default_factory=Sealing)
    _copier: Copier | None = None  # who writes the open shard's ids (prep.procs.copiers)
    on_sealed: Callable[[FileRecord], None] | None = None  # told of each seal, in its thread

    def __post_init__(self) -> None:
        self._sep = np.array([self.sep_id], dtype=np.uint32) if self.sep_id is not None else None

    def start(self) -> None:
        """Create the split's first shard (always present, even if it stays empty)."""
        self._file = self.fmt.create(
            self.directory, self.fmt.shard_name(self.split, 0), self.vocab_size
        )

    @property
    def rolled(self) -> int:
        """Shards rolled over so far (sealed, or sealing in the background)."""
        return len(self.sealed) + self._sealing.pending

    def seals_done(self) -> bool:
        """Whether no seal is still running (:meth:`state` would not wait for one)."""
        return self._sealing.finished()

    def write_through(self, copier: Copier | None) -> None:
        """From now on the ids go into the shards through ``copier`` (None: this process
        writes them)."""
        self._copier = copier
        if self._file is not None:
            self._file.copier = copier

    def moved_to(self, directory: Path) -> None:
        """The directory was renamed (staging put in place); open files stay open. Raises
        ``RuntimeError`` if a seal is pending: it may write into the old path."""
        if self._sealing.pending:
            raise RuntimeError(f"{self.split}: directory renamed while a shard was sealing")
        self.directory = directory
        if self._file is not None:
            self._file.moved_to(directory)

    def restore(self, state: SplitState, open_writer: ShardWriter | None) -> None:
        """Continue from a verified checkpoint state with its reopened open file."""
        self.sealed = list(state.sealed)
        self.n_tokens, self.n_docs = state.n_tokens, state.n_docs
        self.text_bytes, self.text_tokens = state.text_bytes, state.text_tokens
        self._file = open_writer
        self._file_docs = state.open.n_docs if state.open else 0
        self._file_tokens = state.open.n_tokens if state.open else 0
        first = state.open.first_doc_at if state.open else None
        self._file_first = (first or 0) if self._file_docs else None

    def add(self, ids: npt.NDArray[Any], n_bytes: int) -> None:
        """Append one document (its ids, and its text's UTF-8 length for β); raises
        ``InputError`` (nothing appended) for a document too long for any file."""
        doc_tokens = int(ids.size) + (1 if self._sep is not None else 0)
        if doc_tokens > MAX_TOKENS:
            raise InputError(
                f"a {self.split} document of {doc_tokens:,} tokens cannot fit one file "
                "(2**31-1 ids at most); split such documents before preparing"
            )
        one = np.array([ids.size], dtype=np.int64)
        self.add_laid(lay_out(ids, one, n_bytes, self.sep_id, self.append_sep))

    def add_laid(self, docs: Laid) -> None:
        """Append documents :func:`lay_out` prepared (none too long for a file: see
        :func:`lay_out_splits`), in order, into shards as :func:`whole_pieces` or
        :func:`fixed_pieces` cuts them: a few array operations whatever their number."""
        ids, lengths = docs.ids, docs.lengths
        if len(lengths) == 0:
            return
        cut = fixed_pieces if self.fixed else whole_pieces
        for p in cut(lengths, self._file_tokens, self.max_file_tokens):
            if p.new_file:
                self._roll()
            if p.first is not None and self._file_first is None:
                self._file_first = self._file_tokens + p.first
            self._put(docs, p.begin, p.end, p.lengths, p.docs)
        self._count(docs, int(ids.size))

    def _put(self, docs: Laid, begin: int, end: int, lengths: list[int], n_docs: int) -> None:
        """Buffer ``docs.ids[begin:end]``, pieces of ``lengths``, ``n_docs`` documents
        starting in them, for the open shard."""
        whole = not self._pending and begin == 0 and end == len(docs.ids)
        self._pending_digest = docs.digest if whole else None
        self._pending.append(docs.ids[begin:end])
        self._pending_lengths.extend(lengths)
        self._file_tokens += end - begin
        self._file_docs += n_docs

    def _count(self, docs: Laid, tokens: int) -> None:
        n = len(docs.lengths)
        self.n_tokens += tokens
        self.n_docs += n
        self.text_bytes += docs.text_bytes
        self.text_tokens += tokens - (n if self._sep is not None else 0)

    def _first_doc_at(self) -> int | None:
        """The open shard's ``first_doc_at`` (None under ``whole``)."""
        if not self.fixed:
            return None
        return self._file_tokens if self._file_first is None else self._file_first

    def flush(self) -> None:
        """Write buffered documents to the open file (not yet durable)."""
        if self._pending and self._file is not None:
            if len(self._pending) == 1:
                self._file.append(self._pending[0], self._pending_lengths, self._pending_digest)
            else:  # several pieces (documents committed one by one): hashed by the file
                self._file.append(np.concatenate(self._pending), self._pending_lengths)
            self._pending, self._pending_lengths = [], []
            self._pending_digest = None

    def sync(self) -> None:
        """Flush and fsync the open file: everything added so far is durable."""
        self.flush()
        if self._file is not None:
            self._file.sync()

    def _roll(self) -> None:
        self._seal_open()
        name = self.fmt.shard_name(self.split, len(self.sealed) + self._sealing.pending)
        self._file = self.fmt.create(self.directory, name, self.vocab_size)
        self._file.copier = self._copier

    def _seal_open(self) -> None:
        """Start sealing the open shard in the background."""
        if self._file is None:
            raise RuntimeError(f"{self.split}: no open shard to seal")
        self.flush()
        self._sealing.submit(self._file, self._file_docs, self.sealed, self.on_sealed,
                             self._first_doc_at())
        self._file = None
        self._file_docs = 0
        self._file_tokens = 0
        self._file_first = None

    def state(self) -> SplitState:
        """The committed state; call after :meth:`sync`. Waits for the pending seals (and
        raises the error of one that failed)."""
        self._sealing.wait(self.sealed)
        open_file = None
        if self._file is not None:
            open_file = OpenFile(
                self._file.name,
                self._file.n,
                self._file_docs,
                self._file.ids_chain,
                self._file.segments,
                self._file.doc_lengths,
                self._first_doc_at(),
            )
        return SplitState(
            sealed=tuple(self.sealed),
            open=open_file,
            n_tokens=self.n_tokens,
            n_docs=self.n_docs,
            text_bytes=self.text_bytes,
            text_tokens=self.text_tokens,
        )

    def finish(self) -> list[FileRecord]:
        """Seal the open file; returns every file of the split in order, all sealed."""
        if self._file is not None:
            self._seal_open()
        self._sealing.wait(self.sealed)
        self._sealing.shutdown()
        return list(self.sealed)

    def close(self) -> None:
        """Close the open file without sealing (error path), after the pending seals
        ended (their errors dropped: resume handles a shard whose seal did not finish)."""
        self._sealing.abandon()
        if self._file is not None:
            self._file.close()
