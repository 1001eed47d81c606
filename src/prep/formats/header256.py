"""The 256-int32 header that llm.c's token files start with, for every kind prep writes.

All three kinds share one layout (1024 bytes, little-endian int32):

====  =========================================================================
int   content
====  =========================================================================
[0]   magic: 20240520 (llm.c's GPT-2 files) or 20240801 (llm.c's Llama-3 files)
[1]   version: 1 (uint16 ids) or 2 (uint32 ids) under 20240520; 7 (uint32) under 20240801
[2]   n, the number of ids after the header, ``0 <= n <= 2**31 - 1``
[3]   vocab_size V (llm.c writes 0; prep writes V, and a reader checks ids against it
      when it is non-zero)
[4:]  0
====  =========================================================================

The kinds differ only in constants, so they are one table (:data:`KINDS`), as llm.c's
``dev/data/data_common.py`` keeps its ``HEADERS_INFO``. The ids follow at offset 1024 and a
file is exactly ``1024 + n * itemsize`` bytes. These functions are pure: bytes in, values
out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from prep.errors import FormatError

HEADER_BYTES = 1024
HEADER_INTS = 256
MAX_IDS = 2**31 - 1


@dataclass(frozen=True)
class HeaderKind:
    """One (magic, version) pair and the id dtype it implies."""

    name: str
    magic: int
    version: int
    id_format: str  # numpy's spelling of the ids: "<u2" or "<u4"

    @property
    def dtype(self) -> np.dtype[Any]:
        """The ids' little-endian numpy dtype."""
        return np.dtype(self.id_format)

    @property
    def dtype_name(self) -> str:
        """``uint16`` or ``uint32``."""
        return str(self.dtype.name)

    @property
    def max_vocab(self) -> int:
        """The largest V whose ids this kind can store (and header int [3] can hold)."""
        return 2**16 if self.dtype_name == "uint16" else MAX_IDS

    @property
    def nbytes(self) -> int:
        """The header's length: 1024 bytes."""
        return HEADER_BYTES

    def pack(self, n: int, vocab_size: int) -> bytes:
        """:func:`pack` of this kind (an :class:`~prep.formats.layout.IdHeader`)."""
        return pack(self, n, vocab_size)

    def unpack(self, raw: bytes, *, where: str) -> Header:
        """:func:`unpack`: any of the kinds, not only this one (the caller compares)."""
        return unpack(raw, where=where)


GPT2 = HeaderKind("llm.c GPT-2", 20240520, 1, "<u2")
WIDE = HeaderKind("prep uint32", 20240520, 2, "<u4")
LLAMA3 = HeaderKind("llm.c Llama-3", 20240801, 7, "<u4")
KINDS = (GPT2, WIDE, LLAMA3)


@dataclass(frozen=True)
class Header:
    """A parsed header."""

    kind: HeaderKind
    n: int
    vocab_size: int

    @property
    def file_size(self) -> int:
        """The exact size of a file holding this header and its ``n`` ids."""
        return HEADER_BYTES + self.n * self.kind.dtype.itemsize


def pack(kind: HeaderKind, n: int, vocab_size: int) -> bytes:
    """The 1024 header bytes; raises ``FormatError`` for a value the kind cannot hold."""
    if not 0 <= n <= MAX_IDS:
        raise FormatError(f"token count {n:,} is outside 0..2**31-1 ({kind.name} header)")
    if not 0 <= vocab_size <= kind.max_vocab:
        raise FormatError(
            f"vocabulary size {vocab_size:,} does not fit a {kind.name} file "
            f"({kind.dtype_name} ids: V <= {kind.max_vocab:,})"
        )
    ints = [kind.magic, kind.version, n, vocab_size] + [0] * (HEADER_INTS - 4)
    return struct.pack(f"<{HEADER_INTS}i", *ints)


def _kind_of(magic: int, version: int, where: str) -> HeaderKind:
    for kind in KINDS:
        if kind.magic == magic and kind.version == version:
            return kind
    known = ", ".join(f"{k.magic} v{k.version}" for k in KINDS)
    if magic not in {k.magic for k in KINDS}:
        raise FormatError(
            f"{where}: magic {magic} is not an llm.c token file's (known: {known})", path=where
        )
    raise FormatError(
        f"{where}: unknown version {version} for magic {magic} (known: {known})", path=where
    )


def unpack(raw: bytes, *, where: str = "file") -> Header:
    """Parse and check the first 1024 bytes of ``raw``; ``FormatError`` names ``where``."""
    if len(raw) < HEADER_BYTES:
        raise FormatError(
            f"{where}: {len(raw):,} bytes is shorter than the 1024-byte header; "
            "the file is truncated or not an llm.c token file",
            path=where,
        )
    magic, version, n, vocab_size = struct.unpack("<4i", raw[:16])
    kind = _kind_of(magic, version, where)
    if n < 0:
        raise FormatError(f"{where}: negative token count {n}", path=where)
    if not 0 <= vocab_size <= kind.max_vocab:
        raise FormatError(
            f"{where}: vocabulary size {vocab_size:,} does not fit {kind.dtype_name} ids "
            f"({kind.name})",
            path=where,
        )
    return Header(kind=kind, n=n, vocab_size=vocab_size)


def check_size(header: Header, size: int, *, where: str) -> None:
    """Raise ``FormatError`` unless a file of ``size`` bytes holds exactly the header's n."""
    if size != header.file_size:
        raise FormatError(
            f"{where}: file is {size:,} bytes but its header says n = {header.n:,} "
            f"({header.file_size:,} bytes); the file is truncated or was not sealed",
            path=where,
        )
