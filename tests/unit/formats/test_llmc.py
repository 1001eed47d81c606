"""The llm.c ``.bin`` file (docs/format.md, llmc): exact bytes, versions, every rejected case.

Expected bytes are built here with ``struct`` from the spec's tables, never with prep's own
``pack_header``.
"""

from __future__ import annotations

import errno
import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest
from format_readers import segment_chain

from prep.errors import FormatError, InputError
from prep.formats.idfile import INLINE_BYTES, IdFileWriter
from prep.formats.llmc import BinWriter, hash_ids_prefix, read_bin, read_header, write_bin
from prep.formats.segments import SegmentChain

MAGIC = 20240520


def spec_header(version: int, n: int, vocab_size: int, magic: int = MAGIC) -> bytes:
    """The 1024-byte header from the spec's table: 256 little-endian int32."""
    return struct.pack("<256i", magic, version, n, vocab_size, *([0] * 252))


def spec_file(ids: list[int], vocab_size: int, version: int) -> bytes:
    fmt = "H" if version == 1 else "I"
    return spec_header(version, len(ids), vocab_size) + struct.pack(f"<{len(ids)}{fmt}", *ids)


# -- the worked example -----------------------------------------------------------------------


def test_worked_example_is_1030_bytes_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    sha = write_bin(path, [1, 2, 3], 256)
    raw = path.read_bytes()
    assert len(raw) == 1030
    # The spec's listing, offset by offset.
    assert raw[0:4] == bytes.fromhex("88d83401")
    assert raw[4:8] == bytes.fromhex("01000000")
    assert raw[8:12] == bytes.fromhex("03000000")
    assert raw[12:16] == bytes.fromhex("00010000")
    assert raw[16:1024] == b"\0" * 1008
    assert raw[1024:] == bytes.fromhex("010002000300")
    assert raw == spec_file([1, 2, 3], 256, 1)
    assert sha == hashlib.sha256(raw).hexdigest()


def test_read_bin_round_trip(tmp_path: Path) -> None:
    ids = [0, 255, 7, 7, 128]
    write_bin(tmp_path / "a.bin", ids, 256)
    header, got = read_bin(tmp_path / "a.bin")
    assert (header.version, header.n, header.vocab_size) == (1, 5, 256)
    assert got.dtype == np.dtype("<u2")
    assert got.tolist() == ids
    assert read_header(tmp_path / "a.bin") == header


def test_empty_file_is_just_a_header(tmp_path: Path) -> None:
    write_bin(tmp_path / "e.bin", [], 256)
    assert (tmp_path / "e.bin").read_bytes() == spec_header(1, 0, 256)
    header, got = read_bin(tmp_path / "e.bin")
    assert header.n == 0
    assert got.tolist() == []


# -- versions ---------------------------------------------------------------------------------


def test_vocab_65536_is_version_1_uint16(tmp_path: Path) -> None:
    ids = [0, 1, 65535, 40000]
    write_bin(tmp_path / "v1.bin", ids, 65536)
    raw = (tmp_path / "v1.bin").read_bytes()
    assert raw == spec_file(ids, 65536, 1)
    assert len(raw) == 1024 + 2 * len(ids)
    header, got = read_bin(tmp_path / "v1.bin")
    assert header.version == 1
    assert got.tolist() == ids


def test_vocab_65537_is_version_2_uint32(tmp_path: Path) -> None:
    ids = [0, 65535, 65536, 3]
    write_bin(tmp_path / "v2.bin", ids, 65537)
    raw = (tmp_path / "v2.bin").read_bytes()
    assert raw == spec_file(ids, 65537, 2)
    assert len(raw) == 1024 + 4 * len(ids)
    header, got = read_bin(tmp_path / "v2.bin")
    assert (header.version, header.vocab_size) == (2, 65537)
    assert got.dtype == np.dtype("<u4")
    assert got.tolist() == ids


def test_large_vocab_version_2(tmp_path: Path) -> None:
    ids = [128255, 0, 100000]
    write_bin(tmp_path / "v.bin", ids, 128256)
    assert (tmp_path / "v.bin").read_bytes() == spec_file(ids, 128256, 2)


