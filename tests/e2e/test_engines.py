"""Engines and worker processes (issue 10) end to end: the default engine writes exactly
the bytes of ``--engine hf`` on every tokenizer of the parity set, records which engine
ran, says why it fell back, and the row-group worker path gives the same bytes for every
``--workers``, batch size, ``--max-documents`` and interruption."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import dir_bytes, numbered_docs, write_parquet
from parity_corpus import parity_texts

# Which engine --engine auto runs for each parity tokenizer, and the reason of a fallback.
AUTO = {
    "gpt2": ("gigatoken", None),
    "bpe-trained": ("gigatoken", None),
    "cl100k": ("hf", "gigatoken refused the file: Unknown pre_tokenizer Split regexes"),
    "nfkc-metaspace": ("hf", "normalizer 'Sequence' is not supported"),
}


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory, parity_set: dict[str, Path]
           ) -> tuple[Path, dict[str, Path]]:
    """The parity texts in three Parquet files of small row groups, and the tokenizers."""
    root = tmp_path_factory.mktemp("parity")
    texts = parity_texts()
    third = len(texts) // 3
    for i, part in enumerate((texts[:third], texts[third:2 * third], texts[2 * third:])):
        write_parquet(root / "src" / f"part-{i}.parquet", part, row_group_size=37)
    return root / "src", parity_set


def provenance(out: Path) -> dict[str, object]:
    return json.loads((out / "_PROVENANCE.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", list(AUTO))
def test_default_engine_writes_the_bytes_of_hf(cli, tmp_path: Path, parity, name: str) -> None:
    src, toks = parity
    args = ["--source", src, "--tokenizer", toks[name], "--dataset", "p", "--val-fraction",
            "0.1", "--max-file-tokens", "20000"]
    auto = cli("prepare", "--out", tmp_path / "auto", *args)
    hf = cli("prepare", "--out", tmp_path / "hf", *args, "--engine", "hf", "--workers", 1)
    assert (auto.code, hf.code) == (0, 0), auto.err + hf.err
    assert dir_bytes(tmp_path / "auto") == dir_bytes(tmp_path / "hf")
    engine, reason = AUTO[name]
    assert provenance(tmp_path / "auto")["engine"] == engine
    assert provenance(tmp_path / "hf")["engine"] == "hf"
    fallback = [line for line in auto.err.splitlines() if "engine: hf (" in line]
    if reason is None:
        assert fallback == []
        checked = provenance(tmp_path / "auto")["cross_check"]
        assert isinstance(checked, dict) and checked["rate"] == 4096
    else:
        assert len(fallback) == 1 and reason in fallback[0]
        assert provenance(tmp_path / "auto")["cross_check"] is None


def test_naming_an_engine_that_cannot_reproduce_the_file_is_a_usage_error(
        cli, tmp_path: Path, parity) -> None:
    src, toks = parity
    r = cli("prepare", "--out", tmp_path / "o", "--source", src, "--tokenizer", toks["cl100k"],
            "--engine", "gigatoken")
    assert r.code == 2
    assert "--engine gigatoken cannot reproduce" in r.err and "--engine hf" in r.err
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five files of uneven row groups (one file empty, the last one group of 9,300 rows,
    which more than one worker cut into spans, some starting past the group's first record
    batch of 4,096 rows), with empty rows."""
    root = tmp_path_factory.mktemp("groups")
    docs = numbered_docs(10_000)
    for i in range(0, 10_000, 53):
        docs[i] = ""
    write_parquet(root / "a.parquet", docs[:260], row_group_size=41)
    write_parquet(root / "b.parquet", [], row_group_size=10)
    write_parquet(root / "c.parquet", docs[260:263], row_group_size=1)
    write_parquet(root / "d.parquet", docs[263:700], row_group_size=100)
    write_parquet(root / "e.parquet", docs[700:], row_group_size=9300)
    return root


@pytest.mark.parametrize("extra", [
    ["--max-documents", "555"],
    ["--max-documents", "7500"],  # inside e.parquet's cut group
    ["--train-tokens", "3000"],
    [],
])
def test_row_group_workers_give_the_same_bytes_for_any_count(cli, tmp_path: Path, groups,
                                                             extra: list[str]) -> None:
    base = ["--source", groups, "--tokenizer", "byte", "--doc-sep-id", "3", "--dataset", "g",
            "--val-fraction", "0.3", "--max-file-tokens", "4000", *extra]
    outs = {}
    for name, more in {"w1-b1000": ["--workers", 1, "--batch-size", 1000],
                       "w2-b5": ["--workers", 2, "--batch-size", 5],
                       "w4-b64": ["--workers", 4, "--batch-size", 64]}.items():
        r = cli("prepare", "--out", tmp_path / name, *base, *more)
        assert r.code == 0, r.err
        outs[name] = dir_bytes(tmp_path / name)
    first = outs.pop("w1-b1000")
    assert all(o == first for o in outs.values())
    ids = (tmp_path / "w1-b1000" / "train-00000.bin").read_bytes()
    assert b"doc 0000001" in ids[1024:].replace(b"\x00", b"")  # the byte ids are the text
