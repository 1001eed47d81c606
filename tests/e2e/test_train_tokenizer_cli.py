"""``prep train-tokenizer`` in-process: bad input (exit 2 for the command line, 1 for what
it names, with what, where and how to fix), the byte strategy's file, and a trained
tokenizer used by ``prep prepare`` (ids checked against the naive reference)."""

from __future__ import annotations

import json
from pathlib import Path

import bpe_reference as ref
import pytest
from conftest import split_bins, write_parquet

from prep.cli import commands as cli
from prep.tokenizer.files import merges_of

DOCS = ["the cat sat on the mat", "the mat is flat", "aaaa bbbb aaaa", "naïve café"]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_parquet(tmp_path_factory.mktemp("src") / "a.parquet", DOCS * 3)


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    code = cli.main(["train-tokenizer", *map(str, argv)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "wordpiece"], "argument --method: invalid choice: 'wordpiece'"),
        (["--vocab-size", "100"], "--vocab-size 100 must be in 256..4,294,967,295"),
        (["--vocab-size", "256", "--special-token", "<|end|>"],
         "--vocab-size 256 must be in 257..4,294,967,295 (2**32-1): it counts every id"),
        (["--pre-tokenizer", "gpt3"], "argument --pre-tokenizer: invalid choice: 'gpt3'"),
        (["--vocab-size", "4294967296"], "must be in 256..4,294,967,295"),
        (["--method", "byte", "--vocab-size", "512"],
         "--vocab-size was given with --method byte"),
        (["--min-pair-frequency", "0"], "--min-pair-frequency: "),
        (["--special-token", "x", "--special-token", "x"], "must be distinct"),
    ],
)
def test_command_line_mistakes_exit_2(capsys, source, tmp_path, extra, message) -> None:
    code, err = run(capsys, "--source", source, "--out", tmp_path / "t", *extra)
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "t").exists() and not (tmp_path / "t.incomplete").exists()


def test_no_source_exits_2_saying_what_to_give(capsys, tmp_path) -> None:
    code, err = run(capsys, "--out", tmp_path / "t")
    assert code == 2 and "--source is required to start" in err


def test_a_source_without_the_text_column_exits_1(capsys, source, tmp_path) -> None:
    code, err = run(capsys, "--source", source, "--text-column", "body", "--out",
                    tmp_path / "t", "--workers", "1")
    assert code == 1, err
    assert "a.parquet" in err and "body" in err and "Traceback" not in err


def test_a_source_without_text_exits_1(capsys, tmp_path) -> None:
    blank = write_parquet(tmp_path / "blank.parquet", ["", "  ", "\n"])
    code, err = run(capsys, "--source", blank, "--out", tmp_path / "t", "--workers", "1")
    assert code == 1, err
    assert "empty after 3 rows (3 empty): nothing to publish" in err
    assert "--text-column" in err


def test_a_source_with_val_documents_only_exits_1(capsys, tmp_path) -> None:
    val = write_parquet(tmp_path / "val.parquet", ["a b", "c d"], split=["val", "val"])
    code, err = run(capsys, "--source", val, "--split-column", "split", "--out",
                    tmp_path / "t", "--workers", "1")
    assert code == 1, err
    assert "the train split is empty after 2 rows (0 empty): nothing to publish" in err
    assert "--split-column" in err


