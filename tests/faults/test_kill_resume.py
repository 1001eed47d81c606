"""Real ``prepare`` subprocesses killed with real signals, then resumed: the published
directory is byte-identical to an uninterrupted run's, whatever the moment of the kill."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import faultkit as fk
import pytest
from faultkit import World


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> World:
    return fk.world(tmp_path_factory)


@pytest.mark.parametrize("seed", [1, 2])
def test_sigkill_at_random_moments_then_resume_alone_is_identical(
    w: World, tmp_path: Path, seed: int
) -> None:
    """Kills after seeded random delays land anywhere: start-up, verification, replay, the
    stream, rollovers, finishing, publishing. Each restart is `--out DIR --resume` alone."""
    rng = random.Random(seed)
    out = tmp_path / "out"
    first = fk.spawn(w.fresh_args(out))
    # `--out DIR --resume` alone needs a staging directory to take the recipe from.
    assert fk.wait_until(first, lambda: fk.read_checkpoint(out) is not None)
    assert fk.kill_after(first, rng.uniform(0.0, 0.4)), "the first run ended before its kill"
    assert fk.finish(first)[0] == -signal.SIGKILL
    kills, resumed = 1, 0
    while kills < 7:
        resumed += fk.staging_of(out).is_dir()
        proc = fk.spawn(["--out", out, "--resume", *fk.FAST])
        killed = fk.kill_after(proc, rng.uniform(0.05, 0.7))
        code, err = fk.finish(proc)
        if not killed:
            assert code == 0, err
            break
        assert code in (-signal.SIGKILL, 0), err
        kills += 1
    assert kills >= 3, "too few kills landed before the run finished"
    if not out.exists():
        done = fk.run_plain(["--out", out, "--resume", *fk.FAST])
        assert done.returncode == 0, done.stderr
        resumed += 1
    fk.assert_identical(w, out)
    # A resume killed before its first checkpoint leaves no trace: at most one per run.
    assert 0 < fk.provenance(out)["resumes"] <= resumed


def test_sigkill_after_progress_counts_every_resume(w: World, tmp_path: Path) -> None:
    """Each run is killed once it has committed rows past a random point, so every resume
    persisted its count: _PROVENANCE.json's resumes equals the number of resumes."""
    rng = random.Random(7)
    out = tmp_path / "out"
    marks = sorted(rng.sample(range(500, int(w.total_rows * 0.8)), 5))
    proc = fk.spawn(w.fresh_args(out))
    for i, mark in enumerate(marks):
        if i:
            proc = fk.spawn(["--out", out, "--resume", *fk.FAST])
        start = fk.rows_committed(out)
        here = max(mark, start + 1)  # rows this run committed itself
        assert fk.wait_until(proc, lambda m=here: fk.rows_committed(out) >= m), fk.finish(proc)
        proc.send_signal(signal.SIGKILL)
        assert fk.finish(proc)[0] == -signal.SIGKILL
        cp = fk.read_checkpoint(out)
        assert cp is not None and not cp["progress"]["finished"]
        assert cp["run"]["resumes"] == i
    done = fk.run_plain(["--out", out, "--resume", *fk.FAST])
    assert done.returncode == 0, done.stderr
    fk.assert_identical(w, out)
    assert fk.provenance(out)["resumes"] == len(marks)


def test_supervisor_repeats_one_command_with_resume_forever(w: World, tmp_path: Path) -> None:
    """`--resume` with nothing to resume starts fresh; the same command, killed at random and
    repeated, finishes the dataset; once complete it reports so and changes nothing."""
    rng = random.Random(11)
    out = tmp_path / "out"
    cmd = w.fresh_args(out, "--resume")
    first = fk.spawn(cmd)
    started = fk.wait_until(first, lambda: fk.read_checkpoint(out) is not None)
    assert started, fk.finish(first)  # nothing to resume: it started fresh
    assert fk.kill_after(first, rng.uniform(0.0, 0.3))
    assert fk.finish(first)[0] == -signal.SIGKILL
    kills = 1
    for _ in range(30):
        proc = fk.spawn(cmd)
        killed = kills < 6 and fk.kill_after(proc, rng.uniform(0.0, 0.8))
        code, err = fk.finish(proc)
        if not killed:
            assert code == 0, err
            break
        kills += 1
    fk.assert_identical(w, out)
    before = fk.tree_hashes(out)
    again = fk.run_plain(cmd)
    assert again.returncode == 0, again.stderr
    assert "already complete" in again.stderr
    assert fk.tree_hashes(out) == before


