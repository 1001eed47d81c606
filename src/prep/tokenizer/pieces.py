"""The piece table: a pre-tokenized corpus as its distinct pieces (each piece's UTF-8 bytes)
with their multiplicities, which is all the merge phase needs (pairs never cross pieces).

Deterministic: the pieces are kept sorted by their bytes, so the table (and its file) is a
function of the multiset of pieces, not of the order they were counted in. Pieces of one
byte hold no pair and are kept only in the count.

File form (native-endian): ``PIECES01``, the piece count ``n`` (uint64), ``n`` counts
(uint64), ``n + 1`` offsets (uint64) into the concatenated pieces, then the pieces.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from prep.tokenizer.bpe import SEP

MAGIC = b"PIECES01"
MAX_WEIGHT = 0xFFFF_FFFF  # the trainer's weights are uint32: a larger count is split


@dataclass(frozen=True)
class PieceTable:
    pieces: tuple[bytes, ...]  # sorted, distinct
    counts: tuple[int, ...]

    @classmethod
    def of(cls, counts: Mapping[str, int] | Mapping[bytes, int]) -> PieceTable:
        """The table of ``counts`` (pieces as text or bytes)."""
        return cls((), ()).merged(counts)

    def merged(self, counts: Mapping[str, int] | Mapping[bytes, int]) -> PieceTable:
        """This table plus ``counts`` (pieces as text or bytes)."""
        total: Counter[bytes] = Counter(dict(zip(self.pieces, self.counts, strict=True)))
        for piece, n in counts.items():
            total[piece.encode("utf-8") if isinstance(piece, str) else piece] += n
        keys = sorted(total)
        return PieceTable(tuple(keys), tuple(total[k] for k in keys))

    def to_bytes(self) -> bytes:
        n = len(self.pieces)
        lengths = np.fromiter((len(p) for p in self.pieces), dtype=np.uint64, count=n)
        offsets = np.zeros(n + 1, dtype=np.uint64)
        np.cumsum(lengths, out=offsets[1:])
        return b"".join([MAGIC, np.uint64(n).tobytes(),
                         np.array(self.counts, dtype=np.uint64).tobytes(),
                         offsets.tobytes(), *self.pieces])

    @classmethod
    def from_bytes(cls, data: bytes) -> PieceTable:
        """The table :meth:`to_bytes` wrote; ``ValueError`` for anything else."""
        if data[:8] != MAGIC or len(data) < 24:
            raise ValueError("not a piece table")
        n = int(np.frombuffer(data, dtype=np.uint64, count=1, offset=8)[0])
        head = 16 + 8 * n + 8 * (n + 1)
        if len(data) < head:
            raise ValueError("piece table cut short")
        counts = np.frombuffer(data, dtype=np.uint64, count=n, offset=16)
        offsets = np.frombuffer(data, dtype=np.uint64, count=n + 1, offset=16 + 8 * n)
        if head + int(offsets[-1]) != len(data):
            raise ValueError("piece table cut short")
        body = data[head:]
        pieces = tuple(body[int(a) : int(b)] for a, b in itertools.pairwise(offsets))
        return cls(pieces, tuple(int(c) for c in counts))

    def training_input(self) -> tuple[np.ndarray, np.ndarray]:
        """(the sequence: every piece of two bytes or more followed by ``SEP``, as uint32;
        one uint32 weight per piece, its count; a count past uint32 is split over copies)."""
        rows = [(p, c) for p, c in zip(self.pieces, self.counts, strict=True) if len(p) > 1]
        parts: list[bytes] = []
        weights: list[int] = []
        for piece, count in rows:
            while count > 0:
                w = min(count, MAX_WEIGHT)
                parts.append(piece)
                weights.append(w)
                count -= w
        lengths = np.fromiter((len(p) + 1 for p in parts), dtype=np.int64, count=len(parts))
        seq = np.full(int(lengths.sum()), SEP, dtype=np.uint32)
        keep = np.ones(seq.size, dtype=bool)
        keep[np.cumsum(lengths) - 1] = False
        seq[keep] = np.frombuffer(b"".join(parts), dtype=np.uint8)
        return seq, np.array(weights, dtype=np.uint32)
