"""Real ``prepare`` subprocesses killed with real signals, then resumed: the published
directory is byte-identical to an uninterrupted run's, whatever the moment of the kill."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import harness as h
import pytest
from harness import World

# The runs killed after random delays are paced: 36,000 documents in batches of 8 take at
# least 4,500 x 0.5 ms = 2.25 s on any machine, more than the 0.4 + 0.7 + 0.7 s of the
# longest delays before the three kills a test counts on: a fast machine cannot finish
# before them (a killed run's commits count at most its delay towards the end). Runs
# stopped once past a row count are paced too: the 20 % of rows after the last mark take
# at least 0.45 s, the time the test has to see the checkpoint and send the signal.
PACE = h.paced(0.0005)


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> World:
    return h.world(tmp_path_factory)


@pytest.mark.parametrize(("seed", "cut"), [
    (1, False), pytest.param(2, False, marks=pytest.mark.soak),
    # a cut row group stopped in every span is the default suite's (below)
    pytest.param(3, True, marks=pytest.mark.soak)],
    ids=["seed-1", "seed-2", "cut-row-groups"])
def test_sigkill_at_random_moments_then_resume_alone_is_identical(
    w: World, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, seed: int, cut: bool
) -> None:
    """Kills after seeded random delays land anywhere: start-up, verification, replay, the
    stream, rollovers, finishing, publishing. Each restart is `--out DIR --resume` alone.

    ``cut``: the same documents in three files of one 12,000-row group each, unshuffled
    (``harness.CUT``), each group cut into one span per worker: the kills land inside spans,
    between them and between files, and every restart takes another number of workers
    (3, 4, 2, ...), so what is left is cut anew; the reference run cut nothing (it
    tokenized in one process)."""
    if cut:
        w = h.world(tmp_path_factory, h.CUT)
    out = tmp_path / "out"
    fresh = w.fresh_args(out, *(("--workers", "2") if cut else ()))
    resumed = h.kill_until_done(fresh, out, seed, 3, PACE, delays=(0.4, 0.7), new_workers=cut)
    h.assert_identical(w, out)
    # A resume killed before its first checkpoint leaves no trace: at most one per run.
    assert 0 < h.provenance(out)["resumes"] <= resumed


def test_sigkill_after_progress_counts_every_resume(w: World, tmp_path: Path) -> None:
    """Each run is killed once it has committed rows past a random point, so every resume
    persisted its count: _PROVENANCE.json's resumes equals the number of resumes."""
    rng = random.Random(7)
    out = tmp_path / "out"
    marks = sorted(rng.sample(range(500, int(w.total_rows * 0.8)), 3))
    proc = h.spawn(w.fresh_args(out), faults=PACE)
    for i, mark in enumerate(marks):
        if i:
            proc = h.spawn(["--out", out, "--resume", *h.FAST], faults=PACE)
        start = h.rows_committed(out)
        here = max(mark, start + 1)  # rows this run committed itself
        assert h.reached(proc, lambda m=here: h.rows_committed(out) >= m), proc.finish()
        proc.send_signal(signal.SIGKILL)
        assert proc.finish()[0] == -signal.SIGKILL
        cp = h.read_checkpoint(out)
        assert cp is not None and not cp["progress"]["finished"]
        assert cp["run"]["resumes"] == i
    done = h.run(["--out", out, "--resume", *h.FAST])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
    assert h.provenance(out)["resumes"] == len(marks)


def test_supervisor_repeats_one_command_with_resume_forever(w: World, tmp_path: Path) -> None:
    """`--resume` with nothing to resume starts fresh; the same command, killed at random and
    repeated, finishes the dataset; once complete it reports so and changes nothing."""
    rng = random.Random(11)
    out = tmp_path / "out"
    cmd = w.fresh_args(out, "--resume")
    first = h.spawn(cmd, faults=PACE)
    started = h.reached(first, lambda: h.read_checkpoint(out) is not None)
    assert started, first.finish()  # nothing to resume: it started fresh
    assert h.kill_after(first, rng.uniform(0.0, 0.3))
    assert first.finish()[0] == -signal.SIGKILL
    kills = 1
    for _ in range(30):
        proc = h.spawn(cmd, faults=PACE)
        killed = kills < 6 and h.kill_after(proc, rng.uniform(0.0, 0.8))
        code, err = proc.finish()
        if not killed:
            assert code == 0, err
            break
        kills += 1
    h.assert_identical(w, out)
    before = h.tree(out)
    again = h.run(cmd)
    assert again.returncode == 0, again.stderr
    assert "already complete" in again.stderr
    assert h.tree(out) == before


