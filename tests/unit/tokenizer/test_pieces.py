"""The piece table: sorted and merged whatever the order counted, its file round trip and
refusals, and the trainer's input (pieces of two bytes or more, SEP after each, weights)."""

from __future__ import annotations

import numpy as np
import pytest

from prep.tokenizer.bpe import SEP
from prep.tokenizer.pieces import MAX_WEIGHT, PieceTable


def test_the_table_is_the_multiset_whatever_the_order() -> None:
    a = PieceTable.of({"b": 1, "ab": 2}).merged({"é": 1, "ab": 1})
    b = PieceTable.of({"é": 1}).merged({"ab": 3, "b": 1})
    assert a == b == PieceTable((b"ab", b"b", "é".encode()), (3, 1, 1))


def test_the_file_round_trips_and_a_cut_one_is_refused() -> None:
    table = PieceTable.of({"ab": 3, "\x00": 1, "日本": 7})
    raw = table.to_bytes()
    assert PieceTable.from_bytes(raw) == table
    assert PieceTable.from_bytes(PieceTable((), ()).to_bytes()) == PieceTable((), ())
    for bad in (raw[:-1], b"PIECES02" + raw[8:], b""):
        with pytest.raises(ValueError, match="piece table"):
            PieceTable.from_bytes(bad)


def test_training_input_drops_one_byte_pieces_and_splits_huge_counts() -> None:
    seq, weights = PieceTable((b"a", b"ab", b"abc"), (5, MAX_WEIGHT + 2, 1)).training_input()
    assert seq.tolist() == [97, 98, SEP, 97, 98, SEP, 97, 98, 99, SEP]
    assert weights.tolist() == [MAX_WEIGHT, 2, 1] and weights.dtype == np.uint32
