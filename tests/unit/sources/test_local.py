"""Local sources (docs/format.md, stream step 1): resolution, ordering, and unreadable input."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import write_parquet

from prep.errors import InputError, IntegrityError
from prep.sources import hash_and_check, iter_batches, resolve_local


def read_all(src_spec: str, text_column: str = "text", split_column: str | None = None
             ) -> list[str]:
    src = resolve_local(src_spec)
    out: list[str] = []
    for f in src.files:
        for texts, _ in iter_batches(src, f, text_column, split_column):
            out.extend(texts)
    return out


# -- resolution -------------------------------------------------------------------------------


def test_single_file_root_is_its_parent(tmp_path: Path) -> None:
    p = write_parquet(tmp_path / "d" / "one.parquet", ["x"])
    src = resolve_local(str(p))
    assert src.kind == "parquet"
    assert src.uri == str(p)
    assert src.root == str((tmp_path / "d").resolve())
    assert [(f.path, f.size) for f in src.files] == [("one.parquet", p.stat().st_size)]
    assert src.files[0].sha256 is None  # hashed when read


def test_directory_is_searched_recursively(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    write_parquet(root / "top.parquet", ["t"])
    write_parquet(root / "x" / "y" / "z" / "deep.parquet", ["d"])
    write_parquet(root / "x" / "mid.parquet", ["m"])
    (root / "x" / "notes.txt").write_text("not parquet")
    (root / "x" / "data.parquet.bak").write_bytes(b"junk")
    src = resolve_local(str(root))
    assert src.root == str(root.resolve())
    assert [f.path for f in src.files] == ["top.parquet", "x/mid.parquet", "x/y/z/deep.parquet"]


def test_files_sorted_by_relative_posix_string(tmp_path: Path) -> None:
    root = tmp_path / "c"
    names = ["a/b.parquet", "a.parquet", "a/10.parquet", "a/9.parquet", "B.parquet", "a-b.parquet"]
    for name in names:
        write_parquet(root / name, [name])
    src = resolve_local(str(root))
    # Plain string order by code point: "-" (2d) < "." (2e) < "/" (2f); "1" < "9" < "b";
    # uppercase before lowercase. Not natural order, not per-directory order.
    expected = ["B.parquet", "a-b.parquet", "a.parquet", "a/10.parquet", "a/9.parquet",
                "a/b.parquet"]
    assert [f.path for f in src.files] == expected == sorted(names)
    assert read_all(str(root)) == expected


def test_glob_matches_and_root_is_leading_directories(tmp_path: Path) -> None:
    root = tmp_path / "g"
    write_parquet(root / "2024" / "p1.parquet", ["p1"])
    write_parquet(root / "2024" / "p0.parquet", ["p0"])
    write_parquet(root / "2023" / "old.parquet", ["old"])
    write_parquet(root / "2024" / "skip.parquet", ["skip"])
    spec = str(root / "*" / "p*.parquet")
    src = resolve_local(spec)
    assert src.uri == spec
    assert src.root == str(root.resolve())
    assert [f.path for f in src.files] == ["2024/p0.parquet", "2024/p1.parquet"]


def test_recursive_glob(tmp_path: Path) -> None:
    root = tmp_path / "r"
    write_parquet(root / "a" / "b" / "x.parquet", ["x"])
    write_parquet(root / "y.parquet", ["y"])
    src = resolve_local(str(root / "**" / "*.parquet"))
    assert [f.path for f in src.files] == ["a/b/x.parquet", "y.parquet"]


def test_relative_spec_resolves_against_base(tmp_path: Path) -> None:
    write_parquet(tmp_path / "data" / "f.parquet", ["x"])
    src = resolve_local("data", base=tmp_path)
    assert src.uri == "data"
    assert src.root == str((tmp_path / "data").resolve())
    assert [f.path for f in src.files] == ["f.parquet"]


def test_relative_and_absolute_spelling_give_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_parquet(tmp_path / "data" / "sub" / "f.parquet", ["x"])
    monkeypatch.chdir(tmp_path)
    rel = resolve_local("data")
    absolute = resolve_local(str(tmp_path / "data"))
    assert [f.identity() for f in rel.files] == [f.identity() for f in absolute.files]


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(InputError) as info:
        resolve_local(str(missing))
    msg = str(info.value)
    assert f"--source {missing}: no such file or directory" in msg
    assert "hf://datasets/OWNER/NAME" in msg


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    d = tmp_path / "empty"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "readme.txt").write_text("no parquet here")
    with pytest.raises(InputError) as info:
        resolve_local(str(d))
    assert f"--source {d}: the directory holds no Parquet, Arrow or JSON Lines files" in str(
        info.value)
    assert "recursively" in str(info.value)


def test_non_matching_glob_is_an_error(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", ["x"])
    spec = str(tmp_path / "*.arrow")
    with pytest.raises(InputError) as info:
        resolve_local(spec)
    assert f"--source {spec}: the pattern matches no files" in str(info.value)


# -- reading ----------------------------------------------------------------------------------


def test_rows_in_stored_order_across_row_groups_and_batches(tmp_path: Path) -> None:
    texts = [f"row {i}" for i in range(5000)]  # > one 4096-row read batch
    write_parquet(tmp_path / "a.parquet", texts, row_group_size=333)
    assert read_all(str(tmp_path / "a.parquet")) == texts


def test_large_string_column_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "l.parquet"
    pq.write_table(pa.table({"text": pa.array(["x", "yé"], type=pa.large_string())}), path)
    assert read_all(str(path)) == ["x", "yé"]


def test_dictionary_encoded_string_columns_are_strings(tmp_path: Path) -> None:
    path = tmp_path / "cat.parquet"
    table = pa.table({
        "text": pa.array(["a doc", "b doc", "c doc"]).dictionary_encode(),
        "split": pa.array(["train", "val", "train"]).dictionary_encode(),
    })
    pq.write_table(table, path)
    assert pa.types.is_dictionary(pq.ParquetFile(path).schema_arrow.field("split").type)
    src = resolve_local(str(path))
    got = list(iter_batches(src, src.files[0], "text", "split"))
    assert got == [(["a doc", "b doc", "c doc"], ["train", "val", "train"])]


def test_nulls_come_through_as_none(tmp_path: Path) -> None:
    write_parquet(tmp_path / "n.parquet", ["a", None, "b"])
    assert read_all(str(tmp_path / "n.parquet")) == ["a", None, "b"]


def test_reading_fills_the_file_sha256(tmp_path: Path) -> None:
    p = write_parquet(tmp_path / "a.parquet", ["x", "y"])
    src = resolve_local(str(p))
    list(iter_batches(src, src.files[0], "text", None))
    assert src.files[0].sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


def test_missing_column_lists_existing_columns(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", ["x"], body=["y"], lang=["en"])
    src = resolve_local(str(tmp_path))
    with pytest.raises(InputError) as info:
        list(iter_batches(src, src.files[0], "content", None))
    msg = str(info.value)
    assert msg.startswith('a.parquet: no column "content"')
    assert '"text", "body", "lang"' in msg
    assert "--text-column" in msg
    assert info.value.path == "a.parquet"


def test_missing_split_column_names_the_flag(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", ["x"])
    src = resolve_local(str(tmp_path))
    with pytest.raises(InputError) as info:
        list(iter_batches(src, src.files[0], "text", "split"))
    assert 'a.parquet: no column "split"; it has "text"' in str(info.value)
    assert "--split-column" in str(info.value)


def test_int_column_names_the_file_and_type(tmp_path: Path) -> None:
    write_parquet(tmp_path / "sub" / "ints.parquet", ["x", "y"], n=[1, 2])
    src = resolve_local(str(tmp_path))
    with pytest.raises(InputError) as info:
        list(iter_batches(src, src.files[0], "n", None))
    msg = str(info.value)
    assert msg.startswith('sub/ints.parquet row 0: column "n" holds int64, expected a string')
    assert "--text-column" in msg


def test_garbage_with_parquet_name_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"this is not a parquet file, just text\n" * 4)
    src = resolve_local(str(tmp_path))
    with pytest.raises(InputError) as info:
        list(iter_batches(src, src.files[0], "text", None))
    msg = str(info.value)
    assert msg.startswith("bad.parquet: not a readable Parquet file")
    assert "remove or replace the file" in msg
    assert info.value.path == "bad.parquet"
    assert info.value.__cause__ is not None


def test_truncated_parquet_is_an_input_error(tmp_path: Path) -> None:
    p = write_parquet(tmp_path / "t.parquet", [f"row {i}" for i in range(200)])
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) // 2])
    src = resolve_local(str(tmp_path))
    with pytest.raises(InputError) as info:
        list(iter_batches(src, src.files[0], "text", None))
    assert str(info.value).startswith("t.parquet: not a readable Parquet file")


def test_empty_file_with_parquet_name_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "zero.parquet").write_bytes(b"")
    src = resolve_local(str(tmp_path))
    with pytest.raises(InputError, match=r"^zero\.parquet: not a readable Parquet file"):
        list(iter_batches(src, src.files[0], "text", None))


def test_corrupt_page_header_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "c.parquet"
    pq.write_table(
        pa.table({"text": [f"row {i}" for i in range(300)]}), p, row_group_size=100
    )
    offset = pq.ParquetFile(p).metadata.row_group(2).column(0).data_page_offset
    raw = bytearray(p.read_bytes())
    for k in range(16):
        raw[offset + k] ^= 0xFF
    p.write_bytes(bytes(raw))
    src = resolve_local(str(p))
    with pytest.raises(InputError) as info:
        list(iter_batches(src, src.files[0], "text", None))
    # The footer is intact, so the file opens; the damage shows while reading its data.
    assert str(info.value).startswith("c.parquet: Parquet data is corrupt")
    assert info.value.path == "c.parquet"


# -- identity checks --------------------------------------------------------------------------


def test_size_change_since_resolution_is_refused(tmp_path: Path) -> None:
    p = write_parquet(tmp_path / "a.parquet", ["x"])
    src = resolve_local(str(p))
    write_parquet(p, ["x", "a longer second row"])
    with pytest.raises(IntegrityError) as info:
        hash_and_check(src, src.files[0])
    assert f"source file a.parquet is {os.path.getsize(p):,} bytes" in str(info.value)
    assert "source changed" in str(info.value)


def test_expected_sha256_mismatch_is_refused(tmp_path: Path) -> None:
    p = write_parquet(tmp_path / "a.parquet", ["x"])
    src = resolve_local(str(p))
    src.files[0].expected_sha256 = "0" * 64
    with pytest.raises(IntegrityError) as info:
        list(iter_batches(src, src.files[0], "text", None))
    actual = hashlib.sha256(p.read_bytes()).hexdigest()
    assert f"SHA-256 {actual[:12]}" in str(info.value)
    assert "changed since the run started" in str(info.value)


# -- symlinks ---------------------------------------------------------------------------------


def test_symlinked_files_keep_their_names_under_the_root(tmp_path: Path) -> None:
    # The layout huggingface_hub's cache uses: a snapshot of symlinks into a blob store.
    blobs = tmp_path / "blobs"
    write_parquet(blobs / "9f2c1e", ["from the blob"])
    snap = tmp_path / "snapshots" / "abc"
    (snap / "data").mkdir(parents=True)
    (snap / "data" / "train-0.parquet").symlink_to(Path("../../../blobs/9f2c1e"))
    assert (snap / "data" / "train-0.parquet").is_file()
    src = resolve_local(str(snap))
    assert [f.path for f in src.files] == ["data/train-0.parquet"]
    assert read_all(str(snap)) == ["from the blob"]


def test_symlinked_file_inside_the_root_is_listed_under_its_own_name(tmp_path: Path) -> None:
    write_parquet(tmp_path / "real" / "x.parquet", ["x"])
    (tmp_path / "link.parquet").symlink_to(Path("real/x.parquet"))
    src = resolve_local(str(tmp_path))
    assert [f.path for f in src.files] == ["link.parquet", "real/x.parquet"]


def _rewrite_in_place(path: Path, *, keep_mtime: bool) -> None:
    st = path.stat()
    data = path.read_bytes()
    with open(path, "r+b") as f:
        f.write(bytes(b ^ 0x55 for b in data))
    # A sync tool that preserves times leaves only ctime to tell (distinct from the hash's
    # on kernels with fine-grained timestamps, 6.13+); else a writer stamps a new mtime.
    mtime = st.st_mtime_ns if keep_mtime else st.st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(st.st_atime_ns, mtime))
    assert path.stat().st_size == st.st_size


@pytest.mark.parametrize("keep_mtime", [False, True])
def test_a_file_rewritten_in_place_while_it_is_read_stops_the_rows(
    tmp_path: Path, keep_mtime: bool
) -> None:
    """Rows read after the file changed never reach the consumer: the recorded hash would
    not describe them."""
    path = write_parquet(
        tmp_path / "a.parquet", [f"row {i}" for i in range(300)], row_group_size=100
    )
    src = resolve_local(str(path))
    f = src.files[0]
    rows = iter_batches(src, f, "text", None)
    first, _ = next(rows)
    assert first[0] == "row 0"
    assert f.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    _rewrite_in_place(path, keep_mtime=keep_mtime)
    with pytest.raises(IntegrityError) as e:
        next(rows)
    assert "source file a.parquet changed while prep was reading it" in str(e.value)


# -- bucket URIs --------------------------------------------------------------------------


SECRET = "s3cr3t-in-the-uri-0042"


@pytest.mark.parametrize("flag, uri", [
    ("--source", f"s3://AKIAEXAMPLE:{SECRET}@corpus-bucket/web/"),
    ("--source", f"s3://corpus-bucket/web/?access_key=AKIAEXAMPLE&secret_key={SECRET}"),
    ("--source", f"gs://{SECRET}@corpus-bucket/web/"),
    ("--out", f"s3://AKIAEXAMPLE:{SECRET}@out-bucket/datasets/web"),
])
def test_a_credential_in_a_bucket_uri_is_refused_without_repeating_it(
        cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, uri: str) -> None:
    # pyarrow's FileSystem.from_uri would take it; prep takes credentials from the
    # environment only, and says so before anything is listed, written or logged.
    monkeypatch.chdir(tmp_path)
    source = ["--source", uri] if flag == "--source" else ["--source", "sample"]
    out = uri if flag == "--out" else str(tmp_path / "out")
    r = cli("prepare", *source, "--tokenizer", "byte", "--out", out)
    assert r.code == 2, r.err
    assert "a key or secret in the URI is refused" in r.err
    assert ("GOOGLE_APPLICATION_CREDENTIALS" if uri.startswith("gs") else
            "AWS_SECRET_ACCESS_KEY") in r.err
    assert SECRET not in r.out + r.err
    assert "Traceback" not in r.err
    assert not any(SECRET.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
