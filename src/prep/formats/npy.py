"""``--format npy``: seed 003's shards (``prepare_data.py``), each an ``np.save`` of a flat
little-endian id array, named ``train_00000.npy``, ``val_00000.npy``, …; ``np.load`` (and
``np.load(path, mmap_mode="r")``) reads each one.

The container is NumPy's ``.npy`` format, version 1.0 (``numpy.lib.format``):

======  =====================================================================================
bytes   content
======  =====================================================================================
0..5    magic ``\\x93NUMPY``
6, 7    version 1, 0
8, 9    ``HEADER_LEN``, uint16 little-endian: 118 (the dictionary below, padded)
10..    ``{'descr': '<u2', 'fortran_order': False, 'shape': (n,), }`` (``'<u4'`` for uint32
        ids), padded with spaces and ended by ``\\n`` so that the ids start at byte 128
128..   the ``n`` ids, ``uint16`` when V <= 65,536, else ``uint32``
======  =====================================================================================

``np.save`` pads its header to a multiple of 64 bytes, and for any 1-D shape up to 2**31-1
ids that is 128 bytes, so every file is byte for byte what ``np.save(path, ids)`` writes. The
header holds the shape, so it is written with ``(0,)`` when the shard is created (its length
does not depend on ``n``) and rewritten with the real ``n`` when it is sealed, like llm.c's.
An open shard (staging) is therefore not a valid ``.npy`` until it is sealed. The format
records no vocabulary size: the manifest's ``vocab_size`` is the bound ``prep verify`` checks.
"""

from __future__ import annotations

import ast
import re
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from prep.errors import FormatError
from prep.formats.layout import Layout

MAGIC = b"\x93NUMPY\x01\x00"
HEADER_BYTES = 128  # np.save's own length for a 1-D shape of up to 2**31-1 ids
VERSION = 1  # the .npy format version, recorded as the manifest's bin_version
_DICT = "{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n},), }}"
_SHAPE = re.compile(r"^\((\d+),\)$")


@dataclass(frozen=True)
class NpyHeader:
    """A parsed ``.npy`` header of a 1-D little-endian id array (no vocabulary size)."""

    kind: NpyKind
    n: int
    vocab_size: None = None


@dataclass(frozen=True)
class NpyKind:
    """The ``.npy`` header of one id dtype; an :class:`~prep.formats.layout.IdHeader`."""

    dtype_name: str  # uint16 or uint32
    version: int = VERSION
    nbytes: int = HEADER_BYTES

    @property
    def name(self) -> str:
        return f"npy {self.dtype_name}"

    @property
    def descr(self) -> str:
        """NumPy's spelling of the ids: ``<u2`` or ``<u4``."""
        return str(np.dtype(self.dtype_name).newbyteorder("<").str)

    def pack(self, n: int, vocab_size: int) -> bytes:
        """The 128 header bytes of a file of ``n`` ids (``vocab_size`` is not recorded)."""
        text = _DICT.format(descr=self.descr, n=n)
        room = HEADER_BYTES - len(MAGIC) - 2 - 1
        if not 0 <= n <= 2**31 - 1 or len(text) > room:
            raise FormatError(f"token count {n:,} does not fit a {HEADER_BYTES}-byte npy header")
        body = text.ljust(room).encode("latin1") + b"\n"
        return MAGIC + struct.pack("<H", len(body)) + body

    def unpack(self, raw: bytes, *, where: str) -> NpyHeader:
        return unpack(raw, where=where)


NPY_KINDS = {"uint16": NpyKind("uint16"), "uint32": NpyKind("uint32")}
NPY = Layout("npy", NPY_KINDS, stem_joiner="_", suffix=".npy")


def _bad(where: str, what: str) -> FormatError:
    return FormatError(
        f"{where}: {what}; prep's npy shards are np.save files of a 1-D little-endian uint16 "
        "or uint32 array (the file is damaged or not one of them)",
        path=where,
    )


def unpack(raw: bytes, *, where: str = "file") -> NpyHeader:
    """Parse the first :data:`HEADER_BYTES` of ``raw`` as a version 1.0 ``.npy`` header of
    a 1-D C-order ``<u2`` or ``<u4`` array; ``FormatError`` names ``where`` and what is
    wrong."""
    if len(raw) < HEADER_BYTES:
        raise _bad(where, f"{len(raw):,} bytes is shorter than the {HEADER_BYTES}-byte header")
    if raw[: len(MAGIC)] != MAGIC:
        raise _bad(where, f"starts with {raw[:8]!r}, not the npy 1.0 magic {MAGIC!r}")
    (length,) = struct.unpack("<H", raw[8:10])
    if 10 + length != HEADER_BYTES:
        raise _bad(where, f"header of {10 + length} bytes, not {HEADER_BYTES}")
    try:
        fields: Any = ast.literal_eval(raw[10:HEADER_BYTES].decode("latin1"))  # Any: a literal
    except (ValueError, SyntaxError, UnicodeDecodeError) as e:
        raise _bad(where, "its header is not a Python dictionary literal") from e
    if not isinstance(fields, dict) or set(fields) != {"descr", "fortran_order", "shape"}:
        raise _bad(where, "its header does not hold exactly descr, fortran_order and shape")
    kinds = {k.descr: k for k in NPY_KINDS.values()}
    shape = _SHAPE.match(repr(fields["shape"]))
    if fields["descr"] not in kinds or fields["fortran_order"] is not False or shape is None:
        raise _bad(where, f"its header says {fields!r}")
    return NpyHeader(kinds[fields["descr"]], int(shape.group(1)))
