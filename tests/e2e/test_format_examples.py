"""docs/format.md's worked examples, byte for byte: "Hello world" and "Hi" with GPT-2
(V = 50257, separator 50256 prepended) give the ids [50256, 15496, 995, 50256, 17250]
(docs/format.md); each container's bytes below are written out by hand from its layout."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import GPT2_DIR, make_corpus

U16 = "50c4" "883c" "e303" "50c4" "6243"
U32 = "50c40000" "883c0000" "e3030000" "50c40000" "62430000"
HEAD_TAIL = "00" * 1008
EXPECTED = {
    "llmc": {"train-00000.bin": "88d83401" "01000000" "05000000" "51c40000" + HEAD_TAIL + U16},
    "llmc-llama3": {
        "train-00000.bin": "a1d93401" "07000000" "05000000" "51c40000" + HEAD_TAIL + U32
    },
    "raw": {"train-00000.bin": U16},
    # NumPy's .npy 1.0: magic, version 1.0, HEADER_LEN 118, the dictionary padded with
    # spaces to byte 127, "\n", the ids.
    "npy": {"train_00000.npy": "934e554d5059" "0100" "7600"
            + b"{'descr': '<u2', 'fortran_order': False, 'shape': (5,), }".hex()
            + "20" * 60 + "0a" + U16},
    "megatron": {
        "train-00000.bin": U16,
        "train-00000.idx": "4d4d494449445800" "00"  # MMIDIDX\0\0
        "0100000000000000"  # version 1
        "08"  # dtype code 8: uint16
        "0200000000000000" "0300000000000000"  # 2 sequences, 3 document-index entries
        "03000000" "02000000"  # sequence lengths (int32)
        "0000000000000000" "0600000000000000"  # byte pointers (int64)
        "0000000000000000" "0100000000000000" "0200000000000000",  # document index
    },
    "datatrove": {  # each split in a folder of its own
        "train/train-00000.ds": U16,
        "train/train-00000.ds.index": "0300000000000000" "0500000000000000",  # ends 3, 5
        # .ds.metadata: "gpt2|2\n5\n5.00 T" (the manifest's tokenizer_id)
    },
    "olmo": {"train-00000.npy": U16},  # .csv.gz: checked below (its deflate is zlib's)
}
SIZES = {"llmc": 1034, "llmc-llama3": 1044, "raw": 10, "npy": 138, "megatron": 10,
         "datatrove": 10, "olmo": 10}


@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_worked_example(tmp_path: Path, cli, fmt: str) -> None:  # type: ignore[no-untyped-def]
    src = make_corpus(tmp_path / "src", [["Hello world", "Hi"]])
    out = tmp_path / "out"
    r = cli("prepare", "--out", out, "--source", src, "--tokenizer", GPT2_DIR,
            "--val-fraction", "0", "--format", fmt, "--quiet")
    assert r.code == 0, r.err
    for name, hexbytes in EXPECTED[fmt].items():
        assert (out / name).read_bytes().hex() == hexbytes, name
    ids_file = next(iter(EXPECTED[fmt]))
    assert len((out / ids_file).read_bytes()) == SIZES[fmt]
    if fmt == "datatrove":
        meta = (out / "train/train-00000.ds.metadata").read_bytes()
        assert meta == b"gpt2|2\n5\n5.00 T"
        assert (out / "val/val-00000.ds.metadata").read_bytes() == b"gpt2|2\n0\n0.00 T"
    if fmt == "olmo":
        raw = (out / "train-00000.csv.gz").read_bytes()
        # gzip header: magic, deflate, no flags (no file name), mtime 0, XFL 2, OS 255
        assert raw[:10].hex() == "1f8b0800000000000" "2ff"
        assert gzip.decompress(raw) == b"0,3\n3,5\n"


# docs/format.md's packing example: --pack fixed --max-file-tokens 4 cuts the stream after
# 4 ids, "Hi" running on into train-00001; each index lists the pieces its file holds.
HEAD4 = "88d83401" "01000000" "04000000" "51c40000"  # llm.c header, n = 4
HEAD1 = "88d83401" "01000000" "01000000" "51c40000"  # n = 1
FIRST, REST = "50c4" "883c" "e303" "50c4", "6243"
FIXED = {
    "llmc": {"train-00000.bin": HEAD4 + HEAD_TAIL + FIRST,
             "train-00001.bin": HEAD1 + HEAD_TAIL + REST},
    "npy": {
        "train_00000.npy": "934e554d5059" "0100" "7600"
        + b"{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }".hex() + "20" * 60 + "0a"
        + FIRST,
        "train_00001.npy": "934e554d5059" "0100" "7600"
        + b"{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }".hex() + "20" * 60 + "0a"
        + REST,
    },
    "megatron": {
        "train-00000.bin": FIRST,
        "train-00000.idx": "4d4d494449445800" "00" "0100000000000000" "08"
        "0200000000000000" "0300000000000000" "03000000" "01000000"
        "0000000000000000" "0600000000000000"
        "0000000000000000" "0100000000000000" "0200000000000000",
        "train-00001.bin": REST,
        "train-00001.idx": "4d4d494449445800" "00" "0100000000000000" "08"
        "0100000000000000" "0200000000000000" "01000000" "0000000000000000"
        "0000000000000000" "0100000000000000",
    },
    "datatrove": {
        "train/train-00000.ds": FIRST,
        "train/train-00000.ds.index": "0300000000000000" "0400000000000000",
        "train/train-00000.ds.metadata": b"gpt2|2\n4\n4.00 T".hex(),
        "train/train-00001.ds": REST, "train/train-00001.ds.index": "0100000000000000",
        "train/train-00001.ds.metadata": b"gpt2|2\n1\n1.00 T".hex(),
    },
    "olmo": {"train-00000.npy": FIRST, "train-00001.npy": REST},
}


@pytest.mark.parametrize("fmt", sorted(FIXED))
def test_packing_example(tmp_path: Path, cli, fmt: str) -> None:  # type: ignore[no-untyped-def]
    src = make_corpus(tmp_path / "src", [["Hello world", "Hi"]])
    out = tmp_path / "out"
    r = cli("prepare", "--out", out, "--source", src, "--tokenizer", GPT2_DIR,
            "--val-fraction", "0", "--format", fmt, "--pack", "fixed", "--max-file-tokens", "4",
            "--quiet")
    assert r.code == 0, r.err
    for name, hexbytes in FIXED[fmt].items():
        assert (out / name).read_bytes().hex() == hexbytes, name
    files = json.loads((out / "_MANIFEST.json").read_bytes())["files"]
    assert [(f["n_tokens"], f["n_docs"], f["first_doc_at"]) for f in files[:2]] == [
        (4, 2, 0), (1, 0, 1)]
    if fmt == "olmo":
        assert [gzip.decompress((out / f"train-0000{k}.csv.gz").read_bytes()) for k in (0, 1)
                ] == [b"0,3\n3,4\n", b"0,1\n"]
