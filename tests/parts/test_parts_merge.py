"""``--part I/N`` then ``prep merge``: the merged dataset is the single run's token streams,
verifies, and links (never copies) the parts' files. The oracle is a single run of the same
recipe (itself tested against the spec) plus the self-describing documents."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import split_bins
from e2e.helpers import canonical, manifest, sha256_bytes, split_ids
from format_readers import split_files, split_stream

from parts.partskit import GPT2, RECIPE, files_of, merged_by_hand, part_args, uneven_corpus


def _doc_numbers(out: Path, split: str) -> list[int]:
    """Document numbers in stream order, from the byte-tokenized text (separator 0)."""
    text = bytes(split_ids(out, split)).decode()
    return [int(chunk[4:11]) for chunk in text.split("\0") if chunk]


@pytest.mark.parametrize("order", [[], ["--shuffle-files"]], ids=["sorted", "shuffle-files"])
def test_three_parts_merge_to_the_single_runs_streams(tmp_path: Path, cli, order) -> None:
    corpus = uneven_corpus(tmp_path / "c")
    single, merged = tmp_path / "single", tmp_path / "merged"
    assert cli("prepare", "--source", corpus, "--out", single, *RECIPE, "--tokenizer", "byte",
               *order).code == 0
    for i in range(3):
        r = cli(*part_args(corpus, merged, f"{i}/3", order))
        assert r.code == 0, r.err
        assert (tmp_path / "merged.parts" / f"{i}-of-3" / "_MANIFEST.json").is_file()
    assert not merged.exists()
    r = cli("merge", merged)
    assert r.code == 0, r.err
    assert cli("verify", merged).code == 0

    a, b = manifest(single), manifest(merged)
    for split in ("train", "val"):
        assert split_ids(merged, split) == split_ids(single, split)
        assert a["totals"][split]["n_tokens"] == b["totals"][split]["n_tokens"]
        assert a["totals"][split]["n_docs"] == b["totals"][split]["n_docs"]
    numbers = sorted(_doc_numbers(merged, "train") + _doc_numbers(merged, "val"))
    assert numbers == list(range(188))  # every document once
    assert b["source"]["files"] == a["source"]["files"]
    assert b["corpus_manifest_sha256"] == a["corpus_manifest_sha256"]
    assert b["source"]["rows_visited"] == a["source"]["rows_visited"] == 188
    assert b["val_bytes_per_token"] == a["val_bytes_per_token"]
    assert b["recipe"] == a["recipe"]
    assert [p["name"] for p in b["parts"]] == ["0-of-3", "1-of-3", "2-of-3"]
    # Each part records the whole listing it was cut from (docs/format.md), recomputed here
    # from the single run's manifest with the spec's canonical JSON.
    listing = {"kind": a["source"]["kind"], "revision": a["source"]["revision"],
               "files": [{"path": f["path"], "size": f["size"]} for f in a["source"]["files"]]}
    for i in range(3):
        part = manifest(tmp_path / "merged.parts" / f"{i}-of-3")["part"]
        assert part == {"index": i, "count": 3, "listing_sha256": sha256_bytes(canonical(listing))}
    assert sum(p["n_source_files"] for p in b["parts"]) == 7
    # Hard links: every merged file is one of a part's files, not a copy.
    for p in b["parts"]:
        for old, new in p["files"].items():
            src = tmp_path / "merged.parts" / p["name"] / old
            assert os.stat(src).st_ino == os.stat(merged / new).st_ino


def test_datatrove_parts_merge_into_split_folders(tmp_path: Path, cli) -> None:
    """The merged dataset's files go in its split folders, renumbered there, each a link to
    a part's file, and each folder read as nanotron reads it is the single run's split."""
    corpus = uneven_corpus(tmp_path / "c")
    extra = ["--format", "datatrove", "--max-file-tokens", "900"]
    single, merged = tmp_path / "single", tmp_path / "merged"
    assert cli("prepare", "--source", corpus, "--out", single, *RECIPE, "--tokenizer", "byte",
               *extra).code == 0
    merged_by_hand(cli, corpus, merged, 2, extra)
    assert cli("verify", merged).code == 0
    for split in ("train", "val"):
        assert split_stream(merged, split) == split_stream(single, split)
        names = [p.name for p in split_files(merged, split)]
        assert names == [f"{split}-{k:05d}.ds" for k in range(len(names))]
    assert len(split_files(merged, "train")) >= 3
    for p in manifest(merged)["parts"]:
        for old, new in p["files"].items():
            assert old.split("/")[0] == new.split("/")[0] in ("train", "val")
            src = tmp_path / "merged.parts" / p["name"] / old
            assert os.stat(src).st_ino == os.stat(merged / new).st_ino


def test_merge_of_gpt2_parts_equals_a_single_gpt2_run(tmp_path: Path, cli) -> None:
    corpus = uneven_corpus(tmp_path / "c")
    tok = ("--tokenizer", str(GPT2))
    single, merged = tmp_path / "single", tmp_path / "merged"
    assert cli("prepare", "--source", corpus, "--out", single, *RECIPE[:-2], *tok).code == 0
    for i in range(2):
        args = [a for a in part_args(corpus, merged, f"{i}/2", tok) if a not in ("--doc-sep-id",
                                                                                  "0")]
        assert cli(*args).code == 0
    assert cli("merge", merged).code == 0
    assert cli("verify", merged).code == 0
    for split in ("train", "val"):
        assert split_ids(merged, split) == split_ids(single, split)
    assert len(split_bins(merged, "train")) >= 2


def test_rerunning_a_published_merge_reports_it_complete(tmp_path: Path, cli) -> None:
    corpus = uneven_corpus(tmp_path / "c")
    out = tmp_path / "m"
    for i in range(2):
        assert cli(*part_args(corpus, out, f"{i}/2")).code == 0
    assert cli("merge", out).code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = cli("merge", out)
    assert r.code == 0 and "already complete" in r.err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_the_merged_manifest_is_deterministic(tmp_path: Path, cli) -> None:
    corpus = uneven_corpus(tmp_path / "c")
    outs = [tmp_path / "x" / "ds", tmp_path / "y" / "ds"]
    for out in outs:
        for i in range(3):
            assert cli(*part_args(corpus, out, f"{i}/3", ["--batch-size", str(3 + i)])).code == 0
        assert cli("merge", out).code == 0
    assert (outs[0] / "_MANIFEST.json").read_bytes() == (outs[1] / "_MANIFEST.json").read_bytes()
    assert json.loads((outs[0] / "_PROVENANCE.json").read_text())["parts"].keys() == {
        "0-of-3", "1-of-3", "2-of-3"}


def test_parts_with_the_local_executor_equal_the_parts_merged_by_hand(tmp_path: Path, cli) -> None:
    corpus = uneven_corpus(tmp_path / "c")
    hand = merged_by_hand(cli, corpus, tmp_path / "hand" / "ds", 3)
    out = tmp_path / "local" / "ds"
    r = cli("prepare", "--source", corpus, "--out", out, *RECIPE, "--tokenizer", "byte",
            "--parts", "3",
            "--threads", "1")
    assert r.code == 0, r.err
    assert "from 3 parts" in r.err
    got = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "_PROVENANCE.json"}
    assert got == hand


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--executor", "ray"], "--executor runs the parts of --parts N"),
        (["--parts", "3", "--part", "0/3"], "give one"),
        (["--parts", "3", "--max-documents", "5"], "across independent parts"),
        (["--parts", "0"], "argument --parts: '0' is too small; give a number >= 1"),
    ],
)
def test_parts_usage_errors(tmp_path: Path, cli, extra: list[str], message: str) -> None:
    corpus = uneven_corpus(tmp_path / "c")
    r = cli("prepare", "--source", corpus, "--tokenizer", "byte", "--out", tmp_path / "ds",
            *extra)
    assert r.code == 2 and message in r.err, r.err
    assert not (tmp_path / "ds.parts").exists()


def test_a_part_from_the_python_api_merges_with_a_part_from_the_cli(tmp_path: Path, cli) -> None:
    import prep

    corpus = uneven_corpus(tmp_path / "c")
    hand = merged_by_hand(cli, corpus, tmp_path / "hand" / "ds", 2)
    out = tmp_path / "mixed" / "ds"
    prep.prepare(out=out, source=corpus, tokenizer="byte", part="0/2", val_fraction=0.2,
                 max_file_tokens=2500, dataset="ds", doc_sep_id=0)
    assert (tmp_path / "mixed" / "ds.parts" / "0-of-2" / "_MANIFEST.json").is_file()
    assert cli(*part_args(corpus, out, "1/2")).code == 0
    assert cli("merge", out).code == 0
    got = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "_PROVENANCE.json"}
    assert got == hand


def _single_and_merged(tmp_path: Path, cli, fmt: list[str]) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """A single run and three parts merged (verified) of the same recipe in format ``fmt``."""
    corpus = uneven_corpus(tmp_path / "c")
    single, merged = tmp_path / "single", tmp_path / "merged"
    assert cli("prepare", "--source", corpus, "--out", single, *RECIPE, "--tokenizer", "byte",
               *fmt).code == 0
    for i in range(3):
        assert cli(*part_args(corpus, merged, f"{i}/3", fmt)).code == 0
    r = cli("merge", merged)
    assert r.code == 0, r.err
    assert cli("verify", merged).code == 0
    return single, merged


def test_megatron_parts_merge_with_their_index_files(tmp_path: Path, cli) -> None:
    """A shard of two files (.bin + .idx): both are linked under the new name, and the merged
    dataset verifies (every file re-hashed, the .idx against its companion entry)."""
    single, merged = _single_and_merged(tmp_path, cli, ["--format", "megatron"])
    m = manifest(merged)
    assert m["format"] == "megatron"
    idx = sorted(p.name for p in merged.glob("*.idx"))
    assert idx == sorted(e["name"][:-4] + ".idx" for e in m["files"])
    for entry in m["files"]:
        assert [c["name"] for c in entry["companions"]] == [entry["name"][:-4] + ".idx"]
    a, b = manifest(single), m
    for split in ("train", "val"):
        assert a["totals"][split]["n_tokens"] == b["totals"][split]["n_tokens"]
        data = b"".join((merged / e["name"]).read_bytes() for e in m["files"]
                        if e["split"] == split)
        ref = b"".join((single / e["name"]).read_bytes() for e in a["files"]
                       if e["split"] == split)
        assert data == ref  # Megatron's .bin is headerless: the id streams themselves


def test_npy_parts_merge_to_np_loadable_shards_under_seed_003s_names(tmp_path: Path, cli
                                                                     ) -> None:
    """Renumbered npy shards keep seed 003's names, and np.load reads the merged split back
    to the single run's stream."""
    import numpy as np

    single, merged = _single_and_merged(tmp_path, cli, ["--format", "npy"])
    m = manifest(merged)
    assert len([e for e in m["files"] if e["split"] == "train"]) >= 3  # renumbered across parts
    for split in ("train", "val"):
        names = [e["name"] for e in m["files"] if e["split"] == split]
        assert names == [f"{split}_{k:05d}.npy" for k in range(len(names))]

        def stream(out: Path, files: list[str]) -> list[int]:
            return [int(i) for f in files for i in np.load(out / f, mmap_mode="r")]

        ref = [e["name"] for e in manifest(single)["files"] if e["split"] == split]
        assert stream(merged, names) == stream(single, ref)


