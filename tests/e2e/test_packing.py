"""``--pack fixed`` against ``--pack whole`` for every format, read back by the independent
readers of ``tests/format_readers.py``. The expected cuts come from a naive packer written
here from docs/format.md's rule (the split's stream cut every ``--max-file-tokens`` ids; a
document starts in the file holding its first id; an indexed file lists the pieces it
holds), applied to the documents the whole run's Megatron index holds."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import GPT2_DIR, make_corpus, numbered_docs
from format_readers import (
    read_datatrove,
    read_file,
    read_megatron_docs,
    read_olmo,
    split_files,
    split_stream,
)

from prep import TokenStream

LIMIT = 400
FORMATS = ["llmc", "llmc-llama3", "megatron", "raw", "npy", "datatrove", "olmo"]
# A document longer than two files, among the numbered ones.
LONG = "doc long " + " ".join(f"w{k % 97}" for k in range(900))
# Every format packed fixed; whole in two (the stream is every format's: tests/e2e/
# test_formats.py), Megatron's the oracle of the documents; both packings with append.
KEYS = [f"{f}-fixed-prepend" for f in FORMATS] + ["megatron-whole-prepend",
                                                  "llmc-whole-prepend"] + [
    f"{f}-{p}-append" for f in ("llmc", "olmo") for p in ("whole", "fixed")]


def whole_of(built: dict[str, Path], key: str) -> Path:
    """The whole run to compare the fixed run ``key`` with: its own format's, else
    Megatron's (the same stream, the same documents)."""
    same = key.replace("-fixed-", "-whole-")
    return built.get(same, built["megatron-whole-prepend"])


def prepare(src: Path, out: Path, fmt: str, pack: str, position: str, *extra: str) -> None:
    from prep.cli.commands import main

    code = main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer",
                 str(GPT2_DIR), "--val-fraction", "0.3", "--max-file-tokens", str(LIMIT),
                 "--dataset", "packed", "--format", fmt, "--pack", pack, "--sep-position",
                 position, "--quiet", *extra])
    assert code == 0


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("packing")
    docs = numbered_docs(90)
    src = make_corpus(root / "src", [[*docs[:40], LONG, *docs[40:60]], docs[60:]])
    outs = {}
    for key in KEYS:
        fmt, pack, position = key.rsplit("-", 2)
        prepare(src, root / key, fmt, pack, position)
        outs[key] = root / key
    return outs


def documents(out: Path, split: str) -> list[list[int]]:
    """The split's documents, from a whole Megatron run's index (independent reader)."""
    return [d for p in split_files(out, split) for d in read_megatron_docs(p.with_suffix(""))]


def naive_fixed(docs: list[list[int]]) -> list[dict[str, object]]:
    """Per file of the fixed packing: its ids, the documents starting in it, where the
    first does (its size when none) and the document pieces it holds."""
    stream = [i for d in docs for i in d]
    starts = np.cumsum([0] + [len(d) for d in docs])[:-1].tolist()
    files = []
    for lo in range(0, max(len(stream), 1), LIMIT):
        hi = min(len(stream), lo + LIMIT)
        mine = [s - lo for s in starts if lo <= s < hi]
        bounds = sorted({0, hi - lo, *mine})
        files.append({"ids": stream[lo:hi], "n_docs": len(mine),
                      "first_doc_at": mine[0] if mine else hi - lo,
                      "pieces": [b - a for a, b in itertools.pairwise(bounds)]})
    return files


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("split", ["train", "val"])
def test_fixed_files_are_full_and_hold_the_whole_runs_stream(
    built: dict[str, Path], fmt: str, split: str
) -> None:
    fixed, whole = built[f"{fmt}-fixed-prepend"], whole_of(built, f"{fmt}-fixed-prepend")
    sizes = [len(read_file(fixed, p)) for p in split_files(fixed, split)]
    assert sizes[:-1] == [LIMIT] * (len(sizes) - 1) and 0 < sizes[-1] <= LIMIT
    assert split_stream(fixed, split) == split_stream(whole, split)
    assert len(split_files(whole, split)) > 1 or split == "val"  # whole's cuts differ
    want = naive_fixed(documents(built["megatron-whole-prepend"], split))
    files = [f for f in json.loads((fixed / "_MANIFEST.json").read_bytes())["files"]
             if f["split"] == split]
    assert [(f["n_tokens"], f["n_docs"], f["first_doc_at"]) for f in files] == [
        (len(w["ids"]), w["n_docs"], w["first_doc_at"]) for w in want]  # type: ignore[arg-type]