def test_resume_with_nothing_to_resume_runs_to_the_same_bytes(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = fk.run_plain(w.fresh_args(out, "--resume"))
    assert done.returncode == 0, done.stderr
    fk.assert_identical(w, out)
    assert fk.provenance(out)["resumes"] == 0


def test_sigterm_and_sigint_exit_75_with_a_resume_command(w: World, tmp_path: Path) -> None:
    """Each stop signal (handled once the run is under way) ends the run with exit 75 after a
    checkpoint and logs the command to resume; following those commands gives the same
    bytes, and every resume is counted.

    The first run is stopped as soon as staging exists (before its first batch), the next
    ones once they have committed rows past seeded random points."""
    rng = random.Random(5)
    out = tmp_path / "out"
    marks = sorted(rng.sample(range(500, int(w.total_rows * 0.8)), 5))
    args: list[str | Path] = list(w.fresh_args(out))
    for i in range(6):
        proc = fk.spawn([*args, *fk.FAST] if i else args)
        if i == 0:
            ready = fk.wait_until(proc, lambda: fk.read_checkpoint(out) is not None)
        else:
            here = max(marks[i - 1], fk.rows_committed(out) + 1)
            ready = fk.wait_until(proc, lambda m=here: fk.rows_committed(out) >= m)
        assert ready, fk.finish(proc)
        sig = signal.SIGINT if i % 2 else signal.SIGTERM
        proc.send_signal(sig)
        code, err = fk.finish(proc)
        assert code == 75, err
        fk.no_traceback(err)
        assert f"{sig.name}: finishing the current batch" in err
        args = fk.resume_args_from(err)
        assert args == ["--out", str(out), "--resume"]
        cp = fk.read_checkpoint(out)
        assert cp is not None and cp["run"]["resumes"] == i
        assert not out.with_name(out.name + ".lock.json").exists(), "lock info left behind"
    done = fk.run_plain(args)
    assert done.returncode == 0, done.stderr
    fk.assert_identical(w, out)
    assert fk.provenance(out)["resumes"] == 6


def test_a_second_sigint_aborts_and_resume_is_identical(w: World, tmp_path: Path) -> None:
    """The first SIGINT asks to finish the batch; a second one during that batch aborts at
    once (exit 130, no checkpoint of the half-done batch); resume still gives the same bytes.

    The child is slowed down where it acts on the first SIGINT: once that SIGINT has been
    logged, the next checkpoint sleeps before it starts (injected in the child, as a slow
    disk would), so the second SIGINT lands before the batch is committed."""
    out = tmp_path / "out"
    mark = tmp_path / "fired"
    slow_batch = {
        "target": "prep.run.state.RunState.checkpoint",
        "when": "before",
        "action": "sleep",
        "seconds": 60,
        "after_log": "SIGINT: finishing the current batch",
    }
    proc = fk.spawn(w.fresh_args(out), fault=slow_batch, mark=mark)
    assert fk.wait_until(proc, lambda: fk.rows_committed(out) > 2000), fk.finish(proc)
    proc.send_signal(signal.SIGINT)
    assert fk.wait_until(proc, mark.exists), fk.finish(proc)
    committed = fk.rows_committed(out)
    proc.send_signal(signal.SIGINT)
    code, err = fk.finish(proc, timeout=30)
    assert code == 130, err
    assert "aborted by a second interrupt" in err and "--resume" in err
    fk.no_traceback(err)
    assert fk.rows_committed(out) == committed, "the aborted batch was checkpointed"
    done = fk.run_plain(["--out", out, "--resume", *fk.FAST])
    assert done.returncode == 0, done.stderr
    fk.assert_identical(w, out)


@pytest.mark.parametrize("seed", [3, 4])
def test_two_quick_sigints_at_random_moments_then_resume(
    w: World, tmp_path: Path, seed: int
) -> None:
    """Two SIGINTs a random few milliseconds apart: exit 130 (aborted) or 75 (the batch had
    finished first); either way resume gives the same bytes."""
    rng = random.Random(seed)
    out = tmp_path / "out"
    proc = fk.spawn(w.fresh_args(out))
    assert fk.wait_until(proc, lambda: fk.rows_committed(out) > 1000), fk.finish(proc)
    proc.send_signal(signal.SIGINT)
    fk.kill_after(proc, rng.uniform(0.0, 0.005), signal.SIGINT)
    code, err = fk.finish(proc)
    assert code in (75, 130), err
    fk.no_traceback(err)
    done = fk.run_plain(["--out", out, "--resume", *fk.FAST])
    assert done.returncode == 0, done.stderr
    fk.assert_identical(w, out)
