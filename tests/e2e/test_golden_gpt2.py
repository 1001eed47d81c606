"""Golden parity: every golden document through the CLI with GPT-2 equals tiktoken's
``encode_ordinary`` on the GPT-2 ranks (an encoder independent of ``tokenizers``), with the
separator 50256, in stream order, across many rollover files."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, GPT2_DIR, bin_ids, make_corpus, split_bins
from golden_corpus import golden_texts, tiktoken_gpt2

from .helpers import file_lengths, header_ints, manifest, rollover, split_ids, with_seps

EOT = 50256
MAX_FILE_TOKENS = 2000


@pytest.fixture(scope="module")
def golden() -> tuple[list[str], list[list[int]]]:
    texts = golden_texts()
    enc = tiktoken_gpt2(FIXTURES)
    return texts, [enc.encode_ordinary(t) for t in texts]


def _three_files(texts: list[str], splits: list[str]) -> tuple[list[list[str]], dict[str, Any]]:
    third = len(texts) // 3
    cuts = [0, third, 2 * third, len(texts)]
    files = [texts[a:b] for a, b in itertools.pairwise(cuts)]
    split_col = [splits[a:b] for a, b in itertools.pairwise(cuts)]
    return files, {"split": split_col}


def _check_files(out: Path, split: str, docs: list[list[int]], sep_position: str) -> None:
    """Whole documents per file, each file starting (prepend) or ending (append) with the
    separator, the file sizes exactly as the rollover rule gives."""
    lengths = file_lengths(out, split)
    assert lengths == rollover([len(d) + 1 for d in docs], MAX_FILE_TOKENS)
    for path in split_bins(out, split):
        ids = bin_ids(path)
        assert ids[0 if sep_position == "prepend" else -1] == EOT, path.name
        assert header_ints(path)[:4] == (20240520, 1, len(ids), 50257)


@pytest.mark.parametrize("sep_position", ["prepend", "append"])
def test_golden_all_train_matches_tiktoken(cli, tmp_path: Path, golden, sep_position) -> None:
    texts, expected = golden
    assert len(texts) >= 300
    files, cols = _three_files(texts, ["train"] * len(texts))
    src = make_corpus(tmp_path / "src", files, **cols)
    out = tmp_path / "golden"

    r = cli("prepare", "--out", out, "--source", src, "--split-column", "split",
            "--tokenizer", GPT2_DIR, "--max-file-tokens", MAX_FILE_TOKENS,
            "--sep-position", sep_position, "--batch-size", 37)

    assert r.code == 0, r.err
    got = split_ids(out, "train")
    want = with_seps(expected, EOT, sep_position)
    if got != want:  # name the first document that differs
        pos = 0
        for i, ids in enumerate(expected):
            doc = with_seps([ids], EOT, sep_position)
            assert got[pos:pos + len(doc)] == doc, f"golden doc {i}: {texts[i][:60]!r}"
            pos += len(doc)
    assert got == want
    assert len(split_bins(out, "train")) >= 10  # many rollovers really happened
    _check_files(out, "train", expected, sep_position)
    assert split_ids(out, "val") == []
    m = manifest(out)
    assert m["totals"]["train"] == {"n_tokens": len(want), "n_docs": len(texts),
                                    "n_files": len(split_bins(out, "train"))}
    assert m["source"]["rows_visited"] == len(texts)
    assert m["source"]["empty_rows_skipped"] == 0


def test_golden_with_val_rows_checked_per_split(cli, tmp_path: Path, golden) -> None:
    texts, expected = golden
    splits = ["val" if i % 7 == 3 else "train" for i in range(len(texts))]
    files, cols = _three_files(texts, splits)
    src = make_corpus(tmp_path / "src", files, **cols)
    out = tmp_path / "golden"

    r = cli("prepare", "--out", out, "--source", src, "--split-column", "split",
            "--tokenizer", GPT2_DIR, "--max-file-tokens", MAX_FILE_TOKENS)

    assert r.code == 0, r.err
    for split in ("train", "val"):
        docs = [ids for ids, s in zip(expected, splits, strict=True) if s == split]
        assert split_ids(out, split) == with_seps(docs, EOT), split
        _check_files(out, split, docs, "prepend")
    m = manifest(out)
    val_docs = [(t, ids) for t, ids, s in zip(texts, expected, splits, strict=True) if s == "val"]
    beta = sum(len(t.encode()) for t, _ in val_docs) / sum(len(ids) for _, ids in val_docs)
    assert m["val_bytes_per_token"] == pytest.approx(beta, rel=1e-12)
    assert m["totals"]["val"]["n_docs"] == len(val_docs)
