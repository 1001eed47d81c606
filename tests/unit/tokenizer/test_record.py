"""``training.json`` (docs/tokenizer.md): what it holds, one merge a line, byte-identical
for the same inputs, and valid JSON in each of its shapes."""

from __future__ import annotations

import json

from prep._version import __version__
from prep.state.identity import FileIdentity
from prep.state.manifest import Manifest, ManifestSource, SplitSummary
from prep.tokenizer.record import training_json
from prep.tokenizer.settings import TrainRecipe

SHA = "a" * 64


def corpus() -> Manifest:
    source = ManifestSource("parquet", "/data", None, "text", None,
                            (FileIdentity("p.parquet", 10, SHA),), 5, 1, SHA)
    return Manifest(dataset="d", tokenizer_id="bytes", tokenizer_sha256=SHA, vocab_size=256,
                    doc_sep_id=None, sep_position="prepend", format="raw", dtype="uint8",
                    bin_version=None, max_file_tokens=1_000, corpus_manifest_sha256=SHA,
                    source=source, recipe={}, val_bytes_per_token=None,
                    totals={"train": SplitSummary(1_234, 4, 1), "val": SplitSummary(9, 1, 1)},
                    files=())


def test_a_bpe_record_holds_what_docs_tokenizer_md_lists() -> None:
    recipe = TrainRecipe("/data", vocab_size=260, special_tokens=("<|end|>", "<pad>"))
    raw = training_json(recipe, corpus(), 258, [(104, 101, 9), (256, 108, 3)], "c")
    d = json.loads(raw)
    assert list(d) == ["format", "version", "method", "recipe", "source", "vocabulary",
                       "versions", "merges"]
    assert (d["format"], d["version"], d["method"]) == ("prep-tokenizer-training", 1, "bpe")
    assert d["recipe"] == recipe.to_json()
    assert d["source"] == {**corpus().source.to_json(), "train_documents": 4,
                           "train_bytes": 1_234}
    assert d["vocabulary"] == {"size": 260, "learned": 258, "separator_id": 258,
                               "special_tokens": [
        {"id": 258, "content": "<|end|>"}, {"id": 259, "content": "<pad>"}]}
    assert d["versions"] == {"prep": __version__, "trainer": "c"}
    assert d["merges"] == [[104, 101, 9], [256, 108, 3]]
    assert raw.endswith(b'  "merges": [\n    [104, 101, 9],\n    [256, 108, 3]\n  ]\n}\n')
    assert raw == training_json(recipe, corpus(), 258, [(104, 101, 9), (256, 108, 3)], "c")


def test_no_merges_and_no_special_tokens() -> None:
    raw = training_json(TrainRecipe("/data"), corpus(), 256, [], "python")
    d = json.loads(raw)
    assert d["merges"] == [] and raw.endswith(b'  "merges": []\n}\n')
    assert d["vocabulary"] == {"size": 256, "learned": 256, "special_tokens": [],
                               "separator_id": None}


def test_a_byte_record_has_no_merges() -> None:
    raw = training_json(TrainRecipe("/data", method="byte"), corpus(), 40, [], "python")
    d = json.loads(raw)
    assert "merges" not in d and d["method"] == "byte"
    assert raw == (json.dumps(d, ensure_ascii=False, indent=2) + "\n").encode()