def test_resume_with_nothing_to_resume_runs_to_the_same_bytes(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = h.run(w.fresh_args(out, "--resume"))
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
    assert h.provenance(out)["resumes"] == 0


def test_sigterm_and_sigint_exit_75_with_a_resume_command(w: World, tmp_path: Path) -> None:
    """Each stop signal (handled once the run is under way) ends the run with exit 75 after a
    checkpoint and logs the command to resume; following those commands gives the same
    bytes, and every resume is counted.

    The first run is stopped as soon as staging exists (before its first batch), the next
    ones once they have committed rows past seeded random points."""
    rng = random.Random(5)
    out = tmp_path / "out"
    marks = sorted(rng.sample(range(500, int(w.total_rows * 0.8)), 3))
    args: list[str | Path] = list(w.fresh_args(out))
    for i in range(3):  # SIGTERM, SIGINT, SIGTERM
        proc = h.spawn([*args, *h.FAST] if i else args, faults=PACE)
        if i == 0:
            ready = h.reached(proc, lambda: h.read_checkpoint(out) is not None)
        else:
            here = max(marks[i - 1], h.rows_committed(out) + 1)
            ready = h.reached(proc, lambda m=here: h.rows_committed(out) >= m)
        assert ready, proc.finish()
        sig = signal.SIGINT if i % 2 else signal.SIGTERM
        proc.send_signal(sig)
        code, err = proc.finish()
        assert code == 75, err
        h.no_traceback(err)
        assert f"{sig.name}: finishing the current batch" in err
        args = h.resume_args_from(err)
        assert args == ["--out", str(out), "--resume"]
        cp = h.read_checkpoint(out)
        assert cp is not None and cp["run"]["resumes"] == i
        assert not out.with_name(out.name + ".lock.json").exists(), "lock info left behind"
    done = h.run(args)
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
    assert h.provenance(out)["resumes"] == 3


def test_a_second_sigint_aborts_and_resume_is_identical(w: World, tmp_path: Path) -> None:
    """The first SIGINT asks to finish the batch; a second one during that batch aborts at
    once (exit 130, no checkpoint of the half-done batch); resume still gives the same bytes.

    The child is slowed down where it acts on the first SIGINT: once that SIGINT has been
    logged, the next checkpoint sleeps before it starts (injected in the child, as a slow
    disk would), so the second SIGINT lands before the batch is committed."""
    out = tmp_path / "out"
    mark = tmp_path / "fired"
    slow_batch = {
        "target": "prep.run.committed.RunState.checkpoint",
        "when": "before",
        "action": "sleep",
        "seconds": 60,
        "after_log": "SIGINT: finishing the current batch",
    }
    proc = h.spawn(w.fresh_args(out), faults=slow_batch, mark=mark)
    assert h.reached(proc, lambda: h.rows_committed(out) > 2000), proc.finish()
    proc.send_signal(signal.SIGINT)
    assert h.reached(proc, mark.exists), proc.finish()
    committed = h.rows_committed(out)
    proc.send_signal(signal.SIGINT)
    code, err = proc.finish(timeout=30)
    assert code == 130, err
    assert "aborted by a second interrupt" in err and "--resume" in err
    h.no_traceback(err)
    assert h.rows_committed(out) == committed, "the aborted batch was checkpointed"
    done = h.run(["--out", out, "--resume", *h.FAST])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


@pytest.mark.soak  # test_a_second_sigint_aborts_and_resume_is_identical runs by default
@pytest.mark.parametrize("seed", [3, 4])
def test_two_quick_sigints_at_random_moments_then_resume(
    w: World, tmp_path: Path, seed: int
) -> None:
    """Two SIGINTs a random few milliseconds apart: exit 130 (aborted) or 75 (the batch had
    finished first); either way resume gives the same bytes."""
    rng = random.Random(seed)
    out = tmp_path / "out"
    proc = h.spawn(w.fresh_args(out))
    assert h.reached(proc, lambda: h.rows_committed(out) > 1000), proc.finish()
    proc.send_signal(signal.SIGINT)
    h.kill_after(proc, rng.uniform(0.0, 0.005), signal.SIGINT)
    code, err = proc.finish()
    assert code in (75, 130), err
    h.no_traceback(err)
    done = h.run(["--out", out, "--resume", *h.FAST])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


def test_recycled_workers_keep_the_stop_and_kill_semantics(w: World, tmp_path: Path) -> None:
    """With workers replaced all along the run (``--recycle-workers``): SIGTERM still
    exits 75 after a checkpoint, SIGKILL still leaves a resumable staging directory and no
    process behind, and the resumed output is the uninterrupted run's."""
    out = tmp_path / "out"
    recycle = ["--recycle-workers", "20K"]  # tasks of 8 documents (~400 B): a new worker every ~50
    proc = h.spawn(w.fresh_args(out, *recycle), faults=PACE)
    assert h.reached(proc, lambda: h.rows_committed(out) >= 3000), proc.finish()
    proc.send_signal(signal.SIGTERM)
    code, err = proc.finish()
    assert code == 75, err
    h.no_traceback(err)
    proc = h.spawn(["--out", out, "--resume", *h.FAST, *recycle], faults=PACE)
    assert h.reached(proc, lambda: h.rows_committed(out) >= 9000), proc.finish()
    group = os.getpgid(proc.popen.pid)
    assert h.kill_after(proc, 0.0)
    assert proc.finish()[0] == -signal.SIGKILL
    assert h.wait_for(lambda: not _group_alive(group), "the workers to end")
    done = h.run(["--out", out, "--resume", *recycle])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_cut_row_group_stopped_in_any_span_resumes_to_the_same_bytes(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Files of one 12,000-row group each (``harness.CUT``), which a run cuts into one span
    per worker (``prep.run.work.cuts``). Each run is stopped (SIGTERM, exit 75) inside another
    span of the first file and resumed with another number of workers, which cuts the rest
    differently (2 workers: spans of 6,000 rows; then 3, from row ~3,000; then 4, from row
    ~7,000); the bytes are those of the reference run, which cut nothing (one process)."""
    w = h.world(tmp_path_factory, h.CUT)
    out = tmp_path / "out"
    args: list[object] = w.fresh_args(out, "--workers", "2")
    for mark, workers in ((3_000, 3), (7_000, 4), (10_500, 2)):
        proc = h.spawn(args, faults=PACE)  # >= 1.5 s of the 36,000 rows after the last mark
        assert h.reached(proc, lambda m=mark: h.rows_committed(out) >= m), proc.finish()
        proc.send_signal(signal.SIGTERM)
        code, err = proc.finish()
        assert code == 75, err
        args = ["--out", out, "--resume", *h.FAST, "--workers", str(workers)]
    done = h.run(args)
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
    assert h.provenance(out)["resumes"] == 3