def test_byte_strategy_into_prepare(capsys, source, tmp_path) -> None:
    """Its own file; prepare encodes with it (ids: each byte's rank, the special token
    after them as separator) and refuses a document with a byte the vocabulary lacks,
    naming file, row and byte (exit 1); an engine named explicitly exits 2."""
    tok = tmp_path / "t"
    code, err = run(capsys, "--source", source, "--method", "byte", "--val-fraction", "0",
                    "--special-token", "<|end|>", "--out", tok, "--workers", "1")
    assert code == 0, err
    data = json.loads((tok / "byte_vocabulary.json").read_text())
    values = sorted(set("".join(DOCS).encode()))
    assert data["bytes"] == values
    assert not (tok / "tokenizer.json").exists()
    out = tmp_path / "data"
    code = cli.main(["prepare", "--source", str(source), "--tokenizer", str(tok), "--out",
                     str(out), "--val-fraction", "0", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "engine: vocab-bytes" in err
    ids = [i for path in split_bins(out, "train") for i in _ids(path)]
    rank = {b: i for i, b in enumerate(values)}
    assert ids == [i for d in DOCS * 3 for i in (len(values), *(rank[b] for b in d.encode()))]
    other = write_parquet(tmp_path / "o" / "b.parquet", ["the cat", "the dog"])
    code = cli.main(["prepare", "--source", str(other), "--tokenizer", str(tok), "--out",
                     str(tmp_path / "refused"), "--val-fraction", "0", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "b.parquet row 1: byte 0x64 at byte 4 of the document" in err
    assert "train-tokenizer --method byte" in err and "unk_token" not in err
    code = cli.main(["prepare", "--source", str(source), "--tokenizer", str(tok), "--out",
                     str(tmp_path / "hf"), "--engine", "hf", "--workers", "1"])
    assert code == 2
    assert "--engine hf cannot reproduce" in capsys.readouterr().err


def test_prepare_with_a_trained_tokenizer_gives_the_reference_ids(capsys, source, tmp_path):
    tok = tmp_path / "tok"
    code, err = run(capsys, "--source", source, "--vocab-size", "300", "--val-fraction", "0",
                    "--special-token", "<|end|>", "--out", tok, "--workers", "1")
    assert code == 0, err
    merges = merges_of(tok / "tokenizer.json")
    want = ref.train([d.encode() for d in DOCS * 3], 300, 2)
    assert merges == [(a, b) for a, b, _ in want]
    sep = 256 + len(merges)
    out = tmp_path / "data"
    code = cli.main(["prepare", "--source", str(source), "--tokenizer", str(tok), "--out",
                     str(out), "--val-fraction", "0", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "engine: bpe (reproduces" in err  # prep's own encoder: gigatoken declines
    assert json.loads((out / "_PROVENANCE.json").read_text())["engine"] == "bpe"
    ids = [i for path in split_bins(out, "train") for i in _ids(path)]
    expected = [i for d in DOCS * 3 for i in (sep, *ref.encode(d.encode(), merges))]
    assert ids == expected
    code = cli.main(["prepare", "--source", str(source), "--tokenizer", str(tok), "--out",
                     str(tmp_path / "hf"), "--val-fraction", "0", "--workers", "1", "--engine",
                     "hf"])
    assert code == 0
    assert [i for path in split_bins(tmp_path / "hf", "train") for i in _ids(path)] == expected
    code = cli.main(["prepare", "--source", str(source), "--tokenizer", str(tok), "--out",
                     str(tmp_path / "fast"), "--engine", "gigatoken", "--workers", "1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--engine gigatoken cannot reproduce" in err and "use_regex=false" in err


def _ids(path: Path) -> list[int]:
    from conftest import bin_ids

    return [int(i) for i in bin_ids(path)]


def test_an_out_in_the_way_is_never_overwritten(capsys, source, tmp_path) -> None:
    out = tmp_path / "t"
    out.mkdir()
    (out / "x").write_text("keep")
    code, err = run(capsys, "--source", source, "--out", out)
    assert code == 1
    assert f"{out} already exists; prep never overwrites it" in err
    assert (out / "x").read_text() == "keep" and [p.name for p in out.iterdir()] == ["x"]


def test_without_the_compiled_trainer_the_same_files(capsys, source, tmp_path, monkeypatch):
    """A newcomer without a C compiler trains with the pure-Python twin: the same
    tokenizer.json, and training.json says which trainer ran."""
    from prep.tokenizer import bpe

    common = ["--source", source, "--vocab-size", "300", "--val-fraction", "0", "--workers", "1"]
    assert run(capsys, *common, "--out", tmp_path / "c")[0] == 0
    monkeypatch.setattr(bpe, "COMPILED", None)
    monkeypatch.setattr(bpe, "IMPLEMENTATION", "python")
    code, err = run(capsys, *common, "--out", tmp_path / "py")
    assert code == 0 and "merging: the python trainer" in err
    c, py = (json.loads((tmp_path / d / "training.json").read_text()) for d in ("c", "py"))
    assert py["versions"]["trainer"] == "python"
    assert {**c, "versions": None} == {**py, "versions": None}
    assert (tmp_path / "c/tokenizer.json").read_bytes() == (
        tmp_path / "py/tokenizer.json").read_bytes()


def test_train_bytes_stops_after_the_document_that_reaches_it(capsys, source, tmp_path):
    code, err = run(capsys, "--source", source, "--val-fraction", "0", "--train-bytes", "40",
                    "--out", tmp_path / "t", "--workers", "1")
    assert code == 0, err
    pinned = json.loads((tmp_path / "t" / "training.json").read_text())["source"]
    sizes = [len(d.encode()) for d in DOCS]  # 22, 15, 14: the third reaches 40 bytes
    assert (pinned["train_documents"], pinned["train_bytes"]) == (3, sum(sizes[:3]))
    assert pinned["rows_visited"] == 3 and len(pinned["prefix_sha256"]) == 64


def test_resume_refuses_another_recipe_and_keeps_staging(capsys, source, tmp_path):
    """A stopped training continues only with its own recipe: another --vocab-size is
    refused (exit 2) naming the difference, staging untouched; the right one finishes."""
    from prep.errors import Interrupted
    from prep.tokenizer.training import train_tokenizer

    out, staging = tmp_path / "t", tmp_path / "t.incomplete"
    typed = {"source": str(source), "vocab_size": 300, "val_fraction": 0.0}
    counting = staging / "corpus.incomplete"  # stop once the counting phase has begun
    with pytest.raises(Interrupted, match="while counting the corpus"):
        train_tokenizer(out, typed, {"workers": 1, "batch_size": 1}, stop=counting.exists)
    before = sorted(p.name for p in staging.rglob("*"))
    code, err = run(capsys, "--source", source, "--vocab-size", "400", "--val-fraction", "0",
                    "--out", out, "--resume")
    assert code == 2
    assert "was started with another recipe (vocab_size: 400, not 300)" in err
    assert sorted(p.name for p in staging.rglob("*")) == before
    code, err = run(capsys, "--source", source, "--vocab-size", "300", "--val-fraction", "0",
                    "--out", out, "--resume", "--workers", "1")
    assert code == 0, err
    assert not staging.exists() and (out / "tokenizer.json").is_file()
