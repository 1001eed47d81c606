"""The output-format protocol. A format decides how a split's shards are named and laid out
on disk; the writer, the restore step, ``verify`` and ``inspect`` go through it and never
through a format's internals.

A *shard* is the unit the writer rolls over: it has one name (what the manifest and the
checkpoint list) and may be made of several files (:meth:`ShardFormat.shard_files`). While
open it only grows; :meth:`ShardWriter.sync` makes what was appended durable, and
:meth:`ShardWriter.seal` finishes it. On resume a format checks an open shard's committed
prefix without changing it (:meth:`ShardFormat.check_open`), and only after every other
check passes reopens it, cutting what came after the commit point (:meth:`ShardFormat.reopen`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from prep.state.manifest import Manifest, ManifestFile
from prep.state.shards import Companion, OpenFile

SHARD_INDEX_DIGITS = 5
MAX_TOKENS = 2**31 - 1  # ids per shard: every format counts them in an int32


def shard_stem(split: str, index: int, joiner: str = "-", folders: bool = False) -> str:
    """``<split>-<index:05d>``: the naming every format shares (suffixes differ; seed 003's
    ``.npy`` shards join with ``_``), inside ``<split>/`` with ``folders`` (datatrove's: a
    shard's name is its path from the dataset's root)."""
    stem = f"{split}{joiner}{index:0{SHARD_INDEX_DIGITS}d}"
    return f"{split}/{stem}" if folders else stem


def stem_pattern(suffix: str, joiner: str = "-", folders: bool = False,
                 whole: bool = True) -> re.Pattern[str]:
    """Matches ``<split><joiner><5 digits><suffix>`` (inside ``<split>/`` with
    ``folders``), the suffix ending the name unless not ``whole``; groups: split, index."""
    head = r"^(train|val)/\1" if folders else r"^(train|val)"
    end = "$" if whole else ""
    return re.compile(
        rf"{head}{re.escape(joiner)}(\d{{{SHARD_INDEX_DIGITS}}}){re.escape(suffix)}{end}"
    )


class Copier(Protocol):
    """Other processes that write ids into a file for this one (:mod:`prep.procs.copiers`):
    ``count`` of them; :meth:`write` returns False when it cannot (the caller writes)."""

    count: int

    def write(self, fd: int, ids: npt.NDArray[Any], offset: int) -> bool: ...


class ShardWriter(Protocol):
    """One open shard. ``n`` ids appended so far, in ``segments`` (their lengths), whose
    chain is ``ids_chain`` (``prep.formats.segments``)."""

    n: int
    copier: Copier | None  # who writes the ids appended (None: the writer itself)

    @property
    def name(self) -> str: ...

    @property
    def ids_chain(self) -> str: ...

    @property
    def segments(self) -> tuple[int, ...]: ...

    @property
    def doc_lengths(self) -> tuple[int, ...] | None:
        """The appended documents' lengths when the format indexes documents (the
        checkpoint keeps them for an open shard), else None."""
        ...

    def append(self, ids: npt.NDArray[Any], doc_lengths: Sequence[int] = (),
               digest: bytes | None = None) -> None:
        """Append the ids of whole documents of ``doc_lengths`` ids each, all within the
        vocabulary (the caller checked them), as one segment; ``digest`` is the SHA-256 of
        their bytes when the caller has it (else the writer hashes them)."""
        ...

    def sync(self) -> None:
        """Flush and fsync: everything appended is durable."""
        ...

    def moved_to(self, directory: Path) -> None:
        """The shard's directory was renamed while it stayed open."""
        ...

    def seal(self) -> tuple[str, tuple[Companion, ...]]:
        """Finish the shard durably; returns its SHA-256 (what the manifest lists) and
        its further files with theirs."""
        ...

    def close(self) -> None:
        """Close without sealing (error path); the shard stays open on disk."""
        ...


@dataclass(frozen=True)
class IdScan:
    """What the pass that checks a shard's ids saw of the ``count_id`` it was asked to
    count (resume counts separators with it): how many there are, the positions of the first
    two and of the last two (of all of them, ``every``, when the check was asked to keep
    them), and the shard's first and last id (None when it is empty or no id was asked for).
    Where the separator can only be a separator, these give the documents' lengths
    (``prep.run.resume.claims``)."""

    count: int = 0
    head: tuple[int, ...] = ()
    tail: tuple[int, ...] = ()
    first: int | None = None
    last: int | None = None
    every: tuple[int, ...] | None = None


class VerifiedOpen(Protocol):
    """An open shard whose committed prefix was checked (reading only)."""

    @property
    def name(self) -> str: ...

    @property
    def n(self) -> int: ...

    @property
    def scan(self) -> IdScan:
        """What the check saw of the committed ids (:class:`IdScan`)."""
        ...


