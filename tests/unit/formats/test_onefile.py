"""Single-file formats (llmc, llmc-llama3, raw) on files written here with ``struct`` from
llm.c's header layout (docs/format.md), not by prep's writer: dtype choice, the manifest's
``bin_version``, what ``verify`` and ``inspect`` say of a good or a damaged file, and the
checks a resume runs on a sealed file."""

from __future__ import annotations

import dataclasses
import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest

from prep.errors import FormatError, InputError, IntegrityError, UsageError
from prep.formats import get_format
from prep.formats.llmc import LLMC
from prep.formats.onefile import check_sealed_file
from prep.state.manifest import Manifest, ManifestFile, ManifestSource

V1 = LLMC.headers["uint16"]  # llm.c's version 1 header (1,024 bytes) before uint16 ids


def llmc_bytes(ids: list[int], vocab: int, magic: int = 20240520, version: int = 1) -> bytes:
    code = "H" if version == 1 else "I"
    header = struct.pack("<256i", magic, version, len(ids), vocab, *([0] * 252))
    return header + struct.pack(f"<{len(ids)}{code}", *ids)


def manifest(fmt: str = "llmc", dtype: str = "uint16", version: int | None = 1,
             vocab: int = 300) -> Manifest:
    source = ManifestSource("parquet", "/d", None, "text", None, (), 0, 0, None)
    return Manifest(dataset="d", tokenizer_id="t", tokenizer_sha256="a" * 64, vocab_size=vocab,
                    doc_sep_id=0, sep_position="prepend", format=fmt, dtype=dtype,
                    bin_version=version, max_file_tokens=100, corpus_manifest_sha256="b" * 64,
                    source=source, recipe={}, val_bytes_per_token=None, totals={}, files=())


def entry(path: Path, n: int, docs: int = 2) -> ManifestFile:
    return ManifestFile(path.name, "train", n, docs, hashlib.sha256(path.read_bytes()).hexdigest())


IDS = [0, 17, 299, 0, 256]


@pytest.mark.parametrize(("fmt", "vocab", "dtype", "version"), [
    ("llmc", 50_257, "uint16", 1), ("llmc", 65_536, "uint16", 1), ("llmc", 65_537, "uint32", 2),
    ("llmc-llama3", 128_256, "uint32", 7), ("raw", 50_257, "uint16", None),
    ("raw", 100_000, "uint32", None)])
def test_auto_takes_the_narrowest_dtype_and_its_layout_version(fmt: str, vocab: int, dtype: str,
                                                               version: int | None) -> None:
    f = get_format(fmt)
    assert (f.dtype_name(vocab), f.layout_version(vocab)) == (dtype, version)


def test_a_vocabulary_too_wide_for_the_dtype_names_the_fix() -> None:
    with pytest.raises(UsageError) as e:
        get_format("llmc", "uint16").dtype_name(70_000)
    assert str(e.value) == ("vocabulary size 70,000 does not fit uint16 ids (--format llmc "
                            "--dtype uint16); choose a wider --dtype")
    with pytest.raises(UsageError) as e:
        get_format("llmc").dtype_name(2**31)
    assert str(e.value) == ("vocabulary size 2,147,483,648 does not fit uint16 or uint32 ids "
                            "(--format llmc --dtype auto); choose a wider --dtype or another "
                            "--format")


def test_a_dtype_the_format_does_not_store_is_refused() -> None:
    with pytest.raises(UsageError) as e:
        get_format("llmc-llama3", "uint16")
    assert str(e.value) == ("--format llmc-llama3 stores uint32 ids; --dtype uint16 is not one "
                            "of them (or use --dtype auto)")


def test_names_and_owned_files() -> None:
    f = get_format("raw")
    assert f.shard_name("val", 12) == "val-00012.bin"
    assert f.parse_name("val-00012.bin") == ("val", 12)
    assert f.parse_name("val-00012.idx") is None
    assert f.shard_files("train-00000.bin") == ("train-00000.bin",)
    assert f.owns_file("anything.bin") and not f.owns_file("_MANIFEST.json")


def test_a_good_llmc_file_checks_clean_maps_and_describes(tmp_path: Path) -> None:
    path = tmp_path / "train-00000.bin"
    path.write_bytes(llmc_bytes(IDS, 300))
    f, m = get_format("llmc"), manifest()
    assert f.check_shard(tmp_path, entry(path, 5), m) == []
    assert f.map_ids(tmp_path, entry(path, 5), m).tolist() == IDS
    line, ids = f.describe(path, None)
    assert line == ("train-00000.bin: llmc uint16 ids, n = 5, version 1, vocab_size = 300, "
                    f"{1024 + 10:,} bytes")
    assert ids.tolist() == IDS


def test_a_raw_file_is_little_endian_ids_and_needs_its_dtype_to_be_described(tmp_path: Path
                                                                             ) -> None:
    path = tmp_path / "train-00000.bin"
    path.write_bytes(struct.pack("<5I", *IDS))
    f, m = get_format("raw"), manifest("raw", "uint32", None)
    assert f.check_shard(tmp_path, entry(path, 5), m) == []
    assert f.map_ids(tmp_path, entry(path, 5), m).tolist() == IDS
    line, ids = f.describe(path, "uint32")
    assert (line, ids.tolist()) == ("train-00000.bin: raw uint32 ids, n = 5, 20 bytes", IDS)
    with pytest.raises(InputError) as e:
        f.describe(path, None)
    assert str(e.value) == (f"{path}: a raw shard does not record its dtype; inspect it inside "
                            "its dataset directory, whose manifest does")


