"""Megatron's MMIDIDX ``.idx`` codec, against bytes written out from the published layout
and against the independent reader in ``tests/format_readers.py``."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from format_readers import read_megatron_index
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.errors import FormatError
from prep.formats import mmidx

# Two documents, [50256, 15496, 995] and [50256, 17250], as uint16 (code 8).
WORKED_IDX = bytes.fromhex(
    "4d4d4944494458" "0000"  # MMIDIDX\0\0
    "0100000000000000"  # version 1
    "08"  # dtype code 8: uint16
    "0200000000000000"  # S = 2 sequences
    "0300000000000000"  # D = 3 document-index entries
    "03000000" "02000000"  # lengths (int32)
    "0000000000000000" "0600000000000000"  # pointers in bytes (int64)
    "0000000000000000" "0100000000000000" "0200000000000000"  # document index (int64)
)


def test_worked_example_byte_for_byte() -> None:
    assert mmidx.pack([3, 2], "uint16") == WORKED_IDX
    assert len(WORKED_IDX) == 82 == mmidx.index_size(2)


def test_parse_worked_example() -> None:
    idx = mmidx.parse(WORKED_IDX)
    assert idx.dtype == np.dtype("<u2")
    assert idx.lengths.tolist() == [3, 2]
    assert idx.pointers.tolist() == [0, 6]
    assert idx.doc_index.tolist() == [0, 1, 2]
    assert (idx.n_tokens, idx.n_docs, idx.bin_size) == (5, 2, 10)


def test_int32_pointers_step_by_four_bytes() -> None:
    idx = mmidx.parse(mmidx.pack([1, 5, 0, 2], "int32"))
    assert idx.dtype == np.dtype("<i4")
    assert idx.pointers.tolist() == [0, 4, 24, 24]


def test_empty_index_has_the_leading_zero() -> None:
    raw = mmidx.pack([], "uint16")
    assert len(raw) == 42
    assert mmidx.parse(raw).doc_index.tolist() == [0]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b"NOTANIDX\0" + b[9:], "magic"),
        (lambda b: b[:9] + struct.pack("<Q", 2) + b[17:], "version 2 is not 1"),
        (lambda b: b[:17] + b"\x09" + b[18:], "unknown dtype code 9"),
        (lambda b: b[:-1], "81 bytes but its counts need 82"),
        (lambda b: b + b"\0", "83 bytes but its counts need 82"),
        (lambda b: b[:42] + struct.pack("<q", 8) + b[50:], "pointers do not follow"),
        (lambda b: b[:58] + struct.pack("<q", 1) + b[66:], "does not run from 0 to 2"),
        (lambda b: b[:66] + struct.pack("<q", 3) + b[74:], "document index decreases"),
        (lambda b: b[:34] + struct.pack("<i", -3) + b[38:], "negative sequence length"),
    ],
)
def test_parse_rejects_with_a_message(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FormatError, match=message) as e:
        mmidx.parse(mutate(WORKED_IDX), where="val-00001.idx")
    assert str(e.value).startswith("val-00001.idx: ")


def test_pack_refuses_an_unknown_dtype() -> None:
    with pytest.raises(FormatError, match="no code for dtype uint32"):
        mmidx.pack([1], "uint32")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**20), max_size=50), st.sampled_from(["uint16", "int32"]))
def test_independent_reader_agrees(tmp_path_factory, lengths: list[int], dtype: str) -> None:  # type: ignore[no-untyped-def]
    path: Path = tmp_path_factory.mktemp("idx") / "a.idx"
    path.write_bytes(mmidx.pack(lengths, dtype))
    other = read_megatron_index(path)
    width = 2 if dtype == "uint16" else 4
    assert other["code"] == {"uint16": 8, "int32": 4}[dtype]
    assert other["lengths"] == lengths
    assert other["pointers"] == [sum(lengths[:k]) * width for k in range(len(lengths))]
    assert other["doc_index"] == list(range(len(lengths) + 1))
    parsed = mmidx.parse(path.read_bytes())
    assert parsed.lengths.tolist() == lengths