# -- writing out-of-vocabulary ids ------------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "vocab", "bad"),
    [([1, 256, 2], 256, "256"), ([1, 70000], 65536, "70,000"), ([3, -1, 2], 256, "-1")],
)
def test_write_bin_rejects_id_outside_vocab_and_writes_nothing(
    tmp_path: Path, ids: list[int], vocab: int, bad: str
) -> None:
    path = tmp_path / "bad.bin"
    with pytest.raises(InputError) as info:
        write_bin(path, ids, vocab)
    msg = str(info.value)
    assert f"token id {bad} " in msg
    assert "outside the vocabulary" in msg
    assert f"{vocab:,}" in msg
    assert not path.exists()


def test_write_bin_rejection_leaves_an_existing_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "keep.bin"
    write_bin(path, [5, 6], 256)
    before = path.read_bytes()
    with pytest.raises(InputError, match="token id 300 "):
        write_bin(path, [300], 256)
    assert path.read_bytes() == before


def test_write_bin_never_wraps_uint16(tmp_path: Path) -> None:
    # 65536 would silently become 0 in uint16; with V > 65536 it is version 2 instead.
    write_bin(tmp_path / "w.bin", [65536], 65537)
    assert read_bin(tmp_path / "w.bin")[1].tolist() == [65536]


def test_write_bin_rejects_non_integers(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="ids must be integers"):
        write_bin(tmp_path / "f.bin", [1.5, 2.0], 256)
    assert not (tmp_path / "f.bin").exists()


def test_vocab_too_large_for_the_int32_header(tmp_path: Path) -> None:
    path = tmp_path / "huge.bin"
    with pytest.raises(InputError) as info:
        write_bin(path, [1], 2**31)
    assert "2,147,483,648" in str(info.value)
    assert not path.exists()


def test_largest_int32_vocab_is_written(tmp_path: Path) -> None:
    write_bin(tmp_path / "v.bin", [2**31 - 2], 2**31 - 1)
    assert (tmp_path / "v.bin").read_bytes() == spec_file([2**31 - 2], 2**31 - 1, 2)


# -- reading bad files ------------------------------------------------------------------------


def test_read_rejects_wrong_magic(tmp_path: Path) -> None:
    path = tmp_path / "m.bin"
    path.write_bytes(spec_header(1, 1, 256, magic=20240521) + struct.pack("<H", 1))
    with pytest.raises(FormatError) as info:
        read_bin(path)
    assert "m.bin" in str(info.value)
    assert "magic 20240521 is not an llm.c token file's" in str(info.value)
    # llm.c's Llama-3 magic comes only with version 7 (uint32 ids).
    path.write_bytes(spec_header(1, 1, 256, magic=20240801) + struct.pack("<H", 1))
    with pytest.raises(FormatError, match="unknown version 1 for magic 20240801"):
        read_bin(path)


@pytest.mark.parametrize("version", [0, 3, -1, 7])
def test_read_rejects_unknown_version(tmp_path: Path, version: int) -> None:
    path = tmp_path / "v.bin"
    path.write_bytes(spec_header(version, 0, 256))
    with pytest.raises(FormatError) as info:
        read_bin(path)
    assert f"unknown version {version}" in str(info.value)
    assert "v.bin" in str(info.value)


def test_read_rejects_truncated_ids(tmp_path: Path) -> None:
    path = tmp_path / "t.bin"
    path.write_bytes(spec_file([1, 2, 3], 256, 1)[:-1])  # 1029 bytes, n = 3 needs 1030
    with pytest.raises(FormatError) as info:
        read_bin(path)
    msg = str(info.value)
    assert "1,029 bytes" in msg
    assert "n = 3" in msg
    assert "1,030" in msg
    assert "truncated" in msg


