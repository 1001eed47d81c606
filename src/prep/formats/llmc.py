"""llm.c's token files: ``--format llmc`` (docs/format.md: magic 20240520, version 1 =
uint16 or 2 = uint32) and ``--format llmc-llama3`` (magic 20240801, version 7, uint32: what
llm.c's Llama-3 DataLoader reads). Both are 1024 header bytes (see
:mod:`prep.formats.header256`) then the ids, so each is a :class:`~prep.formats.layout.Layout`
row, plus the stand-alone helpers of the public API (:func:`write_bin`, :func:`read_bin`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError, InputError
from prep.formats import header256
from prep.formats.idfile import IdFileWriter, check_ids
from prep.formats.idfile import hash_ids_prefix as _hash_prefix
from prep.formats.layout import Layout
from prep.formats.segments import SegmentChain
from prep.fsio import Hasher

LLMC = Layout("llmc", {"uint16": header256.GPT2, "uint32": header256.WIDE})
LLMC_LLAMA3 = Layout("llmc-llama3", {"uint32": header256.LLAMA3})
HEADER_BYTES = header256.HEADER_BYTES
_CHUNK_IDS = 1 << 22  # ids per read when scanning a file: bounded memory


@dataclass(frozen=True)
class BinHeader:
    """A parsed header of an llm.c file. ``vocab_size`` 0 means "unknown" (as llm.c
    writes it)."""

    version: int
    n: int
    vocab_size: int
    magic: int = header256.GPT2.magic

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype("<u2") if self.version == 1 else np.dtype("<u4")

    @property
    def width(self) -> int:
        """Bytes per id."""
        return self.dtype.itemsize

    @property
    def file_size(self) -> int:
        return HEADER_BYTES + self.n * self.width


def _kind_for_vocab(vocab_size: int) -> header256.HeaderKind:
    if vocab_size <= 0 or vocab_size > header256.MAX_IDS:
        raise InputError(
            f"vocabulary size {vocab_size:,} is out of range 1..2**31-1 (the .bin header "
            "stores it as an int32)"
        )
    return header256.GPT2 if vocab_size <= header256.GPT2.max_vocab else header256.WIDE


class BinWriter(IdFileWriter):
    """An llm.c ``.bin`` (version from V) being written; see :class:`IdFileWriter`."""

    def __init__(self, path: Path, vocab_size: int, *,
                 _resume: tuple[int, SegmentChain] | None = None):
        kind = _kind_for_vocab(vocab_size)

        def header(n: int) -> bytes:
            return header256.pack(kind, n, vocab_size)

        super().__init__(path, kind.dtype, vocab_size, header, _resume=_resume)
        self.version = kind.version

    @classmethod
    def resume(cls, path: Path, vocab_size: int, n: int, segments: SegmentChain) -> BinWriter:
        """Reopen an open file at its committed length ``n`` (truncating anything after
        it); ``segments`` is the chain of the committed ids' segments."""
        return cls(path, vocab_size, _resume=(n, segments))


def hash_ids_prefix(path: Path, n: int, width: int) -> Hasher:
    """A SHA-256 over the first ``n`` ids after the header; ``FormatError`` if fewer."""
    return _hash_prefix(path, n, width, HEADER_BYTES)


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
        return w.seal()[0]
    except BaseException:
        w.close()
        raise


def read_header(path: str | Path) -> BinHeader:
    """Read and check the header (either magic) and the file size; raises ``FormatError``."""
    p = Path(path)
    with open(p, "rb") as f:
        header = header256.unpack(f.read(HEADER_BYTES), where=p.name)
    header256.check_size(header, p.stat().st_size, where=p.name)
    return BinHeader(header.kind.version, header.n, header.vocab_size, header.kind.magic)


def read_bin(path: str | Path) -> tuple[BinHeader, npt.NDArray[Any]]:
    """Read an llm.c token file, rejecting every bad case of the format.

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
