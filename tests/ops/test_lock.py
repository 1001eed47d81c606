"""``DIR.lock``: one run per output at a time, across real processes.

The first run is parked by a gate inside its build (after a committed batch, lock held), so
"the second run ends while the first still runs" is a fact of the test, not a timing guess.
"""

from __future__ import annotations

import json
import re
import signal
import socket
from pathlib import Path

import pytest
from conftest import dir_bytes
from harness import (
    Proc,
    World,
    build,
    gate,
    make_world,
    no_traceback,
    ops_corpus,
    release,
    run,
    spawn,
    tree,
    wait_for,
)

STARTED = re.compile(r"started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """20,000 documents in 5 files: long enough (with --batch-size 8) to overlap runs."""
    return make_world(tmp_path_factory.mktemp("lockworld"), ops_corpus(5, 4000))


@pytest.fixture(scope="module")
def reference(world: World) -> dict[str, bytes]:
    return build(world, world.root / "reference")


def parked_first(world: World, out: Path, tmp_path: Path, *extra: object, nth: int = 1
                 ) -> tuple[Proc, Path]:
    """A first run parked after its ``nth`` committed batch, holding the lock."""
    g = tmp_path / "gate"
    g.mkdir()
    first = spawn(world.args(out, "--batch-size", 8, *extra), tmp_path / "first.log",
                  [gate("prep.run.loop.ProgressReport.__call__", g, nth=nth)])
    wait_for((g / "reached").exists, "the first run to reach its gate", first)
    return first, g


def lock_holder(out: Path) -> dict[str, object]:
    return json.loads(out.with_name(out.name + ".lock.json").read_text())


def test_second_run_exits_75_at_once_naming_the_first(
    world: World, reference: dict[str, bytes], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first, g = parked_first(world, out, tmp_path)
    staging = out.with_name("out.incomplete")
    assert lock_holder(out)["pid"] == first.pid
    before = tree(staging)

    code, err = run(world.args(out, "--batch-size", 8), tmp_path / "second.log")

    assert first.popen.poll() is None, "the second run waited for the first to end"
    assert code == 75, err
    assert f"pid {first.pid} on {socket.gethostname()}" in err, err
    assert STARTED.search(err), err
    assert "--wait-lock" in err, err
    no_traceback(err)
    assert tree(staging) == before, "the run that lost the lock touched staging"
    assert not out.exists()

    release(g)
    code, err = first.finish()
    assert code == 0, err
    assert dir_bytes(out) == reference
    assert not staging.exists()
    assert not out.with_name("out.lock.json").exists(), "lock info left behind"


def test_wait_lock_waits_for_the_first_run_then_acts_on_the_finished_dir(
    world: World, reference: dict[str, bytes], tmp_path: Path
) -> None:
    """When the waiter gets the lock, DIR is complete: ``--resume`` reports it complete,
    ``--refresh`` finds it up to date (exit 0), and a plain run refuses to overwrite it
    (exit 1, guarantee 6) - none of them rebuilds or changes it."""
    out = tmp_path / "out"
    first, g = parked_first(world, out, tmp_path)
    waiters = {
        mode: spawn(world.args(out, *flags, "--wait-lock", 60), tmp_path / f"{mode}.log")
        for mode, flags in (("resume", ["--resume"]), ("refresh", ["--refresh"]), ("plain", []))
    }
    for mode, p in waiters.items():
        wait_for(lambda p=p: f"held by pid {first.pid}" in p.err(), f"{mode} to wait", p)
        assert "waiting for" in p.err()
    # A waiter whose time runs out while the first still holds the lock exits 75.
    code, err = run(world.args(out, "--resume", "--wait-lock", 0.3), tmp_path / "short.log")
    assert code == 75, err
    assert f"pid {first.pid} on {socket.gethostname()}" in err, err
    assert first.popen.poll() is None
    assert all(p.popen.poll() is None for p in waiters.values())

    release(g)
    code, err = first.finish()
    assert code == 0, err
    published = tree(out)

    code, err = waiters["resume"].finish()
    assert code == 0, err
    assert "already complete" in err
    code, err = waiters["refresh"].finish()
    assert code == 0, err
    assert "up to date" in err
    code, err = waiters["plain"].finish()
    assert code == 1, err
    assert "already exists" in err and "--refresh" in err, err
    for p in waiters.values():
        no_traceback(p.err())
    assert tree(out) == published
    assert dir_bytes(out) == reference
    assert not out.with_name("out.previous").exists()
    assert not out.with_name("out.incomplete").exists()


def test_lock_of_a_sigkilled_run_does_not_block_the_next(
    world: World, reference: dict[str, bytes], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first, _ = parked_first(world, out, tmp_path, "--checkpoint-interval", 0.001, nth=5)
    first.popen.send_signal(signal.SIGKILL)
    code, _ = first.finish()
    assert code == -signal.SIGKILL
    assert lock_holder(out)["pid"] == first.pid, "the dead run's lock info is left as it was"

    # No --wait-lock: a lock still held would make this exit 75 at once.
    code, err = run(["--out", out, "--resume"], tmp_path / "resume.log")
    assert code == 0, err
    assert "waiting for" not in err
    assert "resuming" in err
    no_traceback(err)
    assert dir_bytes(out) == reference
    assert not out.with_name("out.lock.json").exists()


def test_overlapping_runs_publish_once(
    world: World, reference: dict[str, bytes], tmp_path: Path
) -> None:
    """Three cron-like runs started together: one builds, the others exit 75 (lock held) or
    0 (already complete); the result is a single run's."""
    out = tmp_path / "out"
    procs = [spawn(world.args(out, "--resume", "--batch-size", 8), tmp_path / f"{i}.log")
             for i in range(3)]
    results = [p.finish() for p in procs]
    builders = [err for code, err in results if re.search(r"^published ", err, re.M)]
    assert len(builders) == 1, results
    for code, err in results:
        no_traceback(err)
        assert code in (0, 75), err
        if code == 75:
            assert "another run holds" in err, err
        elif not re.search(r"^published ", err, re.M):
            assert "already complete" in err, err
    assert dir_bytes(out) == reference
    assert not out.with_name("out.incomplete").exists()


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_wait_lock_out_of_range_is_a_usage_error(cli, world: World, tmp_path: Path,
                                                 value: str) -> None:
    """Exit 2 like every other out-of-range number. NaN is worse than meaningless: the
    deadline comparison is never true and the sleep is max(0, nan) = 0, so a busy lock makes
    the run spin at full CPU, logging "waiting for" thousands of times a second, forever."""
    out = tmp_path / "out"
    r = cli("prepare", *world.args(out, "--max-documents", 10, "--wait-lock", value))
    assert r.code == 2, r.err
    assert "--wait-lock" in r.err and "must be >= 0" in r.err, r.err
    assert not out.exists()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_run_whose_lock_file_is_deleted_or_replaced_stops_without_committing(
    world: World, reference: dict[str, bytes], tmp_path: Path, how: str
) -> None:
    """flock locks an inode, not a name: once ``DIR.lock`` is deleted (a cleanup job) or
    replaced, a second run can lock the new file and work on the same staging. The first
    run must notice at its next commit and stop with exit 1, committing nothing more; a
    later ``--resume`` then finishes with the bytes of an uninterrupted run."""
    out = tmp_path / "out"
    first, g = parked_first(world, out, tmp_path, "--checkpoint-interval", 0.000001)
    staging = out.with_name("out.incomplete")
    lock = out.with_name("out.lock")
    checkpoint = (staging / "checkpoint.json").read_bytes()
    lock.unlink()
    if how == "replaced":
        lock.write_bytes(b"")  # what a second run's FileLock would create

    release(g)
    code, err = first.finish()

    assert code == 1, err
    assert f"{lock} was deleted or replaced while this run held it" in err, err
    assert "rerun with --resume" in err and "cleanup job" in err, err
    no_traceback(err)
    assert not out.exists(), "published although the lock was lost"
    assert (staging / "checkpoint.json").read_bytes() == checkpoint, "committed after the loss"
    assert lock.exists() == (how == "replaced"), "removed a lock file it does not hold"
    assert out.with_name("out.lock.json").exists(), "removed lock info that may be another's"

    code, err = run(world.args(out, "--resume"), tmp_path / "resume.log")
    assert code == 0, err
    assert dir_bytes(out) == reference
