"""Header round trip (docs/format.md, llmc): for any ids and vocabulary, ``write_bin`` writes the
bytes the spec's table describes and ``read_bin`` gives them back; any size that disagrees
with n is refused."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.errors import FormatError
from prep.formats.llmc import BinWriter, read_bin, write_bin


@st.composite
def vocab_and_ids(draw: st.DrawFn) -> tuple[int, list[int]]:
    vocab = draw(
        st.one_of(
            st.integers(1, 300),
            st.sampled_from([65535, 65536, 65537, 50257, 128256]),
            st.integers(1, 2**31 - 1),  # header [3] is an int32
        )
    )
    ids = draw(st.lists(st.integers(0, vocab - 1), max_size=40))
    return vocab, ids


def expected_bytes(vocab: int, ids: list[int]) -> bytes:
    version = 1 if vocab <= 65536 else 2
    header = struct.pack("<256i", 20240520, version, len(ids), vocab, *([0] * 252))
    return header + struct.pack(f"<{len(ids)}{'H' if version == 1 else 'I'}", *ids)


@settings(max_examples=150, deadline=None)
@given(vocab_and_ids())
def test_write_read_round_trip(case: tuple[int, list[int]]) -> None:
    vocab, ids = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.bin"
        write_bin(path, ids, vocab)
        assert path.read_bytes() == expected_bytes(vocab, ids)
        header, got = read_bin(path)
        assert (header.version, header.n, header.vocab_size) == (
            1 if vocab <= 65536 else 2,
            len(ids),
            vocab,
        )
        assert got.tolist() == ids


@settings(max_examples=60, deadline=None)
@given(
    vocab_and_ids(),
    st.lists(st.integers(0, 5), min_size=1, max_size=5),
)
def test_streaming_writer_equals_write_bin(case: tuple[int, list[int]], cuts: list[int]) -> None:
    vocab, ids = case
    with tempfile.TemporaryDirectory() as tmp:
        w = BinWriter(Path(tmp) / "s.bin", vocab)
        rest = list(ids)
        for c in cuts:
            w.append(np.array(rest[:c], dtype=np.int64))
            rest = rest[c:]
        w.append(np.array(rest, dtype=np.int64))
        w.seal()
        assert (Path(tmp) / "s.bin").read_bytes() == expected_bytes(vocab, ids)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 255), min_size=0, max_size=20),
    st.integers(-1030, 40).filter(lambda d: d != 0),
)
def test_any_size_disagreeing_with_n_is_refused(ids: list[int], delta: int) -> None:
    raw = expected_bytes(256, ids)
    size = max(0, len(raw) + delta)
    data = raw[:size] if delta < 0 else raw + b"\x07" * delta
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bad.bin"
        path.write_bytes(data)
        with pytest.raises(FormatError) as info:
            read_bin(path)
    msg = str(info.value)
    if size < 1024:
        assert "shorter than the 1024-byte header" in msg
    else:
        assert f"header says n = {len(ids):,}" in msg
