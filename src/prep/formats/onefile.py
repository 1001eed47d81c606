"""Formats whose shard is one file of ids, ``<split>-NNNNN.bin``: llm.c's (GPT-2 and
Llama-3 headers), headerless raw shards and seed 003's ``<split>_NNNNN.npy``. They differ
only in data (:class:`~prep.formats.layout.Layout`): which dtypes they store, which
fixed-length header (:class:`~prep.formats.layout.IdHeader`), if any, goes before the ids,
and how files are named.
"""

from __future__ import annotations

import hashlib
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError, InputError, IntegrityError, UsageError, lost_file
from prep.formats.base import IdScan, ids_problems, shard_stem, stem_pattern
from prep.formats.idfile import (
    CountingHasher,
    HeaderFn,
    IdFileOpen,
    IdFileWriter,
    hash_ids_prefix,
    no_header,
)
from prep.formats.layout import (
    DTYPE_MAX_VOCAB,
    IdHeader,
    Layout,
    le_dtype,
    map_file,
    read_header,
    scan_file,
)
from prep.formats.segments import SegmentChain, SegmentReader
from prep.fsio import Hasher, file_sha256
from prep.split import SPLITS
from prep.state.manifest import Manifest, ManifestFile
from prep.state.shards import OpenFile


def _pack(kind: IdHeader, vocab_size: int, n: int) -> bytes:
    return kind.pack(n, vocab_size)


def _continue_sealed(
    fmt: FlatFormat, directory: Path, entry: ManifestFile, manifest: Manifest, vocab_size: int
) -> IdFileOpen:
    """:meth:`ShardFormat.continue_sealed` for a flat layout."""
    path, width = directory / entry.name, fmt._dtype(vocab_size).itemsize
    try:
        fmt.map_ids(directory, entry, manifest)  # sizes and header agree with the entry
        start = len(fmt._header(vocab_size)(0))
        hasher = hash_ids_prefix(path, entry.n_tokens, width, start)
    except (FormatError, OSError) as e:
        raise IntegrityError(f"{e}; it cannot be continued", path=path) from e
    # The published ids are the continued shard's first segment (its checkpoints chain on).
    chain = SegmentChain()
    if entry.n_tokens:
        chain.add(entry.n_tokens, bytes.fromhex(hasher.hexdigest()))
    return IdFileOpen(entry.name, entry.n_tokens, chain)


def _no_index(
    fmt: FlatFormat, directory: Path, entry: ManifestFile, manifest: Manifest
) -> npt.NDArray[Any] | None:
    """:meth:`ShardFormat.doc_lengths` of a format without a document index: None."""
    return None


def _owns_file(fmt: FlatFormat, filename: str) -> bool:
    """:meth:`ShardFormat.owns_file`: a shard's name in the format's split folder, or beside
    the manifest with the format's suffix (a flat format's shards are never in a folder)."""
    if fmt.folders:
        return fmt._pattern.match(filename) is not None
    return "/" not in filename and filename.endswith(fmt.suffix)


