"""A batch's ids in the worker (``prep.run.work.tokenize``): ids outside the vocabulary are found
there, before they are narrowed to uint16 (which would make 70,000 look like 4,464), and
the batch then commits row by row up to the document that holds one, whose error names its
file and row."""

from __future__ import annotations

import numpy as np
import pytest

from prep.encoders.flatids import FlatIds
from prep.errors import InputError
from prep.run.work.tokenize import in_vocabulary
from prep.stream.order import Batch


def batch_of(n: int) -> Batch:
    return Batch(doc_where=[("a.parquet", 10 + i) for i in range(n)])


def flat(*docs: list[int]) -> FlatIds:
    return FlatIds.of([np.array(d, dtype=np.uint32) for d in docs])


def test_ids_within_the_vocabulary_pass_unchanged() -> None:
    ids = flat([1, 2], [], [9])
    assert in_vocabulary(ids, batch_of(3), 10) is ids
    per_doc = [np.array([1], dtype=np.uint32), InputError("later")]
    assert in_vocabulary(per_doc, batch_of(2), 10) is per_doc


@pytest.mark.parametrize(("vocab", "bad", "shown"), [(10, 10, "10"), (65_536, 70_000, "70,000")])
def test_the_first_document_with_an_id_outside_stops_the_batch_there(
    vocab: int, bad: int, shown: str
) -> None:
    got = in_vocabulary(flat([1, 2], [3], [4, bad, 5], [6]), batch_of(4), vocab)
    assert isinstance(got, list) and len(got) == 3
    assert [a.tolist() for a in got[:2]] == [[1, 2], [3]]
    error = got[2]
    assert isinstance(error, InputError)
    assert str(error).startswith(f"a.parquet row 12: token id {shown} is outside the vocabulary")
    assert (error.path, error.row) == ("a.parquet", 12)


def test_documents_before_an_earlier_error_are_checked_too() -> None:
    per_doc = [np.array([1], dtype=np.uint32), np.array([99], dtype=np.uint32),
               InputError("cannot encode")]
    got = in_vocabulary(per_doc, batch_of(3), 10)
    assert isinstance(got[1], InputError) and "token id 99" in str(got[1])
