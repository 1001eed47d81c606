"""Guarantee 6 and the exit codes: bad input is refused with exit 1 (2 for usage errors) and
a message that says what failed, where, and how to fix it; nothing is published; a failed
fresh run leaves nothing in the way of the corrected command; an existing DIR or a leftover
staging directory is never touched."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import GPT2_DIR, make_corpus, numbered_docs, word_level_tokenizer, write_parquet

from .helpers import leftovers, manifest, snapshot

NAME = "dataset"


def _refused(r: Any, code: int, out: Path, *fragments: str) -> None:
    assert r.code == code, f"exit {r.code}, expected {code}: {r.err}"
    assert r.err.strip(), "no message at all"
    for fragment in fragments:
        assert fragment in r.err, f"{fragment!r} not in: {r.err}"
    assert "Traceback" not in r.err
    assert not out.exists(), "a dataset was published"
    assert leftovers(out.parent, out.name) == [], "the failed run left files in the way"


def _succeeds(cli: Any, out: Path, *args: object) -> None:
    """The corrected command publishes (with the byte tokenizer unless ``args`` name one)."""
    tokenizer = () if "--tokenizer" in args else ("--tokenizer", "byte")
    r = cli("prepare", *tokenizer, "--out", out, *args)
    assert r.code == 0, f"the corrected command failed: {r.err}"
    assert (out / "_MANIFEST.json").is_file()


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / NAME


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return make_corpus(tmp_path / "good", [numbered_docs(20), numbered_docs(20, start=20)])


# -- bad data ----------------------------------------------------------------------------------

def test_missing_text_column_lists_the_columns(cli, tmp_path: Path, out: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "body": ["one doc", "another"]}), src / "p.parquet")

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src)

    _refused(r, 1, out, "p.parquet", 'no column "text"', '"id"', '"body"', "--text-column")
    _succeeds(cli, out, "--source", src, "--text-column", "body")


def test_missing_split_column_names_the_option(cli, good: Path, out: Path) -> None:
    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", good, "--split-column", "part")

    _refused(r, 1, out, "part-00000.parquet", 'no column "part"', '"text"', "--split-column")


def test_null_text_names_file_and_row(cli, tmp_path: Path, out: Path) -> None:
    texts: list[Any] = numbered_docs(10)
    src = make_corpus(tmp_path / "src", [numbered_docs(5, start=100), texts])
    texts[6] = None
    write_parquet(src / "part-00001.parquet", texts)

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src)

    _refused(r, 1, out, "part-00001.parquet row 6", "null", "drop or fill")
    texts[6] = "fixed"
    write_parquet(src / "part-00001.parquet", texts)
    _succeeds(cli, out, "--source", src)


def test_null_past_the_first_record_batch_names_its_row(cli, tmp_path: Path, out: Path) -> None:
    texts: list[Any] = [f"row {i}" for i in range(6000)]
    texts[5000] = None
    src = write_parquet(tmp_path / "src" / "big.parquet", texts, row_group_size=1000)

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src)

    _refused(r, 1, out, "big.parquet row 5000", "null")


def test_non_string_column(cli, tmp_path: Path, out: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"text": [1, 2, 3], "words": ["a b", "c", "d e f"]}),
                   src / "ints.parquet")

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src)

    _refused(r, 1, out, "ints.parquet", '"text"', "int64", "string", "--text-column")
    _succeeds(cli, out, "--source", src, "--text-column", "words", "--val-fraction", "1e-9")


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_parquet_names_the_file(cli, tmp_path: Path, out: Path, damage: str) -> None:
    src = make_corpus(tmp_path / "src", [numbered_docs(20), numbered_docs(20, start=20)])
    bad = src / "part-00001.parquet"
    original = bad.read_bytes()
    bad.write_bytes(b"this is not parquet\n" * 20 if damage == "garbage"
                    else original[: len(original) // 2])

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src)

    _refused(r, 1, out, "part-00001.parquet", "remove or replace")
    bad.write_bytes(original)
    _succeeds(cli, out, "--source", src)


@pytest.mark.parametrize("where", ["value", "column-name"])
def test_invalid_utf8_in_parquet_is_bad_input(cli, tmp_path: Path, out: Path, where) -> None:
    """A damaged (or foreign-written) file with bytes that are not UTF-8 in a string value
    or in a column name in the footer: corrupt Parquet, refused like any other corruption
    (exit 1, the file named, nothing left in the way)."""
    src = tmp_path / "src"
    src.mkdir()
    marker = b"MARKER-0123456789"
    texts = ["fine", marker.decode() if where == "value" else "ok", "also fine"]
    table = pa.table({"text": texts, "MARKER-0123456789" if where != "value" else "n": [1, 2, 3]})
    pq.write_table(table, src / "p.parquet", compression="none", write_statistics=False,
                   store_schema=False)
    raw = (src / "p.parquet").read_bytes()
    assert raw.count(marker) >= 1  # a name is in the footer twice (schema, chunk path)
    (src / "p.parquet").write_bytes(raw.replace(marker, b"\xff" * len(marker)))

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src)

    _refused(r, 1, out, "p.parquet", "replace")


def test_dictionary_encoded_strings_are_text(cli, tmp_path: Path, out: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    texts = ["spam", "eggs", "spam"]
    pq.write_table(pa.table({"text": pa.array(texts).dictionary_encode()}), src / "d.parquet")

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--val-fraction", "1e-9")

    assert r.code == 0, r.err
    assert (out / "train-00000.bin").read_bytes()[1024:] == b"".join(
        bytes([b, 0]) for b in "".join(texts).encode())


def test_bad_split_value_names_file_and_row(cli, tmp_path: Path, out: Path) -> None:
    texts = numbered_docs(8)
    splits = ["train"] * 8
    splits[5] = "test"
    src = make_corpus(tmp_path / "src", [texts[:3], texts[3:]],
                      split=[splits[:3], splits[3:]])

    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", src, "--split-column", "split")

    _refused(r, 1, out, "part-00001.parquet row 2", "'test'", "train", "val")
    splits[5] = "val"
    make_corpus(src, [texts[:3], texts[3:]], split=[splits[:3], splits[3:]])
    _succeeds(cli, out, "--source", src, "--split-column", "split")


@pytest.mark.parametrize("case", ["all-empty", "all-val"])
def test_empty_train_split_is_an_error(cli, tmp_path: Path, out: Path, case: str) -> None:
    if case == "all-empty":
        src = make_corpus(tmp_path / "src", [["", "  ", "\n\t"], ["\u3000"]])
        args: list[object] = []
    else:
        src = make_corpus(tmp_path / "src", [["a", "b"]], split=[["val", "val"]])
        args = ["--split-column", "split"]

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", src, *args)

    _refused(r, 1, out, "train split is empty", "--text-column", "--split-column")


# -- bad tokenizer -----------------------------------------------------------------------------

def test_unreadable_tokenizer_json(cli, tmp_path: Path, good: Path, out: Path) -> None:
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "tokenizer.json").write_text('{"version": "1.0", "model": ')

    r = cli("prepare", "--out", out, "--source", good, "--tokenizer", tok)

    _refused(r, 1, out, str(tok / "tokenizer.json"), "not a readable", "tokenizer")
    shutil.copy(GPT2_DIR / "tokenizer.json", tok / "tokenizer.json")
    _succeeds(cli, out, "--source", good, "--tokenizer", tok, "--no-doc-sep")


def test_missing_tokenizer_path(cli, tmp_path: Path, good: Path, out: Path) -> None:
    r = cli("prepare", "--out", out, "--source", good, "--tokenizer", tmp_path / "nope.json")

    _refused(r, 1, out, "--tokenizer", str(tmp_path / "nope.json"), "no such file")


def test_tokenizer_directory_without_tokenizer_json(cli, tmp_path: Path, good, out) -> None:
    (tmp_path / "empty-tok").mkdir()

    r = cli("prepare", "--out", out, "--source", good, "--tokenizer", tmp_path / "empty-tok")

    _refused(r, 1, out, str(tmp_path / "empty-tok"), "no tokenizer.json")


def test_eos_outside_the_vocabulary_in_generation_config(cli, tmp_path, good, out) -> None:
    tok = word_level_tokenizer(tmp_path / "wl", {"[UNK]": 0, "doc": 1}, eos=7)

    r = cli("prepare", "--out", out, "--source", good, "--tokenizer", tok)

    _refused(r, 1, out, "generation_config.json", "end-of-text id 7", "--doc-sep-id",
             "--no-doc-sep")
    _succeeds(cli, out, "--source", good, "--tokenizer", tok, "--no-doc-sep")


@pytest.mark.parametrize(("tokenizer", "sep", "shown"), [
    ("byte", "256", "256"), (str(GPT2_DIR), "50257", "50,257"),
])
def test_doc_sep_id_outside_the_vocabulary_is_an_error_not_a_usage_error(
    cli, good: Path, out: Path, tokenizer: str, sep: str, shown: str
) -> None:
    """1, not 2: seeing it needs the tokenizer opened (2 is for the command line alone)."""
    r = cli("prepare", "--out", out, "--source", good, "--tokenizer", tokenizer,
            "--doc-sep-id", sep)

    _refused(r, 1, out, f"--doc-sep-id {shown}", "outside the vocabulary", "--no-doc-sep")


# -- bad paths ---------------------------------------------------------------------------------

def test_missing_source_path(cli, tmp_path: Path, out: Path) -> None:
    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", tmp_path / "no-such-dir")

    _refused(r, 1, out, "--source", str(tmp_path / "no-such-dir"), "no such file")


def test_source_glob_matching_nothing(cli, tmp_path: Path, good: Path, out: Path) -> None:
    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", f"{good}/*.csv")

    _refused(r, 1, out, "*.csv", "matches no files")


@pytest.mark.parametrize("how", ["dangling symlink", "fifo", "glob"])
def test_an_unreadable_entry_in_the_source_is_refused(
    cli, tmp_path: Path, good: Path, out: Path, how: str
) -> None:
    """An entry named *.parquet that is not a file prep can read is refused, never skipped
    (skipping it would silently drop its rows)."""
    src = tmp_path / "src"
    shutil.copytree(good, src)
    bad = src / "sub" / "gone.parquet"
    bad.parent.mkdir()
    if how == "fifo":
        os.mkfifo(bad)
    else:
        bad.symlink_to(tmp_path / "deleted.parquet")
    spec = f"{src}/**/*.parquet" if how == "glob" else str(src)
    what = "not a regular file" if how == "fifo" else "dangling symlink"

    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", spec)

    _refused(r, 1, out, str(bad), what, "remove it")
    bad.unlink()
    _succeeds(cli, out, "--source", spec)


def test_a_failed_read_is_not_called_a_write(cli, tmp_path: Path, out: Path) -> None:
    """An OS error reading (here: the staging "directory" is a file) is reported as what it
    is, with the path, not as "writing ... failed"."""
    staging = tmp_path / f"{NAME}.incomplete"
    staging.write_text("not a directory")

    r = cli("prepare", "--out", out, "--resume")

    assert r.code == 1, r.err
    assert "Traceback" not in r.err
    assert f"{staging / 'checkpoint.json'}: Not a directory" in r.err, r.err
    assert "writing" not in r.err, r.err
    assert staging.read_text() == "not a directory"


# -- usage errors ------------------------------------------------------------------------------

@pytest.mark.parametrize(("option", "value"), [
    ("--max-file-tokens", "0"),
    ("--max-file-tokens", str(2**31)),
    ("--val-fraction", "1"),
    ("--val-fraction", "-0.01"),
    ("--seed", "-1"),
    ("--seed", str(2**32)),
    ("--batch-size", "0"),
    ("--threads", "0"),
    ("--max-documents", "0"),
    ("--train-tokens", "-5"),
    ("--shuffle-buffer", "-1"),
    ("--checkpoint-interval", "0"),
    ("--seed", "abc"),
    ("--max-file-tokens", "1e-6"),  # 1e6 is a count now (issue 11); 1e-6 is not
    ("--sep-position", "middle"),
    ("--split-column", "text"),  # the text column itself: was a bare IndexError from pyarrow
])
def test_out_of_range_or_malformed_values_exit_2(
    cli, good: Path, out: Path, option: str, value: str
) -> None:
    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", good, option, value)

    _refused(r, 2, out, option)


def test_unknown_option_exits_2(cli, good: Path, out: Path) -> None:
    r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", good, "--max-tokens", "5")

    _refused(r, 2, out, "unknown option --max-tokens; did you mean --max-file-tokens?")


def test_contradicting_separator_options_exit_2(cli, good: Path, out: Path) -> None:
    r = cli("prepare", "--tokenizer", "byte",
            "--out", out, "--source", good, "--doc-sep-id", "1", "--no-doc-sep")

    _refused(r, 2, out, "--no-doc-sep", "--doc-sep-id")


def test_missing_out_exits_2(cli, good: Path) -> None:
    r = cli("prepare", "--source", good)

    assert r.code == 2
    assert "--out" in r.err


# -- the output location -----------------------------------------------------------------------

def test_existing_dir_is_never_overwritten(cli, tmp_path: Path, good: Path, out: Path) -> None:
    assert cli("prepare", "--tokenizer", "byte", "--out", out, "--source", good).code == 0
    before = snapshot(out)
    other = make_corpus(tmp_path / "other", [numbered_docs(3, start=500)])

    for source in (good, other):
        r = cli("prepare", "--tokenizer", "byte", "--out", out, "--source", source)

        assert r.code == 1, r.err
        assert str(out) in r.err and "already exists" in r.err
        assert "--out" in r.err and "delete" in r.err
        assert snapshot(out) == before
        assert leftovers(tmp_path, NAME) == [NAME]


def test_leftover_staging_without_resume_is_refused_and_kept(
    cli, tmp_path: Path, out: Path
) -> None:
    """Bad input after committed checkpoints keeps what was committed (guarantee 6); a plain
    rerun then refuses to touch the leftover staging directory."""
    texts: list[Any] = numbered_docs(40)
    texts[30] = None
    src = write_parquet(tmp_path / "src" / "p.parquet", texts, split=["train"] * 40)
    args = ("--source", src, "--split-column", "split", "--batch-size", 1,
            "--checkpoint-interval", "1e-9")

    r = cli("prepare", "--tokenizer", "byte", "--out", out, *args)

    assert r.code == 1 and "p.parquet row 30" in r.err, r.err
    staging = tmp_path / f"{NAME}.incomplete"
    assert staging.is_dir() and not out.exists()
    committed = (staging / "train-00000.bin").read_bytes()[1024:]
    assert committed == b"".join(bytes([b, 0]) for t in texts[:30] for b in t.encode())
    before = snapshot(staging)

    again = cli("prepare", "--tokenizer", "byte", "--out", out, *args)

    assert again.code == 1, again.err
    assert str(staging) in again.err
    assert "--resume" in again.err and "delete" in again.err
    assert snapshot(staging) == before
    assert not out.exists()


def test_corrected_command_after_a_failure_builds_the_normal_result(
    cli, tmp_path: Path, out: Path
) -> None:
    """The corrected command after a failure builds exactly what a never-failed run builds."""
    texts: list[Any] = numbered_docs(12)
    src = write_parquet(tmp_path / "src" / "p.parquet", [*texts[:4], None, *texts[5:]])
    assert cli("prepare", "--tokenizer", "byte",
               "--out", out, "--source", src, "--dataset", "d").code == 1
    write_parquet(src, texts)

    _succeeds(cli, out, "--source", src, "--dataset", "d")
    _succeeds(cli, tmp_path / "clean", "--source", src, "--dataset", "d")

    assert manifest(out) == manifest(tmp_path / "clean")