@pytest.mark.parametrize("split", ["train", "val"])
def test_each_index_lists_the_pieces_its_file_holds(built: dict[str, Path], split: str
                                                    ) -> None:
    want = [w["pieces"] for w in naive_fixed(documents(built["megatron-whole-prepend"], split))]
    mega = built["megatron-fixed-prepend"]
    assert [[len(d) for d in read_megatron_docs(p.with_suffix(""))]
            for p in split_files(mega, split)] == want
    trove = built["datatrove-fixed-prepend"]
    assert [np.diff([0, *read_datatrove(p)[1]]).tolist()
            for p in split_files(trove, split)] == want
    olmo = built["olmo-fixed-prepend"]
    assert [[len(d) for d in read_olmo(p, "uint16")] for p in split_files(olmo, split)] == want
    if split == "train":  # LONG: a file holding only a piece of one document
        assert any(w == [LIMIT] for w in want[1:])


@pytest.mark.parametrize("key", [k for k in KEYS if "-fixed-" in k])
def test_tokenstream_documents_are_the_whole_runs_across_the_cuts(
    built: dict[str, Path], key: str
) -> None:
    """The fixed run's windows, boundaries and positions are the whole run's: a document
    that crosses a file counts on (documents=True from the index or the separators)."""
    fixed = TokenStream(built[key], "train", seq_len=64, documents=True)
    whole = TokenStream(whole_of(built, key), "train", seq_len=64, documents=True)
    assert len(fixed) == len(whole) > 0
    for i in range(len(fixed)):
        for a, b in zip(fixed[i], whole[i], strict=True):
            assert np.array_equal(a, b), (key, i)
    starts = np.cumsum([0] + [len(d) for d in documents(built["megatron-whole-prepend"],
                                                         "train")])[:-1]
    if key.endswith("-prepend"):  # cu_seqlens against the documents, independently
        _, _, cu, _ = fixed[3]
        inside = starts[(starts > 3 * 64) & (starts < 4 * 64)] - 3 * 64
        assert cu.tolist() == [0, *inside.tolist(), 64]


def test_verify_and_inspect_know_the_packing(built: dict[str, Path], cli, tmp_path: Path
                                             ) -> None:  # type: ignore[no-untyped-def]
    for key in KEYS:
        assert cli("verify", built[key]).code == 0, key
    shown = cli("inspect", built["olmo-fixed-prepend"]).out
    m = json.loads((built["olmo-fixed-prepend"] / "_MANIFEST.json").read_bytes())
    second = sorted(m["files"], key=lambda f: f["name"])[1]
    assert f"packing fixed: every file but a split's last holds {LIMIT} ids" in shown
    assert f"{second['name']} {second['first_doc_at']:,}" in shown
    assert "packing whole" in cli("inspect", built["olmo-whole-append"]).out
    # A forged first_doc_at: verify names the file.
    forged = tmp_path / "forged"
    shutil.copytree(built["llmc-fixed-prepend"], forged)
    m = json.loads((forged / "_MANIFEST.json").read_bytes())
    m["files"][1]["first_doc_at"] += 1
    (forged / "_MANIFEST.json").write_text(json.dumps(m, indent=2) + "\n")
    r = cli("verify", forged)
    assert r.code != 0 and f"{m['files'][1]['name']}: its first document (first_doc_at" in (
        r.out + r.err)


def test_a_whole_manifest_records_no_packing(built: dict[str, Path]) -> None:
    """--pack whole writes the manifests it always wrote: no pack, no first_doc_at."""
    m = json.loads((built["llmc-whole-prepend"] / "_MANIFEST.json").read_bytes())
    assert "pack" not in m["recipe"] and not any("first_doc_at" in f for f in m["files"])
    fixed = json.loads((built["llmc-fixed-prepend"] / "_MANIFEST.json").read_bytes())
    assert fixed["recipe"]["pack"] == "fixed"


def test_a_refresh_continues_fixed_files_as_a_fresh_run_cuts_them(tmp_path: Path) -> None:
    """A source file added: the refresh continues the last partial file; the result is
    the fresh run's of the grown source, byte for byte (Megatron's index too)."""
    docs = numbered_docs(120)
    src = make_corpus(tmp_path / "src", [docs[:50], docs[50:90]])
    prepare(src, tmp_path / "out", "megatron", "fixed", "prepend")
    make_corpus(tmp_path / "more", [docs[90:]])
    shutil.copy(tmp_path / "more" / "part-00000.parquet", src / "part-00002.parquet")
    prepare(src, tmp_path / "out", "megatron", "fixed", "prepend", "--refresh")
    prepare(src, tmp_path / "fresh", "megatron", "fixed", "prepend")
    names = sorted(p.name for p in (tmp_path / "fresh").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "out").iterdir())
    for name in names:
        if name != "_PROVENANCE.json":
            assert (tmp_path / "out" / name).read_bytes() == \
                (tmp_path / "fresh" / name).read_bytes(), name