class FlatFormat:
    """A :class:`~prep.formats.base.ShardFormat` of one id file per shard."""

    def __init__(self, layout: Layout, dtype: str = "auto") -> None:
        if dtype != "auto" and dtype not in layout.headers:
            raise UsageError(
                f"--format {layout.name} stores {' or '.join(layout.headers)} ids; "
                f"--dtype {dtype} is not one of them (or use --dtype auto)"
            )
        self.name = layout.name
        self.layout = layout
        self.requested = dtype
        self.suffix = layout.suffix
        self._pattern = stem_pattern(layout.suffix, layout.stem_joiner, layout.folders)
        self.folders: tuple[str, ...] = SPLITS if layout.folders else ()

    # -- naming --------------------------------------------------------------------------

    def shard_name(self, split: str, index: int) -> str:
        return shard_stem(split, index, self.layout.stem_joiner, self.layout.folders) + self.suffix

    def parse_name(self, name: str) -> tuple[str, int] | None:
        m = self._pattern.match(name)
        return (m.group(1), int(m.group(2))) if m else None

    def shard_files(self, name: str) -> tuple[str, ...]:
        return (name,)

    owns_file = _owns_file

    # -- dtype and header ----------------------------------------------------------------

    def dtype_name(self, vocab_size: int) -> str:
        """The ids' dtype for vocabulary ``vocab_size``: the requested one, or with
        ``auto`` the narrowest that holds every id. Raises ``UsageError`` if none fits."""
        choices = list(self.layout.headers) if self.requested == "auto" else [self.requested]
        for name in choices:
            if 0 < vocab_size <= DTYPE_MAX_VOCAB[name]:
                return name
        raise UsageError(
            f"vocabulary size {vocab_size:,} does not fit {' or '.join(choices)} ids "
            f"(--format {self.name} --dtype {self.requested}); choose a wider --dtype"
            + ("" if self.requested != "auto" else " or another --format")
        )

    def _dtype(self, vocab_size: int) -> np.dtype[Any]:
        return le_dtype(self.dtype_name(vocab_size))

    def _kind(self, vocab_size: int) -> IdHeader | None:
        return self.layout.headers[self.dtype_name(vocab_size)]

    def _header(self, vocab_size: int) -> HeaderFn:
        kind = self._kind(vocab_size)
        return no_header if kind is None else partial(_pack, kind, vocab_size)

    def layout_version(self, vocab_size: int) -> int | None:
        """What the manifest records as ``bin_version``."""
        return self._version_of(self.dtype_name(vocab_size))

    def _version_of(self, dtype_name: str) -> int | None:
        kind = self.layout.headers[dtype_name]
        return self.layout.version if kind is None else kind.version

    # -- writing and resuming ------------------------------------------------------------

    def create(self, directory: Path, name: str, vocab_size: int) -> IdFileWriter:
        return IdFileWriter(directory / name, self._dtype(vocab_size), vocab_size,
                            self._header(vocab_size), name=name)

    def check_open(
        self, directory: Path, op: OpenFile, vocab_size: int, count_id: int | None = None
    ) -> IdFileOpen:
        """Check an open shard's committed prefix against the checkpoint, reading only."""
        path = directory / op.name
        start = len(self._header(vocab_size)(0))
        width = self._dtype(vocab_size).itemsize
        if not path.is_file() or path.stat().st_size < start + op.n_tokens * width:
            raise lost_file(
                path, f"is missing or shorter than its {op.n_tokens:,} committed ids", directory
            )
        every = op.doc_lengths is not None and count_id is not None
        segments = SegmentReader(op.segments, width)
        hasher = _scan(directory, path, self._kind(vocab_size), op.n_tokens, width, count_id,
                       segments, every)
        if segments.hexdigest() != op.ids_chain:
            raise IntegrityError(
                f"{path}: its first {op.n_tokens:,} ids do not match the checkpoint's chain of "
                f"their segments; the file was modified. Delete {directory} to start over",
                path=path,
            )
        return IdFileOpen(op.name, op.n_tokens, segments.chain(), op.doc_lengths, hasher.scan)

    def check_sealed(
        self, directory: Path, name: str, n: int, sha256: str, vocab_size: int, count_id: int | None
    ) -> IdScan:
        kind, width = self._kind(vocab_size), self._dtype(vocab_size).itemsize
        return check_sealed_file(directory, directory / name, n, sha256, kind, width, count_id)

    def reopen(self, directory: Path, verified: object, vocab_size: int) -> IdFileWriter:
        if not isinstance(verified, IdFileOpen):
            raise TypeError(f"{verified!r} was not checked by the {self.name} format")
        return IdFileWriter(
            directory / verified.name,
            self._dtype(vocab_size),
            vocab_size,
            self._header(vocab_size),
            name=verified.name,
            _resume=(verified.n, verified.segments),
        )

    continue_sealed = _continue_sealed  # defined as a function to keep this class small

    # -- reading -------------------------------------------------------------------------

    def map_ids(self, directory: Path, entry: ManifestFile, manifest: Manifest) -> npt.NDArray[Any]:
        """A published shard's ids, memory-mapped after checking its sizes against its
        manifest entry (no hashing). Raises ``IntegrityError`` or ``FormatError``."""
        path = directory / entry.name
        if not path.is_file():
            raise IntegrityError(
                f"{path}: listed in the manifest but missing; re-publish the dataset or "
                "restore the file",
                path=path,
            )
        n, _ = scan_file(self.layout, path, manifest.dtype, str(path))
        if n != entry.n_tokens:
            raise IntegrityError(
                f"{path}: holds {n:,} ids but the manifest lists {entry.n_tokens:,}; the file "
                "does not belong to this manifest",
                path=path,
            )
        self.check_companions(directory, entry, manifest, n)
        return map_file(self.layout, path, manifest.dtype, n)

    doc_lengths = _no_index  # a single id file does not index its documents

    def check_companions(
        self, directory: Path, entry: ManifestFile, manifest: Manifest, n: int
    ) -> None:
        """Raise ``IntegrityError`` when a shard's further files disagree with it (none
        here)."""

    def check_shard(self, directory: Path, entry: ManifestFile, manifest: Manifest) -> list[str]:
        """Every problem of a published shard against its manifest entry (reads only)."""
        name, path = entry.name, directory / entry.name
        if not path.is_file():
            return [f"{name}: missing"]
        try:
            n, vocab = scan_file(self.layout, path, manifest.dtype, name)
        except FormatError as e:
            return [str(e)]
        problems = []
        what = "header n" if vocab is not None else "holds n"
        if n != entry.n_tokens:
            problems.append(f"{name}: {what} = {n:,} but manifest n_tokens = {entry.n_tokens:,}")
        if vocab is not None and vocab != manifest.vocab_size:
            problems.append(
                f"{name}: header vocab_size {vocab:,} but manifest {manifest.vocab_size:,}"
            )
        version = self._version_of(manifest.dtype)
        if version != manifest.bin_version:
            problems.append(
                f"{name}: version {version} but manifest bin_version {manifest.bin_version}"
            )
        sha = file_sha256(path)
        if sha != entry.sha256:
            problems.append(
                f"{name}: SHA-256 {sha[:12]}… does not match the manifest's {entry.sha256[:12]}…"
            )
        if n == entry.n_tokens:
            ids = map_file(self.layout, path, manifest.dtype, n)
            problems += ids_problems(name, ids, entry.n_docs, manifest, entry.first_doc_at)
        return problems + self.companion_problems(directory, entry, manifest, n)

    def companion_problems(
        self, directory: Path, entry: ManifestFile, manifest: Manifest, n: int
    ) -> list[str]:
        """Problems of a shard's further files (none here)."""
        return []

    def describe(self, path: Path, dtype_name: str | None) -> tuple[str, npt.NDArray[Any]]:
        """A one-line description of a shard file and its ids (for ``prep inspect``);
        ``dtype_name`` is the manifest's (a headerless file does not record it)."""
        headers = [k for k in self.layout.headers.values() if k is not None]
        if headers:
            dtype_name = read_header(headers[0], path, path.name).kind.dtype_name
        if dtype_name is None:
            raise InputError(
                f"{path}: a {self.name} shard does not record its dtype; inspect it inside its "
                "dataset directory, whose manifest does",
                path=path,
            )
        n, vocab = scan_file(self.layout, path, dtype_name, path.name)
        ids = map_file(self.layout, path, dtype_name, n)
        line = f"{path.name}: {self.name} {dtype_name} ids, n = {n:,}"
        if headers:
            line += f", version {self._version_of(dtype_name)}"
        if vocab is not None:
            line += f", vocab_size = {vocab:,}"
        return f"{line}, {path.stat().st_size:,} bytes", ids


