"""What a checkpoint and a manifest record of a split's shards: JSON shapes, round trips,
and the refusals of a forged open file."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prep.state.fields import FieldError
from prep.state.shards import (
    EMPTY_CHAIN,
    Companion,
    FileRecord,
    OpenFile,
    SplitState,
    first_doc_fits,
    piece_lengths,
    pieces,
)

SHA = "0123456789abcdef" * 4


def problem(call: Any) -> str:
    with pytest.raises(FieldError) as e:
        call()
    return str(e.value)


def test_empty_chain_is_the_hex_of_32_zero_bytes() -> None:
    assert bytes(32).hex() == EMPTY_CHAIN


def test_a_single_file_record_has_no_companions_key() -> None:
    r = FileRecord("train-00000.bin", 10, 2, SHA)
    assert r.to_json() == {"name": "train-00000.bin", "n_tokens": 10, "n_docs": 2, "sha256": SHA}
    m = FileRecord("train-00000.bin", 10, 2, SHA, (Companion("train-00000.idx", SHA),))
    assert list(m.to_json()) == ["name", "n_tokens", "n_docs", "sha256", "companions"]
    assert m.to_json()["companions"] == [{"name": "train-00000.idx", "sha256": SHA}]
    assert FileRecord.from_json(json.loads(json.dumps(m.to_json()))) == m


def test_a_new_split_has_its_first_file_open_and_empty() -> None:
    s = SplitState.empty("val-00000.bin")
    assert s.open == OpenFile("val-00000.bin", 0, 0, EMPTY_CHAIN, ())
    assert s.names() == ["val-00000.bin"]
    assert s.to_json() == {
        "sealed": [],
        "open": {"name": "val-00000.bin", "n_tokens": 0, "n_docs": 0, "ids_chain": EMPTY_CHAIN,
                 "segments": []},
        "n_tokens": 0, "n_docs": 0, "text_bytes": 0, "text_tokens": 0,
    }
    assert SplitState.from_json(s.to_json()) == s


def test_names_lists_sealed_then_open_and_a_finished_split_has_no_open_file() -> None:
    sealed = (FileRecord("t-0.bin", 1, 1, SHA), FileRecord("t-1.bin", 1, 1, SHA))
    assert SplitState(sealed, OpenFile("t-2.bin", 0, 0, EMPTY_CHAIN, ())).names() == [
        "t-0.bin", "t-1.bin", "t-2.bin"]
    done = SplitState(sealed, None, 2, 2)
    assert done.names() == ["t-0.bin", "t-1.bin"]
    assert done.to_json()["open"] is None
    assert SplitState.from_json(json.loads(json.dumps(done.to_json()))) == done


@given(segments=st.lists(st.integers(1, 10**6), max_size=6),
       lengths=st.none() | st.lists(st.integers(0, 10**6), max_size=6))
def test_an_open_file_round_trips(segments: list[int], lengths: list[int] | None) -> None:
    f = OpenFile("x.bin", sum(segments), len(lengths or ()), SHA, tuple(segments),
                 None if lengths is None else tuple(lengths))
    d = json.loads(json.dumps(f.to_json()))
    assert ("doc_lengths" in d) is (lengths is not None)
    assert OpenFile.from_json(d) == f


@pytest.mark.parametrize("segments", [[3, 3], [10, 0], [9]])
def test_segments_that_do_not_add_up_or_hold_an_empty_one_are_refused(segments: list[int]
                                                                      ) -> None:
    d = {"name": "x.bin", "n_tokens": 10, "n_docs": 1, "ids_chain": SHA, "segments": segments}
    assert problem(lambda: OpenFile.from_json(d)) == (
        "segments: do not add up to its 10 ids in non-empty segments")


def test_a_split_without_its_open_key_is_refused() -> None:
    d = SplitState.empty("a.bin").to_json()
    del d["open"]
    assert problem(lambda: SplitState.from_json(d)) == "open: is missing"


def test_a_forged_count_is_named_by_its_path() -> None:
    d = SplitState((FileRecord("t-0.bin", 1, 1, SHA),), None, 1, 1).to_json()
    d["sealed"][0]["n_docs"] = -1
    assert problem(lambda: SplitState.from_json(d)) == (
        "sealed[0].n_docs: holds -1, expected at least 0")


def test_first_doc_at_is_written_only_for_a_fixed_file_and_round_trips() -> None:
    whole = FileRecord("train-00001.bin", 10, 2, SHA)
    fixed = FileRecord("train-00001.bin", 10, 2, SHA, first_doc_at=0)
    assert "first_doc_at" not in whole.to_json() and fixed.to_json()["first_doc_at"] == 0
    assert FileRecord.from_json(json.loads(json.dumps(fixed.to_json()))) == fixed
    op = OpenFile("train-00002.bin", 7, 0, EMPTY_CHAIN, (7,), (7,), first_doc_at=7)
    assert OpenFile.from_json(json.loads(json.dumps(op.to_json()))) == op
    d = {**fixed.to_json(), "first_doc_at": "3"}
    assert problem(lambda: FileRecord.from_json(d)) == (
        "first_doc_at: holds string '3', expected an integer")


def test_a_file_holds_its_documents_and_the_end_of_one_begun_before() -> None:
    assert [pieces(2, None), pieces(2, 0), pieces(2, 5), pieces(0, 9), pieces(0, 0)] == [
        2, 2, 3, 1, 0]


def test_piece_lengths_start_with_the_end_of_a_document_begun_before_when_it_holds_ids(
) -> None:
    def cut(starts: list[int], begin: int, end: int) -> list[int]:
        return piece_lengths(np.asarray(starts, dtype=np.int64), begin, end).tolist()

    assert cut([12, 13], 10, 15) == [2, 1, 2]  # a document begun before, then two
    assert cut([10, 13], 10, 15) == [3, 2]  # the file begins with a document
    assert cut([], 10, 15) == [5]  # inside one document
    assert cut([10, 10], 10, 12) == [0, 2]  # an empty document is a piece of its own
    assert cut([], 0, 0) == []  # an empty file


def test_first_doc_at_fits_a_fixed_file_only_where_a_writer_could_have_put_it() -> None:
    assert first_doc_fits(0, 10, 2, True) and first_doc_fits(3, 10, 1, False)
    assert first_doc_fits(10, 10, 0, False)  # no document starts in it
    assert first_doc_fits(0, 0, 0, True)  # an empty split's one file
    assert not first_doc_fits(None, 10, 2, False)  # not recorded
    assert not first_doc_fits(11, 10, 0, False)  # past its end
    assert not first_doc_fits(3, 10, 1, True)  # a split's first file starts with a document
    assert not first_doc_fits(10, 10, 1, False)  # a document starts, but at its end
    assert not first_doc_fits(4, 10, 0, False)  # none starts, but one is said to at 4
