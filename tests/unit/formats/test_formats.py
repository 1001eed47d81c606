"""The ``ShardFormat`` protocol, for every registered format: naming, writing, the
read-only check and the cut of an open shard on resume, verify and inspect. Expected bytes
and hashes are computed here independently (numpy ``tobytes``, ``hashlib`` over the file)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from format_readers import segment_chain

from prep.errors import IntegrityError, UsageError
from prep.formats import _FORMATS, IdScan, get_format
from prep.state.manifest import Manifest, ManifestFile
from prep.state.shards import OpenFile

VOCAB = 300
NAMES = sorted(_FORMATS)


def ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint32)


# The id width each format stores V = 300 in, from its layout (docs/format.md; llm.c's
# HEADERS_INFO for Llama-3; Megatron's uint16 code; raw: narrowest).
WIDTH = {"llmc": "<u2", "llmc-llama3": "<u4", "megatron": "<u2", "npy": "<u2", "raw": "<u2",
         "datatrove": "<u2", "olmo": "<u2"}
WIDTH_BYTES = {name: np.dtype(code).itemsize for name, code in WIDTH.items()}


def id_bytes(values: list[int], name: str = "llmc") -> bytes:
    """The little-endian id bytes a format stores for V = 300."""
    return np.array(values, dtype=WIDTH[name]).tobytes()


def put(w, *values: int) -> None:  # type: ignore[no-untyped-def]
    """Append one document of ``values``."""
    w.append(ids(*values), [len(values)])


def open_record(w) -> OpenFile:  # type: ignore[no-untyped-def]
    """What the checkpoint records for an open shard."""
    lengths = w.doc_lengths
    return OpenFile(w.name, w.n, len(lengths or ()), w.ids_chain, w.segments, lengths)


@pytest.mark.parametrize("name", NAMES)
def test_names_round_trip(name: str) -> None:
    fmt = get_format(name)
    for split, index in (("train", 0), ("val", 12), ("train", 99999)):
        shard = fmt.shard_name(split, index)
        assert fmt.parse_name(shard) == (split, index)
        assert all(fmt.owns_file(f) for f in fmt.shard_files(shard))
    assert fmt.parse_name("train-1.bin") is None
    assert fmt.parse_name("test-00000.bin") is None
    assert not fmt.owns_file("_MANIFEST.json")


def test_llmc_names_are_the_spec_names() -> None:
    assert get_format("llmc").shard_name("val", 3) == "val-00003.bin"


def test_unknown_format_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown output format 'nope'; choose one of datatrove"):
        get_format("nope")


@pytest.mark.parametrize("name", NAMES)
def test_write_sync_seal(tmp_path: Path, name: str) -> None:
    fmt = get_format(name)
    w = fmt.create(tmp_path, fmt.shard_name("train", 0), VOCAB)
    put(w, 1, 2, 3)
    put(w, 299)
    w.sync()
    assert w.n == 4
    assert (w.ids_chain, w.segments) == segment_chain(
        id_bytes([1, 2, 3], name), id_bytes([299], name), width=WIDTH_BYTES[name])
    sha, companions = w.seal()
    files = fmt.shard_files(w.name)
    assert sha == hashlib.sha256((tmp_path / files[0]).read_bytes()).hexdigest()
    assert (tmp_path / files[0]).read_bytes().endswith(id_bytes([1, 2, 3, 299], name))
    assert [c.name for c in companions] == list(files[1:])
    for c in companions:
        assert c.sha256 == hashlib.sha256((tmp_path / c.name).read_bytes()).hexdigest()


@pytest.mark.parametrize("name", NAMES)
def test_check_open_then_reopen_cuts_what_came_after_the_commit(tmp_path: Path, name: str) -> None:
    fmt = get_format(name)
    shard = fmt.shard_name("train", 0)
    w = fmt.create(tmp_path, shard, VOCAB)
    put(w, 5, 6)
    put(w, 7)
    w.sync()
    committed = open_record(w)
    put(w, 8, 9)  # written after the commit point
    w.sync()
    w.close()
    path = tmp_path / fmt.shard_files(shard)[0]
    before = path.read_bytes()
    checked = fmt.check_open(tmp_path, committed, VOCAB)
    assert path.read_bytes() == before, "check_open must only read"
    again = fmt.reopen(tmp_path, checked, VOCAB)
    put(again, 10)
    sealed = again.seal()
    assert path.read_bytes().endswith(id_bytes([5, 6, 7, 10], name))
    other = tmp_path / "never-stopped"
    other.mkdir()
    fresh = fmt.create(other, shard, VOCAB)
    put(fresh, 5, 6)
    put(fresh, 7)
    put(fresh, 10)
    assert fresh.seal() == sealed, "a resumed shard has the bytes of one never stopped"
    for f in fmt.shard_files(shard):
        assert (tmp_path / f).read_bytes() == (other / f).read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_open_shard_with_a_torn_header_resumes(tmp_path: Path, name: str) -> None:
    # A power cut while a seal rewrote the header (or while a new shard's first header
    # was written) leaves its first half new and the rest old: nothing committed is lost,
    # and the reopened shard writes a whole header again (the powerloss harness's tear).
    fmt = get_format(name)
    shard = fmt.shard_name("train", 0)
    w = fmt.create(tmp_path, shard, VOCAB)
    put(w, 5, 6, 7)
    w.sync()
    committed = open_record(w)
    w.close()
    path = tmp_path / fmt.shard_files(shard)[0]
    twin = tmp_path / "twin"
    twin.mkdir()
    sealed = fmt.create(twin, shard, VOCAB)
    put(sealed, 5, 6, 7)
    sealed.seal()
    at_zero, at_n = path.read_bytes(), (twin / shard).read_bytes()
    start = len(at_zero) - len(id_bytes([5, 6, 7], name))
    for torn in (at_n[: start // 2] + at_zero[start // 2 :],
                 bytes(start // 2) + at_zero[start // 2 :]):
        path.write_bytes(torn)
        again = fmt.reopen(tmp_path, fmt.check_open(tmp_path, committed, VOCAB), VOCAB)
        assert path.read_bytes() == at_zero, "the reopened shard's header is whole again"
        again.close()


@pytest.mark.parametrize("name", NAMES)
def test_check_open_refuses_changed_or_short_shards(tmp_path: Path, name: str) -> None:
    fmt = get_format(name)
    shard = fmt.shard_name("val", 0)
    w = fmt.create(tmp_path, shard, VOCAB)
    put(w, 1, 2, 3)
    w.sync()
    w.close()
    path = tmp_path / fmt.shard_files(shard)[0]
    with pytest.raises(IntegrityError, match=r"its first 3 ids do not match the checkpoint"):
        fmt.check_open(tmp_path, OpenFile(shard, 3, 1, "0" * 64, (3,), (3,)), VOCAB)
    lost = (r"(?s)A power loss .* or a change made by hand, can cause this.* Delete .* to start "
            r"over \(rerun the command without --resume")
    with pytest.raises(IntegrityError, match=r"missing or shorter than its 4 committed ids"):
        fmt.check_open(tmp_path, OpenFile(shard, 4, 1, "0" * 64, (4,), (4,)), VOCAB)
    with pytest.raises(IntegrityError, match=lost):
        fmt.check_open(tmp_path, OpenFile(shard, 4, 1, "0" * 64, (4,), (4,)), VOCAB)
    path.unlink()
    with pytest.raises(IntegrityError, match=r"missing or shorter"):
        fmt.check_open(tmp_path, OpenFile(shard, 0, 0, "0" * 64, (), ()), VOCAB)


def scan_of(values: list[int], count_id: int) -> IdScan:
    """What the pass that hashes ``values`` should see of ``count_id``, by list operations."""
    at = [i for i, v in enumerate(values) if v == count_id]
    return IdScan(len(at), tuple(at[:2]), tuple(at[-2:]), values[0], values[-1])


@pytest.mark.parametrize("name", NAMES)
def test_check_sealed_and_check_open_scan_an_id_while_they_hash(tmp_path: Path, name: str) -> None:
    """Resume counts separators, and notes where the first two and last two are and the
    first and last ids, in the pass that checks the hash; the expected scans are list
    operations over the ids written (over 1 MB of ids: more than one read chunk), the hash
    ``hashlib`` over the file."""
    fmt = get_format(name)
    values = [5, 0, 0, 7, 7, 0, 299, 0] * 70_000 + [7, 3]  # 1 MB chunks: two or three
    sealed = fmt.shard_name("train", 0)
    w = fmt.create(tmp_path, sealed, VOCAB)
    put(w, *values)
    sha, _ = w.seal()
    assert sha == hashlib.sha256((tmp_path / sealed).read_bytes()).hexdigest()
    n = len(values)
    for count_id in (0, 3, 1):  # many, one (the last id), none
        got = fmt.check_sealed(tmp_path, sealed, n, sha, VOCAB, count_id)
        assert got == scan_of(values, count_id), count_id
    far = fmt.check_sealed(tmp_path, sealed, n, sha, VOCAB, 299)  # positions across chunks
    assert (far.head, far.tail) == ((6, 14), (559_990, 559_998))
    assert fmt.check_sealed(tmp_path, sealed, n, sha, VOCAB, None) == IdScan()
    with pytest.raises(IntegrityError, match=rf"its size does not hold {n - 1:,} ids"):
        fmt.check_sealed(tmp_path, sealed, n - 1, sha, VOCAB, 0)
    short = rf"shorter .* than its {n + 1:,} sealed ids\. A power loss"
    with pytest.raises(IntegrityError, match=short):
        fmt.check_sealed(tmp_path, sealed, n + 1, sha, VOCAB, 0)
    with pytest.raises(IntegrityError, match=r"the file was modified after it was sealed"):
        fmt.check_sealed(tmp_path, sealed, n, "0" * 64, VOCAB, 0)

    w = fmt.create(tmp_path, fmt.shard_name("train", 1), VOCAB)
    put(w, *values[:1000])
    w.sync()
    record = open_record(w)
    w.close()
    want = scan_of(values[:1000], 0)
    if record.doc_lengths is not None:  # a format that indexes documents: every position,
        # so resume can check the recorded lengths against them
        want = replace(want, every=tuple(i for i, v in enumerate(values[:1000]) if v == 0))
    assert fmt.check_open(tmp_path, record, VOCAB, 0).scan == want
    assert fmt.check_open(tmp_path, record, VOCAB, None).scan == IdScan()


def manifest_for(entries: list[ManifestFile], name: str, sep: int | None = 0) -> Manifest:
    fmt = get_format(name)
    m = {
        "version": "v2", "dataset": "d", "tokenizer_id": "t", "tokenizer_sha256": "0" * 64,
        "vocab_size": VOCAB, "doc_sep_id": sep, "sep_position": "prepend", "format": name,
        "dtype": fmt.dtype_name(VOCAB), "bin_version": fmt.layout_version(VOCAB),
        "max_file_tokens": 10, "corpus_manifest_sha256": "0" * 64,
        "source": {"kind": "parquet", "uri": "u", "revision": None, "text_column": "text",
                   "split_column": None, "files": [], "rows_visited": 0,
                   "empty_rows_skipped": 0, "prefix_sha256": "0" * 64},
        "recipe": {}, "val_bytes_per_token": None,
        "totals": {"train": {"n_tokens": 0, "n_docs": 0, "n_files": 0}},
        "files": [e.to_json() for e in entries],
    }  # fmt: skip
    return Manifest.from_json(m)


@pytest.mark.parametrize("name", NAMES)
def test_check_shard_and_describe(tmp_path: Path, name: str) -> None:
    fmt = get_format(name)
    shard = fmt.shard_name("train", 0)
    w = fmt.create(tmp_path, shard, VOCAB)
    put(w, 0, 4, 5)
    put(w, 0, 6)
    sha, companions = w.seal()
    good = ManifestFile(shard, "train", 5, 2, sha, companions)
    m = manifest_for([good], name)
    assert fmt.check_shard(tmp_path, good, m) == []
    assert fmt.map_ids(tmp_path, good, m).tolist() == [0, 4, 5, 0, 6]
    problems = fmt.check_shard(tmp_path, ManifestFile(shard, "train", 5, 3, sha, companions), m)
    assert f"{shard}: 2 separators for 3 documents" in problems
    wrong = ManifestFile(shard, "train", 5, 2, "f" * 64, companions)
    assert any("SHA-256" in p for p in fmt.check_shard(tmp_path, wrong, m))
    line, got = fmt.describe(tmp_path / fmt.shard_files(shard)[0], m.dtype)
    assert Path(shard).name in line and "n = 5," in line
    assert [int(i) for i in got] == [0, 4, 5, 0, 6]
    (tmp_path / fmt.shard_files(shard)[0]).unlink()
    assert fmt.check_shard(tmp_path, good, m) == [f"{shard}: missing"]


@pytest.mark.parametrize("name", NAMES)
def test_a_sealed_shard_continued_equals_one_never_sealed(tmp_path: Path, name: str) -> None:
    # An incremental refresh takes a (copied) published shard back as open and extends it:
    # the result must be the bytes of a shard written in one go.
    fmt = get_format(name)
    shard = fmt.shard_name("train", 3)
    w = fmt.create(tmp_path, shard, VOCAB)
    put(w, 0, 5, 6)
    put(w, 0, 7)
    sha, companions = w.seal()
    entry = ManifestFile(shard, "train", 5, 2, sha, companions)
    before = {f: (tmp_path / f).read_bytes() for f in fmt.shard_files(shard)}
    checked = fmt.continue_sealed(tmp_path, entry, manifest_for([entry], name), VOCAB)
    assert checked.n == 5
    assert {f: (tmp_path / f).read_bytes() for f in before} == before, "it must only read"
    again = fmt.reopen(tmp_path, checked, VOCAB)
    # The published ids are the continued shard's first segment.
    assert (again.ids_chain, again.segments) == segment_chain(
        id_bytes([0, 5, 6, 0, 7], name), width=WIDTH_BYTES[name])
    put(again, 0, 299)
    sealed = again.seal()
    other = tmp_path / "one-go"
    other.mkdir()
    fresh = fmt.create(other, shard, VOCAB)
    put(fresh, 0, 5, 6)
    put(fresh, 0, 7)
    put(fresh, 0, 299)
    assert fresh.seal() == sealed
    for f in fmt.shard_files(shard):
        assert (tmp_path / f).read_bytes() == (other / f).read_bytes(), f


@pytest.mark.parametrize("name", NAMES)
def test_continue_sealed_refuses_a_shard_that_is_not_its_entry(tmp_path: Path, name: str) -> None:
    fmt = get_format(name)
    shard = fmt.shard_name("val", 0)
    w = fmt.create(tmp_path, shard, VOCAB)
    put(w, 0, 1, 2)
    sha, companions = w.seal()
    longer = ManifestFile(shard, "val", 4, 1, sha, companions)
    with pytest.raises(IntegrityError, match=r"cannot be continued|manifest lists"):
        fmt.continue_sealed(tmp_path, longer, manifest_for([longer], name), VOCAB)