def test_parts_with_workers_and_the_fast_engine_equal_a_single_reference_run(
    tmp_path: Path, cli
) -> None:
    """--workers and --engine reach every part, from --part, from prep.prepare(part=...)
    and from --parts; the engine is recorded per part, the ids are the reference's."""
    import prep

    corpus = uneven_corpus(tmp_path / "c")
    recipe = [a for a in RECIPE if a not in ("--doc-sep-id", "0")]
    tok = ["--tokenizer", str(GPT2)]
    single = tmp_path / "single"
    r = cli("prepare", "--source", corpus, "--out", single, *recipe, *tok,
            "--engine", "hf", "--workers", "1")
    assert r.code == 0, r.err
    hand = tmp_path / "hand" / "ds"
    r = cli("prepare", "--source", corpus, "--out", hand, *recipe, *tok, "--part", "0/2",
            "--engine", "gigatoken", "--workers", "2")
    assert r.code == 0, r.err
    prep.prepare(out=hand, source=corpus, tokenizer=GPT2, part="1/2", val_fraction=0.2,
                 max_file_tokens=2500, dataset="ds", engine="gigatoken", workers=2)
    assert cli("merge", hand).code == 0
    driven = tmp_path / "driven" / "ds"
    r = cli("prepare", "--source", corpus, "--out", driven, *recipe, *tok, "--parts", "2",
            "--engine", "gigatoken", "--workers", "2")
    assert r.code == 0, r.err
    for split in ("train", "val"):
        assert split_ids(hand, split) == split_ids(single, split)
    assert {p.name: p.read_bytes() for p in hand.iterdir() if p.name != "_PROVENANCE.json"} == {
        p.name: p.read_bytes() for p in driven.iterdir() if p.name != "_PROVENANCE.json"}
    for root in (hand, driven):
        for i in range(2):
            part = root.parent / "ds.parts" / f"{i}-of-2" / "_PROVENANCE.json"
            assert json.loads(part.read_text())["engine"] == "gigatoken"
    assert json.loads((single / "_PROVENANCE.json").read_text())["engine"] == "hf"


