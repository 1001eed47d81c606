"""Durable file primitives on real files: hashes against hashlib, atomic writes that leave
no temp file behind (also when the write fails), renames that never replace, the exchange
of two names, and the mountinfo reading of a mount point."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep import fsio
from prep.errors import OutputError


def test_hash_file_is_sha256_of_the_bytes_across_chunk_boundaries(tmp_path: Path) -> None:
    data = os.urandom(fsio._HASH_CHUNK * 2 + 123)
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert fsio.file_sha256(path) == hashlib.sha256(data).hexdigest()
    assert fsio.hash_file(path, hashlib.md5()).hexdigest() == hashlib.md5(data).hexdigest()


@settings(max_examples=40)
@given(data=st.binary(max_size=300), start=st.integers(0, 300), length=st.integers(0, 300))
def test_a_range_hashes_as_the_slice_or_says_how_short_it_is(
        data: bytes, start: int, length: int) -> None:
    f = io.BytesIO(data)
    if start + length <= len(data) or length == 0:  # nothing asked: nothing short
        got = fsio.hash_file(f, start=start, length=length).hexdigest()
        assert got == hashlib.sha256(data[start:start + length]).hexdigest()
    else:
        with pytest.raises(EOFError) as e:
            fsio.hash_file(f, start=start, length=length)
        short = length - max(0, len(data) - start)
        assert str(e.value) == f"{f}: {short:,} bytes short"
    assert fsio.hash_file(io.BytesIO(data), start=start).hexdigest() == \
        hashlib.sha256(data[start:]).hexdigest()


def test_an_open_file_is_hashed_from_start_without_being_closed(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    with open(path, "rb") as f:
        assert fsio.hash_file(f, start=4, length=3).hexdigest() == \
            hashlib.sha256(b"456").hexdigest()
        assert not f.closed


def test_atomic_write_replaces_the_content_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"old")
    fsio.atomic_write_bytes(path, b"new content")
    assert path.read_bytes() == b"new content"
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_failed_atomic_write_keeps_the_old_file_and_removes_its_temp(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"old")
    with pytest.raises(TypeError):
        fsio.atomic_write_bytes(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_stray_temps_finds_the_temp_files_of_interrupted_writes(tmp_path: Path) -> None:
    for name in (".a.json.x1.tmp", ".a.json.x0.tmp", ".b.bin.q.tmp", "a.json", ".a.json.keep",
                 "a.json.tmp"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in fsio.stray_temps(tmp_path, "a.json")] == [
        ".a.json.x0.tmp", ".a.json.x1.tmp"]
    assert [p.name for p in fsio.stray_temps(tmp_path)] == [
        ".a.json.x0.tmp", ".a.json.x1.tmp", ".b.bin.q.tmp"]
    assert fsio.temp_prefix("a.json") == ".a.json."


def test_make_dirs_creates_every_missing_level_and_leaves_an_existing_one(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    fsio.make_dirs(deep)
    assert deep.is_dir()
    (deep / "kept").write_bytes(b"x")
    fsio.make_dirs(deep)
    assert (deep / "kept").read_bytes() == b"x"


def test_rename_noreplace_moves_but_never_replaces(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    (src / "f").write_bytes(b"1")
    fsio.rename_noreplace(src, dst)
    assert (dst / "f").read_bytes() == b"1" and not src.exists()
    other = tmp_path / "other"
    other.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()  # plain rename(2) would silently replace an empty directory
    with pytest.raises(OutputError) as e:
        fsio.rename_noreplace(other, empty)
    assert str(e.value) == f"{empty} appeared while publishing; it was not replaced"
    assert other.is_dir() and empty.is_dir()


def test_exchange_swaps_two_names_or_says_it_cannot(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"A")
    b.write_bytes(b"B")
    if fsio.exchange(a, b):
        assert (a.read_bytes(), b.read_bytes()) == (b"B", b"A")
    else:  # no renameat2 here: nothing moved
        assert (a.read_bytes(), b.read_bytes()) == (b"A", b"B")


def test_exchange_of_a_missing_path_raises_the_os_error(tmp_path: Path) -> None:
    if fsio._libc() is None:
        pytest.skip("no renameat2 on this platform")
    (tmp_path / "a").write_bytes(b"A")
    with pytest.raises(FileNotFoundError):
        fsio.exchange(tmp_path / "a", tmp_path / "absent")


def test_pwrite_all_writes_at_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"." * 10)
    fd = os.open(path, os.O_RDWR)
    try:
        fsio.pwrite_all(fd, memoryview(b"abc"), 4)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"....abc..."


def test_canonical_path_resolves_directories_but_keeps_a_file_symlink_name(tmp_path: Path
                                                                          ) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "blob").write_bytes(b"x")
    (tmp_path / "link").symlink_to(real)
    (real / "named.json").symlink_to(real / "blob")
    assert fsio.canonical_path(str(tmp_path / "link") + "/") == str(real)
    assert fsio.canonical_path(str(tmp_path / "link" / "." / "named.json")) == \
        str(real / "named.json")
    assert fsio.canonical_path(str(real / ".." / "real" / "absent")) == str(real / "absent")


def test_cache_home_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path
                                          ) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert fsio.cache_home() == tmp_path / "prep"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert fsio.cache_home() == tmp_path / "home" / ".cache" / "prep"


def test_a_mount_point_is_seen_and_a_plain_directory_or_symlink_is_not(tmp_path: Path) -> None:
    assert fsio.is_mount_point(Path("/"))
    assert not fsio.is_mount_point(tmp_path)
    (tmp_path / "root").symlink_to("/")
    assert not fsio.is_mount_point(tmp_path / "root")
    assert not fsio.is_mount_point(tmp_path / "absent")


def test_mountinfo_escapes_are_undone() -> None:
    assert fsio._unescape_mount(b"/mnt/a\\040b\\011c\\012d\\134e") == b"/mnt/a b\tc\nd\\e"
