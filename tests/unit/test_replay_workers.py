"""Resume's replay read by worker processes: the same prefix digest as hashing the rows
one by one (hashlib, spec stream.md), and the same refusals when the source changed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import numbered_docs, write_parquet

from prep.errors import IntegrityError
from prep.recipe import Recipe
from prep.run.tasks import replay_in_workers
from prep.sources import resolve_local
from prep.stream import Cursor


def digest(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        data = t.encode()
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def source(root: Path, files: list[list[object]]) -> object:
    for i, rows in enumerate(files):
        write_parquet(root / f"part-{i}.parquet", rows, row_group_size=13)
    return resolve_local(str(root))


@pytest.mark.parametrize("rows", [0, 1, 13, 99, 150, 200])
def test_digest_and_count_equal_the_rows_hashed_one_by_one(tmp_path: Path, rows: int) -> None:
    docs = numbered_docs(200)
    docs[7] = ""
    src = source(tmp_path, [docs[:90], [], docs[90:]])
    cursor = Cursor()
    replay_in_workers(src, src.files, Recipe(source="x", tokenizer="byte"), rows, 2,  # type: ignore[attr-defined]
                      lambda: False, cursor)
    assert (cursor.rows_visited, cursor.prefix_sha256) == (rows, digest(docs[:rows]))
    if rows:  # the first file was read, so a worker hashed it for the source identity
        assert src.files[0].sha256 is not None  # type: ignore[attr-defined]


def test_a_row_that_is_no_longer_a_string_is_refused(tmp_path: Path) -> None:
    docs: list[object] = list(numbered_docs(60))
    docs[41] = None
    src = source(tmp_path, [docs])
    with pytest.raises(IntegrityError, match=r"part-0\.parquet row 41 is no longer a string"):
        replay_in_workers(src, src.files, Recipe(source="x", tokenizer="byte"), 50, 2,  # type: ignore[attr-defined]
                          lambda: False, Cursor())


def test_a_source_that_now_ends_early_is_refused(tmp_path: Path) -> None:
    from prep.run.restore import _ends_early

    src = source(tmp_path, [numbered_docs(30)])
    cursor = Cursor()
    replay_in_workers(src, src.files, Recipe(source="x", tokenizer="byte"), 50, 2,  # type: ignore[attr-defined]
                      lambda: False, cursor)
    assert cursor.rows_visited == 30
    assert "the source now ends after 30 rows, but 50 were committed" in str(
        _ends_early(cursor, 50))
