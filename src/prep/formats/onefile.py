"""Formats whose shard is one file of ids, ``<split>-NNNNN.bin``: llm.c's (GPT-2 and
Llama-3 headers) and headerless raw shards. They differ only in data (:class:`Layout`):
which dtypes they store and which header, if any, goes before the ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError, InputError, IntegrityError, UsageError, lost_file
from prep.formats import header256
from prep.formats.base import IdScan, ids_problems, shard_stem, stem_pattern
from prep.formats.idfile import (
    CountingHasher,
    HeaderFn,
    IdFileOpen,
    IdFileWriter,
    hash_ids_prefix,
    no_header,
)
from prep.formats.segments import SegmentChain, SegmentReader
from prep.fsio import Hasher, file_sha256
from prep.state.manifest import Manifest, ManifestFile
from prep.state.shards import OpenFile

# The largest vocabulary each id dtype holds (and V must fit the int32 header field).
DTYPE_MAX_VOCAB = {"uint16": 2**16, "uint32": 2**31 - 1, "int32": 2**31 - 1}


@dataclass(frozen=True)
class Layout:
    """One single-file format as data: its name, the dtypes it stores (narrowest first,
    the order ``--dtype auto`` tries) with the header kind of each (None: headerless), and
    the version a headerless layout records in the manifest."""

    name: str
    headers: Mapping[str, header256.HeaderKind | None]
    version: int | None = None


def le_dtype(name: str) -> np.dtype[Any]:
    """The little-endian numpy dtype called ``name`` (``uint16``, ``uint32``, ``int32``)."""
    return np.dtype(name).newbyteorder("<")  # type: ignore[no-any-return]


def _pack(kind: header256.HeaderKind, vocab_size: int, n: int) -> bytes:
    return header256.pack(kind, n, vocab_size)


def scan_file(layout: Layout, path: Path, dtype_name: str, where: str) -> tuple[int, int | None]:
    """(n, the header's V or None) of a sealed file of ``layout`` that should hold
    ``dtype_name`` ids; raises ``FormatError`` when the file breaks the layout."""
    if dtype_name not in layout.headers:
        raise FormatError(f"{where}: {layout.name} does not store {dtype_name} ids", path=where)
    kind = layout.headers[dtype_name]
    size = path.stat().st_size
    if kind is None:
        width = np.dtype(dtype_name).itemsize
        if size % width:
            raise FormatError(
                f"{where}: {size:,} bytes is not a whole number of {dtype_name} ids; the "
                "file is truncated",
                path=where,
            )
        return size // width, None
    with open(path, "rb") as f:
        header = header256.unpack(f.read(header256.HEADER_BYTES), where=where)
    if header.kind != kind:
        raise FormatError(
            f"{where}: version {header.kind.version} ({header.kind.name}) but the manifest "
            f"says {layout.name} {dtype_name} (version {kind.version})",
            path=where,
        )
    header256.check_size(header, size, where=where)
    return header.n, header.vocab_size


def map_file(layout: Layout, path: Path, dtype_name: str, n: int) -> npt.NDArray[Any]:
    """The ``n`` ids of a checked file, memory-mapped read-only."""
    if n == 0:
        return np.zeros(0, dtype=np.dtype(dtype_name))
    start = header256.HEADER_BYTES if layout.headers[dtype_name] else 0
    return np.memmap(path, dtype=le_dtype(dtype_name), mode="r", offset=start, shape=(n,))


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


class FlatFormat:
    """A :class:`~prep.formats.base.ShardFormat` of one id file per shard."""

    suffix = ".bin"

    def __init__(self, layout: Layout, dtype: str = "auto") -> None:
        if dtype != "auto" and dtype not in layout.headers:
            raise UsageError(
                f"--format {layout.name} stores {' or '.join(layout.headers)} ids; "
                f"--dtype {dtype} is not one of them (or use --dtype auto)"
            )
        self.name = layout.name
        self.layout = layout
        self.requested = dtype
        self._pattern = stem_pattern(self.suffix)

    # -- naming --------------------------------------------------------------------------

    def shard_name(self, split: str, index: int) -> str:
        return shard_stem(split, index) + self.suffix

    def parse_name(self, name: str) -> tuple[str, int] | None:
        m = self._pattern.match(name)
        return (m.group(1), int(m.group(2))) if m else None

    def shard_files(self, name: str) -> tuple[str, ...]:
        return (name,)

    def owns_file(self, filename: str) -> bool:
        return filename.endswith(self.suffix)

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

    def _header(self, vocab_size: int) -> HeaderFn:
        kind = self.layout.headers[self.dtype_name(vocab_size)]
        return no_header if kind is None else partial(_pack, kind, vocab_size)

    def layout_version(self, vocab_size: int) -> int | None:
        """What the manifest records as ``bin_version``."""
        return self._version_of(self.dtype_name(vocab_size))

    def _version_of(self, dtype_name: str) -> int | None:
        kind = self.layout.headers[dtype_name]
        return self.layout.version if kind is None else kind.version

    # -- writing and resuming ------------------------------------------------------------

    def create(self, directory: Path, name: str, vocab_size: int) -> IdFileWriter:
        return IdFileWriter(
            directory / name, self._dtype(vocab_size), vocab_size, self._header(vocab_size)
        )

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
        hasher = _scan(directory, path, op.n_tokens, start, width, count_id, segments, every)
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
        start, width = len(self._header(vocab_size)(0)), self._dtype(vocab_size).itemsize
        return check_sealed_file(directory, directory / name, n, sha256, start, width, count_id)

    def reopen(self, directory: Path, verified: object, vocab_size: int) -> IdFileWriter:
        if not isinstance(verified, IdFileOpen):
            raise TypeError(f"{verified!r} was not checked by the {self.name} format")
        return IdFileWriter(
            directory / verified.name,
            self._dtype(vocab_size),
            vocab_size,
            self._header(vocab_size),
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
            problems += ids_problems(name, ids, entry.n_docs, manifest)
        return problems + self.companion_problems(directory, entry, manifest, n)

    def companion_problems(
        self, directory: Path, entry: ManifestFile, manifest: Manifest, n: int
    ) -> list[str]:
        """Problems of a shard's further files (none here)."""
        return []

    def describe(self, path: Path, dtype_name: str | None) -> tuple[str, npt.NDArray[Any]]:
        """A one-line description of a shard file and its ids (for ``prep inspect``);
        ``dtype_name`` is the manifest's (a headerless file does not record it)."""
        headers = [d for d, k in self.layout.headers.items() if k is not None]
        if headers:
            with open(path, "rb") as f:
                header = header256.unpack(f.read(header256.HEADER_BYTES), where=path.name)
            dtype_name = header.kind.dtype_name
        if dtype_name is None:
            raise InputError(
                f"{path}: a {self.name} shard does not record its dtype; inspect it inside its "
                "dataset directory, whose manifest does",
                path=path,
            )
        n, vocab = scan_file(self.layout, path, dtype_name, path.name)
        ids = map_file(self.layout, path, dtype_name, n)
        line = f"{path.name}: {self.name} {dtype_name} ids, n = {n:,}"
        if vocab is not None:
            line += f", version {self._version_of(dtype_name)}, vocab_size = {vocab:,}"
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
    n: int,
    start: int,
    width: int,
    count_id: int | None,
    into: Hasher | None = None,
    every: bool = False,
    header_too: bool = False,
) -> CountingHasher:
    """Check the header (``start`` bytes), then hash the first ``n`` ids after it (into
    ``into``, fed the header first with ``header_too``: a sealed file's SHA-256) and count
    ``count_id`` in the same pass; a bad file is ``IntegrityError``."""
    try:
        with open(path, "rb") as f:
            header = f.read(start)
        if start:
            header256.unpack(header, where=str(path))
        if into is not None and header_too:
            into.update(header)
        return hash_ids_prefix(path, n, width, start, count_id, into, every)
    except FormatError as e:
        raise IntegrityError(f"{e}; delete {directory} to start over", path=path) from e


def check_sealed_file(
    directory: Path, path: Path, n: int, sha256: str, start: int, width: int, count_id: int | None
) -> IdScan:
    """:meth:`FlatFormat.check_sealed` for a file whose ids start at byte ``start``."""
    size = path.stat().st_size
    if size < start + n * width:
        raise lost_file(path, f"is shorter ({size:,} bytes) than its {n:,} sealed ids", directory)
    if size != start + n * width:
        raise _damaged(directory, path, f"its size does not hold {n:,} ids")
    whole = hashlib.sha256()
    hasher = _scan(directory, path, n, start, width, count_id, whole, header_too=True)
    if whole.hexdigest() != sha256:
        raise IntegrityError(
            f"{path}: SHA-256 {whole.hexdigest()[:12]}… is not the checkpoint's {sha256[:12]}…; "
            f"the file was modified after it was sealed. Delete {directory} to start over",
            path=path,
        )
    with open(path, "rb") as f:
        head = f.read(start)
    if start and header256.unpack(head, where=str(path)).n != n:
        raise _damaged(directory, path, f"its header does not say {n:,} ids")
    return hasher.scan
