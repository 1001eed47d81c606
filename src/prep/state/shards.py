"""What a checkpoint and a manifest record about a split's shards: sealed files, the open
file at a commit point, and the split's running totals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.state import fields

# The segment chain of no ids: 32 zero bytes (``prep.formats.segments.GENESIS``).
EMPTY_CHAIN = "0" * 64


@dataclass(frozen=True)
class Companion:
    """A further file of a sealed shard (Megatron's ``.idx``) and its SHA-256."""

    name: str
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Companion:
        return cls(name=fields.text(d, "name"), sha256=fields.sha256(d, "sha256"))


def companions_to_json(out: dict[str, Any], companions: tuple[Companion, ...]) -> dict[str, Any]:
    """``out`` with a ``companions`` list when there are any (single-file formats keep the
    shape they always had)."""
    if companions:
        out["companions"] = [c.to_json() for c in companions]
    return out


def companions_from_json(d: dict[str, Any]) -> tuple[Companion, ...]:
    return fields.each(d, "companions", fields.as_object(Companion.from_json), default=())


def first_doc_to_json(out: dict[str, Any], first_doc_at: int | None) -> dict[str, Any]:
    """``out`` with ``first_doc_at`` when the file was packed ``fixed`` (a ``whole`` file
    keeps the shape it always had: every document starts in it at offset 0 or later)."""
    if first_doc_at is not None:
        out["first_doc_at"] = first_doc_at
    return out


def pieces(n_docs: int, first_doc_at: int | None) -> int:
    """The document pieces a file holds: the documents that start in it (``n_docs``) and,
    under ``--pack fixed``, the end of the one that started in an earlier file when the
    file does not begin with a document (``first_doc_at`` > 0). What a format's document
    index lists per file."""
    return n_docs + (1 if first_doc_at else 0)


def first_doc_fits(first_doc_at: int | None, n_tokens: int, n_docs: int, first_file: bool
                   ) -> bool:
    """Whether a ``--pack fixed`` file's recorded ``first_doc_at`` can be true of it:
    present, at most its size, 0 in a split's first file, and (a file that holds ids) its
    size exactly when no document starts in it."""
    if first_doc_at is None or first_doc_at > n_tokens or (first_file and first_doc_at):
        return False
    return not n_tokens or (first_doc_at == n_tokens) == (n_docs == 0)


def piece_lengths(starts: npt.NDArray[np.int64], begin: int, end: int) -> npt.NDArray[np.int64]:
    """The lengths of the document pieces of ids ``begin:end``, given where documents start
    in them (ascending, within ``begin..end``): the end of a document begun before
    ``begin`` first, when it holds ids, then each document's part (a pure function; what
    the writer, a re-cut and a resume's check cut a file's index into)."""
    lengths = np.diff(np.concatenate(([begin], starts, [end]))).astype(np.int64)
    return lengths[1:] if lengths[0] == 0 else lengths


@dataclass(frozen=True)
class FileRecord:
    """A sealed shard: what the manifest and checkpoint list."""

    name: str
    n_tokens: int
    n_docs: int
    sha256: str
    companions: tuple[Companion, ...] = ()
    # ``--pack fixed``: ids before the first document that starts here (n_tokens if none)
    first_doc_at: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "n_tokens": self.n_tokens,
            "n_docs": self.n_docs,
            "sha256": self.sha256,
        }
        return first_doc_to_json(companions_to_json(out, self.companions), self.first_doc_at)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FileRecord:
        return cls(
            name=fields.text(d, "name"),
            n_tokens=fields.integer(d, "n_tokens"),
            n_docs=fields.integer(d, "n_docs"),
            sha256=fields.sha256(d, "sha256"),
            companions=companions_from_json(d),
            first_doc_at=fields.maybe_integer(d, "first_doc_at"),
        )


@dataclass(frozen=True)
class OpenFile:
    """The open shard at a commit point: its name, committed ids, the chain of the segments
    they were appended in and each segment's length in ids (``prep.formats.segments``), and
    (for formats that index documents) each committed document's length, from which the
    index of the open shard is rebuilt after a crash."""

    name: str
    n_tokens: int
    n_docs: int
    ids_chain: str
    segments: tuple[int, ...]
    doc_lengths: tuple[int, ...] | None = None  # of its pieces (:func:`pieces`) under fixed
    first_doc_at: int | None = None  # as :class:`FileRecord`'s


    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "n_tokens": self.n_tokens,
            "n_docs": self.n_docs,
            "ids_chain": self.ids_chain,
            "segments": list(self.segments),
        }
        if self.doc_lengths is not None:
            out["doc_lengths"] = list(self.doc_lengths)
        return first_doc_to_json(out, self.first_doc_at)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OpenFile:
        lengths = None
        if d.get("doc_lengths") is not None:
            lengths = fields.each(d, "doc_lengths", fields.as_count)
        n_tokens = fields.integer(d, "n_tokens")
        segments = fields.each(d, "segments", fields.as_count)
        if sum(segments) != n_tokens or 0 in segments:
            raise fields.FieldError(
                "segments", f"do not add up to its {n_tokens:,} ids in non-empty segments")
        return cls(
            name=fields.text(d, "name"),
            n_tokens=n_tokens,
            n_docs=fields.integer(d, "n_docs"),
            ids_chain=fields.sha256(d, "ids_chain"),
            segments=segments,
            doc_lengths=lengths,
            first_doc_at=fields.maybe_integer(d, "first_doc_at"),
        )


@dataclass(frozen=True)
class SplitState:
    """A split's committed state: sealed files, the open file, running totals.

    ``text_bytes`` and ``text_tokens`` exclude separators (they give β)."""

    sealed: tuple[FileRecord, ...]
    open: OpenFile | None
    n_tokens: int = 0
    n_docs: int = 0
    text_bytes: int = 0
    text_tokens: int = 0

    @classmethod
    def empty(cls, first_name: str) -> SplitState:
        """A new split: its first file (named ``first_name``) open and empty."""
        return cls(sealed=(), open=OpenFile(first_name, 0, 0, EMPTY_CHAIN, ()))

    def names(self) -> list[str]:
        """Every shard this state names, sealed and open."""
        return [r.name for r in self.sealed] + ([self.open.name] if self.open else [])

    def to_json(self) -> dict[str, Any]:
        return {
            "sealed": [r.to_json() for r in self.sealed],
            "open": self.open.to_json() if self.open else None,
            "n_tokens": self.n_tokens,
            "n_docs": self.n_docs,
            "text_bytes": self.text_bytes,
            "text_tokens": self.text_tokens,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SplitState:
        if "open" not in d:
            raise fields.FieldError("open", "is missing")
        return cls(
            sealed=fields.each(d, "sealed", fields.as_object(FileRecord.from_json)),
            open=fields.maybe_nested(d, "open", OpenFile.from_json),
            n_tokens=fields.integer(d, "n_tokens"),
            n_docs=fields.integer(d, "n_docs"),
            text_bytes=fields.integer(d, "text_bytes"),
            text_tokens=fields.integer(d, "text_tokens"),
        )
