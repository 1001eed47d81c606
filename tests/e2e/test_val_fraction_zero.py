"""``--val-fraction 0``: every document goes to train, ``val-00000.bin`` still exists with
zero tokens, and the manifest is valid (users whose validation data lives elsewhere)."""

from __future__ import annotations

from pathlib import Path

from conftest import make_corpus, numbered_docs

from .helpers import expected_bin, is_empty, is_val, manifest, sha256_file, split_ids


def test_val_fraction_zero_sends_everything_to_train(cli, tmp_path: Path) -> None:
    texts = [numbered_docs(150), numbered_docs(150, 150)]
    texts[1][3] = "  "  # an empty row: skipped, not a document
    src = make_corpus(tmp_path / "src", texts)
    out = tmp_path / "out"
    docs = [t for part in texts for t in part if not is_empty(t)]
    assert any(is_val(t, 1337, 0.01) for t in docs)  # the default would have split some off

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src, "--val-fraction", "0")

    assert r.code == 0, r.err
    assert sorted(p.name for p in out.iterdir()) == [
        "_MANIFEST.json", "_PROVENANCE.json", "train-00000.bin", "val-00000.bin"]
    # the byte tokenizer without a separator: train is every document's UTF-8, in order
    assert split_ids(out, "train") == [b for t in docs for b in t.encode()]
    assert (out / "val-00000.bin").read_bytes() == expected_bin([], 256)
    m = manifest(out)
    assert m["totals"]["val"] == {"n_tokens": 0, "n_docs": 0, "n_files": 1}
    assert m["totals"]["train"]["n_docs"] == len(docs)
    assert m["recipe"]["val_fraction"] == 0.0
    assert m["val_bytes_per_token"] is None  # docs/format.md: null when val has no tokens
    val = next(f for f in m["files"] if f["name"] == "val-00000.bin")
    assert val == {"name": "val-00000.bin", "split": "val", "n_tokens": 0, "n_docs": 0,
                   "sha256": sha256_file(out / "val-00000.bin")}
    v = cli("verify", out)
    assert (v.code, v.out.strip()) == (0, f"{out}: OK")