@pytest.mark.parametrize("fmt", ["megatron", pytest.param("llmc", marks=pytest.mark.soak),
                                 pytest.param("datatrove", marks=pytest.mark.soak)])
def test_fixed_parts_merge_to_the_single_fixed_runs_files(tmp_path: Path, cli, fmt: str
                                                         ) -> None:
    """--pack fixed parts: merge cuts the joined streams again, so every merged file is
    byte for byte the single fixed run's (each full but a split's last, each index the
    pieces its file holds); part 0's aligned files are linked, the rest written anew, and
    the re-cut directory is gone once published."""
    corpus = uneven_corpus(tmp_path / "c")
    extra = ["--format", fmt, "--pack", "fixed", "--max-file-tokens", "700"]
    single, merged = tmp_path / "single", tmp_path / "merged"
    assert cli("prepare", "--source", corpus, "--out", single, *RECIPE, "--tokenizer", "byte",
               *extra).code == 0
    got = merged_by_hand(cli, corpus, merged, 3, extra)
    a, b = manifest(single), manifest(merged)
    assert b["files"] == a["files"]  # names, counts, first_doc_at, every hash
    assert b["totals"] == a["totals"] and b["recipe"] == a["recipe"]
    ref = {n: v for n, v in files_of(single).items() if not n.startswith("_")}
    assert {n: v for n, v in got.items() if not n.startswith("_")} == ref
    assert any(f["first_doc_at"] > 0 for f in b["files"])  # documents cross the cuts
    assert not (tmp_path / "merged.parts" / "recut").exists()
    linked = [p["files"] for p in b["parts"]]
    assert linked[0] and os.stat(merged / "train-00000.bin" if fmt == "llmc" else
                                 merged / next(iter(linked[0].values()))).st_nlink == 2
    assert cli("verify", merged).code == 0
    r = cli("merge", merged)
    assert r.code == 0 and "already complete" in r.err


def test_fixed_parts_without_separators_in_a_flat_format_are_refused(tmp_path: Path, cli
                                                                     ) -> None:
    """Nothing says where their documents start, so their files cannot be cut again."""
    corpus = uneven_corpus(tmp_path / "c")
    out = tmp_path / "m"
    for i in range(2):
        args = [a for a in part_args(corpus, out, f"{i}/2", ["--pack", "fixed"])
                if a not in ("--doc-sep-id", "0")]
        assert cli(*args, "--no-doc-sep").code == 0
    r = cli("merge", out)
    assert r.code == 1 and not out.exists()
    assert not (tmp_path / "m.parts" / "recut").exists()
    assert "merge must know where its documents start to cut --pack fixed files again: " \
           "rebuild the parts with a separator or with --format megatron, datatrove or " \
           "olmo" in r.err
