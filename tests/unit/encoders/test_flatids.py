"""A batch's ids as one flat buffer and offsets (``prep.encoders.flatids``)."""

from __future__ import annotations

import numpy as np

from prep.encoders.flatids import FlatIds


def test_of_concatenates_and_split_gives_the_documents_back() -> None:
    docs = [np.array([5, 6, 7]), np.array([], dtype=np.int64), np.array([70_000])]
    flat = FlatIds.of(docs)
    assert flat.ids.tolist() == [5, 6, 7, 70_000] and flat.ids.dtype == np.uint32
    assert flat.offsets.tolist() == [0, 3, 3, 4]
    assert [d.tolist() for d in flat.split()] == [[5, 6, 7], [], [70_000]]


def test_an_empty_batch() -> None:
    flat = FlatIds.of([])
    assert (flat.ids.tolist(), flat.offsets.tolist(), flat.ids.dtype) == ([], [0], np.uint32)


def test_as_dtype_gives_little_endian_bytes_and_keeps_a_match() -> None:
    flat = FlatIds.of([np.array([1, 258]), np.array([3])])
    small = flat.as_dtype("uint16")
    assert small.ids.tobytes() == b"\x01\x00\x02\x01\x03\x00"
    assert small.offsets is flat.offsets
    assert flat.as_dtype("uint32") is flat  # already little-endian uint32 on this machine
    big = FlatIds(flat.ids.astype(">u4"), flat.offsets).as_dtype("uint32")
    assert big.ids.tobytes() == b"\x01\x00\x00\x00\x02\x01\x00\x00\x03\x00\x00\x00"
