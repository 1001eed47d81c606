"""Megatron-LM's indexed dataset: each shard is a pair ``<split>-NNNNN.bin`` (headerless
ids) + ``<split>-NNNNN.idx`` (``MMIDIDX``, see :mod:`prep.formats.mmidx`), which
``megatron.core.datasets.indexed_dataset.IndexedDataset(prefix)`` reads (as do NeMo and
GPT-NeoX). Each document, its separator included, is one sequence.

The ``.bin`` grows like any id file. The ``.idx`` depends on every document's length, so it
is written once, atomically, when the shard is sealed; until then the committed documents'
lengths travel in the checkpoint (``OpenFile.doc_lengths``), so a shard open at a kill gets
its index rebuilt exactly on resume.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError, IntegrityError
from prep.formats import mmidx
from prep.formats.idfile import IdFileOpen, IdFileWriter, no_header
from prep.formats.layout import Layout
from prep.formats.onefile import FlatFormat
from prep.formats.segments import SegmentChain
from prep.fsio import atomic_write_bytes, file_sha256
from prep.state.manifest import Manifest, ManifestFile
from prep.state.shards import Companion, OpenFile

# Megatron has no uint32 code: wide ids are int32 (code 4), enough for any V < 2**31.
LAYOUT = Layout("megatron", {"uint16": None, "int32": None}, version=mmidx.VERSION)


def idx_name(name: str) -> str:
    """The index file of shard ``name`` (``train-00000.bin`` -> ``train-00000.idx``)."""
    return name.removesuffix(".bin") + ".idx"


class MegatronWriter(IdFileWriter):
    """An id file that also keeps its documents' lengths and writes the ``.idx`` on seal."""

    def __init__(
        self,
        path: Path,
        dtype: np.dtype[Any],
        vocab_size: int,
        doc_lengths: Sequence[int] = (),
        *,
        _resume: tuple[int, SegmentChain] | None = None,
    ) -> None:
        super().__init__(path, dtype, vocab_size, no_header, _resume=_resume)
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
        """Seal the ``.bin``, then write the ``.idx`` atomically; returns both hashes."""
        sha, _ = super().seal()
        raw = mmidx.pack(self._lengths, self.dtype.name)
        name = idx_name(self.name)
        atomic_write_bytes(self.path.with_name(name), raw)
        return sha, (Companion(name, hashlib.sha256(raw).hexdigest()),)


