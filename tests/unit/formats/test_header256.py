"""The 256-int32 header family (llm.c GPT-2 v1, prep's uint32 v2, llm.c Llama-3 v7).

Expected bytes are written out here from the layouts (llm.c's ``HEADERS_INFO``: magic
20240801 = bytes ``a1 d9 34 01``, version 7, uint32 ids), never produced by prep's ``pack``.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.errors import FormatError
from prep.formats import header256


def test_llama3_worked_example_byte_for_byte() -> None:
    raw = header256.pack(header256.LLAMA3, 3, 128256)
    assert len(raw) == 1024
    assert raw[0:4] == bytes.fromhex("a1d93401")  # 20240801
    assert raw[4:8] == bytes.fromhex("07000000")  # version 7
    assert raw[8:12] == bytes.fromhex("03000000")  # n = 3
    assert raw[12:16] == bytes.fromhex("00f50100")  # V = 128256
    assert raw[16:] == b"\0" * 1008


def test_gpt2_header_matches_the_spec_example() -> None:
    # docs/format.md's worked example: ids [1, 2, 3], V = 256.
    raw = header256.pack(header256.GPT2, 3, 256)
    assert raw[:16] == bytes.fromhex("88d83401" "01000000" "03000000" "00010000")


@pytest.mark.parametrize(
    ("magic", "version", "name", "itemsize"),
    [(20240520, 1, "llm.c GPT-2", 2), (20240520, 2, "prep uint32", 4),
     (20240801, 7, "llm.c Llama-3", 4)],
)
def test_unpack_identifies_each_kind(magic: int, version: int, name: str, itemsize: int) -> None:
    raw = struct.pack("<256i", magic, version, 5, 300, *([0] * 252))
    h = header256.unpack(raw, where="a.bin")
    assert (h.kind.name, h.n, h.vocab_size) == (name, 5, 300)
    assert h.kind.dtype.itemsize == itemsize
    assert h.file_size == 1024 + 5 * itemsize


@pytest.mark.parametrize(
    ("ints", "message"),
    [
        ((20240521, 1, 0, 0), "magic 20240521 is not an llm.c token file's"),
        ((20240801, 1, 0, 0), "unknown version 1 for magic 20240801"),
        ((20240520, 7, 0, 0), "unknown version 7 for magic 20240520"),
        ((20240801, 7, -1, 0), "negative token count -1"),
        ((20240520, 1, 0, 65537), "vocabulary size 65,537 does not fit uint16"),
    ],
)
def test_unpack_rejects_with_a_message(ints: tuple[int, ...], message: str) -> None:
    raw = struct.pack("<256i", *ints, *([0] * 252))
    with pytest.raises(FormatError, match=message) as e:
        header256.unpack(raw, where="train-00003.bin")
    assert "train-00003.bin" in str(e.value)


def test_unpack_rejects_a_short_file() -> None:
    with pytest.raises(FormatError, match="1,000 bytes is shorter than the 1024-byte header"):
        header256.unpack(b"\0" * 1000, where="x.bin")


def test_pack_refuses_what_the_kind_cannot_hold() -> None:
    with pytest.raises(FormatError, match=r"does not fit a llm\.c GPT-2 file"):
        header256.pack(header256.GPT2, 0, 65537)
    with pytest.raises(FormatError, match=r"outside 0\.\.2"):
        header256.pack(header256.LLAMA3, 2**31, 10)


def test_check_size_names_the_difference() -> None:
    h = header256.Header(header256.LLAMA3, 10, 100)
    header256.check_size(h, 1064, where="a.bin")
    with pytest.raises(FormatError, match="1,063 bytes but its header says n = 10"):
        header256.check_size(h, 1063, where="a.bin")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(header256.KINDS), st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
def test_round_trip_against_struct(kind: header256.HeaderKind, n: int, vocab: int) -> None:
    if vocab > kind.max_vocab:
        with pytest.raises(FormatError):
            header256.pack(kind, n, vocab)
        return
    raw = header256.pack(kind, n, vocab)
    assert raw == struct.pack("<256i", kind.magic, kind.version, n, vocab, *([0] * 252))
    assert header256.unpack(raw) == header256.Header(kind, n, vocab)
