"""The single-file layouts as data: ``scan_file`` and ``map_file`` over files written here
without prep (``np.save`` for ``npy``, ``struct`` for llm.c's header, ``tobytes`` for raw),
and the refusals of a file that breaks its layout, each naming the file."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from prep.errors import FormatError
from prep.formats import RAW
from prep.formats.layout import map_file, scan_file
from prep.formats.llmc import LLMC
from prep.formats.npy import NPY

IDS = [3, 1, 4, 1, 5, 9, 2, 6]


def llmc_file(path: Path, ids: list[int], n: int | None = None) -> Path:
    header = struct.pack("<256i", 20240520, 1, len(ids) if n is None else n, 300, *[0] * 252)
    path.write_bytes(header + np.array(ids, dtype="<u2").tobytes())
    return path


def test_each_layout_reads_a_file_written_without_prep(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array(IDS, dtype="<u2"))
    (tmp_path / "a.raw").write_bytes(np.array(IDS, dtype="<u4").tobytes())
    llmc_file(tmp_path / "a.bin", IDS)
    for layout, name, dtype, vocab in ((NPY, "a.npy", "uint16", None),
                                       (RAW, "a.raw", "uint32", None),
                                       (LLMC, "a.bin", "uint16", 300)):
        assert scan_file(layout, tmp_path / name, dtype, name) == (len(IDS), vocab)
        assert map_file(layout, tmp_path / name, dtype, len(IDS)).tolist() == IDS
    assert (NPY.header_bytes("uint32"), LLMC.header_bytes("uint16"), RAW.header_bytes("uint16")) \
        == (128, 1024, 0)


def test_npy_file_of_another_dtype_than_the_manifests(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array(IDS, dtype="<u4"))
    with pytest.raises(FormatError, match=r"a\.npy: version 1 \(npy uint32\) but the manifest "
                                          r"says npy uint16"):
        scan_file(NPY, tmp_path / "a.npy", "uint16", "a.npy")


def test_truncated_files_are_refused_by_name(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array(IDS, dtype="<u2"))
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "a.npy").write_bytes(raw[:-2])
    with pytest.raises(FormatError, match=r"a\.npy: file is 142 bytes but its header says n = 8 "
                                          r"\(144 bytes\)"):
        scan_file(NPY, tmp_path / "a.npy", "uint16", "a.npy")
    (tmp_path / "a.raw").write_bytes(b"\x01\x00\x02")
    with pytest.raises(FormatError, match="3 bytes is not a whole number of uint16 ids"):
        scan_file(RAW, tmp_path / "a.raw", "uint16", "a.raw")
    llmc_file(tmp_path / "a.bin", IDS, n=9)
    with pytest.raises(FormatError, match="header says n = 9"):
        scan_file(LLMC, tmp_path / "a.bin", "uint16", "a.bin")


def test_a_dtype_the_layout_does_not_store(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array(IDS, dtype="<i4"))
    with pytest.raises(FormatError, match=r"a\.npy: npy does not store int32 ids"):
        scan_file(NPY, tmp_path / "a.npy", "int32", "a.npy")
