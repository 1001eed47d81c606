"""The document stream (docs/format.md, the stream): file order, document shuffle, visiting, and the
preparation of rows (empty, error, split).

Oracles are written here from the spec's text: numpy's generator as the spec names it, a
literal transcription of step 4, hashlib for the prefix digest.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import write_parquet
from hypothesis import given, settings
from hypothesis import strategies as st
from spec_model import spec_prefix_digest, spec_shuffle

from prep.errors import InputError
from prep.recipe import Recipe
from prep.sources import SourceFile, resolve_local
from prep.split import TRAIN, VAL
from prep.stream.order import (
    DOC,
    EMPTY,
    ERROR,
    Cursor,
    Failure,
    Preparer,
    document_stream,
    ordered_files,
    read_rows,
    shuffle_docs,
)


def fake_files(n: int) -> list[SourceFile]:
    return [
        SourceFile(path=f"f{i:03d}.parquet", local=Path(f"/nowhere/{i}"), size=i)
        for i in range(n)
    ]


# -- step 2: file order -----------------------------------------------------------------------


def test_ordered_files_unshuffled_keeps_sorted_order() -> None:
    files = fake_files(7)
    got = ordered_files(files, shuffle=False, seed=1337)
    assert [f.path for f in got] == [f.path for f in files]
    assert got is not files  # a copy, the caller's list is not reordered


@pytest.mark.parametrize(("n", "seed"), [(2, 0), (5, 1337), (13, 7), (40, 2**32 - 1)])
def test_ordered_files_shuffled_matches_spec(n: int, seed: int) -> None:
    files = fake_files(n)
    # spec: rng = Generator(PCG64(SeedSequence([seed, 0]))); order = rng.permutation(len(files))
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0])))
    order = rng.permutation(len(files))
    expected = [files[i].path for i in order]
    got = [f.path for f in ordered_files(files, shuffle=True, seed=seed)]
    assert got == expected
    assert sorted(got) == [f.path for f in files]


def test_file_shuffle_depends_on_seed() -> None:
    files = fake_files(10)
    a = [f.path for f in ordered_files(files, True, 1)]
    b = [f.path for f in ordered_files(files, True, 2)]
    assert a != b


def test_file_shuffle_of_zero_and_one_files() -> None:
    assert ordered_files([], True, 5) == []
    one = fake_files(1)
    assert ordered_files(one, True, 5) == one


# -- step 4: document shuffle -----------------------------------------------------------------


def rows_of(n: int) -> list[tuple[str, None, int, int]]:
    return [(f"t{i}", None, 0, i) for i in range(n)]


@pytest.mark.parametrize(
    ("n", "buffer", "seed"),
    [(0, 4, 1), (1, 4, 1), (10, 1, 3), (10, 3, 3), (10, 10, 3), (10, 50, 3), (100, 7, 1337)],
)
def test_shuffle_docs_matches_spec(n: int, buffer: int, seed: int) -> None:
    rows = rows_of(n)
    got = list(shuffle_docs(iter(rows), buffer, seed))
    assert got == spec_shuffle(rows, buffer, seed)
    assert sorted(got, key=lambda r: r[3]) == rows


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 60), buffer=st.integers(0, 20), seed=st.integers(0, 2**32 - 1))
def test_shuffle_docs_matches_spec_property(n: int, buffer: int, seed: int) -> None:
    rows = rows_of(n)
    assert list(shuffle_docs(iter(rows), buffer, seed)) == spec_shuffle(rows, buffer, seed)


def test_shuffle_buffer_zero_is_stored_order() -> None:
    rows = rows_of(20)
    assert list(shuffle_docs(iter(rows), 0, 99)) == rows


def test_shuffle_actually_reorders() -> None:
    rows = rows_of(50)
    assert list(shuffle_docs(iter(rows), 8, 1)) != rows


def test_shuffle_failure_passes_through_and_ends_stream() -> None:
    err = InputError("boom")
    items: list[Any] = [*rows_of(3), Failure(err), ("late", None, 0, 99)]
    got = list(shuffle_docs(iter(items), 10, 1))
    assert got == [Failure(err)]
    got_unbuffered = list(shuffle_docs(iter(items), 0, 1))
    assert got_unbuffered == items


# -- reading real Parquet ---------------------------------------------------------------------


def recipe(**kw: Any) -> Recipe:
    return Recipe(source="unused", tokenizer="byte", **kw)


def test_document_stream_reads_files_in_order_then_rows(tmp_path: Path) -> None:
    write_parquet(tmp_path / "b.parquet", ["b0", "b1"])
    write_parquet(tmp_path / "a.parquet", ["a0", "a1", "a2"], row_group_size=2)
    src = resolve_local(str(tmp_path))
    got = list(document_stream(src, src.files, recipe()))
    assert got == [("a0", None, 0, 0), ("a1", None, 0, 1), ("a2", None, 0, 2),
                   ("b0", None, 1, 0), ("b1", None, 1, 1)]


def test_document_stream_max_documents_cuts_after_shuffle(tmp_path: Path) -> None:
    texts = [f"t{i}" for i in range(30)]
    write_parquet(tmp_path / "a.parquet", texts, row_group_size=7)
    src = resolve_local(str(tmp_path))
    r = recipe(shuffle_buffer=5, seed=11, max_documents=12)
    got = [item[0] for item in document_stream(src, src.files, r)]
    expected = [row[0] for row in spec_shuffle([(t, None, 0, i) for i, t in enumerate(texts)],
                                               5, 11)][:12]
    assert got == expected


def test_read_rows_carries_split_values(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", ["x", "y"], split=["val", "train"])
    src = resolve_local(str(tmp_path))
    assert list(read_rows(src, src.files, "text", "split")) == [
        ("x", "val", 0, 0),
        ("y", "train", 0, 1),
    ]


def test_read_error_travels_as_failure_in_order(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", ["a0"])
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all")
    src = resolve_local(str(tmp_path))
    items = list(read_rows(src, src.files, "text", None))
    assert items[0] == ("a0", None, 0, 0)
    assert isinstance(items[1], Failure)
    assert "b.parquet: not a readable Parquet file" in str(items[1].error)
    assert len(items) == 2


# -- step 5: visiting -------------------------------------------------------------------------


def test_cursor_digest_of_nothing() -> None:
    c = Cursor()
    assert c.prefix_sha256 == "0" * 64
    assert c.rows_visited == 0


def test_cursor_digest_by_hand() -> None:
    c = Cursor()
    c.visit(b"Hi")
    c.visit("é".encode())
    c.visit(b"")
    link = bytes(32)
    # each link is SHA-256(previous link + SHA-256 of the row); the empty row's SHA-256 is
    # the well-known constant e3b0c442...b855
    empty = bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    for row in (hashlib.sha256(b"Hi").digest(), hashlib.sha256(b"\xc3\xa9").digest(), empty):
        link = hashlib.sha256(link + row).digest()
    assert c.prefix_sha256 == link.hex()
    assert c.rows_visited == 3


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=40))
def test_linking_row_digests_equals_visiting_texts(texts: list[str]) -> None:
    # A worker sends each row's digest; the committing process links them in one call.
    # That must end where visiting the texts one by one ends.
    one = Cursor()
    for t in texts:
        one.visit(t.encode())
    files = [SourceFile(path="a.parquet", local=Path("/nowhere"), size=0)]
    batch = Preparer(Recipe(source="x", tokenizer="byte"), files).prepare(
        [(t, None, 0, i) for i, t in enumerate(texts)]
    )
    linked = Cursor()
    linked.link_all(batch.shed().digests)
    assert (linked.rows_visited, linked.prefix_sha256) == (one.rows_visited, one.prefix_sha256)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=12), st.integers(0, 12))
def test_cursor_continues_from_a_recorded_digest(texts: list[str], cut: int) -> None:
    # What a manifest records (rows, empties, hex digest) is the whole state: a cursor
    # rebuilt from it and fed the rest ends where one cursor over every row ends.
    whole = Cursor()
    for t in texts:
        whole.visit(t.encode())
    head = Cursor()
    for t in texts[:cut]:
        head.visit(t.encode())
    tail = Cursor(head.rows_visited, 0, head.prefix_sha256)
    for t in texts[cut:]:
        tail.visit(t.encode())
    assert tail.prefix_sha256 == whole.prefix_sha256 == spec_prefix_digest(texts)
    assert tail.rows_visited == len(texts)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=12))
def test_cursor_digest_matches_spec(texts: list[str]) -> None:
    c = Cursor()
    for t in texts:
        c.visit(t.encode())
    assert c.prefix_sha256 == spec_prefix_digest(texts)
    assert c.rows_visited == len(texts)


def test_cursor_digest_separates_boundaries() -> None:
    # The length prefix keeps ["ab", "c"] and ["a", "bc"] apart.
    a, b = Cursor(), Cursor()
    for t in (b"ab", b"c"):
        a.visit(t)
    for t in (b"a", b"bc"):
        b.visit(t)
    assert a.prefix_sha256 != b.prefix_sha256


# -- Preparer ---------------------------------------------------------------------------------


def preparer(tmp_path: Path, **kw: Any) -> Preparer:
    files = [
        SourceFile(path="dir/part-0.parquet", local=tmp_path / "0", size=0),
        SourceFile(path="dir/part-1.parquet", local=tmp_path / "1", size=0),
    ]
    return Preparer(recipe(**kw), files)


@pytest.mark.parametrize(
    "text", ["", " ", "\n\t \r", "\u3000", "\u00a0", "\u2028", " \u3000\u00a0\u2009 "]
)
def test_whitespace_only_texts_are_empty(tmp_path: Path, text: str) -> None:
    b = preparer(tmp_path).prepare([(text, None, 0, 0)])
    assert b.kinds == [EMPTY]
    assert b.utf8 == [text.encode()]
    assert b.docs == []
    assert b.errors == {}


@pytest.mark.parametrize("text", [".", " x ", "\u3000a", "\u200b", "\x00"])
def test_anything_else_is_a_document_unchanged(tmp_path: Path, text: str) -> None:
    # U+200B (zero width space) and NUL are not whitespace to str.strip(): documents.
    b = preparer(tmp_path).prepare([(text, None, 0, 0)])
    assert b.kinds == [DOC]
    assert b.docs == [text]
    assert b.utf8 == [text.encode()]


@pytest.mark.parametrize(("value", "what"), [(None, "null"), (5, "a int"), (b"x", "a bytes")])
def test_null_or_non_string_is_an_error_naming_file_and_row(
    tmp_path: Path, value: object, what: str
) -> None:
    p = preparer(tmp_path)
    b = p.prepare([("ok", None, 0, 0), (value, None, 1, 17), ("later", None, 1, 18)])
    assert b.kinds == [DOC, ERROR, DOC]
    err = b.errors[1]
    assert isinstance(err, InputError)
    msg = str(err)
    assert msg.startswith("dir/part-1.parquet row 17: ")
    assert f'column "text" is {what}, expected a string' in msg
    assert "--text-column" in msg
    assert (err.path, err.row) == ("dir/part-1.parquet", 17)
    assert b.docs == ["ok", "later"]


def test_error_message_names_the_chosen_text_column(tmp_path: Path) -> None:
    b = preparer(tmp_path, text_column="body").prepare([(None, None, 0, 3)])
    assert 'dir/part-0.parquet row 3: column "body" is null' in str(b.errors[0])


def test_hash_split_of_prepared_documents(tmp_path: Path) -> None:
    texts = [f"document {i}" for i in range(60)]
    b = preparer(tmp_path, val_fraction=0.4, seed=9).prepare(
        [(t, None, 0, i) for i, t in enumerate(texts)]
    )
    threshold = int(0.4 * 2**64)
    expected = [
        VAL
        if int.from_bytes(hashlib.sha256(f"9\0{t}".encode()).digest()[:8], "big") < threshold
        else TRAIN
        for t in texts
    ]
    assert b.doc_splits == expected
    assert VAL in expected
    assert TRAIN in expected


def test_split_column_values(tmp_path: Path) -> None:
    p = preparer(tmp_path, split_column="split")
    b = p.prepare([("a", "train", 0, 0), ("b", "val", 0, 1), ("c", "train", 0, 2)])
    assert b.kinds == [DOC, DOC, DOC]
    assert b.doc_splits == [TRAIN, VAL, TRAIN]


@pytest.mark.parametrize("value", ["test", "VAL", None, "", "validation"])
def test_bad_split_value_is_an_error_naming_file_and_row(tmp_path: Path, value: object) -> None:
    p = preparer(tmp_path, split_column="split")
    b = p.prepare([("a", "train", 0, 0), ("b", value, 1, 4)])
    assert b.kinds == [DOC, ERROR]
    err = b.errors[1]
    msg = str(err)
    assert msg.startswith("dir/part-1.parquet row 4: ")
    assert f'split column "split" holds {value!r}' in msg
    assert "only 'train' and 'val' are allowed" in msg
    assert (err.path, err.row) == ("dir/part-1.parquet", 4)
    assert b.docs == ["a"]


def test_split_value_of_an_empty_row_is_not_checked(tmp_path: Path) -> None:
    p = preparer(tmp_path, split_column="split")
    b = p.prepare([("  ", "garbage", 0, 0), ("\u3000", None, 0, 1)])
    assert b.kinds == [EMPTY, EMPTY]
    assert b.errors == {}


def test_failure_becomes_an_error_row(tmp_path: Path) -> None:
    err = InputError("x.parquet: corrupt")
    b = preparer(tmp_path).prepare([("a", None, 0, 0), Failure(err)])
    assert b.kinds == [DOC, ERROR]
    assert b.errors[1] is err
    assert b.utf8 == [b"a", None]


def test_a_shed_batch_keeps_every_row_fact_across_a_pickle(tmp_path: Path) -> None:
    # Shed, the per-row lists cross to the committing process as arrays (cheap to unpickle);
    # every value the committing process reads must come out as prepared.
    items: list[Any] = [("one", None, 0, 4), ("", None, 0, 5), (None, None, 1, 0),
                        ("two", None, 1, 1), ("three", None, 0, 9)]
    b = preparer(tmp_path).prepare(items)
    before = (list(b.kinds), list(b.doc_splits), list(b.doc_sizes), list(b.doc_where),
              bytes(b.digests), set(b.errors))
    got = pickle.loads(pickle.dumps(b.shed(), protocol=5))
    assert (list(got.kinds), list(got.doc_splits), list(got.doc_sizes), list(got.doc_where),
            bytes(got.digests), set(got.errors)) == before
    assert list(got.doc_where) == [("dir/part-0.parquet", 4), ("dir/part-1.parquet", 1),
                                   ("dir/part-0.parquet", 9)]
    assert got.doc_where[-1] == ("dir/part-0.parquet", 9)
    assert list(got.doc_where[1:]) == [("dir/part-1.parquet", 1), ("dir/part-0.parquet", 9)]
    assert sum(got.doc_sizes) == len(b"onetwothree") and got.kinds[-1] == DOC
    assert (got.utf8, got.docs) == ([], [])