def _damaged(directory: Path, path: Path, what: str) -> IntegrityError:
    return IntegrityError(
        f"{path}: {what}; staging or its checkpoint was modified. Delete {directory} to start "
        "over",
        path=path,
    )


def _scan(
    directory: Path,
    path: Path,
    kind: IdHeader | None,
    n: int,
    width: int,
    count_id: int | None,
    into: Hasher | None = None,
    every: bool = False,
    header_too: bool = False,
) -> CountingHasher:
    """Hash the first ``n`` ids after the header (of ``kind``, None: none) into ``into``,
    and count ``count_id`` in the same pass. With ``header_too`` (a sealed file: its SHA-256)
    the header is checked and hashed first. An open file's header is not read: it holds
    nothing committed (:meth:`FlatFormat.reopen` writes it anew), and a power cut during
    its first write, or during a seal's rewrite of n, may leave it torn. A bad file is
    ``IntegrityError``."""
    start = 0 if kind is None else kind.nbytes
    try:
        with open(path, "rb") as f:
            header = f.read(start)
        if kind is not None and header_too:
            kind.unpack(header, where=str(path))
        if into is not None and header_too:
            into.update(header)
        return hash_ids_prefix(path, n, width, start, count_id, into, every)
    except FormatError as e:
        raise IntegrityError(f"{e}; delete {directory} to start over", path=path) from e


def check_sealed_file(
    directory: Path, path: Path, n: int, sha256: str, kind: IdHeader | None, width: int,
    count_id: int | None,
) -> IdScan:
    """:meth:`FlatFormat.check_sealed` for a file whose ids follow a ``kind`` header."""
    start = 0 if kind is None else kind.nbytes
    size = path.stat().st_size
    if size < start + n * width:
        raise lost_file(path, f"is shorter ({size:,} bytes) than its {n:,} sealed ids", directory)
    if size != start + n * width:
        raise _damaged(directory, path, f"its size does not hold {n:,} ids")
    whole = hashlib.sha256()
    hasher = _scan(directory, path, kind, n, width, count_id, whole, header_too=True)
    if whole.hexdigest() != sha256:
        raise IntegrityError(
            f"{path}: SHA-256 {whole.hexdigest()[:12]}… is not the checkpoint's {sha256[:12]}…; "
            f"the file was modified after it was sealed. Delete {directory} to start over",
            path=path,
        )
    if kind is not None and read_header(kind, path, str(path)).n != n:
        raise _damaged(directory, path, f"its header does not say {n:,} ids")
    return hasher.scan
