"""Megatron-LM's ``MMIDIDX`` index (``.idx``), the companion of a headerless ``.bin``.

Layout (all little-endian), as ``megatron/core/datasets/indexed_dataset.py`` reads it:

========  ==========  ==============================================================
offset    size        content
========  ==========  ==============================================================
0         9           ``b"MMIDIDX\\x00\\x00"``
9         8           uint64 version, 1
17        1           uint8 dtype code of the ``.bin`` ids (table :data:`DTYPE_CODES`)
18        8           uint64 S, the number of sequences
26        8           uint64 D, the length of the document index (documents + 1)
34        4 * S       int32 sequence lengths, in ids
34 + 4S   8 * S       int64 sequence pointers, in bytes from the start of the ``.bin``
34 + 12S  8 * D       int64 document index: ``[0, ...]``, the sequence index where each
                      document ends (exclusive), so document k is sequences
                      ``doc_index[k] : doc_index[k+1]``
========  ==========  ==============================================================

prep writes each document (its separator included) as one sequence, so ``S`` is the number
of documents, the pointers are the running byte offsets, and the document index is
``0, 1, ..., S``. Megatron has no uint32 code: ids that do not fit uint16 are stored as
int32 (code 4), which holds every vocabulary up to 2**31. The functions here are pure.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import FormatError

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
PREAMBLE_BYTES = 34
DTYPE_CODES: dict[int, str] = {
    1: "uint8",
    2: "int8",
    3: "int16",
    4: "int32",
    5: "int64",
    6: "float64",
    7: "float32",
    8: "uint16",
}


def code_for(dtype_name: str) -> int:
    """The Megatron code of an id dtype (``uint16`` -> 8, ``int32`` -> 4)."""
    for code, name in DTYPE_CODES.items():
        if name == dtype_name:
            return code
    raise FormatError(f"Megatron's .idx has no code for dtype {dtype_name}")


@dataclass(frozen=True)
class Index:
    """A parsed ``.idx``: the ids' dtype and the three arrays."""

    dtype: np.dtype[Any]
    lengths: npt.NDArray[np.int32]
    pointers: npt.NDArray[np.int64]
    doc_index: npt.NDArray[np.int64]

    @property
    def n_tokens(self) -> int:
        return int(self.lengths.sum(dtype=np.int64))

    @property
    def n_docs(self) -> int:
        return len(self.doc_index) - 1

    @property
    def bin_size(self) -> int:
        """The exact size the companion ``.bin`` must have."""
        return self.n_tokens * self.dtype.itemsize


def index_size(n_docs: int) -> int:
    """Bytes of the ``.idx`` prep writes for ``n_docs`` one-sequence documents."""
    return PREAMBLE_BYTES + 4 * n_docs + 8 * n_docs + 8 * (n_docs + 1)


def pack(doc_lengths: npt.ArrayLike, dtype_name: str) -> bytes:
    """The ``.idx`` bytes for documents of ``doc_lengths`` ids, one sequence each.

    Raises ``FormatError`` for a negative length or one past int32."""
    lengths = np.asarray(doc_lengths, dtype=np.int64).ravel()
    if lengths.size and (int(lengths.min()) < 0 or int(lengths.max()) > 2**31 - 1):
        raise FormatError("a Megatron sequence length must be within 0..2**31-1")
    itemsize = np.dtype(dtype_name).itemsize
    pointers = np.zeros(lengths.size, dtype="<i8")
    if lengths.size > 1:
        np.cumsum(lengths[:-1] * itemsize, out=pointers[1:])
    doc_index = np.arange(lengths.size + 1, dtype="<i8")
    head = MAGIC + struct.pack("<QBQQ", VERSION, code_for(dtype_name), lengths.size, doc_index.size)
    return b"".join(
        (head, lengths.astype("<i4").tobytes(), pointers.tobytes(), doc_index.tobytes())
    )


def _fail(where: str, what: str) -> FormatError:
    return FormatError(f"{where}: {what}; the .idx is damaged or not a Megatron index", path=where)


def parse(raw: bytes, *, where: str = "index") -> Index:
    """Parse and check ``.idx`` bytes; raises ``FormatError`` naming ``where``.

    Checks the magic, version, dtype code, that the size matches the counts exactly, that
    the pointers follow from the lengths, and that the document index runs from 0 to S."""
    if len(raw) < PREAMBLE_BYTES:
        raise _fail(where, f"{len(raw)} bytes is shorter than the 34-byte preamble")
    if raw[:9] != MAGIC:
        raise _fail(where, f"magic {raw[:9]!r} is not {MAGIC!r}")
    version, code, n_seq, n_doc_index = struct.unpack("<QBQQ", raw[9:PREAMBLE_BYTES])
    if version != VERSION:
        raise _fail(where, f"version {version} is not 1")
    if code not in DTYPE_CODES:
        raise _fail(where, f"unknown dtype code {code}")
    want = PREAMBLE_BYTES + 12 * n_seq + 8 * n_doc_index
    if len(raw) != want:
        raise _fail(where, f"{len(raw):,} bytes but its counts need {want:,}")
    at = PREAMBLE_BYTES
    lengths = np.frombuffer(raw, dtype="<i4", count=n_seq, offset=at)
    pointers = np.frombuffer(raw, dtype="<i8", count=n_seq, offset=at + 4 * n_seq)
    doc_index = np.frombuffer(raw, dtype="<i8", count=n_doc_index, offset=at + 12 * n_seq)
    dtype = np.dtype(DTYPE_CODES[code]).newbyteorder("<")
    if n_seq and int(lengths.min()) < 0:
        raise _fail(where, "a negative sequence length")
    expected = np.concatenate(([0], np.cumsum(lengths[:-1], dtype=np.int64) * dtype.itemsize))
    if n_seq and not np.array_equal(pointers, expected):
        raise _fail(where, "sequence pointers do not follow from the lengths")
    if n_doc_index == 0 or doc_index[0] != 0 or doc_index[-1] != n_seq:
        raise _fail(where, f"the document index does not run from 0 to {n_seq}")
    if np.any(np.diff(doc_index) < 0):
        raise _fail(where, "the document index decreases")
    return Index(dtype=dtype, lengths=lengths, pointers=pointers, doc_index=doc_index)