class MegatronFormat(FlatFormat):
    """``.bin`` + ``.idx`` pairs; see the module docstring."""

    def __init__(self, dtype: str = "auto") -> None:
        super().__init__(LAYOUT, dtype)

    def shard_files(self, name: str) -> tuple[str, ...]:
        return (name, idx_name(name))

    def owns_file(self, filename: str) -> bool:
        return filename.endswith((".bin", ".idx"))

    def create(self, directory: Path, name: str, vocab_size: int) -> MegatronWriter:
        return MegatronWriter(directory / name, self._dtype(vocab_size), vocab_size)

    def check_open(
        self, directory: Path, op: OpenFile, vocab_size: int, count_id: int | None = None
    ) -> IdFileOpen:
        checked = super().check_open(directory, op, vocab_size, count_id)
        lengths = op.doc_lengths or ()
        if len(lengths) != op.n_docs or sum(lengths) != op.n_tokens:
            raise IntegrityError(
                f"{directory / op.name}: the checkpoint's document lengths ({len(lengths):,} "
                f"documents, {sum(lengths):,} ids) do not match its {op.n_docs:,} documents "
                f"and {op.n_tokens:,} ids, so the index cannot be rebuilt. Delete {directory} "
                "to start over",
                path=directory / op.name,
            )
        return checked

    def reopen(self, directory: Path, verified: object, vocab_size: int) -> MegatronWriter:
        if not isinstance(verified, IdFileOpen):
            raise TypeError(f"{verified!r} was not checked by the {self.name} format")
        return MegatronWriter(
            directory / verified.name,
            self._dtype(vocab_size),
            vocab_size,
            verified.doc_lengths or (),
            _resume=(verified.n, verified.segments),
        )

    def continue_sealed(
        self, directory: Path, entry: ManifestFile, manifest: Manifest, vocab_size: int
    ) -> IdFileOpen:
        """Also the documents' lengths, from the shard's ``.idx`` (the writer needs them)."""
        checked = super().continue_sealed(directory, entry, manifest, vocab_size)
        lengths = self.doc_lengths(directory, entry, f"{entry.name} cannot be continued")
        return replace(checked, doc_lengths=tuple(int(n) for n in lengths))

    def doc_lengths(
        self, directory: Path, entry: ManifestFile, then: str = "run `prep verify`"
    ) -> npt.NDArray[Any]:
        """The ids per document of a sealed shard, from its ``.idx`` checked against the
        manifest's counts; ``IntegrityError`` (ending with ``then``) when they disagree."""
        name = idx_name(entry.name)
        try:
            idx = mmidx.parse((directory / name).read_bytes(), where=name)
        except (FormatError, OSError) as e:
            raise IntegrityError(f"{e}; {then}", path=name) from e
        if idx.n_docs != entry.n_docs or idx.n_tokens != entry.n_tokens:
            raise IntegrityError(
                f"{name}: does not index {entry.name}'s {entry.n_docs:,} documents; {then}",
                path=directory / name,
            )
        return np.asarray(idx.lengths, dtype=np.int64)

    def _index_problems(self, directory: Path, entry: ManifestFile, n: int) -> list[str]:
        name = idx_name(entry.name)
        path = directory / name
        if not path.is_file():
            return [f"{name}: missing (the index of {entry.name})"]
        try:
            idx = mmidx.parse(path.read_bytes(), where=name)
        except FormatError as e:
            return [str(e)]
        problems = []
        if idx.n_tokens != n or idx.bin_size != (directory / entry.name).stat().st_size:
            problems.append(
                f"{name}: indexes {idx.n_tokens:,} ids of {idx.dtype.name} but {entry.name} "
                f"holds {n:,}"
            )
        if idx.n_docs != entry.n_docs or not np.array_equal(
            idx.doc_index, np.arange(idx.n_docs + 1)
        ):
            problems.append(
                f"{name}: indexes {idx.n_docs:,} documents, not the manifest's {entry.n_docs:,} "
                "one-sequence documents"
            )
        return problems

    def check_companions(self, directory: Path, entry: ManifestFile, n: int) -> None:
        problems = self._index_problems(directory, entry, n)
        if problems:
            raise IntegrityError(
                f"{problems[0]}; the pair is damaged (run `prep verify`)", path=directory
            )

    def companion_problems(self, directory: Path, entry: ManifestFile, n: int) -> list[str]:
        problems = self._index_problems(directory, entry, n)
        listed = {c.name: c.sha256 for c in entry.companions}
        name = idx_name(entry.name)
        if name not in listed:
            problems.append(f"{entry.name}: the manifest does not list its index {name}")
        elif (directory / name).is_file():
            sha = file_sha256(directory / name)
            if sha != listed[name]:
                problems.append(
                    f"{name}: SHA-256 {sha[:12]}… does not match the manifest's "
                    f"{listed[name][:12]}…"
                )
        return problems

    def describe(self, path: Path, dtype_name: str | None) -> tuple[str, npt.NDArray[Any]]:
        """The pair of ``path`` (its ``.bin`` or ``.idx``); the dtype comes from the index."""
        data = path.with_name(path.name.removesuffix(".idx").removesuffix(".bin") + ".bin")
        idx = mmidx.parse(data.with_name(idx_name(data.name)).read_bytes(), where=path.name)
        line, ids = super().describe(data, idx.dtype.name)
        return f"{line}; index: {idx.n_docs:,} documents, MMIDIDX code " \
               f"{mmidx.code_for(idx.dtype.name)}", ids
