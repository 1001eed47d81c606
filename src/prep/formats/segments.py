"""An open shard's committed ids as a chain of segments: what a checkpoint records of them.

A segment is what one append wrote: one batch's documents of one split, laid out by the
worker that tokenized them (which also hashes them, in parallel with the other workers), or
a part of one that a rollover cut. The committing process links 48 bytes per segment, not
one byte per id: ``c = SHA-256(c || n || d)`` from 32 zero bytes, with ``n`` the segment's
number of ids (8 bytes, little-endian) and ``d`` the SHA-256 of its bytes as the file holds
them. A checkpoint keeps the chain and every segment's length; resume hashes the file again
segment by segment and links the same chain, or refuses it.

A running SHA-256 of the whole shard would have been one serial pass over every id in the
committing process (its only per-byte work besides the write); a shard's own SHA-256, with
its header, is computed once when it is sealed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

GENESIS = bytes(32)


def link(chain: bytes, n: int, digest: bytes) -> bytes:
    """The chain after a segment of ``n`` ids whose bytes have SHA-256 ``digest``."""
    return hashlib.sha256(chain + n.to_bytes(8, "little") + digest).digest()


class SegmentChain:
    """The chain over the segments appended so far, and their lengths in ids."""

    def __init__(self, chain: bytes = GENESIS, lengths: Sequence[int] = ()) -> None:
        self.chain = chain
        self.lengths = list(lengths)

    def add(self, n: int, digest: bytes) -> None:
        self.chain = link(self.chain, n, digest)
        self.lengths.append(n)

    def hexdigest(self) -> str:
        return self.chain.hex()


class SegmentReader:
    """A hasher (``update``, ``hexdigest``) fed a file's ids in order, which hashes them
    segment by segment at ``lengths`` (ids of ``width`` bytes) and links the chain: resume's
    check of an open shard against its checkpoint."""

    def __init__(self, lengths: Sequence[int], width: int) -> None:
        self._bytes = [n * width for n in lengths]
        self._lengths = list(lengths)
        self._chain = SegmentChain()
        self._current = hashlib.sha256()
        self._left = self._bytes[0] if self._bytes else 0

    def update(self, chunk: bytes | memoryview, /) -> None:
        view = memoryview(chunk)
        while view:
            if len(self._chain.lengths) == len(self._lengths):
                raise ValueError("more bytes than the segments hold")
            take = min(self._left, len(view))
            self._current.update(view[:take])
            view, self._left = view[take:], self._left - take
            if self._left == 0:
                self._close_segment()

    def _close_segment(self) -> None:
        k = len(self._chain.lengths)
        self._chain.add(self._lengths[k], self._current.digest())
        self._current = hashlib.sha256()
        if k + 1 < len(self._lengths):
            self._left = self._bytes[k + 1]
            if self._left == 0:  # an empty segment: nothing to feed
                self._close_segment()

    def chain(self) -> SegmentChain:
        """The chain of the segments fed in full (all of them once the file was read)."""
        return SegmentChain(self._chain.chain, self._chain.lengths)

    def hexdigest(self) -> str:
        return self._chain.hexdigest()
