"""Seed 003's ``.npy`` shards: the header is NumPy's own (compared with what
``numpy.lib.format`` writes, for every shape up to 2**31-1 ids), a sealed shard is exactly
the bytes of ``np.save``, ``np.load`` reads it (memory-mapped too), an open one is refused by
name, and a damaged header is a ``FormatError`` saying what is wrong."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from prep.errors import FormatError
from prep.formats import get_format
from prep.formats.npy import HEADER_BYTES, NPY_KINDS, NpyHeader, unpack


def numpy_header(descr: str, n: int) -> bytes:
    """The version 1.0 header NumPy itself writes for a 1-D array of ``n`` ids."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": descr, "fortran_order": False, "shape": (n,)})
    return buf.getvalue()


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
@pytest.mark.parametrize("n", [0, 1, 9, 10, 65_536, 10**9, 2**31 - 1])
def test_header_is_numpys_for_any_shape(dtype: str, n: int) -> None:
    kind = NPY_KINDS[dtype]
    raw = kind.pack(n, 300)
    assert raw == numpy_header(np.dtype(dtype).newbyteorder("<").str, n)
    assert len(raw) == HEADER_BYTES
    assert unpack(raw, where="x.npy") == NpyHeader(kind, n)


def test_header_refuses_more_ids_than_a_shard_holds() -> None:
    with pytest.raises(FormatError, match="token count 2,147,483,648 does not fit"):
        NPY_KINDS["uint16"].pack(2**31, 300)


@pytest.mark.parametrize("vocab", [300, 65_536, 70_000])
def test_sealed_shard_is_np_saves_bytes_and_np_load_reads_it(tmp_path: Path, vocab: int) -> None:
    fmt = get_format("npy")
    name = fmt.shard_name("train", 0)
    assert name == "train_00000.npy" and fmt.shard_name("val", 12) == "val_00012.npy"
    w = fmt.create(tmp_path, name, vocab)
    values = np.array([0, 7, vocab - 1, 5], dtype=np.uint32)
    w.append(values[:3], [3])
    w.append(values[3:], [1])
    w.seal()
    want = values.astype("<u2" if vocab <= 65_536 else "<u4")
    buf = io.BytesIO()
    np.save(buf, want)
    assert (tmp_path / name).read_bytes() == buf.getvalue()
    for got in (np.load(tmp_path / name), np.load(tmp_path / name, mmap_mode="r")):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_empty_shard_loads_as_an_empty_array(tmp_path: Path) -> None:
    fmt = get_format("npy")
    fmt.create(tmp_path, "val_00000.npy", 300).seal()
    got = np.load(tmp_path / "val_00000.npy")
    assert got.shape == (0,) and got.dtype == np.dtype("<u2")


def test_open_shard_says_zero_until_sealed(tmp_path: Path) -> None:
    fmt = get_format("npy")
    w = fmt.create(tmp_path, "train_00000.npy", 300)
    w.append(np.array([1, 2, 3], dtype=np.uint32), [3])
    w.sync()
    assert unpack((tmp_path / "train_00000.npy").read_bytes(), where="f").n == 0
    w.close()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda raw: raw[:50], "50 bytes is shorter than the 128-byte header"),
        (lambda raw: b"\x93NUMPY\x02\x00" + raw[8:], "not the npy 1.0 magic"),
        (lambda raw: raw.replace(b"<u2", b">u2"), "its header says"),
        (lambda raw: raw.replace(b"False", b"True "), "its header says"),
        (lambda raw: raw.replace(b"(5,)", b"(5,1)"), "its header says"),
        (lambda raw: raw.replace(b"{'descr'", b"['descr'"), "not a Python dictionary literal"),
    ],
)
def test_damaged_header_says_what_is_wrong(damage, message: str) -> None:  # type: ignore[no-untyped-def]
    raw = NPY_KINDS["uint16"].pack(5, 300)
    with pytest.raises(FormatError, match=message) as e:
        unpack(damage(raw), where="train_00003.npy")
    assert str(e.value).startswith("train_00003.npy: ")