def test_read_rejects_extended_file(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(spec_file([1, 2, 3], 256, 1) + b"\x04\x00")
    with pytest.raises(FormatError) as info:
        read_bin(path)
    assert "1,032 bytes" in str(info.value)
    assert "n = 3" in str(info.value)


def test_read_rejects_open_file_whose_header_says_zero(tmp_path: Path) -> None:
    # An unsealed BinWriter file: n = 0 in the header but ids after it.
    path = tmp_path / "o.bin"
    path.write_bytes(spec_header(1, 0, 256) + struct.pack("<2H", 1, 2))
    with pytest.raises(FormatError, match="n = 0"):
        read_bin(path)


@pytest.mark.parametrize("size", [0, 16, 1023])
def test_read_rejects_file_shorter_than_header(tmp_path: Path, size: int) -> None:
    path = tmp_path / "s.bin"
    path.write_bytes(spec_header(1, 0, 256)[:size])
    with pytest.raises(FormatError) as info:
        read_bin(path)
    assert f"{size:,} bytes is shorter than the 1024-byte header" in str(info.value)


def test_read_rejects_id_at_or_above_header_vocab(tmp_path: Path) -> None:
    path = tmp_path / "i.bin"
    path.write_bytes(spec_header(1, 3, 256) + struct.pack("<3H", 1, 256, 2))
    with pytest.raises(FormatError) as info:
        read_bin(path)
    assert "id 256 is outside the vocabulary size 256" in str(info.value)
    assert "i.bin" in str(info.value)


def test_read_accepts_id_just_below_header_vocab(tmp_path: Path) -> None:
    path = tmp_path / "ok.bin"
    path.write_bytes(spec_header(1, 2, 256) + struct.pack("<2H", 255, 0))
    assert read_bin(path)[1].tolist() == [255, 0]


def test_header_vocab_zero_accepts_any_id(tmp_path: Path) -> None:
    # What llm.c itself writes: V = 0 means "unknown", ids are not checked.
    path = tmp_path / "llmc.bin"
    path.write_bytes(spec_header(1, 3, 0) + struct.pack("<3H", 65535, 0, 50256))
    header, ids = read_bin(path)
    assert header.vocab_size == 0
    assert ids.tolist() == [65535, 0, 50256]

    path2 = tmp_path / "llmc2.bin"
    path2.write_bytes(spec_header(2, 1, 0) + struct.pack("<I", 2**32 - 1))
    assert read_bin(path2)[1].tolist() == [2**32 - 1]


def test_read_rejects_negative_n(tmp_path: Path) -> None:
    path = tmp_path / "neg.bin"
    path.write_bytes(spec_header(1, -1, 256))
    with pytest.raises(FormatError, match="negative token count -1"):
        read_bin(path)


# -- BinWriter --------------------------------------------------------------------------------


def test_binwriter_streaming_equals_write_bin(tmp_path: Path) -> None:
    chunks = [[1, 2], [], [3], [250, 0, 9, 9]]
    w = BinWriter(tmp_path / "s.bin", 256)
    for c in chunks:
        w.append(np.array(c, dtype=np.int64))
    sha, _ = w.seal()
    flat = [i for c in chunks for i in c]
    write_bin(tmp_path / "w.bin", flat, 256)
    raw = (tmp_path / "s.bin").read_bytes()
    assert raw == (tmp_path / "w.bin").read_bytes() == spec_file(flat, 256, 1)
    assert sha == hashlib.sha256(raw).hexdigest()


def test_binwriter_open_file_header_says_zero_until_sealed(tmp_path: Path) -> None:
    w = BinWriter(tmp_path / "o.bin", 256)
    w.append(np.array([7, 8], dtype=np.uint8))
    w.sync()
    raw = (tmp_path / "o.bin").read_bytes()
    assert raw == spec_header(1, 0, 256) + struct.pack("<2H", 7, 8)
    w.seal()
    assert (tmp_path / "o.bin").read_bytes()[8:12] == struct.pack("<i", 2)


@pytest.mark.parametrize(("vocab", "fmt"), [(256, "<{}H"), (100_000, "<{}I")])
def test_ids_chain_links_each_appended_segment(tmp_path: Path, vocab: int, fmt: str) -> None:
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    w = BinWriter(tmp_path / "h.bin", vocab)
    assert (w.ids_chain, w.segments) == segment_chain()
    w.append(np.array(ids[:3]))
    w.append(np.array(ids[3:]), digest=b"ignored: the ids are not in the file's dtype")
    width = struct.calcsize(fmt.format(1))
    first, rest = struct.pack(fmt.format(3), *ids[:3]), struct.pack(fmt.format(5), *ids[3:])
    assert (w.ids_chain, w.segments) == segment_chain(first, rest, width=width)
    w.close()


def test_binwriter_rejects_more_than_2_31_minus_1_ids(tmp_path: Path) -> None:
    w = BinWriter(tmp_path / "big.bin", 256)
    w.append(np.array([1]))
    huge = np.broadcast_to(np.uint8(0), (2**31 - 1,))  # no memory behind it
    with pytest.raises(FormatError, match=r"more than 2\*\*31-1 ids"):
        w.append(huge)
    assert w.n == 1
    w.seal()
    assert (tmp_path / "big.bin").stat().st_size == 1026


def test_resume_truncates_to_n_and_resets_header(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    w = BinWriter(path, 256)
    w.append(np.array([10, 11, 12, 13, 14]))
    w.seal()  # as if a crash hit after sealing wrote n = 5
    with open(path, "ab") as f:
        f.write(b"\xff\xff\xee")  # and junk after the committed ids
    hasher = hash_ids_prefix(path, 3, 2)
    assert hasher.hexdigest() == hashlib.sha256(struct.pack("<3H", 10, 11, 12)).hexdigest()
    segments = SegmentChain()
    segments.add(3, bytes.fromhex(hasher.hexdigest()))

    r = BinWriter.resume(path, 256, 3, segments)
    r.sync()
    assert path.read_bytes() == spec_header(1, 0, 256) + struct.pack("<3H", 10, 11, 12)
    assert r.n == 3
    r.append(np.array([20, 21]))
    assert (r.ids_chain, r.segments) == segment_chain(struct.pack("<3H", 10, 11, 12),
                                                      struct.pack("<2H", 20, 21))
    r.seal()
    assert path.read_bytes() == spec_file([10, 11, 12, 20, 21], 256, 1)


def test_resume_at_zero_gives_an_empty_open_file(tmp_path: Path) -> None:
    path = tmp_path / "z.bin"
    path.write_bytes(spec_file([1, 2], 256, 1))
    r = BinWriter.resume(path, 256, 0, SegmentChain())
    r.sync()
    assert path.read_bytes() == spec_header(1, 0, 256)
    r.close()


def test_hash_ids_prefix_rejects_a_short_file(tmp_path: Path) -> None:
    path = tmp_path / "p.bin"
    path.write_bytes(spec_header(1, 0, 256) + struct.pack("<2H", 1, 2))
    with pytest.raises(FormatError, match="fewer than the 3 committed ids"):
        hash_ids_prefix(path, 3, 2)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_write_that_fails_in_the_background_is_raised_by_the_next_sync() -> None:
    """Large appends are written by a background thread; a full disk (/dev/full: every
    write is ENOSPC) must still stop the commit that would have named them."""
    w = IdFileWriter(Path("/dev/full"), np.dtype("<u2"), 256)  # headerless: nothing to write yet
    w.append(np.ones(INLINE_BYTES // 2, dtype="<u2"))  # INLINE_BYTES: the thread writes them
    with pytest.raises(OSError) as info:
        w.sync()
    assert info.value.errno == errno.ENOSPC
    w.close()


def test_a_small_append_that_cannot_be_written_raises_at_once() -> None:
    """A few ids are written by the appending thread itself: the full disk stops the append,
    which counts nothing."""
    w = IdFileWriter(Path("/dev/full"), np.dtype("<u2"), 256)
    with pytest.raises(OSError) as info:
        w.append(np.array([1, 2, 3], dtype="<u2"))
    assert info.value.errno == errno.ENOSPC
    assert w.n == 0 and w.segments == ()
    w.close()
