"""The document stream and the manifest, recomputed in the test from docs/format.md
(the stream, the manifest): budgets, shuffles, empty rows, splits, source identity."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, GPT2_DIR, make_corpus, numbered_docs, write_parquet
from golden_corpus import tiktoken_gpt2
from spec_model import spec_file_order, spec_shuffle

from .helpers import (
    canonical,
    is_empty,
    is_val,
    manifest,
    prefix_sha256,
    sha256_file,
    split_ids,
    with_seps,
)

SEP = 0  # with the byte tokenizer, a visible document boundary


def _utf8_docs(texts: list[str]) -> list[list[int]]:
    return [list(t.encode()) for t in texts if not is_empty(t)]


# -- --max-documents ---------------------------------------------------------------------------

BUDGET_FILES = [
    ["first", "second", "", "fourth", "fifth"],
    ["sixth", "   ", "eighth", "ninth", "tenth", "eleventh"],
    ["twelfth", "\t", "fourteenth", "fifteenth"],
]


@pytest.mark.parametrize("n", [1, 3, 8, 15, 100])
def test_max_documents_visits_exactly_n_rows_including_empties(cli, tmp_path: Path, n) -> None:
    src = make_corpus(tmp_path / "src", BUDGET_FILES,
                      split=[["train"] * len(f) for f in BUDGET_FILES])
    rows = [t for f in BUDGET_FILES for t in f]
    visited = rows[:n]
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--split-column", "split",
            "--doc-sep-id", SEP, "--max-documents", n)

    assert r.code == 0, r.err
    m = manifest(out)
    assert m["source"]["rows_visited"] == len(visited)
    assert m["source"]["empty_rows_skipped"] == sum(map(is_empty, visited))
    assert m["source"]["prefix_sha256"] == prefix_sha256(visited)
    assert split_ids(out, "train") == with_seps(_utf8_docs(visited), SEP)
    assert m["recipe"]["max_documents"] == n
    # Every source file belongs to the identity, read or not.
    listed = m["source"]["files"]
    assert [f["path"] for f in listed] == [f"part-{i:05d}.parquet" for i in range(3)]
    for f in listed:
        assert f["sha256"] == sha256_file(src / f["path"])


# -- --train-tokens ----------------------------------------------------------------------------

def _train_budget_corpus() -> list[str]:
    rows = numbered_docs(80)
    for i in (5, 17, 40):
        rows[i] = " "
    return rows


def _expected_stop(rows: list[str], budget: int, seed: int, fraction: float) -> int:
    """Rows visited when the train split (separators included) first reaches the budget."""
    train = 0
    for i, text in enumerate(rows):
        if is_empty(text) or is_val(text, seed, fraction):
            continue
        train += len(text.encode()) + 1
        if train >= budget:
            return i + 1
    raise AssertionError("the budget is never reached; make the corpus larger")


@pytest.mark.parametrize("overshoot", [0, 5])
def test_train_tokens_stops_right_after_the_crossing_document(
    cli, tmp_path: Path, overshoot
) -> None:
    rows = _train_budget_corpus()
    seed, fraction = 5, 0.3
    train_docs = [t for t in rows if not is_empty(t) and not is_val(t, seed, fraction)]
    # A budget that the 30th train document reaches exactly (overshoot 0) or crosses.
    reach = sum(len(t.encode()) + 1 for t in train_docs[:30])
    budget = reach - overshoot
    stop = _expected_stop(rows, budget, seed, fraction)
    visited = rows[:stop]
    src = make_corpus(tmp_path / "src", [rows[:33], rows[33:]])
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src, "--seed", seed,
            "--val-fraction", fraction, "--doc-sep-id", SEP, "--train-tokens", budget,
            "--batch-size", 7)

    assert r.code == 0, r.err
    m = manifest(out)
    assert m["totals"]["train"]["n_tokens"] == reach  # the crossing document is finished
    assert m["totals"]["train"]["n_docs"] == 30
    assert m["source"]["rows_visited"] == stop
    assert m["source"]["prefix_sha256"] == prefix_sha256(visited)
    val = [t for t in visited if not is_empty(t) and is_val(t, seed, fraction)]
    assert split_ids(out, "val") == with_seps(_utf8_docs(val), SEP)
    assert len(val) > 0  # the budget counts train only
    assert m["recipe"]["train_tokens"] == budget


def test_train_tokens_never_visits_a_bad_row_after_the_crossing_document(
    cli, tmp_path: Path
) -> None:
    rows: list[Any] = ["aaaa", "bbbb", "cccc", None, "dddd"]
    src = write_parquet(tmp_path / "src" / "p.parquet", rows, split=["train"] * 5)
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--split-column", "split",
            "--train-tokens", 10)  # reached by "cccc": 12 tokens

    assert r.code == 0, r.err
    m = manifest(out)
    assert m["source"]["rows_visited"] == 3
    assert split_ids(out, "train") == list(b"aaaabbbbcccc")


# -- shuffles ----------------------------------------------------------------------------------

SHUFFLE_LAYOUT = {  # relative path -> rows (sorted order is by POSIX path string)
    "part-0.parquet": 9,
    "a/x-1.parquet": 4,
    "b/c/y.parquet": 13,
    "a/z.parquet": 7,
    "m.parquet": 1,
}


def _shuffle_corpus(root: Path) -> dict[str, list[str]]:
    texts = numbered_docs(sum(SHUFFLE_LAYOUT.values()))
    texts[3] = ""
    texts[20] = " \n "
    contents, start = {}, 0
    for rel, n in SHUFFLE_LAYOUT.items():
        contents[rel] = texts[start:start + n]
        write_parquet(root / rel, contents[rel], split=["train"] * n)
        start += n
    return contents


def _reference_order(contents: dict[str, list[str]], seed: int, shuffle_files: bool,
                     buffer: int) -> tuple[list[str], list[str]]:
    """Stream steps 1, 2 and 4, written independently: (file order, row order)."""
    files = spec_file_order(sorted(contents), shuffle_files, seed)  # steps 1 and 2
    rows = [t for f in files for t in contents[f]]  # step 3
    return files, spec_shuffle(rows, buffer, seed)  # step 4


@pytest.mark.parametrize(("shuffle_files", "buffer"), [
    (True, 0), (False, 7), (True, 7), (True, 1000),
])
def test_shuffles_follow_the_pinned_order(cli, tmp_path: Path, shuffle_files, buffer) -> None:
    contents = _shuffle_corpus(tmp_path / "src")
    seed = 42
    files, order = _reference_order(contents, seed, shuffle_files, buffer)
    stored = [t for f in sorted(contents) for t in contents[f]]
    assert order != stored  # the case really shuffles
    out = tmp_path / "out"
    flags = ["--shuffle-files"] if shuffle_files else []

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", tmp_path / "src", "--split-column", "split",
            "--seed", seed, "--doc-sep-id", SEP, "--shuffle-buffer", buffer, "--batch-size", 5,
            *flags)

    assert r.code == 0, r.err
    assert split_ids(out, "train") == with_seps(_utf8_docs(order), SEP)
    m = manifest(out)
    assert [f["path"] for f in m["source"]["files"]] == files
    assert m["source"]["prefix_sha256"] == prefix_sha256(order)
    assert m["source"]["rows_visited"] == len(order)
    assert m["recipe"]["shuffle_files"] is shuffle_files
    assert m["recipe"]["shuffle_buffer"] == buffer


# -- empty rows --------------------------------------------------------------------------------

def test_empty_and_whitespace_rows_are_skipped_and_counted(cli, tmp_path: Path) -> None:
    texts = ["", " ", "\t\n", "\u3000", "\x1c\x1f", "\u2028\u0085\r\n", " a ", "\u200b",
             "\ufeff", "x\n"]
    empties = [t for t in texts if is_empty(t)]
    assert len(empties) == 6 and "\u200b" not in empties  # zero-width space is not space
    # Split values of skipped rows are never checked.
    splits = ["bogus" if is_empty(t) else "train" for t in texts]
    splits[0] = None
    src = write_parquet(tmp_path / "src" / "p.parquet", texts, split=splits)
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--split-column", "split",
            "--doc-sep-id", SEP)

    assert r.code == 0, r.err
    m = manifest(out)
    assert m["source"]["empty_rows_skipped"] == 6
    assert m["source"]["rows_visited"] == len(texts)
    assert m["source"]["prefix_sha256"] == prefix_sha256(texts)  # empties are visited
    # Documents pass unchanged: no stripping, no normalization.
    assert split_ids(out, "train") == with_seps(
        [list(b" a "), list("\u200b".encode()), list("\ufeff".encode()), list(b"x\n")], SEP)
    assert m["totals"]["train"]["n_docs"] == 4


# -- splits ------------------------------------------------------------------------------------

def test_content_hash_split_follows_the_spec_rule(cli, tmp_path: Path) -> None:
    docs = numbered_docs(300)
    rows = docs[:150] + docs[:20] + docs[150:]  # duplicates must land in the same split
    seed, fraction = 7, 0.25
    src = make_corpus(tmp_path / "src", [rows[:100], rows[100:]])
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src, "--seed", seed,
            "--val-fraction", fraction, "--doc-sep-id", SEP)

    assert r.code == 0, r.err
    val = [t for t in rows if is_val(t, seed, fraction)]
    train = [t for t in rows if not is_val(t, seed, fraction)]
    assert 40 < len(val) < 120  # both splits are really exercised
    assert split_ids(out, "val") == with_seps(_utf8_docs(val), SEP)
    assert split_ids(out, "train") == with_seps(_utf8_docs(train), SEP)
    m = manifest(out)
    assert m["recipe"]["val_fraction"] == fraction
    assert m["recipe"]["seed"] == seed
    assert "split_column" not in m["recipe"]


def test_split_column_routes_each_document(cli, tmp_path: Path) -> None:
    texts = numbered_docs(40)
    splits = ["val" if (i * 5) % 3 == 0 else "train" for i in range(40)]
    src = make_corpus(tmp_path / "src", [texts[:25], texts[25:]],
                      part=[splits[:25], splits[25:]])
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--split-column", "part",
            "--doc-sep-id", SEP)

    assert r.code == 0, r.err
    for split in ("train", "val"):
        mine = [t for t, s in zip(texts, splits, strict=True) if s == split]
        assert split_ids(out, split) == with_seps(_utf8_docs(mine), SEP), split
    m = manifest(out)
    assert list(m["recipe"]) == ["split_column", "seed", "shuffle_files", "shuffle_buffer",
                                 "max_documents", "train_tokens", "sep_position",
                                 "max_file_tokens", "format", "dtype"]
    assert m["recipe"]["split_column"] == "part"
    assert m["source"]["split_column"] == "part"


# -- the manifest ------------------------------------------------------------------------------

MANIFEST_KEYS = ["version", "dataset", "tokenizer_id", "tokenizer_sha256", "vocab_size",
                 "doc_sep_id", "sep_position", "format", "dtype", "bin_version",
                 "max_file_tokens",
                 "corpus_manifest_sha256", "source", "recipe", "val_bytes_per_token", "totals",
                 "files"]
SOURCE_KEYS = ["kind", "uri", "revision", "text_column", "split_column", "files",
               "rows_visited", "empty_rows_skipped", "prefix_sha256"]


def test_manifest_fields_recomputed(cli, tmp_path: Path) -> None:
    texts = numbered_docs(120) + ["Grüße aus München! 東京 🙂", "  ", "Ünïcödé\r\n"] * 5
    src = tmp_path / "corpus"
    write_parquet(src / "zz" / "late.parquet", texts[:60])
    write_parquet(src / "early.parquet", texts[60:])
    read_order = texts[60:] + texts[:60]  # "early.parquet" < "zz/late.parquet"
    seed, fraction = 3, 0.3
    out = tmp_path / "out"

    r = cli("prepare", "--out", out, "--source", src, "--tokenizer", GPT2_DIR,
            "--seed", seed, "--val-fraction", fraction, "--max-file-tokens", 500)

    assert r.code == 0, r.err
    raw = (out / "_MANIFEST.json").read_bytes()
    m = json.loads(raw)
    assert raw == (json.dumps(m, indent=2, ensure_ascii=False) + "\n").encode()
    assert list(m) == MANIFEST_KEYS
    assert list(m["source"]) == SOURCE_KEYS
    assert m["version"] == "v5"
    s = m["source"]
    assert (s["kind"], s["uri"], s["revision"]) == ("parquet", str(src), None)
    assert (s["text_column"], s["split_column"]) == ("text", None)
    assert [f["path"] for f in s["files"]] == ["early.parquet", "zz/late.parquet"]
    for f in s["files"]:
        st = (src / f["path"]).stat()
        assert f["size"] == st.st_size
        assert f["sha256"] == sha256_file(src / f["path"])
        assert f["fingerprint"] == {"ctime_ns": st.st_ctime_ns, "inode": st.st_ino,
                                    "mtime_ns": st.st_mtime_ns}
    # the corpus hash leaves the fingerprints (facts of where the files are) out
    files = [{k: f[k] for k in ("path", "size", "sha256")} for f in s["files"]]
    ident = {"kind": "parquet", "revision": None, "files": files}
    assert m["corpus_manifest_sha256"] == hashlib.sha256(canonical(ident)).hexdigest()
    assert s["prefix_sha256"] == prefix_sha256(read_order)
    assert s["empty_rows_skipped"] == 5
    assert m["recipe"] == {"val_fraction": fraction, "seed": seed, "shuffle_files": False,
                           "shuffle_buffer": 0, "max_documents": None, "train_tokens": None,
                           "sep_position": "prepend", "max_file_tokens": 500,
                           "format": "llmc", "dtype": "auto"}
    assert m["max_file_tokens"] == 500
    # β from an independent GPT-2 (tiktoken): val bytes / val tokens, separators excluded.
    enc = tiktoken_gpt2(FIXTURES)
    val = [t for t in read_order if not is_empty(t) and is_val(t, seed, fraction)]
    assert len(val) > 10
    beta = sum(len(t.encode()) for t in val) / sum(len(enc.encode_ordinary(t)) for t in val)
    assert m["val_bytes_per_token"] == pytest.approx(beta, rel=1e-12)
    # files: sorted by name, hashes and counts of the real files, totals their sums.
    names = [f["name"] for f in m["files"]]
    assert names == sorted(p.name for p in out.glob("*.bin"))
    for f in m["files"]:
        data = (out / f["name"]).read_bytes()
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
        assert f["n_tokens"] == (len(data) - 1024) // 2
        assert f["split"] == f["name"].split("-")[0]
    for split in ("train", "val"):
        mine = [f for f in m["files"] if f["split"] == split]
        assert m["totals"][split] == {"n_tokens": sum(f["n_tokens"] for f in mine),
                                      "n_docs": sum(f["n_docs"] for f in mine),
                                      "n_files": len(mine)}
    assert m["totals"]["val"]["n_docs"] == len(val)
    assert m["totals"]["train"]["n_files"] > 1


def test_source_spelling_does_not_change_the_corpus_identity(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_corpus(tmp_path / "src", [numbered_docs(30), numbered_docs(20, start=30)])
    monkeypatch.chdir(tmp_path)
    spellings = ["src", "./src", str(tmp_path / "src"), "src/*.parquet"]
    manifests = []
    for i, spelling in enumerate(spellings):
        r = cli("prepare", "--tokenizer", "byte",
                "--out", f"out{i}", "--source", spelling, "--dataset", "same")
        assert r.code == 0, f"{spelling}: {r.err}"
        manifests.append(manifest(tmp_path / f"out{i}"))
    # A budget does not change the identity of the input files either.
    r = cli("prepare", "--tokenizer", "byte",
            "--out", "budget", "--source", "src", "--max-documents", 5)
    assert r.code == 0, r.err
    manifests.append(manifest(tmp_path / "budget"))

    # One canonical URI whatever the spelling (issue 8 point 7; the first spec said "as given").
    real = os.path.realpath(tmp_path / "src")
    assert [m["source"]["uri"] for m in manifests[:4]] == [real] * 3 + [f"{real}/*.parquet"]
    identities = {m["corpus_manifest_sha256"] for m in manifests}
    assert len(identities) == 1
    assert {canonical(m["source"]["files"]) for m in manifests} == {
        canonical(manifests[0]["source"]["files"])}
    assert [f["path"] for f in manifests[0]["source"]["files"]] == [
        "part-00000.parquet", "part-00001.parquet"]
    assert len({m["files"][0]["sha256"] for m in manifests[:4]}) == 1


def test_bundled_sample_runs_with_only_out(cli, tmp_path: Path) -> None:
    import prep

    sample = Path(prep.__file__).resolve().parent / "sample"
    paths = sorted(sample.glob("*.parquet"))
    rows = [t for p in paths for t in pq.read_table(p, columns=["text"])["text"].to_pylist()]
    out = tmp_path / "sample-tokens"

    r = cli("prepare", "--source", "sample", "--tokenizer", "byte", "--out", out)

    assert r.code == 0, r.err
    m = manifest(out)
    assert m["source"]["rows_visited"] == len(rows)
    assert m["source"]["empty_rows_skipped"] == sum(map(is_empty, rows)) > 0
    assert [f["path"] for f in m["source"]["files"]] == [p.name for p in paths]
    assert [f["sha256"] for f in m["source"]["files"]] == [sha256_file(p) for p in paths]
    docs = [t for t in rows if not is_empty(t)]
    val = [t for t in docs if is_val(t, 1337, 0.01)]
    train = [t for t in docs if not is_val(t, 1337, 0.01)]
    assert split_ids(out, "train") == with_seps(_utf8_docs(train), None)
    assert split_ids(out, "val") == with_seps(_utf8_docs(val), None)
    assert (m["tokenizer_id"], m["vocab_size"], m["doc_sep_id"]) == ("bytes", 256, None)
    assert m["tokenizer_sha256"] == hashlib.sha256(b"").hexdigest()
    assert m["dataset"] == "sample-tokens"
    assert m["recipe"]["val_fraction"] == 0.01 and m["recipe"]["seed"] == 1337


# -- which files, in which order ---------------------------------------------------------------

def test_files_are_read_in_posix_string_order(cli, tmp_path: Path) -> None:
    """Sorted as strings, not as path parts: "a.parquet" < "a/b.parquet" ('.' < '/'),
    upper case before lower case, non-ASCII last; an empty file contributes no rows."""
    names = ["z.parquet", "a/b.parquet", "é.parquet", "a.parquet", "B.parquet", "a-b.parquet"]
    src = tmp_path / "src"
    for name in names:
        write_parquet(src / name, [f"from {name}"], split=["train"])
    write_parquet(src / "a" / "empty.parquet", [], split=[])
    (src / "README.md").write_text("not a Parquet file")
    order = ["B.parquet", "a-b.parquet", "a.parquet", "a/b.parquet", "a/empty.parquet",
             "z.parquet", "é.parquet"]
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--split-column", "split",
            "--doc-sep-id", SEP)

    assert r.code == 0, r.err
    m = manifest(out)
    assert [f["path"] for f in m["source"]["files"]] == order
    texts = [f"from {name}" for name in order if name != "a/empty.parquet"]
    assert split_ids(out, "train") == with_seps(_utf8_docs(texts), SEP)


def test_single_file_source_is_relative_to_its_parent(cli, tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "deep" / "dir" / "only.parquet", ["one", "two"])
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--val-fraction", "1e-9")

    assert r.code == 0, r.err
    files = manifest(out)["source"]["files"]
    st = src.stat()
    assert files == [{"path": "only.parquet", "size": st.st_size, "sha256": sha256_file(src),
                      "fingerprint": {"ctime_ns": st.st_ctime_ns, "inode": st.st_ino,
                                      "mtime_ns": st.st_mtime_ns}}]


def test_symlinked_files_as_in_the_hugging_face_cache(cli, tmp_path: Path) -> None:
    """``snapshots/<rev>/data/*.parquet`` are symlinks into ``blobs/``: the files are under
    the source root by their link paths, which the manifest lists and sorts by."""
    blobs = tmp_path / "cache" / "blobs"
    snapshot = tmp_path / "cache" / "snapshots" / "rev1"
    (snapshot / "data").mkdir(parents=True)
    # Blob names sort the other way round from the link names.
    write_parquet(blobs / "ffff0000", ["first file"], split=["train"])
    write_parquet(blobs / "0000ffff", ["second file"], split=["train"])
    (snapshot / "data" / "part-0.parquet").symlink_to(blobs / "ffff0000")
    (snapshot / "data" / "part-1.parquet").symlink_to(blobs / "0000ffff")
    out = tmp_path / "out"

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", snapshot, "--split-column", "split")

    assert r.code == 0, r.err
    files = manifest(out)["source"]["files"]
    assert [f["path"] for f in files] == ["data/part-0.parquet", "data/part-1.parquet"]
    assert [f["sha256"] for f in files] == [sha256_file(blobs / "ffff0000"),
                                            sha256_file(blobs / "0000ffff")]
    assert split_ids(out, "train") == list(b"first filesecond file")
