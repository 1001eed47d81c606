"""Per-split writers (docs/format.md, "Token files"): separators, rollover,
file naming, counts and the β bookkeeping.

Documents are self-describing: document k's ids are all ``k`` (repeated), so a dropped,
duplicated or reordered document shows in the bytes. File contents are read back with
``bin_ids`` (struct, independent of prep).
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import GPT2_DIR, bin_ids
from format_readers import segment_chain
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.encoders import load_encoder
from prep.errors import InputError
from prep.formats import get_format
from prep.state.shards import SplitState
from prep.stream.writer import SplitWriter, lay_out_splits, needs_rollover

FMT = get_format("llmc")


def make_writer(
    directory: Path,
    *,
    sep: int | None = None,
    append: bool = False,
    limit: int = 100,
    vocab: int = 256,
    split: str = "train",
) -> SplitWriter:
    w = SplitWriter(
        directory=directory,
        fmt=FMT,
        split=split,
        vocab_size=vocab,
        sep_id=sep,
        append_sep=append,
        max_file_tokens=limit,
    )
    w.start()
    return w


def doc(k: int, length: int) -> np.ndarray:
    return np.full(length, k, dtype=np.uint32)


def files_of(directory: Path, split: str = "train") -> list[Path]:
    return sorted(directory.glob(f"{split}-*.bin"))


# -- the rollover rule ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("open_tokens", "doc_tokens", "limit", "expected"),
    [
        (0, 1, 10, False),  # empty file: always take the document
        (0, 10, 10, False),
        (0, 11, 10, False),  # longer than the limit: fills an empty file alone
        (0, 10**6, 10, False),
        (5, 5, 10, False),  # exactly reaching the limit is allowed
        (5, 6, 10, True),  # one past it rolls over
        (9, 1, 10, False),
        (10, 1, 10, True),  # a full file takes nothing more
        (1, 1, 1, True),
        (3, 0, 3, False),
        (11, 0, 10, True),  # a file already past the limit (a long doc) takes nothing more
    ],
)
def test_needs_rollover_truth_table(
    open_tokens: int, doc_tokens: int, limit: int, expected: bool
) -> None:
    assert needs_rollover(open_tokens, doc_tokens, limit) is expected


def test_file_names() -> None:
    assert FMT.shard_name("train", 0) == "train-00000.bin"
    assert FMT.shard_name("val", 12) == "val-00012.bin"


# -- separator placement ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sep", "append", "expected"),
    [
        (0, False, [0, 1, 1, 0, 2, 0, 3, 3, 3]),
        (0, True, [1, 1, 0, 2, 0, 3, 3, 3, 0]),
        (None, False, [1, 1, 2, 3, 3, 3]),
        (None, True, [1, 1, 2, 3, 3, 3]),
    ],
)
def test_separator_positions(
    tmp_path: Path, sep: int | None, append: bool, expected: list[int]
) -> None:
    w = make_writer(tmp_path, sep=sep, append=append)
    for k, length in [(1, 2), (2, 1), (3, 3)]:
        w.add(doc(k, length), n_bytes=length)
    records = w.finish()
    assert [r.name for r in records] == ["train-00000.bin"]
    assert bin_ids(tmp_path / "train-00000.bin") == expected
    assert records[0].n_tokens == len(expected)
    assert records[0].n_docs == 3


def test_spec_example_bytes(tmp_path: Path) -> None:
    # docs/format.md: "Hi" (train), "é" (val), "ok" (train) with the byte tokenizer.
    enc = load_encoder("byte", doc_sep_id=None, no_doc_sep=False, tokenizer_id=None)
    train = make_writer(tmp_path, split="train")
    val = make_writer(tmp_path, split="val")
    for text, w in [("Hi", train), ("é", val), ("ok", train)]:
        (ids,) = enc.encode_batch([text], [text.encode()])
        w.add(ids, len(text.encode()))
    train.finish()
    val.finish()
    raw = (tmp_path / "train-00000.bin").read_bytes()
    assert len(raw) == 1032
    assert raw[8:12] == struct.pack("<i", 4)
    assert bin_ids(tmp_path / "train-00000.bin") == [72, 105, 111, 107]
    assert bin_ids(tmp_path / "val-00000.bin") == [195, 169]


def test_spec_example_gpt2_with_separator(tmp_path: Path) -> None:
    enc = load_encoder(str(GPT2_DIR), doc_sep_id=None, no_doc_sep=False, tokenizer_id=None)
    ident = enc.identity
    assert ident.doc_sep_id == 50256
    w = make_writer(tmp_path, sep=ident.doc_sep_id, vocab=ident.vocab_size)
    texts = ["Hello world", "Hi"]
    for text, ids in zip(texts, enc.encode_batch(texts, [t.encode() for t in texts]), strict=True):
        w.add(ids, len(text.encode()))
    w.finish()
    assert bin_ids(tmp_path / "train-00000.bin") == [50256, 15496, 995, 50256, 17250]


# -- rollover ---------------------------------------------------------------------------------


def test_rollover_at_max_file_tokens(tmp_path: Path) -> None:
    # limit 6, separator prepended: doc tokens (with sep) are 3, 3, 2, 5, 1.
    w = make_writer(tmp_path, sep=0, limit=6)
    lengths = [2, 2, 1, 4, 0]
    for k, length in enumerate(lengths, start=1):
        w.add(doc(k, length), n_bytes=length)
    records = w.finish()
    assert [r.name for r in records] == [
        "train-00000.bin",
        "train-00001.bin",
        "train-00002.bin",
    ]
    # 3+3 = 6 fills file 0 exactly; 2+5 > 6 so doc 4 starts file 2; 5+1 = 6 fits with it.
    assert bin_ids(tmp_path / "train-00000.bin") == [0, 1, 1, 0, 2, 2]
    assert bin_ids(tmp_path / "train-00001.bin") == [0, 3]
    assert bin_ids(tmp_path / "train-00002.bin") == [0, 4, 4, 4, 4, 0]
    assert [(r.n_tokens, r.n_docs) for r in records] == [(6, 2), (2, 1), (6, 2)]
    for r in records:
        raw = (tmp_path / r.name).read_bytes()
        assert r.sha256 == hashlib.sha256(raw).hexdigest()
        assert struct.unpack("<i", raw[8:12])[0] == r.n_tokens


def test_long_document_sits_alone(tmp_path: Path) -> None:
    w = make_writer(tmp_path, sep=0, append=True, limit=4)
    w.add(doc(1, 1), 1)  # 2 tokens
    w.add(doc(2, 9), 9)  # 10 tokens > limit: a file of its own
    w.add(doc(3, 1), 1)  # 2 tokens: cannot join the long one
    records = w.finish()
    assert [bin_ids(tmp_path / r.name) for r in records] == [
        [1, 0],
        [2] * 9 + [0],
        [3, 0],
    ]
    assert [r.n_docs for r in records] == [1, 1, 1]


def test_long_document_first_does_not_leave_an_empty_file(tmp_path: Path) -> None:
    w = make_writer(tmp_path, limit=3)
    w.add(doc(1, 8), 8)
    w.add(doc(2, 8), 8)
    records = w.finish()
    assert [r.n_tokens for r in records] == [8, 8]
    assert all(r.n_tokens > 0 for r in records)


def test_first_file_always_present_even_if_empty(tmp_path: Path) -> None:
    w = make_writer(tmp_path, split="val")
    assert (tmp_path / "val-00000.bin").exists()
    records = w.finish()
    assert [(r.name, r.n_tokens, r.n_docs) for r in records] == [("val-00000.bin", 0, 0)]
    raw = (tmp_path / "val-00000.bin").read_bytes()
    assert raw == struct.pack("<256i", 20240520, 1, 0, 256, *([0] * 252))
    assert records[0].sha256 == hashlib.sha256(raw).hexdigest()


def test_document_over_2_31_minus_1_tokens_is_an_error(tmp_path: Path) -> None:
    w = make_writer(tmp_path, sep=0, limit=10)
    huge = np.broadcast_to(np.uint8(1), (2**31 - 1,))  # + separator = 2**31: too many
    with pytest.raises(InputError) as info:
        w.add(huge, 2**31 - 1)
    assert "2,147,483,648 tokens cannot fit one file" in str(info.value)
    assert "train document" in str(info.value)
    assert (w.n_docs, w.n_tokens) == (0, 0)
    w.close()


# -- state and counts -------------------------------------------------------------------------


def test_state_counts_after_sync(tmp_path: Path) -> None:
    w = make_writer(tmp_path, sep=5, limit=5)
    w.add(np.array([1, 2], dtype=np.uint32), n_bytes=7)  # 3 tokens
    w.add(np.array([3], dtype=np.uint32), n_bytes=1)  # 2 tokens: fills file 0 to 5
    w.add(np.array([4, 4, 4], dtype=np.uint32), n_bytes=11)  # 4 tokens: file 1
    w.sync()
    s = w.state()
    assert (s.n_tokens, s.n_docs) == (9, 3)
    # β bookkeeping: separators excluded from the token count.
    assert (s.text_bytes, s.text_tokens) == (19, 6)
    assert [(r.name, r.n_tokens, r.n_docs) for r in s.sealed] == [("train-00000.bin", 5, 2)]
    sealed_raw = (tmp_path / "train-00000.bin").read_bytes()
    assert s.sealed[0].sha256 == hashlib.sha256(sealed_raw).hexdigest()
    assert s.open is not None
    assert (s.open.name, s.open.n_tokens, s.open.n_docs) == ("train-00001.bin", 4, 1)
    # One segment: the document appended after the rollover (hashed here: a lone document).
    assert (s.open.ids_chain, s.open.segments) == segment_chain(struct.pack("<4H", 5, 4, 4, 4))
    # The open file on disk: header n = 0 until sealed, the committed ids after it.
    open_raw = (tmp_path / "train-00001.bin").read_bytes()
    assert open_raw[8:12] == struct.pack("<i", 0)
    assert open_raw[1024:] == struct.pack("<4H", 5, 4, 4, 4)
    w.close()


def test_empty_state_of_a_new_split() -> None:
    s = SplitState.empty(FMT.shard_name("val", 0))
    assert s.sealed == ()
    assert s.open is not None
    assert (s.open.name, s.open.n_tokens, s.open.n_docs) == ("val-00000.bin", 0, 0)
    assert (s.open.ids_chain, s.open.segments) == segment_chain() == ("0" * 64, ())


def test_state_json_round_trip(tmp_path: Path) -> None:
    w = make_writer(tmp_path, sep=0, limit=3)
    for k in range(1, 5):
        w.add(doc(k, 2), 2)
    w.sync()
    s = w.state()
    assert SplitState.from_json(s.to_json()) == s
    w.close()


def test_restore_continues_identically(tmp_path: Path) -> None:
    """A writer restored from a state and its reopened open file writes the same bytes as
    one that never stopped."""
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    docs = [doc(k, (k * 3) % 5 + 1) for k in range(1, 12)]

    a = make_writer(a_dir, sep=0, limit=7)
    for d in docs:
        a.add(d, d.size)
    a_files = a.finish()

    b = make_writer(b_dir, sep=0, limit=7)
    for d in docs[:5]:
        b.add(d, d.size)
    b.sync()
    state = b.state()
    b.close()
    assert state.open is not None
    path = b_dir / state.open.name
    with open(path, "ab") as f:
        f.write(b"\x01\x00" * 3)  # written after the commit point: must be cut
    op = state.open
    checked = FMT.check_open(b_dir, op, 256)
    b2 = SplitWriter(b_dir, FMT, "train", 256, 0, False, 7)
    b2.restore(state, FMT.reopen(b_dir, checked, 256))
    for d in docs[5:]:
        b2.add(d, d.size)
    b_files = b2.finish()

    assert b_files == a_files
    assert len(a_files) > 2
    assert {p.name: p.read_bytes() for p in files_of(a_dir)} == {
        p.name: p.read_bytes() for p in files_of(b_dir)
    }
    assert (b2.n_tokens, b2.n_docs, b2.text_tokens) == (a.n_tokens, a.n_docs, a.text_tokens)


# -- many documents in one call ---------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=6),
    limit=st.integers(1, 60),
    sep=st.sampled_from([None, ("append", 255), ("prepend", 254)]),
)
def test_laid_out_batches_write_what_add_writes_document_by_document(
    tmp_path_factory: pytest.TempPathFactory, docs: list[tuple[int, bool]], cuts: list[int],
    limit: int, sep: tuple[str, int] | None,
) -> None:
    # Workers lay a batch out per split (lay_out_splits) and the committing process appends
    # it whole (add_laid); the per-document add is the rule as docs/format.md states it.
    # Cut into any batches, with documents of both splits mixed, the files, their hashes
    # and every count must be the same.
    root = tmp_path_factory.mktemp("w")
    sep_id, append = (None, False) if sep is None else (sep[1], sep[0] == "append")
    ids = [doc(k % 200, n) for k, (n, _) in enumerate(docs)]
    splits = [int(val) for _, val in docs]
    writers = {}
    for how in ("one", "many"):
        for split in ("train", "val"):
            (root / how / split).mkdir(parents=True)
            writers[how, split] = make_writer(root / how / split, sep=sep_id, append=append,
                                              limit=limit, split=split)
    for k, d in enumerate(ids):
        writers["one", ("train", "val")[splits[k]]].add(d, 3 * k)
    bounds = sorted({0, len(ids), *(c for c in cuts if c <= len(ids))})
    for lo, hi in itertools.pairwise(bounds):
        part = ids[lo:hi]
        flat = np.concatenate(part) if part else np.zeros(0, dtype=np.uint32)
        offsets = np.concatenate([[0], np.cumsum([len(d) for d in part])]).astype(np.int64)
        laid = lay_out_splits(flat, offsets, splits[lo:hi], [3 * k for k in range(lo, hi)],
                              sep_id, append)
        for split, docs_of_split in zip(("train", "val"), laid, strict=True):
            writers["many", split].add_laid(docs_of_split)
    for split in ("train", "val"):
        one, many = writers["one", split], writers["many", split]
        one.sync()
        many.sync()
        assert many.state() == one.state()
        assert [p.read_bytes() for p in files_of(root / "many" / split, split)] == [
            p.read_bytes() for p in files_of(root / "one" / split, split)]
        assert many.finish() == one.finish()
