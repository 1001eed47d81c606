"""``prep.TokenStream`` against the split's stream read by the independent readers of
``tests/format_readers.py`` (not by prep), on a real published dataset whose files are small
enough that many windows cross a file boundary."""

from __future__ import annotations

import pickle
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import make_corpus, numbered_docs
from format_readers import split_files, split_stream

from prep.errors import FormatError, IntegrityError, UsageError
from prep.readers.tokenstream import TokenStream


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from prep.cli.commands import main

    root = tmp_path_factory.mktemp("ts")
    src = make_corpus(root / "src", [numbered_docs(90), numbered_docs(60, start=90)])
    out = root / "ds"
    code = main(["prepare", "--tokenizer", "byte",
                 "--out", str(out), "--source", str(src), "--val-fraction", "0.3",
                 "--doc-sep-id", "0", "--max-file-tokens", "700", "--quiet"])
    assert code == 0
    assert len(split_files(out, "train")) >= 5
    return out


def _boundaries(out: Path, split: str) -> list[int]:
    """Stream offsets where a new file starts (independent route)."""
    from format_readers import read_file

    at, edges = 0, []
    for path in split_files(out, split):
        at += len(read_file(out, path))
        edges.append(at)
    return edges[:-1]


@pytest.mark.parametrize("split", ["train", "val"])
@pytest.mark.parametrize("seq_len", [1, 7, 64, 257])
def test_windows_are_slices_of_the_stream(dataset: Path, split: str, seq_len: int) -> None:
    stream = np.array(split_stream(dataset, split), dtype=np.int64)
    ts = TokenStream(dataset, split=split, seq_len=seq_len)
    assert ts.n_tokens == stream.size
    assert len(ts) == (stream.size - 1) // seq_len
    crossing = 0
    edges = _boundaries(dataset, split)
    for i in range(len(ts)):
        x, y = ts[i]
        a = i * seq_len
        assert x.tolist() == stream[a : a + seq_len].tolist()
        assert y.tolist() == stream[a + 1 : a + seq_len + 1].tolist()
        crossing += any(a < e <= a + seq_len for e in edges)
    if seq_len >= 64:
        assert crossing > 0  # the case the test is for actually happens
    x, y = ts[-1]
    assert x.tolist() == stream[(len(ts) - 1) * seq_len : len(ts) * seq_len].tolist()
    with pytest.raises(IndexError, match=f"window {len(ts)} outside"):
        ts[len(ts)]


def test_a_stream_shorter_than_a_window_is_empty(dataset: Path) -> None:
    n = len(split_stream(dataset, "val"))
    assert len(TokenStream(dataset, "val", seq_len=n - 1)) == 1
    ts = TokenStream(dataset, "val", seq_len=n)
    assert len(ts) == 0
    assert list(ts.batches(1)) == []


def _all_windows(dataset: Path, seq_len: int) -> Counter[tuple[int, ...]]:
    stream = split_stream(dataset, "train")
    n = (len(stream) - 1) // seq_len
    return Counter(tuple(stream[i * seq_len : i * seq_len + seq_len + 1]) for i in range(n))


def test_batches_are_disjoint_across_four_ranks(dataset: Path) -> None:
    seq_len, batch = 32, 3
    ts = TokenStream(dataset, seq_len=seq_len)
    seen: Counter[tuple[int, ...]] = Counter()
    per_rank = []
    for rank in range(4):
        batches = list(ts.batches(batch, rank=rank, world_size=4, seed=5))
        per_rank.append(len(batches))
        for x, y in batches:
            assert x.shape == y.shape == (batch, seq_len)
            assert (x[:, 1:] == y[:, :-1]).all()
            for row_x, row_y in zip(x, y, strict=True):
                seen[(*row_x.tolist(), int(row_y[-1]))] += 1
    windows = _all_windows(dataset, seq_len)
    # Every row is a window of the stream, and no window is served twice (multiset bound).
    assert not seen - windows
    assert sum(seen.values()) == 4 * per_rank[0] * batch
    assert per_rank == [len(ts) // (4 * batch)] * 4
    assert per_rank[0] > 3


def test_unshuffled_batches_deal_windows_in_order(dataset: Path) -> None:
    seq_len, batch, world = 16, 2, 4
    stream = split_stream(dataset, "train")
    ts = TokenStream(dataset, seq_len=seq_len)
    for rank in range(world):
        for b, (x, _) in enumerate(ts.batches(batch, rank=rank, world_size=world, shuffle=False)):
            for j in range(batch):
                w = b * batch * world + rank * batch + j
                assert x[j].tolist() == stream[w * seq_len : w * seq_len + seq_len]


@pytest.mark.parametrize("start", [0, 1, 5, 11])
def test_resuming_from_start_gives_the_same_batches(dataset: Path, start: int) -> None:
    ts = TokenStream(dataset, seq_len=24)
    for rank in (0, 3):
        kw = {"rank": rank, "world_size": 4, "seed": 9, "epoch": 2}
        full = [(x.tolist(), y.tolist()) for x, y in ts.batches(2, **kw)]
        resumed = [(x.tolist(), y.tolist()) for x, y in ts.batches(2, start=start, **kw)]
        assert resumed == full[start:]
        assert len(full) > 11


def test_order_depends_on_seed_and_epoch_only(dataset: Path) -> None:
    ts = TokenStream(dataset, seq_len=8)
    again = TokenStream(dataset, seq_len=8)
    assert ts.order(seed=1, epoch=0).tolist() == again.order(seed=1, epoch=0).tolist()
    assert ts.order(seed=1, epoch=0).tolist() != ts.order(seed=1, epoch=1).tolist()
    assert ts.order(seed=1).tolist() != ts.order(seed=2).tolist()
    assert sorted(ts.order(seed=3).tolist()) == list(range(len(ts)))


def test_bad_arguments_are_usage_errors(dataset: Path) -> None:
    with pytest.raises(UsageError, match="seq_len must be at least 1"):
        TokenStream(dataset, seq_len=0)
    with pytest.raises(UsageError, match="no split 'test'"):
        TokenStream(dataset, split="test")
    ts = TokenStream(dataset, seq_len=8)
    with pytest.raises(UsageError, match="0 <= rank < world_size"):
        next(ts.batches(2, rank=4, world_size=4))


def _first_file(ds: Path) -> Path:
    return split_files(ds, "train")[0]


def test_verify_catches_a_flipped_byte(dataset: Path, tmp_path: Path) -> None:
    ds = shutil.copytree(dataset, tmp_path / "ds")
    path = _first_file(ds)
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0x01
    path.write_bytes(bytes(raw))
    TokenStream(ds, seq_len=8)  # sizes still agree: only re-hashing can tell
    with pytest.raises(IntegrityError, match=f"{path.name}: SHA-256 .* does not match"):
        TokenStream(ds, seq_len=8, verify=True)


def test_open_catches_a_truncated_or_missing_file(dataset: Path, tmp_path: Path) -> None:
    ds = shutil.copytree(dataset, tmp_path / "ds")
    path = _first_file(ds)
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(FormatError, match="truncated or was not sealed"):
        TokenStream(ds, seq_len=8)
    path.unlink()
    with pytest.raises(IntegrityError, match="listed in the manifest but missing"):
        TokenStream(ds, seq_len=8)


def test_pickles_by_reference(dataset: Path) -> None:
    ts = TokenStream(dataset, seq_len=16)
    blob = pickle.dumps(ts)
    assert len(blob) < 1000  # the files are not copied into the pickle
    other = pickle.loads(blob)
    assert [w.tolist() for w in other[3]] == [w.tolist() for w in ts[3]]
