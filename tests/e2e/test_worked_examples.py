"""The worked examples of docs/format.md (llmc), run through the whole CLI."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from conftest import GPT2_DIR, word_level_tokenizer, write_parquet

from .helpers import expected_bin, header_ints, leftovers, manifest, sha256_file

GPT2_EOT = 50256


def _published(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir())


def test_byte_tokenizer_example_hi_e_acute_ok(cli, tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "src" / "part-00000.parquet", ["Hi", "é", "ok"],
                        split=["train", "val", "train"])
    out = tmp_path / "tokens"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src.parent, "--split-column", "split")

    assert r.code == 0, r.err
    assert _published(out) == ["_MANIFEST.json", "_PROVENANCE.json",
                               "train-00000.bin", "val-00000.bin"]
    train = (out / "train-00000.bin").read_bytes()
    val = (out / "val-00000.bin").read_bytes()
    # The spec's own numbers: n = 4 ids 72 105 111 107 in 1032 bytes; é is bytes 195 169.
    assert len(train) == 1032
    assert train == struct.pack("<256i", 20240520, 1, 4, 256, *[0] * 252) + bytes(
        [72, 0, 105, 0, 111, 0, 107, 0])
    assert len(val) == 1028
    assert val[1024:] == bytes([195, 0, 169, 0])
    assert header_ints(out / "val-00000.bin")[:4] == (20240520, 1, 2, 256)
    m = manifest(out)
    assert m["doc_sep_id"] is None
    assert m["totals"] == {"train": {"n_tokens": 4, "n_docs": 2, "n_files": 1},
                           "val": {"n_tokens": 2, "n_docs": 1, "n_files": 1}}
    assert leftovers(tmp_path, "tokens") == ["tokens"]  # no staging left beside it
    assert f"published {out}" in r.err
    assert "train 4 tokens / 2 docs / 1 files" in r.err


def test_header_hex_dump_example_ids_1_2_3(cli, tmp_path: Path) -> None:
    """docs/format.md's example: ids [1, 2, 3] with V = 256 is exactly these 1030 bytes."""
    src = write_parquet(tmp_path / "src" / "a.parquet", ["\x01\x02\x03"], split=["train"])
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--split-column", "split")

    assert r.code == 0, r.err
    spec_dump = (
        bytes.fromhex("88d83401" "01000000" "03000000" "00010000")
        + bytes(1008)
        + bytes.fromhex("010002000300")
    )
    assert (out / "train-00000.bin").read_bytes() == spec_dump
    assert (out / "val-00000.bin").read_bytes() == expected_bin([], 256)


def test_gpt2_hello_world_hi_with_separator_from_generation_config(cli, tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "src" / "p.parquet", ["Hello world", "Hi"],
                        split=["train", "train"])
    out = tmp_path / "gpt2-tokens"

    r = cli("prepare", "--out", out, "--source", src, "--split-column", "split",
            "--tokenizer", GPT2_DIR)

    assert r.code == 0, r.err
    assert (out / "train-00000.bin").read_bytes() == expected_bin(
        [GPT2_EOT, 15496, 995, GPT2_EOT, 17250], 50257)
    # Every split has its -00000 file, even empty.
    assert (out / "val-00000.bin").read_bytes() == expected_bin([], 50257)
    m = manifest(out)
    assert m["doc_sep_id"] == GPT2_EOT
    assert m["vocab_size"] == 50257
    assert m["bin_version"] == 1
    assert m["sep_position"] == "prepend"
    assert m["tokenizer_id"] == "gpt2"  # the tokenizer's directory name
    assert m["tokenizer_sha256"] == sha256_file(GPT2_DIR / "tokenizer.json")
    assert m["dataset"] == "gpt2-tokens"  # default: the output directory's name


def test_gpt2_append_and_no_separator(cli, tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "src" / "p.parquet", ["Hello world", "Hi"],
                        split=["train", "train"])
    common = ("--source", src, "--split-column", "split", "--tokenizer", GPT2_DIR)

    r1 = cli("prepare", "--out", tmp_path / "append", *common, "--sep-position", "append")
    r2 = cli("prepare", "--out", tmp_path / "nosep", *common, "--no-doc-sep")

    assert (r1.code, r2.code) == (0, 0), r1.err + r2.err
    assert (tmp_path / "append" / "train-00000.bin").read_bytes() == expected_bin(
        [15496, 995, GPT2_EOT, 17250, GPT2_EOT], 50257)
    assert (tmp_path / "nosep" / "train-00000.bin").read_bytes() == expected_bin(
        [15496, 995, 17250], 50257)
    assert manifest(tmp_path / "append")["sep_position"] == "append"
    assert manifest(tmp_path / "nosep")["doc_sep_id"] is None


def test_byte_tokenizer_accepts_an_explicit_separator(cli, tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "src" / "p.parquet", ["Hi", "é", "ok"],
                        split=["train", "val", "train"])

    r = cli("prepare", "--tokenizer", "byte",
            "--out", tmp_path / "o", "--source", src, "--split-column", "split",
            "--doc-sep-id", "0")

    assert r.code == 0, r.err
    assert (tmp_path / "o" / "train-00000.bin").read_bytes() == expected_bin(
        [0, 72, 105, 0, 111, 107], 256)
    assert (tmp_path / "o" / "val-00000.bin").read_bytes() == expected_bin([0, 195, 169], 256)
    assert manifest(tmp_path / "o")["doc_sep_id"] == 0


def test_tokenizer_json_path_eos_list_and_names(cli, tmp_path: Path) -> None:
    """--tokenizer may name the tokenizer.json itself; a list eos_token_id gives its first
    entry; --dataset and --tokenizer-id are recorded as typed."""
    tok = tmp_path / "my-tok"
    word_level_tokenizer(tok, {"[UNK]": 0, "<a>": 1, "<b>": 2, "hello": 3, "there": 4})
    (tok / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 1]}))
    src = write_parquet(tmp_path / "src" / "p.parquet", ["hello there", "there"],
                        split=["train", "train"])
    out = tmp_path / "o"

    r = cli("prepare", "--out", out, "--source", src, "--split-column", "split",
            "--tokenizer", tok / "tokenizer.json", "--dataset", "greetings",
            "--tokenizer-id", "acme/wl-5")

    assert r.code == 0, r.err
    assert (out / "train-00000.bin").read_bytes() == expected_bin([2, 3, 4, 2, 4], 5)
    m = manifest(out)
    assert (m["dataset"], m["tokenizer_id"], m["doc_sep_id"]) == ("greetings", "acme/wl-5", 2)
    assert m["tokenizer_sha256"] == sha256_file(tok / "tokenizer.json")

    default = cli("prepare", "--out", tmp_path / "d", "--source", src, "--split-column",
                  "split", "--tokenizer", tok)
    assert default.code == 0, default.err
    assert manifest(tmp_path / "d")["tokenizer_id"] == "my-tok"  # the directory's name
