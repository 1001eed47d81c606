"""The run-time cross-check (issue 10): a deterministic sample re-encoded with the
reference; a difference names the document and the way to continue exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import GPT2_DIR, bpe_tokenizer, numbered_docs

from prep.encoders.engine import Reference
from prep.encoders.gigatoken import load_gigatoken
from prep.recipe import Recipe
from prep.run.work.crosscheck import (
    MAX_BYTES,
    RATE,
    CrossCheck,
    EngineMismatch,
    outside_ascii,
    sampled,
)
from prep.sources import SourceFile
from prep.stream.order import Batch, Preparer

GPT2 = str(GPT2_DIR / "tokenizer.json")


def sampled_rows(path: str, n: int) -> list[int]:
    return [r for r in range(RATE * 4) if sampled(path, r)][:n]


def batch_of(texts: list[str], path: str, rows: list[int]) -> Batch:
    files = [SourceFile(path=path, local=Path("/nowhere"), size=0)]
    prep = Preparer(Recipe(source="x", tokenizer="byte"), files)
    return prep.prepare([(t, None, 0, r) for t, r in zip(texts, rows, strict=True)])


def engine_ids(texts: list[str]) -> list[Any]:
    engine = load_gigatoken(Path(GPT2).read_bytes(), Reference(GPT2))
    return engine.encode_flat(texts, [t.encode() for t in texts]).split()


def test_the_sample_is_one_document_in_rate_and_deterministic() -> None:
    hits = [sampled(f"part-{f:05d}.parquet", r) for f in range(20) for r in range(RATE * 10)]
    assert sum(hits) == 20 * 10  # each file's rows cycle through every residue
    assert hits == [sampled(f"part-{f:05d}.parquet", r) for f in range(20)
                    for r in range(RATE * 10)]


def test_matching_ids_pass_and_are_counted() -> None:
    rows = sampled_rows("a.parquet", 3)
    texts = numbered_docs(3)
    check = CrossCheck("gigatoken", Reference(GPT2), "/out")
    check.check(batch_of(texts, "a.parquet", rows), engine_ids(texts))
    assert check.done.docs == 3 and check.done.bytes == sum(len(t) for t in texts)


def test_a_difference_names_the_document_and_how_to_continue(tmp_path: Path) -> None:
    # The engine's ids are GPT-2's; the reference is another tokenizer, so they differ.
    other = str(bpe_tokenizer(tmp_path / "other", numbered_docs(200)) / "tokenizer.json")
    rows = sampled_rows("b.parquet", 2)
    texts = numbered_docs(2)
    check = CrossCheck("gigatoken", Reference(other), "/data/out")
    with pytest.raises(EngineMismatch) as err:
        check.check(batch_of(texts, "b.parquet", rows), engine_ids(texts))
    msg = str(err.value)
    assert msg.startswith(f"b.parquet row {rows[0]}: the gigatoken engine's ids differ")
    assert "so its guard's set is incomplete: the document holds no code point outside " \
           "ASCII" in msg
    assert "prep prepare --out /data/out --resume --engine hf" in msg
    assert err.value.exit_code == 1


def test_a_difference_names_the_code_points_outside_ascii(tmp_path: Path) -> None:
    other = str(bpe_tokenizer(tmp_path / "other", numbered_docs(200)) / "tokenizer.json")
    rows = sampled_rows("d.parquet", 1)
    texts = ["caf\u00e9 na\u00efve caf\u00e9 \U00032dba"]
    check = CrossCheck("gigatoken", Reference(other), "/out")
    with pytest.raises(EngineMismatch) as err:
        check.check(batch_of(texts, "d.parquet", rows), [np.array([1, 2, 3])])
    assert "guard's set is incomplete: the document's code points outside ASCII: U+00E9, " \
           "U+00EF, U+32DBA. Nothing of its batch" in str(err.value)
    many = outside_ascii("".join(chr(0x100 + i) for i in range(40)))
    assert many.endswith("U+011F and 8 more")


def test_unsampled_and_huge_documents_are_not_re_encoded(tmp_path: Path) -> None:
    other = str(bpe_tokenizer(tmp_path / "other", numbered_docs(200)) / "tokenizer.json")
    row = sampled_rows("c.parquet", 1)[0]
    texts = ["x " * (MAX_BYTES // 2 + 1), "not sampled"]
    check = CrossCheck("gigatoken", Reference(other), "/out")
    check.check(batch_of(texts, "c.parquet", [row, row + 1]), engine_ids(texts))
    assert check.done.docs == 0
    assert np.asarray(engine_ids(["not sampled"])[0]).size > 0
