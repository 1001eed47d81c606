"""Formats whose shard is a headerless id file plus companion files that index its
documents: Megatron's ``.bin`` + ``.idx``, datatrove's ``.ds`` + ``.ds.index`` +
``.ds.metadata``, OLMo-core's ``.npy`` + ``.csv.gz``. They differ only in their
:class:`~prep.formats.layout.Layout` row (the dtypes, the id file's suffix) and their
:class:`DocIndex` (the companions' names and bytes); this module holds everything they
share.

Under ``--pack fixed`` a document may run across shards: each shard indexes the pieces it
holds (:func:`~prep.state.shards.pieces`), the end of a document begun in an earlier shard
first, so every index covers exactly its own id file, as the trainers' readers require;
where the documents themselves start, the manifest's ``first_doc_at`` says.

The id file grows like any id file. The companions depend on every document's length, so
they are written once, each atomically, when the shard is sealed; until then the committed
documents' lengths travel in the checkpoint (``OpenFile.doc_lengths``), so a shard open at
a kill gets its companions rebuilt exactly on resume. A companion is checked by parsing
it back to document lengths and packing those again: the bytes must be exactly the ones
the layout writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError, IntegrityError
from prep.formats.base import stem_pattern
from prep.formats.idfile import IdFileOpen, IdFileWriter, no_header
from prep.formats.layout import Layout
from prep.formats.onefile import FlatFormat
from prep.formats.segments import SegmentChain
from prep.fsio import atomic_write_bytes, file_sha256
from prep.state.manifest import Manifest, ManifestFile
from prep.state.shards import Companion, OpenFile, pieces


class DocIndex(Protocol):
    """How one indexed layout names and encodes its companions (the id file's name is the
    :class:`~prep.formats.layout.Layout` row's). ``label`` is the tokenizer's name as the run
    was given it (a layout that records it writes it)."""

    def companions(self, name: str) -> tuple[str, ...]:
        """The companion files of the id file ``name``, in the order they are written."""
        ...

    def pack(self, lengths: Sequence[int], dtype_name: str, label: str) -> tuple[bytes, ...]:
        """The companions' bytes (in :meth:`companions` order) for documents of
        ``lengths`` ids of ``dtype_name``."""
        ...

    def parse(self, raw: Sequence[bytes], dtype_name: str, where: str) -> tuple[list[int], str]:
        """(document lengths, label) read back from the companions' bytes; raises
        ``FormatError`` naming ``where`` when they break the layout."""
        ...


class IndexedWriter(IdFileWriter):
    """An id file that also keeps its documents' lengths and writes the companions on
    seal."""

    def __init__(
        self,
        path: Path,
        dtype: np.dtype[Any],
        vocab_size: int,
        index: DocIndex,
        label: str,
        doc_lengths: Sequence[int] = (),
        *,
        name: str | None = None,
        _resume: tuple[int, SegmentChain] | None = None,
    ) -> None:
        super().__init__(path, dtype, vocab_size, no_header, name=name, _resume=_resume)
        self._index, self._label = index, label
        self._lengths = list(doc_lengths)

    @property
    def doc_lengths(self) -> tuple[int, ...]:
        return tuple(self._lengths)

    def append(self, ids: npt.NDArray[Any], doc_lengths: Sequence[int] = (),
               digest: bytes | None = None) -> None:
        if sum(doc_lengths) != ids.size:
            raise FormatError(
                f"{self.name}: {ids.size:,} ids appended as documents of "
                f"{sum(doc_lengths):,} ids; the index would not match the data"
            )
        super().append(ids, digest=digest)
        self._lengths.extend(int(n) for n in doc_lengths)

    def seal(self) -> tuple[str, tuple[Companion, ...]]:
        """Seal the id file, then write each companion atomically; returns every hash."""
        sha, _ = super().seal()
        raws = self._index.pack(self._lengths, self.dtype.name, self._label)
        companions = []
        for name, raw in zip(self._index.companions(self.name), raws, strict=True):
            atomic_write_bytes(self.path.with_name(Path(name).name), raw)  # beside the ids
            companions.append(Companion(name, hashlib.sha256(raw).hexdigest()))
        return sha, tuple(companions)


class IndexedFormat(FlatFormat):
    """A headerless id file per shard plus the companions of ``index``; see the module
    docstring. ``label`` is what a layout that records the tokenizer writes."""

    def __init__(self, layout: Layout, index: DocIndex, dtype: str = "auto",
                 label: str = "") -> None:
        super().__init__(layout, dtype)
        self.index, self.label = index, label
        self._stem = stem_pattern("", layout.stem_joiner, layout.folders, whole=False)
        self._file_stem = stem_pattern("", layout.stem_joiner, whole=False)  # a file's own name

    def shard_files(self, name: str) -> tuple[str, ...]:
        return (name, *self.index.companions(name))

    def owns_file(self, filename: str) -> bool:
        m = self._stem.match(filename)
        return m is not None and filename in self.shard_files(m.group(0) + self.suffix)

    def create(self, directory: Path, name: str, vocab_size: int) -> IndexedWriter:
        return IndexedWriter(directory / name, self._dtype(vocab_size), vocab_size, self.index,
                             self.label, name=name)

    def check_open(
        self, directory: Path, op: OpenFile, vocab_size: int, count_id: int | None = None
    ) -> IdFileOpen:
        checked = super().check_open(directory, op, vocab_size, count_id)
        lengths = op.doc_lengths or ()
        held = pieces(op.n_docs, op.first_doc_at)
        if len(lengths) != held or sum(lengths) != op.n_tokens:
            raise IntegrityError(
                f"{directory / op.name}: the checkpoint's document lengths ({len(lengths):,} "
                f"pieces, {sum(lengths):,} ids) do not match its {held:,} document pieces "
                f"and {op.n_tokens:,} ids, so the index cannot be rebuilt. Delete {directory} "
                "to start over",
                path=directory / op.name,
            )
        return checked

    def reopen(self, directory: Path, verified: object, vocab_size: int) -> IndexedWriter:
        if not isinstance(verified, IdFileOpen):
            raise TypeError(f"{verified!r} was not checked by the {self.name} format")
        return IndexedWriter(
            directory / verified.name,
            self._dtype(vocab_size),
            vocab_size,
            self.index,
            self.label,
            verified.doc_lengths or (),
            name=verified.name,
            _resume=(verified.n, verified.segments),
        )

    def continue_sealed(
        self, directory: Path, entry: ManifestFile, manifest: Manifest, vocab_size: int
    ) -> IdFileOpen:
        """Also the documents' lengths, from the shard's index (the writer needs them)."""
        checked = super().continue_sealed(directory, entry, manifest, vocab_size)
        then = f"{entry.name} cannot be continued"
        lengths = self.doc_lengths(directory, entry, manifest, then)
        return replace(checked, doc_lengths=tuple(int(n) for n in lengths))

    def _read(self, directory: Path, entry: ManifestFile, dtype_name: str) -> list[int]:
        names = self.index.companions(entry.name)
        raws = [(directory / name).read_bytes() for name in names]
        lengths, label = self.index.parse(raws, dtype_name, where=names[0])
        if list(self.index.pack(lengths, dtype_name, label)) != raws:
            raise FormatError(f"{names[0]}: not as the {self.name} layout writes it "
                              f"({', '.join(names)})", path=names[0])
        held = pieces(entry.n_docs, entry.first_doc_at)
        if len(lengths) != held or sum(lengths) != entry.n_tokens:
            raise FormatError(
                f"{names[0]}: indexes {len(lengths):,} documents of {sum(lengths):,} ids, not "
                f"{entry.name}'s {held:,} document pieces of {entry.n_tokens:,} ids",
                path=names[0],
            )
        if entry.first_doc and lengths[0] != entry.first_doc:
            raise FormatError(
                f"{names[0]}: its first piece holds {lengths[0]:,} ids, but the manifest's "
                f"first_doc_at says the first document of {entry.name} starts at "
                f"{entry.first_doc:,}", path=names[0],
            )
        return lengths

    def doc_lengths(
        self, directory: Path, entry: ManifestFile, manifest: Manifest,
        then: str = "run `prep verify`",
    ) -> npt.NDArray[Any]:
        """The ids per document of a sealed shard, from its index checked against the
        manifest's counts; ``IntegrityError`` (ending with ``then``) when they disagree."""
        try:
            return np.asarray(self._read(directory, entry, manifest.dtype), dtype=np.int64)
        except (FormatError, OSError) as e:
            raise IntegrityError(f"{e}; {then}", path=directory / entry.name) from e

    def check_companions(
        self, directory: Path, entry: ManifestFile, manifest: Manifest, n: int
    ) -> None:
        problems = self._index_problems(directory, entry, manifest.dtype)
        if problems:
            raise IntegrityError(
                f"{problems[0]}; the shard is damaged (run `prep verify`)", path=directory
            )

    def companion_problems(
        self, directory: Path, entry: ManifestFile, manifest: Manifest, n: int
    ) -> list[str]:
        problems = self._index_problems(directory, entry, manifest.dtype)
        listed = {c.name: c.sha256 for c in entry.companions}
        for name in self.index.companions(entry.name):
            if name not in listed:
                problems.append(f"{entry.name}: the manifest does not list its {name}")
            elif (directory / name).is_file():
                sha = file_sha256(directory / name)
                if sha != listed[name]:
                    problems.append(
                        f"{name}: SHA-256 {sha[:12]}… does not match the manifest's "
                        f"{listed[name][:12]}…"
                    )
        return problems

    def describe(self, path: Path, dtype_name: str | None) -> tuple[str, npt.NDArray[Any]]:
        """The shard of ``path`` (its id file or a companion) and how many documents its
        index holds."""
        m = self._file_stem.match(path.name)
        data = path.with_name(m.group(0) + self.suffix) if m else path
        line, ids = super().describe(data, dtype_name)
        names = self.index.companions(data.name)
        try:
            raws = [path.with_name(n).read_bytes() for n in names]
            lengths, _ = self.index.parse(raws, str(ids.dtype), where=names[0])
        except (FormatError, OSError) as e:
            return f"{line}; index: unreadable ({e})", ids
        return f"{line}; index: {len(lengths):,} documents ({', '.join(names)})", ids

    def _index_problems(self, directory: Path, entry: ManifestFile, dtype_name: str) -> list[str]:
        missing = [n for n in self.index.companions(entry.name) if not (directory / n).is_file()]
        if missing:
            return [f"{m}: missing (part of {entry.name})" for m in missing]
        try:
            self._read(directory, entry, dtype_name)
        except FormatError as e:
            return [str(e)]
        return []

