"""A batch's ids as one flat buffer and offsets: how ids cross a process boundary (two
numpy buffers, never a Python list per document)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt


class Unencodable(ValueError):
    """A document an encoder refuses, with a message that already says what to do (the
    caller adds only the file and row). Any other exception from an encoder is a tokenizer
    that could not encode (Hugging Face raises a bare ``Exception``)."""


@dataclass(frozen=True)
class FlatIds:
    """The ids of a batch: ``ids[offsets[i]:offsets[i + 1]]`` are document ``i``'s."""

    ids: npt.NDArray[np.unsignedinteger[Any]]
    offsets: npt.NDArray[np.int64]

    def split(self) -> list[npt.NDArray[np.uint32]]:
        """One array per document (views into ``ids``)."""
        return np.split(self.ids, self.offsets[1:-1])

    @classmethod
    def of(cls, arrays: Sequence[npt.NDArray[Any]]) -> FlatIds:
        """Concatenate per-document arrays."""
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in arrays], out=offsets[1:])
        ids = np.concatenate(arrays).astype(np.uint32, copy=False) if arrays else np.zeros(
            0, dtype=np.uint32)
        return cls(ids, offsets)

    def as_dtype(self, name: str) -> FlatIds:
        """The same ids as little-endian ``name`` (the shards' dtype, ``uint16`` for a
        vocabulary that fits: half the bytes to move between processes, and bytes a worker
        can hash as the shard will hold them); the caller checked that every id fits."""
        dtype = np.dtype(name).newbyteorder("<")
        if self.ids.dtype == dtype:
            return self
        return FlatIds(self.ids.astype(dtype), self.offsets)
