"""The output formats for one recipe (issue 12), read back by the independent readers
of ``tests/format_readers.py`` (struct only, nothing from prep): identical per-split token
streams and rollover, Megatron's document index against the manifest, verify on fresh output
and on a flipped byte in every file, TokenStream on every format, and the option checks."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import GPT2_DIR, make_corpus, numbered_docs, word_level_tokenizer
from format_readers import (
    read_file,
    read_megatron_docs,
    read_megatron_index,
    split_files,
    split_stream,
)

from prep import TokenStream

SEP = 50256  # GPT-2's <|endoftext|>, from generation_config.json
# (name, extra options, expected dtype, expected bin_version) for one recipe.
VARIANTS = [
    ("llmc", (), "uint16", 1),
    ("llmc-llama3", (), "uint32", 7),
    ("megatron", (), "uint16", 1),
    ("raw", (), "uint16", None),
    ("npy", (), "uint16", 1),
    ("llmc", ("--dtype", "uint32"), "uint32", 2),
    ("megatron", ("--dtype", "int32"), "int32", 1),
    ("raw", ("--dtype", "uint32"), "uint32", None),
    ("npy", ("--dtype", "uint32"), "uint32", 1),
]
IDS = ["-".join((v[0], *v[1][1:])) for v in VARIANTS]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from prep.cli.commands import main

    root = tmp_path_factory.mktemp("formats")
    src = make_corpus(root / "src", [numbered_docs(80), numbered_docs(70, start=80)])
    outs = {}
    for (name, extra, _, _), key in zip(VARIANTS, IDS, strict=True):
        out = root / key
        code = main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer",
                     str(GPT2_DIR), "--val-fraction", "0.3", "--max-file-tokens", "400",
                     "--dataset", "same", "--format", name, *extra, "--quiet"])
        assert code == 0
        outs[key] = out
    return outs


def test_every_format_gives_the_same_streams_and_the_same_rollover(built: dict[str, Path]) -> None:
    ref = built["llmc"]
    for split in ("train", "val"):
        want = split_stream(ref, split)
        sizes = [len(read_file(ref, p)) for p in split_files(ref, split)]
        assert len(sizes) >= (4 if split == "train" else 2)
        assert want.count(SEP) > 20
        for key, out in built.items():
            assert split_stream(out, split) == want, (key, split)
            assert [len(read_file(out, p)) for p in split_files(out, split)] == sizes, key


@pytest.mark.parametrize(("key", "variant"), list(zip(IDS, VARIANTS, strict=True)), ids=IDS)
def test_manifest_records_format_dtype_and_every_file(
    built: dict[str, Path], key: str, variant: tuple[str, tuple[str, ...], str, int | None]
) -> None:
    name, _, dtype, version = variant
    out = built[key]
    m = json.loads((out / "_MANIFEST.json").read_bytes())
    assert (m["version"], m["format"], m["dtype"], m["bin_version"]) == ("v5", name, dtype,
                                                                         version)
    listed = {e["name"]: e["sha256"] for e in m["files"]}
    listed.update({c["name"]: c["sha256"] for e in m["files"] for c in e.get("companions", [])})
    on_disk = {p.name for p in out.iterdir() if not p.name.startswith("_")}
    assert set(listed) == on_disk
    for fname, sha in listed.items():
        assert hashlib.sha256((out / fname).read_bytes()).hexdigest() == sha, fname
    assert any(n.endswith(".idx") for n in on_disk) == (name == "megatron")


@pytest.mark.parametrize("key", ["megatron", "megatron-int32"])
def test_megatron_document_index_counts_the_manifests_documents(
    built: dict[str, Path], key: str
) -> None:
    out = built[key]
    m = json.loads((out / "_MANIFEST.json").read_bytes())
    for entry in m["files"]:
        prefix = out / entry["name"].removesuffix(".bin")
        idx = read_megatron_index(prefix.with_suffix(".idx"))
        assert idx["code"] == (8 if key == "megatron" else 4)
        assert idx["doc_index"] == list(range(entry["n_docs"] + 1))  # leading 0, one per doc
        assert sum(idx["lengths"]) == entry["n_tokens"]
        docs = read_megatron_docs(prefix)
        assert len(docs) == entry["n_docs"]
        assert all(d[0] == SEP and SEP not in d[1:] for d in docs)  # prepend: sep + text
    for split in ("train", "val"):
        n_docs = sum(len(read_megatron_index(p.with_suffix(".idx"))["doc_index"]) - 1
                     for p in split_files(out, split))
        assert n_docs == m["totals"][split]["n_docs"]


@pytest.mark.parametrize("key", IDS)
def test_verify_passes_fresh_output_and_fails_a_flipped_byte_in_any_file(
    built: dict[str, Path], key: str, tmp_path: Path, cli  # type: ignore[no-untyped-def]
) -> None:
    r = cli("verify", built[key])
    assert (r.code, r.out.strip().splitlines()[-1]) == (0, f"{built[key]}: OK")
    names = sorted(p.name for p in built[key].iterdir() if not p.name.startswith("_"))
    for name in names:
        ds = shutil.copytree(built[key], tmp_path / name)
        raw = bytearray((ds / name).read_bytes())
        raw[len(raw) // 2 + 1] ^= 0x40
        (ds / name).write_bytes(bytes(raw))
        r = cli("verify", ds)
        assert r.code == 1, (key, name, r.out)
        assert any(line.startswith(f"FAIL {name}") for line in r.out.splitlines()), r.out


@pytest.mark.parametrize("key", IDS)
def test_tokenstream_reads_every_format(built: dict[str, Path], key: str) -> None:
    seq_len = 37
    stream = np.array(split_stream(built[key], "train"), dtype=np.int64)
    ts = TokenStream(built[key], "train", seq_len=seq_len, verify=True)
    assert len(ts) == (stream.size - 1) // seq_len
    for i in range(len(ts)):
        x, y = ts[i]
        assert x.tolist() == stream[i * seq_len : i * seq_len + seq_len].tolist()
        assert y.tolist() == stream[i * seq_len + 1 : i * seq_len + seq_len + 1].tolist()
    seen: Counter[tuple[int, ...]] = Counter()
    for rank in range(4):
        full = [(x.tolist(), y.tolist()) for x, y in ts.batches(2, rank=rank, world_size=4)]
        assert full, "every rank gets batches"
        again = [(x.tolist(), y.tolist()) for x, y in ts.batches(2, rank=rank, world_size=4,
                                                                 start=3)]
        assert again == full[3:]
        for xs, ys in full:
            for row_x, row_y in zip(xs, ys, strict=True):
                seen[(*row_x, row_y[-1])] += 1
    windows = Counter(tuple(stream[i * seq_len : i * seq_len + seq_len + 1].tolist())
                      for i in range(len(ts)))
    assert not seen - windows  # disjoint across ranks: no window served twice


def test_inspect_names_the_format_of_a_shard(built: dict[str, Path], cli) -> None:  # type: ignore[no-untyped-def]
    r = cli("inspect", built["megatron"] / "val-00000.idx")
    assert r.code == 0, r.err
    assert "megatron uint16 ids" in r.out and "MMIDIDX code 8" in r.out
    r = cli("inspect", built["raw"] / "train-00000.bin")
    assert r.code == 0 and "raw uint16 ids" in r.out
    r = cli("inspect", built["llmc-llama3"])
    assert "format llmc-llama3 (uint32 ids, version 7)" in r.out


def test_llmc_batch_reports_shards_llmc_would_reject(built: dict[str, Path], cli) -> None:  # type: ignore[no-untyped-def]
    out = built["llmc"]
    m = json.loads((out / "_MANIFEST.json").read_bytes())
    smallest = min(e["n_tokens"] for e in m["files"])
    r = cli("verify", out, "--llmc-batch", 1, smallest - 1)
    assert r.code == 0, r.out
    r = cli("verify", out, "--llmc-batch", 1, smallest)
    assert r.code == 1
    small = [e for e in m["files"] if e["n_tokens"] == smallest]
    for e in small:
        line = next(x for x in r.out.splitlines() if x.startswith(f"FAIL {e['name']}"))
        assert f"fewer than the B*T+1 = {smallest + 1:,}" in line
        assert "--max-file-tokens" in line
    val_total = m["totals"]["val"]["n_tokens"]
    r = cli("verify", out, "--llmc-batch", 1, val_total)
    assert r.code == 1
    assert f"the whole val split holds only {val_total:,} tokens: use a larger val split " \
           "(--val-fraction)" in r.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--format", "llmc-llama3", "--dtype", "uint16"),
         "--format llmc-llama3 stores uint32 ids; --dtype uint16 is not one of them"),
        (("--format", "megatron", "--dtype", "uint32"),
         "--format megatron stores uint16 or int32 ids; --dtype uint32 is not one of them"),
        (("--format", "nope"), "invalid choice: 'nope'"),
    ],
)
def test_bad_format_options_are_usage_errors(
    tmp_path: Path, cli, args: tuple[str, ...], message: str  # type: ignore[no-untyped-def]
) -> None:
    src = make_corpus(tmp_path / "src", [numbered_docs(5)])
    r = cli("prepare", "--out", tmp_path / "o", "--source", src, "--tokenizer", "byte", *args)
    assert r.code == 2, r.err
    assert message in r.err
    assert "Traceback" not in r.err
    assert not any(p.name.startswith(("o", ".o")) for p in tmp_path.iterdir())


def test_a_dtype_too_narrow_for_the_vocabulary_is_refused(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    tok = word_level_tokenizer(tmp_path / "tok", {"[UNK]": 0, "doc": 70_000})
    src = make_corpus(tmp_path / "src", [numbered_docs(5)])
    r = cli("prepare", "--out", tmp_path / "o", "--source", src, "--tokenizer", tok,
            "--no-doc-sep", "--format", "raw", "--dtype", "uint16")
    assert r.code == 2, r.err
    assert "vocabulary size 70,001 does not fit uint16 ids" in r.err
    r = cli("prepare", "--out", tmp_path / "o", "--source", src, "--tokenizer", tok,
            "--no-doc-sep", "--format", "raw")
    assert r.code == 0, r.err
    assert json.loads((tmp_path / "o" / "_MANIFEST.json").read_bytes())["dtype"] == "uint32"


def test_refresh_and_resume_keep_the_format(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    src = make_corpus(tmp_path / "src", [numbered_docs(40)])
    out = tmp_path / "o"
    base = ["--out", out, "--source", src, "--tokenizer", GPT2_DIR, "--max-file-tokens", "200"]
    assert cli("prepare", *base, "--format", "megatron").code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = cli("prepare", *base, "--format", "megatron", "--refresh")
    assert r.code == 0 and "up to date" in r.err + r.out, r.err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # Another format is another recipe: --refresh rebuilds and swaps it in.
    r = cli("prepare", *base, "--format", "raw", "--refresh")
    assert r.code == 0, r.err
    m = json.loads((out / "_MANIFEST.json").read_bytes())
    assert (m["format"], m["dtype"]) == ("raw", "uint16")
    assert not list(out.glob("*.idx"))
    assert split_stream(out, "train") == split_stream(tmp_path / "o.previous", "train")


def test_a_v1_dataset_verifies_and_refreshes_as_unchanged(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # A dataset published before --format: manifest v1, no format or dtype anywhere.
    src = make_corpus(tmp_path / "src", [numbered_docs(30)])
    out = tmp_path / "o"
    base = ["--out", out, "--source", src, "--tokenizer", "byte", "--max-file-tokens", "300"]
    assert cli("prepare", *base).code == 0
    path = out / "_MANIFEST.json"
    m = json.loads(path.read_bytes())
    m["version"] = "v1"
    del m["format"], m["dtype"], m["recipe"]["format"], m["recipe"]["dtype"]
    path.write_text(json.dumps(m, indent=2, ensure_ascii=False) + "\n")
    r = cli("verify", out)
    assert r.code == 0, r.out
    r = cli("prepare", *base, "--refresh")
    assert r.code == 0 and "up to date" in r.err + r.out, r.err
    assert json.loads(path.read_bytes())["version"] == "v1"  # nothing was rebuilt
