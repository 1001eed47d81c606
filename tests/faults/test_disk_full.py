"""A full disk (ENOSPC injected at the import site of a write, in a real subprocess) stops
the run with exit 1 and a clear message, no traceback; once space is back, ``--resume``
finishes to the same bytes as an uninterrupted run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import harness as h
import pytest
from harness import World

FSYNC = "prep.fsio.os.fsync"  # the os.fsync of atomic writes (the same os everywhere)


def enospc(target: str, nth: int = 1, **filters: Any) -> dict[str, Any]:
    return {"target": target, "when": "before", "nth": nth, "action": "enospc", **filters}


# (fault, a checkpoint per batch?, staging committed when it fires?)
MID_RUN = [
    pytest.param(enospc("prep.formats.idfile.IdFileWriter.append", nth=40), False,
                 id="appending-ids-mid-run"),
    pytest.param(enospc(FSYNC, within=["seal", "_roll"], nth=3), False,
                 id="sealing-a-file-at-rollover"),
    pytest.param(enospc(FSYNC, within=["save", "checkpoint"], nth=5), True,
                 id="writing-a-checkpoint"),
    pytest.param(enospc(FSYNC, within="write_manifest"), False,
                 id="writing-the-manifest"),
]  # fmt: skip

AT_START = [
    pytest.param(enospc(FSYNC, within=["save", "create_staging"]),
                 id="writing-the-first-checkpoint"),
    pytest.param(enospc(FSYNC, within="hold_lock"), id="writing-the-lock-info"),
]  # fmt: skip


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> World:
    return h.world(tmp_path_factory, h.SMALL)


def disk_full_run(w: World, tmp_path: Path, fault: dict[str, Any], every_batch: bool) -> str:
    out = tmp_path / "out"
    mark = tmp_path / "fired"
    args = ["--out", out, *w.recipe(), *(h.EVERY_BATCH if every_batch else h.FAST)]
    done = h.run(args, faults=fault, mark=mark)
    assert mark.exists(), f"the write was never reached:\n{done.stderr}"
    assert done.returncode == 1, done.stderr
    h.no_traceback(done.stderr)
    err = done.stderr.lower()
    assert "no space left" in err or "disk full" in err, done.stderr
    assert str(out) in done.stderr, done.stderr  # where
    assert "rerun" in err, done.stderr  # what to do
    assert not out.exists()
    assert not out.with_name(out.name + ".lock.json").exists(), "the lock was not released"
    return done.stderr


@pytest.mark.parametrize(("fault", "every_batch"), MID_RUN)
def test_disk_full_mid_run_then_resume_is_identical(
    w: World, tmp_path: Path, fault: dict[str, Any], every_batch: bool
) -> None:
    out = tmp_path / "out"
    err = disk_full_run(w, tmp_path, fault, every_batch)
    assert f"--out {out} --resume" in err, err
    staging = h.staging_of(out)
    assert (staging / "checkpoint.json").is_file(), "the last checkpoint is gone"
    assert not list(staging.glob(".*.tmp")), "a temporary file was left in staging"
    done = h.run(["--out", out, "--resume"])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


@pytest.mark.parametrize("fault", AT_START)
def test_disk_full_before_anything_is_committed(
    w: World, tmp_path: Path, fault: dict[str, Any]
) -> None:
    """A disk already full when the run starts: a clear message (nothing was committed, so
    the hint may be to rerun the same command), and the same command (with --resume, as a
    supervisor runs it) succeeds once there is space."""
    out = tmp_path / "out"
    disk_full_run(w, tmp_path, fault, every_batch=False)
    assert not h.staging_of(out).exists()
    done = h.run(w.fresh_args(out, "--resume"))
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
