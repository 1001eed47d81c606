"""Per-split writers: separator placement, whole-document rollover, exact counts.

A split's files are ``<split>-00000.bin, -00001.bin, ...``. Before a document (separator
included) that would push the open file past ``max_file_tokens``, the open file is sealed
and the next one started, unless the open file is still empty: a long document fills a file
alone. So no file starts or ends mid-document and no empty file precedes a non-empty one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.binfile import MAX_TOKENS, BinWriter
from prep.errors import InputError

EMPTY_SHA256 = hashlib.sha256().hexdigest()


def file_name(split: str, index: int) -> str:
    return f"{split}-{index:05d}.bin"


def needs_rollover(open_tokens: int, doc_tokens: int, max_file_tokens: int) -> bool:
    """Whether a document of ``doc_tokens`` (separator included) must start a new file."""
    return open_tokens > 0 and open_tokens + doc_tokens > max_file_tokens


@dataclass(frozen=True)
class FileRecord:
    """A sealed file: what the manifest and checkpoint list."""

    name: str
    n_tokens: int
    n_docs: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n_tokens": self.n_tokens,
            "n_docs": self.n_docs,
            "sha256": self.sha256,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FileRecord:
        return cls(
            name=str(d["name"]),
            n_tokens=int(d["n_tokens"]),
            n_docs=int(d["n_docs"]),
            sha256=str(d["sha256"]),
        )


@dataclass(frozen=True)
class OpenFile:
    """The open file at a commit point: its name, committed ids and their hash."""

    name: str
    n_tokens: int
    n_docs: int
    ids_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n_tokens": self.n_tokens,
            "n_docs": self.n_docs,
            "ids_sha256": self.ids_sha256,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OpenFile:
        return cls(
            name=str(d["name"]),
            n_tokens=int(d["n_tokens"]),
            n_docs=int(d["n_docs"]),
            ids_sha256=str(d["ids_sha256"]),
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
    def empty(cls, split: str) -> SplitState:
        """A new split: its first file open and empty."""
        return cls(sealed=(), open=OpenFile(file_name(split, 0), 0, 0, EMPTY_SHA256))

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
        return cls(
            sealed=tuple(FileRecord.from_json(r) for r in d["sealed"]),
            open=OpenFile.from_json(d["open"]) if d["open"] else None,
            n_tokens=int(d["n_tokens"]),
            n_docs=int(d["n_docs"]),
            text_bytes=int(d["text_bytes"]),
            text_tokens=int(d["text_tokens"]),
        )


@dataclass
class SplitWriter:
    """Appends whole documents of one split to its files in ``directory``.

    Documents are buffered and written in one call per :meth:`flush`; :meth:`state` is
    exact only after :meth:`sync` (the pipeline syncs before every checkpoint)."""

    directory: Path
    split: str
    vocab_size: int
    sep_id: int | None
    append_sep: bool
    max_file_tokens: int
    sealed: list[FileRecord] = field(default_factory=list)
    n_tokens: int = 0
    n_docs: int = 0
    text_bytes: int = 0
    text_tokens: int = 0
    _file: BinWriter | None = None
    _file_docs: int = 0
    _file_tokens: int = 0  # including pending
    _pending: list[npt.NDArray[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sep = np.array([self.sep_id], dtype=np.uint32) if self.sep_id is not None else None

    def start(self) -> None:
        """Create the split's first file (always present, even if it stays empty)."""
        self._file = BinWriter(self.directory / file_name(self.split, 0), self.vocab_size)

    def restore(self, state: SplitState, open_writer: BinWriter | None) -> None:
        """Continue from a verified checkpoint state with its reopened open file."""
        self.sealed = list(state.sealed)
        self.n_tokens, self.n_docs = state.n_tokens, state.n_docs
        self.text_bytes, self.text_tokens = state.text_bytes, state.text_tokens
        self._file = open_writer
        self._file_docs = state.open.n_docs if state.open else 0
        self._file_tokens = state.open.n_tokens if state.open else 0

    def add(self, ids: npt.NDArray[Any], n_bytes: int) -> None:
        """Append one document (its ids, and its text's UTF-8 length for β)."""
        doc_tokens = int(ids.size) + (1 if self._sep is not None else 0)
        if doc_tokens > MAX_TOKENS:
            raise InputError(
                f"a {self.split} document of {doc_tokens:,} tokens cannot fit one file "
                "(2**31-1 ids at most); split such documents before preparing"
            )
        if needs_rollover(self._file_tokens, doc_tokens, self.max_file_tokens):
            self._roll()
        if self._sep is None:
            self._pending.append(ids)
        elif self.append_sep:
            self._pending.extend((ids, self._sep))
        else:
            self._pending.extend((self._sep, ids))
        self._file_tokens += doc_tokens
        self._file_docs += 1
        self.n_tokens += doc_tokens
        self.n_docs += 1
        self.text_bytes += n_bytes
        self.text_tokens += int(ids.size)

    def flush(self) -> None:
        """Write buffered documents to the open file (not yet durable)."""
        if self._pending and self._file is not None:
            data = self._pending[0] if len(self._pending) == 1 else np.concatenate(self._pending)
            self._pending = []
            self._file.append(data)

    def sync(self) -> None:
        """Flush and fsync the open file: everything added so far is durable."""
        self.flush()
        if self._file is not None:
            self._file.sync()

    def _roll(self) -> None:
        self._seal_open()
        self._file = BinWriter(
            self.directory / file_name(self.split, len(self.sealed)), self.vocab_size
        )

    def _seal_open(self) -> None:
        if self._file is None:
            raise RuntimeError("no open file to seal")
        self.flush()
        sha = self._file.seal()
        self.sealed.append(FileRecord(self._file.path.name, self._file.n, self._file_docs, sha))
        self._file = None
        self._file_docs = 0
        self._file_tokens = 0

    def state(self) -> SplitState:
        """The committed state; call after :meth:`sync`."""
        open_file = None
        if self._file is not None:
            open_file = OpenFile(
                self._file.path.name, self._file.n, self._file_docs, self._file.ids_sha256
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
        """Seal the open file; returns every file of the split in order."""
        if self._file is not None:
            self._seal_open()
        return list(self.sealed)

    def close(self) -> None:
        """Close the open file without sealing (error path)."""
        if self._file is not None:
            self._file.close()
