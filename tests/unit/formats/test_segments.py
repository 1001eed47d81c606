"""An open shard's segment chain (``prep.formats.segments``): ``c = SHA-256(c || n || d)``
from 32 zero bytes, ``n`` the segment's ids as 8 little-endian bytes and ``d`` the SHA-256
of its bytes, written again here with hashlib and struct as the oracle; the reader fed a
file's bytes in chunks of any size links the same chain."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from prep.formats.segments import GENESIS, SegmentChain, SegmentReader, link


def oracle(segments: list[bytes], width: int) -> str:
    chain = b"\0" * 32
    for seg in segments:
        chain = hashlib.sha256(chain + struct.pack("<Q", len(seg) // width)
                               + hashlib.sha256(seg).digest()).digest()
    return chain.hex()


def test_one_link_by_hand() -> None:
    seg = struct.pack("<3H", 1, 2, 3)
    expected = hashlib.sha256(bytes(32) + b"\x03" + bytes(7) + hashlib.sha256(seg).digest())
    assert link(GENESIS, 3, hashlib.sha256(seg).digest()) == expected.digest()
    chain = SegmentChain()
    chain.add(3, hashlib.sha256(seg).digest())
    assert (chain.hexdigest(), chain.lengths) == (expected.hexdigest(), [3])


def test_an_empty_chain_is_the_genesis() -> None:
    assert SegmentChain().hexdigest() == "00" * 32
    assert SegmentReader([], 2).hexdigest() == "00" * 32


@given(lengths=st.lists(st.integers(0, 40), max_size=8), width=st.sampled_from([2, 4]),
       cut=st.integers(1, 64))
def test_the_reader_links_the_chain_of_the_segments_fed_in_any_chunks(
        lengths: list[int], width: int, cut: int) -> None:
    # Segments of no ids are linked when bytes follow them; a file of no bytes at all links
    # none (SegmentReader is never fed), so that case is left out here.
    assume(sum(lengths) > 0)
    segments = [bytes((i * 7 + k) % 256 for k in range(n * width)) for i, n in enumerate(lengths)]
    data = b"".join(segments)
    reader = SegmentReader(lengths, width)
    for i in range(0, len(data), cut):
        reader.update(data[i:i + cut])
    assert reader.hexdigest() == oracle(segments, width)
    assert reader.chain().lengths == lengths
    written = SegmentChain()
    for n, seg in zip(lengths, segments, strict=True):
        written.add(n, hashlib.sha256(seg).digest())
    assert written.hexdigest() == reader.hexdigest()


def test_a_short_file_links_only_the_segments_it_holds_in_full() -> None:
    reader = SegmentReader([2, 3], 2)
    reader.update(bytes(4 + 2))  # the first segment, and one id of the second
    assert reader.chain().lengths == [2]
    assert reader.hexdigest() == oracle([bytes(4)], 2)


def test_more_bytes_than_the_segments_hold_is_refused() -> None:
    reader = SegmentReader([1], 4)
    with pytest.raises(ValueError, match=r"^more bytes than the segments hold$"):
        reader.update(bytes(5))
