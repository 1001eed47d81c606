"""Resume's replay read by worker processes: the same prefix digest as hashing the rows
one by one (hashlib, docs/format.md's chain), the same recount as the replay in this process, and
the same refusals when the source changed."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
from conftest import numbered_docs, write_parquet

from prep.errors import IntegrityError
from prep.recipe import Recipe
from prep.run.resume.claims import ReplayCounts
from prep.run.resume.replay import _serial, _visit, replay_in_workers
from prep.sources import Source, resolve_local
from prep.stream.order import Cursor, Preparer, open_stream

RECIPE = Recipe(source="x", tokenizer="byte", val_fraction=0.3)


def digest(texts: list[str]) -> str:
    """The prefix digest (docs/format.md, manifest v4): a chain, c = SHA-256(c ||
    SHA-256(UTF-8)), from 32 zero bytes."""
    chain = bytes(32)
    for t in texts:
        chain = hashlib.sha256(chain + hashlib.sha256(t.encode()).digest()).digest()
    return chain.hex()


def source(root: Path, files: list[list[object]]) -> Source:
    for i, rows in enumerate(files):
        write_parquet(root / f"part-{i}.parquet", rows, row_group_size=13)
    return resolve_local(str(root))


def in_workers(src: Source, rows: int) -> tuple[Cursor, ReplayCounts]:
    cursor, counts = Cursor(), ReplayCounts()
    for batch in replay_in_workers(src, src.files, RECIPE, (0, 0), rows, 2):
        _visit(batch, cursor, counts)
    return cursor, counts


@pytest.mark.parametrize("rows", [0, 1, 13, 99, 150, 200])
def test_digest_and_counts_equal_the_rows_read_in_this_process(tmp_path: Path, rows: int) -> None:
    docs = numbered_docs(200)
    docs[7] = ""
    src = source(tmp_path, [docs[:90], [], docs[90:]])
    cursor, counts = in_workers(src, rows)
    assert (cursor.rows_visited, cursor.prefix_sha256) == (rows, digest(docs[:rows]))
    if rows:  # the first file was read, so a worker hashed it for the source identity
        assert src.files[0].sha256 == hashlib.sha256(src.files[0].local.read_bytes()).hexdigest()
    files, stream = open_stream(resolve_local(str(tmp_path)), RECIPE)
    serial = ReplayCounts()
    for batch in _serial(stream, Preparer(RECIPE, files), rows):
        _visit(batch, Cursor(), serial)
    assert counts == serial
    assert counts.empty_rows == (rows > 7)
    assert sum(counts.docs.values()) == rows - (rows > 7)


def test_a_row_that_is_no_longer_a_string_is_refused(tmp_path: Path) -> None:
    docs: list[object] = list(numbered_docs(60))
    docs[41] = None
    src = source(tmp_path, [docs])
    with pytest.raises(IntegrityError, match=r"part-0\.parquet row 41: column \"text\" is null"
                       ) as e:
        in_workers(src, 50)
    assert "the source changed since the run started" in str(e.value)


def test_a_source_that_now_ends_early_gives_fewer_rows(tmp_path: Path) -> None:
    src = source(tmp_path, [numbered_docs(30)])
    assert in_workers(src, 50)[0].rows_visited == 30


def test_spawned_workers_replay_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the platform cannot fork, the pool spawns its workers: they inherit nothing, and
    # must build the replay's state themselves (a spawned worker used to fail its first task
    # with "worker not initialised").
    monkeypatch.setattr(sys, "platform", "darwin")
    docs = numbered_docs(60)
    src = source(tmp_path, [docs[:25], docs[25:]])
    cursor, _ = in_workers(src, 60)
    assert (cursor.rows_visited, cursor.prefix_sha256) == (60, digest(docs))
