"""Tokenizer files that would otherwise leak into the output: saved padding or truncation
settings, and a model that cannot encode some text. Found in review; each test fails on the
code before its fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import bin_ids, word_level_tokenizer, write_parquet

WORDS = {"[UNK]": 0, "[PAD]": 1, "a": 2, "b": 3, "c": 4, "d": 5, "e": 6}


def _padded_truncating_tokenizer(directory: Path) -> Path:
    """A WordLevel tokenizer whose tokenizer.json carries padding and truncation (8)."""
    from tokenizers import Tokenizer

    word_level_tokenizer(directory, WORDS)
    tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tok.enable_padding(pad_id=1, pad_token="[PAD]")
    tok.enable_truncation(8)
    tok.save(str(directory / "tokenizer.json"))
    return directory


def test_saved_padding_and_truncation_are_ignored(cli: Any, tmp_path: Path) -> None:
    """Ids are each document's words, whole (11 words stay 11 ids), and the same for any
    batch size: no pads between documents, no cut documents."""
    tok = _padded_truncating_tokenizer(tmp_path / "tok")
    texts = ["a b", "c d e a b c d e a b c", "e"]
    src = write_parquet(tmp_path / "src" / "s.parquet", texts, split=["train"] * 3)
    expected = [WORDS[w] for t in texts for w in t.split()]  # the oracle: the vocabulary
    outputs = []
    for batch in (1, 512):
        out = tmp_path / f"out{batch}"
        r = cli("prepare", "--out", out, "--source", src, "--tokenizer", tok, "--no-doc-sep",
                "--split-column", "split", "--dataset", "d", "--batch-size", batch)
        assert r.code == 0, r.err
        assert bin_ids(out / "train-00000.bin") == expected
        outputs.append((out / "_MANIFEST.json").read_bytes())
    assert outputs[0] == outputs[1]


def test_a_document_the_tokenizer_cannot_encode_names_file_and_row(
    cli: Any, tmp_path: Path
) -> None:
    """A WordLevel model without an unk_token fails on an unknown word: exit 1 with the
    file and row, no traceback; the documents before it do not change that."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    (tmp_path / "tok").mkdir()
    tok = Tokenizer(models.WordLevel(vocab={"a": 0, "b": 1}))  # no unk_token
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(tmp_path / "tok" / "tokenizer.json"))
    src = write_parquet(tmp_path / "src" / "s.parquet", ["a b", "b a", "a zebra b", "a"],
                        split=["train"] * 4)
    for batch in (1, 512):
        out = tmp_path / f"out{batch}"
        r = cli("prepare", "--out", out, "--source", src, "--tokenizer", tmp_path / "tok",
                "--no-doc-sep", "--split-column", "split", "--batch-size", batch)
        assert r.code == 1, r.err
        assert "s.parquet row 2" in r.err and "cannot encode" in r.err, r.err
        assert "Traceback" not in r.err
        assert not out.exists()


def test_train_tokens_reached_before_an_unencodable_document_publishes_for_any_batch(
    cli: Any, tmp_path: Path
) -> None:
    """Whether the run stops before the bad document must not depend on the batch size."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    (tmp_path / "tok").mkdir()
    tok = Tokenizer(models.WordLevel(vocab={"a": 0, "b": 1}))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(tmp_path / "tok" / "tokenizer.json"))
    src = write_parquet(tmp_path / "src" / "s.parquet", ["a b", "b a", "a zebra b"],
                        split=["train"] * 3)
    manifests = []
    for batch in (1, 512):
        out = tmp_path / f"out{batch}"
        r = cli("prepare", "--out", out, "--source", src, "--tokenizer", tmp_path / "tok",
                "--no-doc-sep", "--split-column", "split", "--train-tokens", 3, "--dataset", "d",
                "--batch-size", batch)
        assert r.code == 0, r.err
        m = json.loads((out / "_MANIFEST.json").read_text())
        assert m["source"]["rows_visited"] == 2 and m["totals"]["train"]["n_docs"] == 2
        manifests.append((out / "_MANIFEST.json").read_bytes())
    assert manifests[0] == manifests[1]


def test_inspect_with_an_unreadable_tokenizer_is_a_clear_error(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    src = write_parquet(tmp_path / "src" / "s.parquet", ["hello"])
    assert cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src).code == 0
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for tok in (bad, tmp_path / "missing.json"):
        r = cli("inspect", out / "train-00000.bin", "--tokenizer", tok)
        assert r.code == 1 and "cannot load a tokenizer.json" in r.err, r.err
        assert "Traceback" not in r.err
