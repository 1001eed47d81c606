"""A source file rewritten in place (same size) while a real ``prepare`` reads it: the run
must not publish a manifest whose source hash describes other bytes than it tokenized."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import dir_bytes
from harness import (
    World,
    build,
    gate,
    make_world,
    no_traceback,
    ops_corpus,
    release,
    rows_committed,
    run,
    spawn,
    wait_for,
    write_plain,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """One file of 20,000 documents in row groups of 100: read for seconds with
    --batch-size 8 and a checkpoint per batch."""
    return make_world(tmp_path_factory.mktemp("changeworld"), ops_corpus(1, 20_000))


def _edited(w: World, path: Path) -> None:
    """Write the file's texts with one character changed each, keeping its size."""
    size = path.stat().st_size
    write_plain(path, [t.replace("doc", "DOC", 1) for t in w.files[0]])
    assert path.stat().st_size == size, "the rewrite must keep the size"


def _swapped(w: World, path: Path) -> None:
    """Replace the file by another of the same size (a new inode under the same path), as
    a sync tool renaming its download into place does."""
    new = path.with_suffix(".new")
    shutil.copyfile(path, new)
    _edited(w, new)
    os.replace(new, path)


@pytest.mark.parametrize(
    ("workers", "change"),
    # One case by default (about 25 s: a checkpoint every batch of 8 through 20,000 rows);
    # one worker and a swapped file run with the soak (pytest -m soak).
    [pytest.param("1", _edited, marks=pytest.mark.soak), ("2", _edited),
     pytest.param("2", _swapped, marks=pytest.mark.soak)],
    ids=["in-place-1-worker", "in-place-2-workers", "swapped-2-workers"],
)
def test_a_file_changed_while_read_fails_the_run(
    world: World, tmp_path: Path, workers: str, change: Callable[[World, Path], None]
) -> None:
    w = world.copy(tmp_path / "in")
    path = w.source / "part-00000.parquet"
    original = path.read_bytes()
    out = tmp_path / "out"
    # Parked after its third checkpoint, the reader a few batches ahead, never at the end of
    # the file however fast the machine (a pause after a polled row count could come late).
    where = tmp_path / "gate"
    where.mkdir()
    proc = spawn(
        w.args(out, "--batch-size", 8, "--checkpoint-interval", 0.000001, "--workers", workers),
        tmp_path / "run.log",
        [gate("prep.run.committed.RunState.checkpoint", where, nth=3)],
    )
    wait_for((where / "reached").exists, "the third checkpoint", proc)
    assert rows_committed(out) >= 16
    try:  # the workers are inside the file, ahead of the parked commits: change it under them
        change(w, path)
    finally:
        release(where)
    code, err = proc.finish()

    assert code == 1, err
    assert "source file part-00000.parquet changed while prep was reading it" in err, err
    no_traceback(err)
    assert not out.exists(), "published over bytes its manifest does not describe"
    assert rows_committed(out) < 20_000

    # Every committed row came from the original bytes: with the file restored, a resume
    # finishes with the bytes of an uninterrupted run.
    path.write_bytes(original)
    code, err = run(w.args(out, "--resume"), tmp_path / "resume.log")
    assert code == 0, err
    assert dir_bytes(out) == build(w, tmp_path / "reference")
