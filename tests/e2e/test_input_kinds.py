"""The same documents as Parquet, JSON Lines (plain, written by Debian's gzip and zstd) and
Arrow IPC (file and stream) give byte-identical shards and the same counts; the manifests
differ only in the inputs they name, each by the SHA-256 of its bytes as stored. Every bad
input of a JSON Lines or Arrow file stops the run with exit 1 and a message naming the
file, the line (and byte) and the fix."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import dir_bytes

from .helpers import leftovers, split_ids

DOCS = [f"document {i}: " + "naïve café 😀 \u0000 tab\t " * (i % 7) + "end" for i in range(600)]
DOCS[5] = ""  # an empty text: counted and skipped alike
KINDS = ["parquet", "jsonl", "jsonl.gz", "jsonl.zst", "arrow-file", "arrow-stream"]


def write_kind(d: Path, kind: str, docs: list[str]) -> Path:
    """``docs`` as ``kind``, written by the standard tools; the source path."""
    d.mkdir(parents=True, exist_ok=True)
    if kind == "parquet":
        pq.write_table(pa.table({"text": docs}), d / "a.parquet", row_group_size=100)
        return d / "a.parquet"
    if kind.startswith("arrow"):
        new = pa.ipc.new_stream if kind == "arrow-stream" else pa.ipc.new_file
        with new(d / "a.arrow", pa.schema([("text", pa.string())])) as w:
            w.write_table(pa.table({"text": docs}), max_chunksize=128)
        return d / "a.arrow"
    plain = d / "a.jsonl"
    # both spellings json.dumps has, and a field whose type changes from line to line
    plain.write_text("".join(json.dumps({"text": t, "meta": i if i % 2 else {"i": i}},
                                        ensure_ascii=i % 3 == 0) + "\n"
                             for i, t in enumerate(docs)), encoding="utf-8")
    if kind == "jsonl.gz":
        subprocess.run(["gzip", str(plain)], check=True)
    elif kind == "jsonl.zst":
        subprocess.run(["zstd", "-q", "--rm", str(plain), "-o", str(d / "a.jsonl.zst")], check=True)
    return d / f"a.{kind}"


def _without_inputs(m: dict[str, Any]) -> dict[str, Any]:
    m = dict(m)
    source = dict(m.pop("source"))
    del source["files"], source["uri"]
    m.pop("corpus_manifest_sha256")
    m.pop("dataset")  # the --out name
    return {**m, "source": source}


def test_every_kind_gives_the_same_shards(cli: Any, tmp_path: Path) -> None:
    built: dict[str, tuple[dict[str, bytes], dict[str, Any]]] = {}
    for kind in KINDS:
        src = write_kind(tmp_path / kind, kind, DOCS)
        out = tmp_path / f"out-{kind}"
        r = cli("prepare", "--source", src, "--tokenizer", "byte", "--out", out,
                "--workers", "2", "--max-file-tokens", "20000")
        assert r.code == 0, r.err
        manifest = json.loads((out / "_MANIFEST.json").read_text())
        [named] = manifest["source"]["files"]
        assert named["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()  # as stored
        assert named["size"] == src.stat().st_size
        shards = {k: v for k, v in dir_bytes(out).items() if k != "_MANIFEST.json"}
        built[kind] = shards, _without_inputs(manifest)
    reference, ref_manifest = built["parquet"]
    assert len(reference) > 2  # several shards
    for kind in KINDS[1:]:
        shards, manifest = built[kind]
        assert shards == reference, kind
        assert manifest == ref_manifest, kind


def test_a_directory_of_mixed_kinds_reads_in_path_order(cli: Any, tmp_path: Path) -> None:
    src = tmp_path / "mixed"
    parts = [DOCS[:200], DOCS[200:400], DOCS[400:]]
    for kind, name, docs in zip(("jsonl.zst", "arrow-stream", "parquet"), "bca", parts,
                                strict=True):
        written = write_kind(tmp_path / "w" / name, kind, docs)
        (src / name).mkdir(parents=True)
        written.rename(src / name / written.name)
    one = write_kind(tmp_path / "one", "parquet", parts[2] + parts[0] + parts[1])  # a, b, c
    for source, out in ((src, tmp_path / "o-mixed"), (one, tmp_path / "o-one")):
        r = cli("prepare", "--source", source, "--tokenizer", "byte", "--out", out)
        assert r.code == 0, r.err
    assert dir_bytes(tmp_path / "o-mixed").keys() == dir_bytes(tmp_path / "o-one").keys()
    for name, data in dir_bytes(tmp_path / "o-one").items():
        if name.endswith(".bin"):
            assert dir_bytes(tmp_path / "o-mixed")[name] == data


GOOD = [json.dumps({"text": f"fine {i}"}) for i in range(30)]


@pytest.mark.parametrize(("name", "data", "fragments"), [
    ("a.jsonl", "\n".join([*GOOD, "{not json", *GOOD]).encode(),
     ["a.jsonl line 31 (byte ", "): not JSON", "fix or remove the line"]),
    ("a.jsonl", "\n".join([*GOOD, "[1, 2]"]).encode(),
     ["a.jsonl line 31 (byte ", "a list is not a JSON object"]),
    ("a.jsonl", "\n".join([*GOOD, '{"body": "x"}']).encode(),
     ['a.jsonl line 31 (byte ', 'no field "text" (it has "body")', "--text-column"]),
    ("a.jsonl", "\n".join([*GOOD, '{"text": 7}']).encode(),
     ['a.jsonl line 31 (byte ', 'field "text" is a number, expected a string']),
    ("a.jsonl", "\n".join([*GOOD, '{"text": null}']).encode(),
     ['a.jsonl line 31 (byte ', 'field "text" is null']),
    ("a.jsonl", "\n".join([*GOOD, '{"text": ["a"]}']).encode(),
     ['a.jsonl line 31 (byte ', 'field "text" is a list']),
    ("a.jsonl", "\n".join(GOOD).encode() + b'\n{"text": "\xff"}\n',
     ["a.jsonl line 31 (byte ", "invalid UTF-8", "re-encode the file"]),
])
def test_a_bad_line_stops_the_run_by_name(cli: Any, tmp_path: Path, name: str, data: bytes,
                                          fragments: list[str]) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / name).write_bytes(data)
    out = tmp_path / "o"
    r = cli("prepare", "--source", src, "--tokenizer", "byte", "--out", out, "--workers", "2")
    assert r.code == 1, r.err
    for fragment in fragments:
        assert fragment in r.err, r.err
    assert "Traceback" not in r.err
    assert not out.exists() and leftovers(out.parent, out.name) == []


@pytest.mark.parametrize(("codec", "suffix"), [("gzip", "gz"), ("zstd", "zst")])
@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_compressed_file_stops_the_run(cli: Any, tmp_path: Path, codec: str,
                                                 suffix: str, damage: str) -> None:
    src = write_kind(tmp_path / "src", f"jsonl.{suffix}", DOCS * 4)
    data = bytearray(src.read_bytes())
    if damage == "truncated":
        del data[len(data) * 2 // 3:]
    else:
        data[len(data) * 2 // 3: len(data) * 2 // 3 + 6] = b"\xff\x00\xff\x00\xff\x00"
    src.write_bytes(bytes(data))
    r = cli("prepare", "--source", src, "--tokenizer", "byte", "--out", tmp_path / "o",
            "--workers", "2")
    assert r.code == 1, r.err
    what = "ends mid-frame" if damage == "truncated" else "is corrupt"
    assert f"a.jsonl.{suffix}: the {codec} data {what} after line " in r.err, r.err
    assert "download or copy it again" in r.err and "Traceback" not in r.err


def test_an_arrow_file_without_a_string_column_is_refused(cli: Any, tmp_path: Path) -> None:
    src = tmp_path / "a.arrow"
    with pa.ipc.new_stream(src, pa.schema([("text", pa.int64())])) as w:
        w.write_table(pa.table({"text": [1, 2]}))
    r = cli("prepare", "--source", src, "--tokenizer", "byte", "--out", tmp_path / "o")
    assert r.code == 1
    assert 'a.arrow row 0: column "text" holds int64, expected a string' in r.err, r.err
    r = cli("prepare", "--source", src, "--tokenizer", "byte", "--out", tmp_path / "o",
            "--text-column", "body")
    assert r.code == 1 and 'a.arrow: no column "body"; it has "text"' in r.err, r.err


def test_a_name_that_disagrees_with_the_content_is_refused(cli: Any, tmp_path: Path) -> None:
    src = write_kind(tmp_path / "src", "jsonl.gz", DOCS[:10])
    wrong = src.rename(src.with_name("a.jsonl.zst"))
    r = cli("prepare", "--source", wrong, "--tokenizer", "byte", "--out", tmp_path / "o")
    assert r.code == 1
    assert ("a.jsonl.zst: its name says zstd-compressed JSON Lines but its content is "
            "gzip-compressed JSON Lines") in r.err, r.err


def _bins(out: Path) -> dict[str, bytes]:
    return {k: v for k, v in dir_bytes(out).items() if k.endswith(".bin")}


def test_refresh_takes_a_new_file_and_an_appended_one(cli: Any, tmp_path: Path) -> None:
    """A refresh after a new .jsonl.zst file and after a plain file grew gives what a fresh
    run over the new source gives."""
    src = tmp_path / "src"
    write_kind(tmp_path / "w0", "jsonl.zst", DOCS[:200]).rename(tmp_path / "a.jsonl.zst")
    src.mkdir()
    (tmp_path / "a.jsonl.zst").rename(src / "a.jsonl.zst")
    write_kind(src, "jsonl", DOCS[200:300]).rename(src / "b.jsonl")
    out = tmp_path / "o"
    base = ("prepare", "--source", src, "--tokenizer", "byte", "--max-file-tokens", "20000")
    assert cli(*base, "--out", out).code == 0
    write_kind(tmp_path / "w1", "jsonl.zst", DOCS[300:450]).rename(src / "c.jsonl.zst")
    r = cli(*base, "--out", out, "--refresh")
    assert r.code == 0, r.err
    fresh = tmp_path / "fresh1"
    assert cli(*base, "--out", fresh).code == 0
    assert _bins(out) == _bins(fresh)
    with open(src / "b.jsonl", "a", encoding="utf-8") as f:  # appended to
        f.write(json.dumps({"text": "one more line"}) + "\n")
    r = cli(*base, "--out", out, "--refresh")
    assert r.code == 0, r.err
    fresh = tmp_path / "fresh2"
    assert cli(*base, "--out", fresh).code == 0
    assert _bins(out) == _bins(fresh)
    assert json.loads((out / "_MANIFEST.json").read_text())["source"]["rows_visited"] == 451


def test_parts_of_jsonl_zst_merge_to_the_single_run(cli: Any, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for i in range(3):
        write_kind(tmp_path / f"w{i}", "jsonl.zst", DOCS[i * 200:(i + 1) * 200]).rename(
            tmp_path / f"w{i}" / f"f{i}.jsonl.zst")
        src.mkdir(exist_ok=True)
        (tmp_path / f"w{i}" / f"f{i}.jsonl.zst").rename(src / f"f{i}.jsonl.zst")
    base = ("prepare", "--source", src, "--tokenizer", "byte", "--max-file-tokens", "20000")
    single, merged = tmp_path / "single", tmp_path / "merged"
    assert cli(*base, "--out", single).code == 0
    for part in ("0/2", "1/2"):
        r = cli(*base, "--out", merged, "--part", part)
        assert r.code == 0, r.err
    r = cli("merge", merged)
    assert r.code == 0, r.err
    a = json.loads((single / "_MANIFEST.json").read_text())
    b = json.loads((merged / "_MANIFEST.json").read_text())
    assert a["source"]["files"] == b["source"]["files"]
    for split in ("train", "val"):
        assert split_ids(merged, split) == split_ids(single, split)
        for count in ("n_tokens", "n_docs"):
            assert a["totals"][split][count] == b["totals"][split][count]