class ShardFormat(Protocol):
    """A way to lay out token shards. See the module docstring for the contract.
    ``folders``: the subfolders of a dataset its shards go in, one per split (none: they
    sit beside the manifest); a shard's name is its path from the dataset's root."""

    name: str
    folders: tuple[str, ...]

    def shard_name(self, split: str, index: int) -> str: ...

    def parse_name(self, name: str) -> tuple[str, int] | None:
        """(split, index) of a shard name, or None when it is not one."""
        ...

    def shard_files(self, name: str) -> tuple[str, ...]:
        """Every file of the shard ``name``."""
        ...

    def owns_file(self, filename: str) -> bool:
        """Whether a file's path from a dataset's root is (part of) some shard."""
        ...

    def dtype_name(self, vocab_size: int) -> str:
        """The ids' dtype for this vocabulary (the manifest's ``dtype``); raises
        ``UsageError`` when the requested one cannot hold it."""
        ...

    def layout_version(self, vocab_size: int) -> int | None:
        """The version recorded in the manifest (``bin_version``)."""
        ...

    def create(self, directory: Path, name: str, vocab_size: int) -> ShardWriter: ...

    def check_open(
        self, directory: Path, op: OpenFile, vocab_size: int, count_id: int | None = None
    ) -> VerifiedOpen:
        """Check an open shard's committed prefix against the checkpoint's record, reading
        only, and scan it for ``count_id`` in the same pass (keeping every position when the
        record holds document lengths, so resume can check them); raises ``IntegrityError``
        saying what is wrong and how to recover."""
        ...

    def check_sealed(
        self, directory: Path, name: str, n: int, sha256: str, vocab_size: int, count_id: int | None
    ) -> IdScan:
        """Check a sealed shard's id file of ``n`` ids (size, header) against its SHA-256,
        reading only; returns what the same pass saw of ``count_id`` (:class:`IdScan`).
        Raises ``IntegrityError`` saying what is wrong and how to recover."""
        ...

    def reopen(self, directory: Path, verified: VerifiedOpen, vocab_size: int) -> ShardWriter:
        """Continue a checked open shard at its commit point (cuts anything after it)."""
        ...

    def continue_sealed(
        self, directory: Path, entry: ManifestFile, manifest: Manifest, vocab_size: int
    ) -> VerifiedOpen:
        """A published shard taken back as open with all its ids, to continue a published
        dataset (pass it to :meth:`reopen`, which makes it an open shard again). Call it on
        a private copy whose SHA-256 the caller checked; reads only. Raises
        ``IntegrityError`` when the shard does not match its manifest entry."""
        ...

    def check_shard(self, directory: Path, entry: ManifestFile, manifest: Manifest) -> list[str]:
        """Every problem of a published shard against its manifest entry (reads only)."""
        ...

    def map_ids(self, directory: Path, entry: ManifestFile, manifest: Manifest) -> npt.NDArray[Any]:
        """A published shard's ids, memory-mapped read-only after checking its files' sizes
        against the entry (no hashing); raises ``IntegrityError`` or ``FormatError``."""
        ...

    def doc_lengths(
        self, directory: Path, entry: ManifestFile, manifest: Manifest
    ) -> npt.NDArray[Any] | None:
        """The ids per document of a published shard, from its document index checked
        against the manifest (``IntegrityError`` when they disagree), or None when the
        format has no index (its separators may tell: :mod:`prep.readers.documents`)."""
        ...

    def describe(self, path: Path, dtype_name: str | None) -> tuple[str, npt.NDArray[Any]]:
        """A one-line description of a shard file and its ids (for ``prep inspect``);
        ``dtype_name`` is the manifest's, for layouts that do not record it."""
        ...


def dataset_files(directory: Path, fmt: ShardFormat) -> list[str]:
    """What ``directory`` (a dataset or its staging) holds where ``fmt`` puts shards:
    the names beside the manifest and the files in the format's folders (``train/NAME``)."""
    names = [p.name for p in directory.iterdir()]
    for folder in fmt.folders:
        if (directory / folder).is_dir():
            names += [f"{folder}/{p.name}" for p in (directory / folder).iterdir()]
    return sorted(names)


_SCAN_CHUNK = 1 << 22


def ids_problems(name: str, ids: npt.NDArray[Any], n_docs: int, manifest: Manifest,
                 first_doc_at: int | None = None) -> list[str]:
    """Problems of a shard's ids against the manifest: an id outside the vocabulary, fewer
    separators than documents, a shard that does not start (prepend) or end (append) with
    the separator; under ``--pack fixed`` (``first_doc_at`` given) its first document
    must start (prepend) or follow (append) one at ``first_doc_at``, and a last document
    may end in the next shard. Streams the ids in bounded memory."""
    if ids.size == 0:
        return []
    sep, vocab = manifest.doc_sep_id, manifest.vocab_size
    top, seps = -1, 0
    for start in range(0, int(ids.size), _SCAN_CHUNK):
        chunk = ids[start : start + _SCAN_CHUNK]
        top = max(top, int(chunk.max()))
        if sep is not None:
            seps += int(np.count_nonzero(chunk == sep))
    problems = []
    if top >= vocab:
        problems.append(f"{name}: id {top:,} is outside the vocabulary ({vocab:,})")
    if sep is None:
        return problems
    append = manifest.sep_position == "append"
    need, edge = n_docs, int(ids[0]) if not append else int(ids[-1])
    what = f"does not {'end' if append else 'start'} with the separator {sep}"
    if first_doc_at is not None:  # fixed: the cuts fall anywhere
        edge = sep
        if append and first_doc_at == 0 and n_docs:
            need -= 1  # the last document may end in the next shard
        if n_docs and (not append or first_doc_at):
            edge = int(ids[first_doc_at - 1 if append else first_doc_at])
        where = "the document before" if append else "its first document"
        what = f"{where} (first_doc_at {first_doc_at:,}) {what}"
    if seps < need:
        problems.append(f"{name}: {seps:,} separators for {n_docs:,} documents")
    if edge != sep:
        problems.append(f"{name}: {what}")
    return problems


def starts_at_separators(at: npt.NDArray[np.int64], n: int, append: bool, begins: bool
                         ) -> npt.NDArray[np.int64]:
    """Where documents start in a file of ``n`` ids whose separators sit at ``at``
    (ascending, each a separator only): at each one (``prepend``), or after each one but
    one at the file's end (``append``), and then also at 0 when ``begins`` (a document
    starts at the file's first id, which no separator there says)."""
    if not append:
        return at
    after = at[at + 1 < n] + 1
    return np.concatenate(([0], after)).astype(np.int64) if begins else after
