"""datatrove's ``.ds`` set: a prepared dataset read back by the independent reader written
from datatrove's source (``tests/format_readers.py``) gives the ids and document ends of
prep's own documents, shard by shard; ``metric`` agrees with humanize's documented
examples."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GPT2_DIR, make_corpus, numbered_docs
from format_readers import manifest_of, read_datatrove, split_files, split_stream

from prep.cli.commands import main
from prep.formats.datatrove import metric


@pytest.mark.parametrize(("value", "text"), [
    (0, "0.00 T"), (5, "5.00 T"), (12, "12.0 T"), (999, "999 T"), (1000, "1.00 kT"),
    (1234, "1.23 kT"), (99_999, "100 kT"), (999_999, "1.00 MT"), (2**31, "2.15 GT"),
])
def test_metric_is_humanizes(value: int, text: str) -> None:
    # humanize.metric(value, unit="T") in humanize 4.17 (the values printed by it)
    assert metric(value, "T") == text


def test_prepared_shards_read_back_by_datatroves_layout(tmp_path: Path) -> None:
    src = make_corpus(tmp_path / "src", [numbered_docs(60)])
    common = ["--source", str(src), "--tokenizer", str(GPT2_DIR), "--val-fraction", "0.3",
              "--sep-position", "append", "--max-file-tokens", "300", "--quiet"]
    out, flat = tmp_path / "out", tmp_path / "flat"
    assert main(["prepare", "--out", str(out), "--format", "datatrove", *common]) == 0
    assert main(["prepare", "--out", str(flat), "--format", "raw", *common]) == 0
    m = manifest_of(out)
    files = {f["name"]: f for f in m["files"]}
    # one folder per split, holding that split's files only, as nanotron is given them
    assert sorted(p.name for p in out.iterdir()) == ["_MANIFEST.json", "_PROVENANCE.json",
                                                     "train", "val"]
    for split in ("train", "val"):
        shards = split_files(out, split)  # DIR/<split>/*.ds, as Nanoset globs it
        assert len(shards) >= 2
        assert {p.name.split("-")[0] for p in (out / split).iterdir()} == {split}
        stream: list[int] = []
        for path in shards:
            ids, ends, meta = read_datatrove(path)
            entry = files[f"{split}/{path.name}"]
            assert meta[0] == "gpt2|2" and len(ids) == entry["n_tokens"]
            assert len(ends) == entry["n_docs"]
            # every document ends with the appended separator, exactly at its index end
            assert [i for i, t in enumerate(ids) if t == 50256] == [e - 1 for e in ends]
            listed = {c["name"] for c in entry["companions"]}
            assert listed == {f"{split}/{path.name}.index", f"{split}/{path.name}.metadata"}
            stream += ids
        assert stream == split_stream(flat, split)  # the split's exact stream, in order
    assert main(["verify", str(out)]) == 0
    shards = split_files(out, "val")
    (shards[0].with_name(shards[0].name + ".index")).write_bytes(b"\0" * 8)
    assert main(["verify", str(out)]) == 1


def test_verify_names_a_file_missing_from_a_split_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_corpus(tmp_path / "src", [numbered_docs(30)])
    out = tmp_path / "out"
    assert main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer",
                 str(GPT2_DIR), "--format", "datatrove", "--val-fraction", "0.3",
                 "--max-file-tokens", "300", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["inspect", str(out / "train" / "train-00000.ds.index"), "--first", "2"]) == 0
    assert "train-00000.ds: datatrove uint16 ids" in capsys.readouterr().out
    (out / "train" / "train-00000.ds.metadata").unlink()
    (out / "val" / "val-00007.ds").write_bytes(b"")
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    err = capsys.readouterr()
    said = err.out + err.err
    assert "train/train-00000.ds.metadata: missing (part of train/train-00000.ds)" in said
    assert "val/val-00007.ds: not listed in the manifest" in said


def test_datatroves_own_writer_writes_the_same_bytes(tmp_path: Path) -> None:
    """Where datatrove is installed (``pip install datatrove``: no torch needed for its
    writer), its ``TokenizedFile`` writes the same documents to the same three files."""
    tokenizer = pytest.importorskip("datatrove.pipeline.tokens.tokenizer")
    src = make_corpus(tmp_path / "src", [numbered_docs(40)])
    out = tmp_path / "out"
    assert main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer",
                 str(GPT2_DIR), "--format", "datatrove", "--val-fraction", "0.3",
                 "--max-file-tokens", "300", "--quiet"]) == 0
    theirs = tmp_path / "theirs"
    for path in split_files(out, "train") + split_files(out, "val"):
        ids, ends, _ = read_datatrove(path)
        f = tokenizer.TokenizedFile(str(theirs / path.parent.name), path.name,
                                    save_final_metadata=True,
                                    tokenizer_name_or_path="gpt2", token_size=2)
        for a, b in zip([0, *ends], ends, strict=False):
            f.write(ids[a:b], None)
        f.close()
        for suffix in ("", ".index", ".metadata"):
            name = f"{path.parent.name}/{path.name}{suffix}"
            assert (out / name).read_bytes() == (theirs / name).read_bytes(), name
