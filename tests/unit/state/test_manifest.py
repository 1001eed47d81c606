"""``_MANIFEST.json`` (docs/format.md): key order, exact serialization, the corpus identity
hash, β, and the reader's refusals. Expected values are recomputed here from the spec text."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import bin_ids, write_parquet

from prep.errors import IntegrityError
from prep.recipe import Recipe
from prep.state.identity import TokenizerIdentity
from prep.state.manifest import (
    Manifest,
    ManifestSource,
    build_manifest,
    corpus_manifest_sha256,
    read_manifest,
    write_manifest,
)
from prep.state.shards import FileRecord

# docs/format.md's key order.
TOP_KEYS = [
    "version",
    "dataset",
    "tokenizer_id",
    "tokenizer_sha256",
    "vocab_size",
    "doc_sep_id",
    "sep_position",
    "format",
    "dtype",
    "bin_version",
    "max_file_tokens",
    "corpus_manifest_sha256",
    "source",
    "recipe",
    "val_bytes_per_token",
    "totals",
    "files",
]
SOURCE_KEYS = [
    "kind",
    "uri",
    "revision",
    "text_column",
    "split_column",
    "files",
    "rows_visited",
    "empty_rows_skipped",
    "prefix_sha256",
]
RECIPE_KEYS_HASH = [
    "val_fraction",
    "seed",
    "shuffle_files",
    "shuffle_buffer",
    "max_documents",
    "train_tokens",
    "sep_position",
    "max_file_tokens",
    "format",
    "dtype",
]
FILE_KEYS = ["name", "split", "n_tokens", "n_docs", "sha256"]
TOTALS_KEYS = ["n_tokens", "n_docs", "n_files"]


def spec_canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def source_dict(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": "parquet",
        "uri": "data/",
        "revision": None,
        "text_column": "text",
        "split_column": None,
        "files": [{"path": "a/ü.parquet", "size": 10, "sha256": "ab" * 32}],
        "rows_visited": 5,
        "empty_rows_skipped": 1,
        "prefix_sha256": "cd" * 32,
    }
    d.update(over)
    return d


def built(recipe: Recipe | None = None, val_bytes: int = 9, val_tokens: int = 6) -> dict[str, Any]:
    from prep.state.manifest import SplitTotals

    recipe = recipe or Recipe(source="data/", tokenizer="byte", val_fraction=0.3)
    ident = TokenizerIdentity("byte", "bytes", hashlib.sha256(b"").hexdigest(), 256, 0)
    totals = {
        "train": SplitTotals(
            20, 3, 17, 17,
            (FileRecord("train-00000.bin", 12, 2, "1" * 64),
             FileRecord("train-00001.bin", 8, 1, "2" * 64)),
        ),
        "val": SplitTotals(8, 2, val_bytes, val_tokens,
                           (FileRecord("val-00000.bin", 8, 2, "3" * 64),)),
    }
    return build_manifest(
        recipe=recipe,
        dataset="ds",
        tokenizer=ident,
        layout=("llmc", "uint16", 1),
        source=ManifestSource.from_json(source_dict()),
        totals=totals,
    ).to_json()


def manifest_bytes(m: dict[str, Any]) -> bytes:
    """The serialization of the manifest whose JSON is ``m`` (through the typed record)."""
    return Manifest.from_json(m).to_bytes()


# -- key order and serialization --------------------------------------------------------------


def test_key_order_is_the_tables_order() -> None:
    m = built()
    assert list(m) == TOP_KEYS
    assert list(m["source"]) == SOURCE_KEYS
    assert list(m["recipe"]) == RECIPE_KEYS_HASH
    assert list(m["totals"]) == ["train", "val"]
    assert all(list(t) == TOTALS_KEYS for t in m["totals"].values())
    assert all(list(f) == FILE_KEYS for f in m["files"])


def test_recipe_with_split_column_replaces_val_fraction() -> None:
    m = built(Recipe(source="x", tokenizer="byte", split_column="split"))
    assert list(m["recipe"]) == ["split_column", *RECIPE_KEYS_HASH[1:]]
    assert m["recipe"]["split_column"] == "split"


def test_values() -> None:
    m = built()
    assert m["version"] == "v5"
    assert m["dataset"] == "ds"
    assert (m["vocab_size"], m["doc_sep_id"], m["bin_version"]) == (256, 0, 1)
    assert (m["format"], m["dtype"]) == ("llmc", "uint16")
    assert (m["recipe"]["format"], m["recipe"]["dtype"]) == ("llmc", "auto")
    assert m["sep_position"] == "prepend"
    assert m["recipe"]["train_tokens"] is None
    assert m["totals"] == {
        "train": {"n_tokens": 20, "n_docs": 3, "n_files": 2},
        "val": {"n_tokens": 8, "n_docs": 2, "n_files": 1},
    }
    assert [f["name"] for f in m["files"]] == ["train-00000.bin", "train-00001.bin",
                                               "val-00000.bin"]
    assert [f["split"] for f in m["files"]] == ["train", "train", "val"]


def test_beta_is_val_bytes_over_val_tokens() -> None:
    assert built(val_bytes=9, val_tokens=6)["val_bytes_per_token"] == 1.5
    assert built(val_bytes=10, val_tokens=3)["val_bytes_per_token"] == 10 / 3
    assert built(val_bytes=0, val_tokens=0)["val_bytes_per_token"] is None


def test_serialization_is_indent_2_not_ascii_with_newline(tmp_path: Path) -> None:
    m = built()
    m["dataset"] = "données-日本"
    expected = (json.dumps(m, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    assert manifest_bytes(m) == expected
    assert "données-日本".encode() in manifest_bytes(m)
    write_manifest(tmp_path, Manifest.from_json(m))
    assert (tmp_path / "_MANIFEST.json").read_bytes() == expected
    assert read_manifest(tmp_path).to_json() == m


def test_floats_as_python_json_writes_them() -> None:
    m = built(Recipe(source="x", tokenizer="byte", val_fraction=0.1),
              val_bytes=10, val_tokens=3)
    text = manifest_bytes(m).decode()
    assert '"val_fraction": 0.1,' in text
    assert f'"val_bytes_per_token": {json.dumps(10 / 3)},' in text


# -- corpus identity --------------------------------------------------------------------------


def test_corpus_manifest_sha256_from_canonical_json() -> None:
    src = source_dict()
    ident = {"kind": "parquet", "revision": None, "files": src["files"]}
    expected = hashlib.sha256(spec_canonical(ident)).hexdigest()
    assert corpus_manifest_sha256(src) == expected
    assert built()["corpus_manifest_sha256"] == expected


def test_corpus_manifest_sha256_by_hand() -> None:
    src = source_dict(files=[{"path": "é.parquet", "size": 3, "sha256": "00" * 32}])
    canonical = (
        '{"files":[{"path":"é.parquet","sha256":"' + "00" * 32 + '","size":3}],'
        '"kind":"parquet","revision":null}'
    ).encode()
    assert corpus_manifest_sha256(src) == hashlib.sha256(canonical).hexdigest()


def test_corpus_identity_ignores_uri_counts_and_budget() -> None:
    a = corpus_manifest_sha256(source_dict())
    b = corpus_manifest_sha256(
        source_dict(uri="/abs/data", rows_visited=1, empty_rows_skipped=0, prefix_sha256="")
    )
    assert a == b
    changed = source_dict(files=[{"path": "a/ü.parquet", "size": 11, "sha256": "ab" * 32}])
    assert corpus_manifest_sha256(changed) != a


# -- a real run -------------------------------------------------------------------------------


def test_real_manifest_matches_spec(tmp_path: Path, cli: Any) -> None:
    texts = ["Hi", "é", "ok", "   ", "hello there", "\u3000", "naïve café"]
    src = tmp_path / "src"
    write_parquet(src / "b" / "2.parquet", texts[4:])
    write_parquet(src / "a.parquet", texts[:4])
    out = tmp_path / "out"
    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src, "--val-fraction", 0.3,
            "--doc-sep-id", 0, "--dataset", "unit", "--quiet")
    assert r.code == 0, r.err
    raw = (out / "_MANIFEST.json").read_bytes()
    m = json.loads(raw)
    assert raw == (json.dumps(m, indent=2, ensure_ascii=False) + "\n").encode()
    assert list(m) == TOP_KEYS
    assert list(m["source"]) == SOURCE_KEYS
    assert list(m["recipe"]) == RECIPE_KEYS_HASH

    # source identity, recomputed from the files themselves
    files = [
        {"path": rel, "size": (src / rel).stat().st_size,
         "sha256": hashlib.sha256((src / rel).read_bytes()).hexdigest()}
        for rel in ("a.parquet", "b/2.parquet")
    ]
    fingerprints = [{"mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "inode": st.st_ino}
                    for st in ((src / rel).stat() for rel in ("a.parquet", "b/2.parquet"))]
    assert m["source"]["files"] == [{**f, "fingerprint": fp}
                                    for f, fp in zip(files, fingerprints, strict=True)]
    ident = {"kind": "parquet", "revision": None, "files": files}  # fingerprints left out
    assert m["corpus_manifest_sha256"] == hashlib.sha256(spec_canonical(ident)).hexdigest()

    # visiting: every row, empties counted, prefix digest over all of them
    assert m["source"]["rows_visited"] == 7
    assert m["source"]["empty_rows_skipped"] == 2
    link = bytes(32)  # the v4 chain, by hand
    for t in texts:
        link = hashlib.sha256(link + hashlib.sha256(t.encode()).digest()).digest()
    assert m["source"]["prefix_sha256"] == link.hex()

    # splits by the hash rule; totals, β and file entries recomputed
    docs = [t for t in texts if t.strip()]
    threshold = int(0.3 * 2**64)

    def is_val(t: str) -> bool:
        top = int.from_bytes(hashlib.sha256(f"1337\0{t}".encode()).digest()[:8], "big")
        return top < threshold

    val = [t for t in docs if is_val(t)]
    train = [t for t in docs if not is_val(t)]
    assert val and train
    for split, group in (("train", train), ("val", val)):
        assert m["totals"][split] == {
            "n_tokens": sum(len(t.encode()) + 1 for t in group),
            "n_docs": len(group),
            "n_files": 1,
        }
    # β excludes separators: with the byte tokenizer every token is one byte.
    assert m["val_bytes_per_token"] == 1.0
    for entry in m["files"]:
        data = (out / entry["name"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["n_tokens"] == len(bin_ids(out / entry["name"]))


def test_beta_with_a_real_multibyte_tokenizer(tmp_path: Path, cli: Any) -> None:
    from conftest import GPT2_DIR

    src = write_parquet(tmp_path / "s.parquet", ["train me", "Hello world", "naïve café"],
                        split=["train", "val", "val"])
    out = tmp_path / "out"
    r = cli("prepare", "--out", out, "--source", src, "--split-column", "split",
            "--tokenizer", GPT2_DIR, "--quiet")
    assert r.code == 0, r.err
    m = json.loads((out / "_MANIFEST.json").read_bytes())
    from golden_corpus import tiktoken_gpt2  # an independent GPT-2

    enc = tiktoken_gpt2(GPT2_DIR.parent)
    val_tokens = sum(len(enc.encode_ordinary(t)) for t in ["Hello world", "naïve café"])
    val_bytes = len(b"Hello world") + len("naïve café".encode())
    assert m["val_bytes_per_token"] == val_bytes / val_tokens
    assert m["val_bytes_per_token"] != (val_bytes) / (val_tokens + 2)  # separators excluded
    assert m["totals"]["val"]["n_tokens"] == val_tokens + 2  # separators counted here
    assert m["doc_sep_id"] == 50256
    assert m["tokenizer_id"] == "gpt2"


def test_relative_and_absolute_source_give_the_same_corpus_hash(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_parquet(tmp_path / "data" / "x.parquet", ["one document", "another one"])
    monkeypatch.chdir(tmp_path)
    r1 = cli("prepare", "--tokenizer", "byte",
             "--out", tmp_path / "o1", "--source", "data", "--quiet",
             "--val-fraction", 0.01)
    r2 = cli("prepare", "--tokenizer", "byte",
             "--out", tmp_path / "o2", "--source", tmp_path / "data", "--quiet",
             "--val-fraction", 0.01)
    assert (r1.code, r2.code) == (0, 0), r1.err + r2.err
    m1 = json.loads((tmp_path / "o1" / "_MANIFEST.json").read_bytes())
    m2 = json.loads((tmp_path / "o2" / "_MANIFEST.json").read_bytes())
    # Both record the canonical path (issue 8 point 7: the manifest must not depend on the
    # spelling; the first spec's "as given" is superseded).
    assert m1["source"]["uri"] == m2["source"]["uri"] == os.path.realpath(tmp_path / "data")
    assert m1["corpus_manifest_sha256"] == m2["corpus_manifest_sha256"]


def test_same_inputs_same_manifest_bytes(tmp_path: Path, cli: Any) -> None:
    src = write_parquet(tmp_path / "s.parquet", [f"document {i}" for i in range(40)])
    for name in ("x", "y"):
        r = cli("prepare", "--tokenizer", "byte",
                "--out", tmp_path / name, "--source", src, "--dataset", "same",
                "--val-fraction", 0.2, "--quiet")
        assert r.code == 0, r.err
    assert (tmp_path / "x" / "_MANIFEST.json").read_bytes() == (
        tmp_path / "y" / "_MANIFEST.json"
    ).read_bytes()


def test_dataset_defaults_to_out_name(tmp_path: Path, cli: Any) -> None:
    src = write_parquet(tmp_path / "s.parquet", ["a doc", "b doc"])
    r = cli("prepare", "--tokenizer", "byte",
            "--out", tmp_path / "my-set", "--source", src, "--quiet")
    assert r.code == 0, r.err
    assert json.loads((tmp_path / "my-set" / "_MANIFEST.json").read_bytes())["dataset"] == "my-set"


# -- reading ----------------------------------------------------------------------------------


def test_read_manifest_missing(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError) as info:
        read_manifest(tmp_path)
    assert f"{tmp_path / '_MANIFEST.json'} is missing; this is not a prep dataset" in str(
        info.value
    )


def test_read_manifest_corrupt(tmp_path: Path) -> None:
    (tmp_path / "_MANIFEST.json").write_text('{"version": "v1", ')
    with pytest.raises(IntegrityError) as info:
        read_manifest(tmp_path)
    assert "_MANIFEST.json is not valid JSON" in str(info.value)


@pytest.mark.parametrize(("content", "shown"), [('{"version": "v6"}', "'v6'"), ("[1]", "None"),
                                                ("{}", "None")])
def test_read_manifest_unknown_version(tmp_path: Path, content: str, shown: str) -> None:
    (tmp_path / "_MANIFEST.json").write_text(content)
    with pytest.raises(IntegrityError) as info:
        read_manifest(tmp_path)
    assert f"manifest version {shown} is not one of v1, v2, v3, v4, v5" in str(info.value)


@pytest.mark.parametrize(("bin_version", "dtype"), [(1, "uint16"), (2, "uint32")])
def test_a_v1_manifest_still_reads_as_llmc(tmp_path: Path, bin_version: int, dtype: str) -> None:
    # v1 had no format or dtype: its files were llm.c .bin, the dtype given by bin_version.
    m = built()
    m["version"] = "v1"
    del m["format"], m["dtype"], m["recipe"]["format"], m["recipe"]["dtype"]
    m["bin_version"] = bin_version
    (tmp_path / "_MANIFEST.json").write_text(json.dumps(m))
    got = read_manifest(tmp_path)
    assert (got.version, got.format, got.dtype, got.bin_version) == ("v1", "llmc", dtype,
                                                                      bin_version)


def test_a_manifest_without_pack_means_whole_and_fixed_files_keep_first_doc_at(
    tmp_path: Path
) -> None:
    m = built()
    (tmp_path / "_MANIFEST.json").write_text(json.dumps(m))
    got = read_manifest(tmp_path)
    assert got.pack == "whole" and all(f.first_doc_at is None for f in got.files)
    m["recipe"]["pack"] = "fixed"
    for k, f in enumerate(m["files"]):
        f["first_doc_at"] = 3 * k
    (tmp_path / "_MANIFEST.json").write_text(json.dumps(m))
    got = read_manifest(tmp_path)
    assert got.pack == "fixed" and [f.first_doc for f in got.files] == [
        3 * k for k in range(len(m["files"]))]
    assert json.loads(got.to_bytes())["files"] == m["files"]