def test_verify_names_each_problem_of_a_damaged_llmc_file(tmp_path: Path) -> None:
    path = tmp_path / "train-00000.bin"
    path.write_bytes(llmc_bytes(IDS, 300))
    listed = entry(path, 5)
    path.write_bytes(llmc_bytes([5, 17, 299, 0, 256], 299))  # same size, other header and ids
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert get_format("llmc").check_shard(tmp_path, listed, manifest()) == [
        "train-00000.bin: header vocab_size 299 but manifest 300",
        f"train-00000.bin: SHA-256 {sha[:12]}… does not match the manifest's "
        f"{listed.sha256[:12]}…",
        "train-00000.bin: 1 separators for 2 documents",
        "train-00000.bin: does not start with the separator 0",
    ]
    problems = get_format("llmc").check_shard(
        tmp_path, dataclasses.replace(listed, n_tokens=4), manifest(version=2, vocab=299))
    assert problems[:2] == ["train-00000.bin: header n = 5 but manifest n_tokens = 4",
                            "train-00000.bin: version 1 but manifest bin_version 2"]
    assert len(problems) == 3  # and the SHA-256; the ids are not read at a wrong count
    assert get_format("llmc").check_shard(
        tmp_path, dataclasses.replace(listed, name="train-00009.bin"), manifest()) == [
        "train-00009.bin: missing"]


def test_a_truncated_raw_file_and_a_header_of_another_kind(tmp_path: Path) -> None:
    raw = tmp_path / "train-00000.bin"
    raw.write_bytes(struct.pack("<5H", *IDS)[:-1])
    assert get_format("raw").check_shard(tmp_path, ManifestFile(raw.name, "train", 5, 2, "0" * 64),
                                         manifest("raw", "uint16", None)) == [
        "train-00000.bin: 9 bytes is not a whole number of uint16 ids; the file is truncated"]
    llama = tmp_path / "val-00000.bin"
    llama.write_bytes(llmc_bytes(IDS, 300, magic=20240801, version=7))
    with pytest.raises(FormatError) as e:
        get_format("llmc").map_ids(tmp_path, entry(llama, 5), manifest())
    assert str(e.value) == (f"{llama}: version 7 (llm.c Llama-3) but the manifest says llmc "
                            "uint16 (version 1)")


def test_map_ids_refuses_a_missing_file_and_a_count_that_is_not_its_entrys(tmp_path: Path
                                                                           ) -> None:
    path = tmp_path / "train-00000.bin"
    path.write_bytes(llmc_bytes(IDS, 300))
    f = get_format("llmc")
    with pytest.raises(IntegrityError) as e:
        f.map_ids(tmp_path, dataclasses.replace(entry(path, 5), n_tokens=6), manifest())
    assert str(e.value) == (f"{path}: holds 5 ids but the manifest lists 6; the file does not "
                            "belong to this manifest")
    gone = tmp_path / "val-00000.bin"
    with pytest.raises(IntegrityError) as e:
        f.map_ids(tmp_path, dataclasses.replace(entry(path, 5), name=gone.name), manifest())
    assert str(e.value) == (f"{gone}: listed in the manifest but missing; re-publish the dataset "
                            "or restore the file")
    empty = tmp_path / "val-00001.bin"
    empty.write_bytes(llmc_bytes([], 300))
    assert f.map_ids(tmp_path, entry(empty, 0, 0), manifest()).size == 0


def test_a_sealed_file_is_checked_for_size_hash_and_header(tmp_path: Path) -> None:
    path = tmp_path / "train-00000.bin"
    path.write_bytes(llmc_bytes(IDS, 300))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    scan = check_sealed_file(tmp_path, path, 5, sha, V1, 2, 0)
    assert (scan.count, scan.first, scan.last) == (2, 0, 256)
    with pytest.raises(IntegrityError) as e:
        check_sealed_file(tmp_path, path, 5, "f" * 64, V1, 2, None)
    assert str(e.value) == (f"{path}: SHA-256 {sha[:12]}… is not the checkpoint's ffffffffffff…; "
                            f"the file was modified after it was sealed. Delete {tmp_path} to "
                            "start over")
    with pytest.raises(IntegrityError) as e:
        check_sealed_file(tmp_path, path, 4, sha, V1, 2, None)
    assert str(e.value) == (f"{path}: its size does not hold 4 ids; staging or its checkpoint "
                            f"was modified. Delete {tmp_path} to start over")
    with pytest.raises(IntegrityError) as e:
        check_sealed_file(tmp_path, path, 6, sha, V1, 2, None)
    assert str(e.value).startswith(f"{path} is shorter (1,034 bytes) than its 6 sealed ids. "
                                   "A power loss")


def test_a_sealed_file_whose_header_lies_about_its_count(tmp_path: Path) -> None:
    path = tmp_path / "train-00000.bin"
    raw = bytearray(llmc_bytes(IDS, 300))
    raw[8:12] = struct.pack("<i", 4)  # n = 4 before 5 ids: the header check must refuse
    path.write_bytes(bytes(raw))
    sha = hashlib.sha256(raw).hexdigest()
    with pytest.raises(IntegrityError) as e:
        check_sealed_file(tmp_path, path, 5, sha, V1, 2, None)
    assert str(e.value).startswith(f"{path}: ")
    assert str(e.value).endswith(f"Delete {tmp_path} to start over")
    assert np.frombuffer(raw[1024:], "<u2").tolist() == IDS
