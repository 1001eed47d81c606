"""A single-file format as data (:class:`Layout`): the dtypes it stores, the fixed-length
header (:class:`IdHeader`) before its ids, if any, and its files' names; and the plain
functions that read such a file's header and ids (no hashing, no state).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError

# The largest vocabulary each id dtype holds (and V must fit the int32 header field).
DTYPE_MAX_VOCAB = {"uint16": 2**16, "uint32": 2**31 - 1, "int32": 2**31 - 1}


class ParsedHeader(Protocol):
    """What a header says: its kind, the ids after it, the vocabulary (None: not recorded)."""

    @property
    def kind(self) -> IdHeader: ...

    @property
    def n(self) -> int: ...

    @property
    def vocab_size(self) -> int | None: ...


class IdHeader(Protocol):
    """A header of ``nbytes`` (the same for every n) before a file's ids: llm.c's
    (:mod:`prep.formats.header256`) or NumPy's (:mod:`prep.formats.npy`)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int:
        """What the manifest records as ``bin_version``."""
        ...

    @property
    def dtype_name(self) -> str: ...

    @property
    def nbytes(self) -> int: ...

    def pack(self, n: int, vocab_size: int) -> bytes:
        """The header of a file of ``n`` ids; ``FormatError`` for a value it cannot hold."""
        ...

    def unpack(self, raw: bytes, *, where: str) -> ParsedHeader:
        """Parse a header of this family (any of its kinds); ``FormatError`` naming
        ``where`` when ``raw`` is not one."""
        ...


@dataclass(frozen=True)
class Layout:
    """One single-file format as data: its name, the dtypes it stores (narrowest first,
    the order ``--dtype auto`` tries) with the header kind of each (None: headerless), the
    version a headerless layout records in the manifest, and its files' names
    (``<split><stem_joiner>NNNNN<suffix>``, in a folder ``<split>/`` of their own with
    ``folders``: a trainer that reads every file of a folder is given one split)."""

    name: str
    headers: Mapping[str, IdHeader | None]
    version: int | None = None
    stem_joiner: str = "-"
    suffix: str = ".bin"
    folders: bool = False

    def header_bytes(self, dtype_name: str) -> int:
        """Where the ids of a ``dtype_name`` file start."""
        kind = self.headers[dtype_name]
        return 0 if kind is None else kind.nbytes


def le_dtype(name: str) -> np.dtype[Any]:
    """The little-endian numpy dtype called ``name`` (``uint16``, ``uint32``, ``int32``)."""
    return np.dtype(name).newbyteorder("<")  # type: ignore[no-any-return]


def read_header(kind: IdHeader, path: Path, where: str) -> ParsedHeader:
    """The header of the file at ``path`` (``FormatError`` naming ``where``)."""
    with open(path, "rb") as f:
        return kind.unpack(f.read(kind.nbytes), where=where)


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
    header = read_header(kind, path, where)
    if header.kind != kind:
        raise FormatError(
            f"{where}: version {header.kind.version} ({header.kind.name}) but the manifest "
            f"says {layout.name} {dtype_name} (version {kind.version})",
            path=where,
        )
    expected = kind.nbytes + header.n * np.dtype(dtype_name).itemsize
    if size != expected:
        raise FormatError(
            f"{where}: file is {size:,} bytes but its header says n = {header.n:,} "
            f"({expected:,} bytes); the file is truncated or was not sealed",
            path=where,
        )
    return header.n, header.vocab_size


def map_file(layout: Layout, path: Path, dtype_name: str, n: int) -> npt.NDArray[Any]:
    """The ``n`` ids of a checked file, memory-mapped read-only."""
    if n == 0:
        return np.zeros(0, dtype=np.dtype(dtype_name))
    start = layout.header_bytes(dtype_name)
    return np.memmap(path, dtype=le_dtype(dtype_name), mode="r", offset=start, shape=(n,))
