"""The llm.c token file (``.bin``): a 1024-byte header of 256 little-endian int32, then ids.

===========  ======  ==========================================================
offset       size    content
===========  ======  ==========================================================
0            1024    header: [0] magic 20240520, [1] version, [2] n, [3] vocab_size V,
                     [4..255] zero
1024         n * w   the ids, little-endian; w = 2 (uint16, version 1) or 4 (uint32,
                     version 2)
===========  ======  ==========================================================

Version 1 whenever V <= 65536, else version 2. The file size is exactly ``1024 + n * w``.
An id outside ``[0, V)`` is never written. llm.c writes V = 0; readers check ids against V
only when it is non-zero.

The streaming :class:`BinWriter` writes a header with n = 0, appends ids (hashing them as it
goes, so a checkpoint can record the hash of the committed prefix), and on :meth:`seal`
writes the real n and fsyncs. A file whose header says n = 0 but holds ids is therefore an
open (unsealed) file. :class:`LlmcFormat` is this format behind the
:class:`~prep.formats.ShardFormat` protocol; nothing else in prep knows the layout.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError, InputError, IntegrityError
from prep.formats.base import MAX_TOKENS, VerifiedOpen, ids_problems, shard_stem, stem_pattern
from prep.fsio import Hasher, file_sha256, hash_file
from prep.state.manifest import Manifest, ManifestFile

MAGIC = 20240520
HEADER_BYTES = 1024
HEADER_INTS = 256
UINT16_VOCAB_LIMIT = 65536
_CHUNK_IDS = 1 << 22  # ids per read when scanning a file: bounded memory


@dataclass(frozen=True)
class BinHeader:
    """A parsed header. ``vocab_size`` 0 means "unknown" (as llm.c writes it)."""

    version: int
    n: int
    vocab_size: int

    @property
    def width(self) -> int:
        """Bytes per id."""
        return self.dtype.itemsize

    @property
    def dtype(self) -> np.dtype[Any]:
        return dtype_for_version(self.version)

    @property
    def file_size(self) -> int:
        return HEADER_BYTES + self.n * self.width


def version_for_vocab(vocab_size: int) -> int:
    """1 (uint16) when every id fits 16 bits (V <= 65536), else 2 (uint32)."""
    if vocab_size <= 0 or vocab_size > MAX_TOKENS:  # header int [3] is an int32
        raise InputError(
            f"vocabulary size {vocab_size:,} is out of range 1..2**31-1 (the .bin header "
            "stores it as an int32)"
        )
    return 1 if vocab_size <= UINT16_VOCAB_LIMIT else 2


def dtype_for_version(version: int) -> np.dtype[Any]:
    return np.dtype("<u2") if version == 1 else np.dtype("<u4")


def pack_header(version: int, n: int, vocab_size: int) -> bytes:
    """The 1024 header bytes. Raises ``FormatError`` for values the format cannot hold."""
    if version not in (1, 2):
        raise FormatError(f"unknown .bin version {version}; expected 1 or 2")
    if not 0 <= n <= MAX_TOKENS:
        raise FormatError(f"token count {n:,} is outside 0..2**31-1")
    if version == 1 and vocab_size > UINT16_VOCAB_LIMIT:
        raise FormatError(f"version 1 (uint16) cannot hold vocabulary size {vocab_size:,}")
    ints = [MAGIC, version, n, vocab_size] + [0] * (HEADER_INTS - 4)
    return struct.pack(f"<{HEADER_INTS}i", *ints)


def unpack_header(raw: bytes, *, where: str = "file") -> BinHeader:
    """Parse and check a header; raises ``FormatError`` naming ``where`` on any bad value."""
    if len(raw) < HEADER_BYTES:
        raise FormatError(
            f"{where}: {len(raw):,} bytes is shorter than the 1024-byte header; "
            "the file is truncated or not an llm.c .bin file",
            path=where,
        )
    ints = struct.unpack(f"<{HEADER_INTS}i", raw[:HEADER_BYTES])
    magic, version, n, vocab_size = ints[0], ints[1], ints[2], ints[3]
    if magic != MAGIC:
        raise FormatError(
            f"{where}: magic {magic} is not {MAGIC}; not an llm.c token file of this format",
            path=where,
        )
    if version not in (1, 2):
        raise FormatError(f"{where}: unknown version {version}; expected 1 or 2", path=where)
    if n < 0:
        raise FormatError(f"{where}: negative token count {n}", path=where)
    if vocab_size < 0 or (version == 1 and vocab_size > UINT16_VOCAB_LIMIT):
        raise FormatError(
            f"{where}: vocabulary size {vocab_size:,} does not fit version {version}", path=where
        )
    return BinHeader(version=version, n=n, vocab_size=vocab_size)


def check_ids(ids: npt.NDArray[Any], vocab_size: int, *, where: str) -> None:
    """Raise ``InputError`` if any id is outside ``[0, vocab_size)``."""
    if ids.size == 0:
        return
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise InputError(
            f"{where}: token id {bad:,} is outside the vocabulary [0, {vocab_size:,}); "
            "the tokenizer and --doc-sep-id must agree with the vocabulary size"
        )


class BinWriter:
    """Appends ids to one ``.bin`` file; :meth:`seal` makes it a valid, durable file.

    While open the header says n = 0; the ids written so far are hashed incrementally so
    :attr:`ids_sha256` is the hash of exactly ``n`` committed ids after :meth:`sync`.
    """

    def __init__(self, path: Path, vocab_size: int, *, _resume: tuple[int, Hasher] | None = None):
        self.path = path
        self.vocab_size = vocab_size
        self.version = version_for_vocab(vocab_size)
        self.dtype = dtype_for_version(self.version)
        self._file: IO[bytes]
        if _resume is None:
            self._file = open(path, "w+b")  # noqa: SIM115 - lives as long as the writer
            self._file.write(pack_header(self.version, 0, vocab_size))
            self.n = 0
            self._hash: Hasher = hashlib.sha256()
        else:
            n, hasher = _resume
            size = HEADER_BYTES + n * self.dtype.itemsize
            self._file = open(path, "r+b")  # noqa: SIM115
            self._file.truncate(size)
            # A crash while sealing may have left the real n in the header: reset it.
            self._file.write(pack_header(self.version, 0, vocab_size))
            self._file.seek(size)
            self.n = n
            self._hash = hasher

    @classmethod
    def resume(cls, path: Path, vocab_size: int, n: int, ids_hasher: Hasher) -> BinWriter:
        """Reopen an open file at its committed length ``n`` (truncating anything after it).

        ``ids_hasher`` is a ``hashlib.sha256`` that has consumed the committed ids, as
        returned by :func:`hash_ids_prefix`; the caller has checked its digest.
        """
        return cls(path, vocab_size, _resume=(n, ids_hasher))

    def append(self, ids: npt.NDArray[Any]) -> None:
        """Append ids (any integer dtype). Raises ``InputError`` for an id outside the
        vocabulary or ``FormatError`` past 2**31-1 ids; nothing is written then."""
        if self.n + ids.size > MAX_TOKENS:
            raise FormatError(f"{self.path.name}: more than 2**31-1 ids in one file")
        check_ids(ids, self.vocab_size, where=self.path.name)
        data = np.ascontiguousarray(ids, dtype=self.dtype).data
        self._file.write(data)
        self._hash.update(data)
        self.n += int(ids.size)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def ids_sha256(self) -> str:
        """SHA-256 of the ids appended so far (not the header)."""
        return self._hash.hexdigest()

    def sync(self) -> None:
        """Flush and fsync: everything appended so far is durable."""
        self._file.flush()
        os.fsync(self._file.fileno())

    def seal(self) -> str:
        """Write the real n, fsync, close; return the SHA-256 of the whole file."""
        self._file.flush()
        self._file.seek(0)
        header = pack_header(self.version, self.n, self.vocab_size)
        self._file.write(header)
        self._file.flush()
        os.fsync(self._file.fileno())
        # The ids' bytes were hashed as written; the header came first, so hash the file's
        # ids again from the page cache (cheap next to tokenizing them). Through the open
        # handle: the directory may have been renamed since the file was created.
        whole = hash_file(self._file, hashlib.sha256(header), start=HEADER_BYTES)
        self._file.close()
        return whole.hexdigest()

    def close(self) -> None:
        """Close without sealing (on an error path); the file stays an open file."""
        if not self._file.closed:
            self._file.close()


def hash_ids_prefix(path: Path, n: int, width: int) -> Hasher:
    """A ``hashlib.sha256`` over the first ``n`` ids of ``path`` (after the header).

    Raises ``FormatError`` if the file holds fewer ids."""
    try:
        return hash_file(path, start=HEADER_BYTES, length=n * width)
    except EOFError as e:
        raise FormatError(
            f"{path.name}: holds fewer than the {n:,} committed ids", path=path
        ) from e


def write_bin(path: str | Path, ids: npt.ArrayLike, vocab_size: int) -> str:
    """Write a complete, sealed ``.bin`` file of ``ids``; returns its SHA-256.

    Raises ``InputError`` for an id outside ``[0, vocab_size)`` before writing anything.
    """
    arr = np.asarray(ids)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{path}: ids must be integers, got {arr.dtype}")
    arr = arr.astype(np.int64, copy=False).ravel()
    check_ids(arr, vocab_size, where=str(path))
    w = BinWriter(Path(path), vocab_size)
    try:
        w.append(arr)
        return w.seal()
    except BaseException:
        w.close()
        raise


def read_header(path: str | Path) -> BinHeader:
    """Read and check the header and the file size; raises ``FormatError``."""
    p = Path(path)
    with open(p, "rb") as f:
        raw = f.read(HEADER_BYTES)
    header = unpack_header(raw, where=p.name)
    size = p.stat().st_size
    if size != header.file_size:
        raise FormatError(
            f"{p.name}: file is {size:,} bytes but its header says n = {header.n:,} "
            f"({header.file_size:,} bytes); the file is truncated or was not sealed",
            path=p,
        )
    return header


def read_bin(path: str | Path) -> tuple[BinHeader, npt.NDArray[Any]]:
    """Read a ``.bin`` file, rejecting every bad case of the format.

    Returns the header and the ids as a read-only memory map (uint16 or uint32). Raises
    ``FormatError`` for a short file, a wrong magic, an unknown version, a size that
    disagrees with n, or (when the header's V is non-zero) an id >= V.
    """
    p = Path(path)
    header = read_header(p)
    if header.n == 0:
        return header, np.zeros(0, dtype=header.dtype)
    ids = np.memmap(p, dtype=header.dtype, mode="r", offset=HEADER_BYTES, shape=(header.n,))
    if header.vocab_size:
        for start in range(0, header.n, _CHUNK_IDS):
            top = int(ids[start : start + _CHUNK_IDS].max())
            if top >= header.vocab_size:
                raise FormatError(
                    f"{p.name}: id {top:,} is outside the vocabulary size "
                    f"{header.vocab_size:,} in the header",
                    path=p,
                )
    return header, ids


@dataclass(frozen=True)
class LlmcOpen:
    """An open ``.bin`` whose first ``n`` ids were checked; ``hasher`` has consumed them."""

    name: str
    n: int
    hasher: Hasher


class LlmcFormat:
    """llm.c ``.bin`` files as a :class:`~prep.formats.base.ShardFormat`: one file per shard,
    ``<split>-<index:05d>.bin``."""

    name = "llmc"
    suffix = ".bin"

    def __init__(self) -> None:
        self._pattern = stem_pattern(self.suffix)

    def shard_name(self, split: str, index: int) -> str:
        return shard_stem(split, index) + self.suffix

    def parse_name(self, name: str) -> tuple[str, int] | None:
        m = self._pattern.match(name)
        return (m.group(1), int(m.group(2))) if m else None

    def shard_files(self, name: str) -> tuple[str, ...]:
        return (name,)

    def owns_file(self, filename: str) -> bool:
        return filename.endswith(self.suffix)

    def layout_version(self, vocab_size: int) -> int:
        return version_for_vocab(vocab_size)

    def create(self, directory: Path, name: str, vocab_size: int) -> BinWriter:
        return BinWriter(directory / name, vocab_size)

    def check_open(
        self, directory: Path, name: str, n: int, ids_sha256: str, vocab_size: int
    ) -> LlmcOpen:
        path = directory / name
        width = dtype_for_version(version_for_vocab(vocab_size)).itemsize
        if not path.is_file() or path.stat().st_size < HEADER_BYTES + n * width:
            raise IntegrityError(
                f"{path} is missing or shorter than its {n:,} committed ids; staging was "
                f"damaged. Delete {directory} to start over",
                path=path,
            )
        try:
            with open(path, "rb") as f:
                unpack_header(f.read(HEADER_BYTES), where=str(path))
            hasher = hash_ids_prefix(path, n, width)
        except FormatError as e:
            raise IntegrityError(f"{e}; delete {directory} to start over", path=path) from e
        if hasher.hexdigest() != ids_sha256:
            raise IntegrityError(
                f"{path}: its first {n:,} ids do not match the checkpoint's hash; the file "
                f"was modified. Delete {directory} to start over",
                path=path,
            )
        return LlmcOpen(name, n, hasher)

    def reopen(self, directory: Path, verified: VerifiedOpen, vocab_size: int) -> BinWriter:
        if not isinstance(verified, LlmcOpen):
            raise TypeError(f"{verified!r} was not checked by the llmc format")
        return BinWriter.resume(directory / verified.name, vocab_size, verified.n, verified.hasher)

    def check_shard(self, directory: Path, entry: ManifestFile, manifest: Manifest) -> list[str]:
        name = entry.name
        path = directory / name
        if not path.is_file():
            return [f"{name}: missing"]
        try:
            header = read_header(path)
        except FormatError as e:
            return [str(e)]
        problems = []
        if header.n != entry.n_tokens:
            problems.append(
                f"{name}: header n = {header.n:,} but manifest n_tokens = {entry.n_tokens:,}"
            )
        if header.version != manifest.bin_version:
            problems.append(
                f"{name}: version {header.version} but manifest bin_version {manifest.bin_version}"
            )
        if header.vocab_size != manifest.vocab_size:
            problems.append(
                f"{name}: header vocab_size {header.vocab_size:,} but manifest "
                f"{manifest.vocab_size:,}"
            )
        sha = file_sha256(path)
        if sha != entry.sha256:
            problems.append(
                f"{name}: SHA-256 {sha[:12]}… does not match the manifest's {entry.sha256[:12]}…"
            )
        if header.n:
            ids = np.memmap(
                path, dtype=header.dtype, mode="r", offset=HEADER_BYTES, shape=(header.n,)
            )
            problems += ids_problems(name, ids, entry.n_docs, manifest)
        return problems

    def describe(self, path: Path) -> tuple[str, npt.NDArray[Any]]:
        header, ids = read_bin(path)
        line = (
            f"{path.name}: llm.c .bin version {header.version} "
            f"({'uint16' if header.version == 1 else 'uint32'}), n = {header.n:,} ids, "
            f"vocab_size = {header.vocab_size:,}, {header.file_size:,} bytes"
        )
        return line, ids
