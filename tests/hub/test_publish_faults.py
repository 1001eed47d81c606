"""Faults of a publish to the Hub, against the loopback Hub (fakehub.py), with the real CLI
and huggingface_hub: each ends in exit 0 with the local run's bytes, or a clear refusal that
loses nothing.

A run is caught alive by holding one of its requests in the server (an event, never a time):
the upload of one shard (its SHA-256 is known from the local run: the bytes are the same), or
the last commit (the one adding ``_MANIFEST.json``); the held request is dropped unanswered
once the run is killed."""

from __future__ import annotations

import itertools
from pathlib import Path

from .fakehub import FOREVER, LOST, RESET, FakeHub
from .publish import (
    OUT,
    OUT_REPO,
    SLOW,
    TOKEN,
    commits_with_manifest,
    env_for,
    killed_when,
    new_repo,
    publish,
    published,
    same_as_reference,
    sha,
    spawn,
    uploaded,
)


def test_killed_uploading_then_before_the_last_commit_resumed_on_other_machines(
        hub: FakeHub, tmp_path: Path, sample_reference: Path) -> None:
    """SIGKILL while shard 5 uploads; a resume on another machine (another --staging, an
    empty cache) restores from the Hub and uploads only what it lacks; SIGKILL again while its
    last commit is on the wire; a third machine publishes, uploading nothing."""
    new_repo(hub)
    shard5 = sha((sample_reference / "train-00005.bin").read_bytes())
    arrived, release = hub.hold(f"/{shard5}/", "PUT")
    proc = spawn(env_for(hub, tmp_path / "hf-a"), "--out", OUT, "--staging", tmp_path / "a",
                 *SLOW)
    killed_when(proc, arrived, release, "the upload of train-00005.bin")
    before = set(hub.repos[("dataset", OUT_REPO)].lfs)  # the objects the Hub stores
    assert before and shard5 not in before  # held, then dropped: the Hub never got it
    assert not any(commits_with_manifest(hub))

    hub.clear_log()
    arrived, release = hub.hold_commit("_MANIFEST.json")
    proc = spawn(env_for(hub, tmp_path / "hf-b"), "--out", OUT, "--staging", tmp_path / "b",
                 "--resume")
    err = killed_when(proc, arrived, release, "the resume's last commit")
    assert "restoring it from the remote checkpoint" in err
    again = uploaded(hub)
    assert shard5 in again and not again & before  # only what the Hub lacked went up
    assert not any(commits_with_manifest(hub))  # the last commit never landed

    hub.clear_log()
    r = publish(env_for(hub, tmp_path / "hf-c"), "--out", OUT, "--staging", tmp_path / "c",
                "--resume")
    assert r.returncode == 0, r.stderr
    shards = {sha(p.read_bytes()) for p in sample_reference.glob("*.bin")}
    assert not uploaded(hub) & shards  # every shard was on the Hub already
    same_as_reference(published(hub), sample_reference)
    has = commits_with_manifest(hub)
    assert has[-1] and not any(has[:-1])


def test_server_failures_during_uploads_and_at_the_commit(hub: FakeHub, tmp_path: Path,
                                                          sample_reference: Path) -> None:
    """503 and a dropped connection during uploads, 429 with Retry-After at a pre-upload, a
    dropped connection and a lost answer at commits (the retried commit finds its own: no
    second copy of it): retried, exit 0, the same bytes."""
    new_repo(hub)
    hub.fail("/lfs/", 503, times=1, method="PUT")
    hub.fail("/lfs/", RESET, times=1, method="PUT")
    hub.fail("/preupload/", 429, times=1, retry_after=0)
    hub.fail("/commit/", RESET, times=1)
    hub.fail("/commit/", LOST, times=1)
    r = publish(env_for(hub, tmp_path / "hf"), "--out", OUT, "--staging", tmp_path / "s",
                commit_seconds=0)
    assert r.returncode == 0, r.stderr
    assert all(f.remaining == 0 for f in hub.faults)  # every fault was met
    same_as_reference(published(hub), sample_reference)
    has = commits_with_manifest(hub)
    assert has[-1] and not any(has[:-1])
    # The lost answer's commit is in the history once (its retry found it at the head and
    # took it as done): no commit repeats the one before it.
    repo = hub.repos[("dataset", OUT_REPO)]
    contents = [repo.commits[c] for c in hub.history(OUT_REPO)]
    assert all(a != b for a, b in itertools.pairwise(contents))


def test_a_hub_that_keeps_failing_exits_75_and_keeps_everything(hub: FakeHub, tmp_path: Path
                                                                 ) -> None:
    new_repo(hub)
    hub.fail("/commit/", 503, times=FOREVER)
    r = publish(env_for(hub, tmp_path / "hf"), "--out", OUT, "--staging", tmp_path / "s")
    assert r.returncode == 75, r.stderr
    assert "HTTP 503" in r.stderr and "gave up after 3 attempts" in r.stderr
    assert "rerun the same command with --resume" in r.stderr
    assert len(hub.history(OUT_REPO)) == 1  # nothing committed, nothing lost


def test_another_commit_on_the_branch_stops_the_run_loudly(hub: FakeHub, tmp_path: Path,
                                                           sample_reference: Path) -> None:
    """Another writer commits to the branch after the run's second commit: the run's next
    commit names a stale parent (HTTP 412) and it stops with exit 1, overwriting nothing; a
    resume continues from the branch as it is, keeping the other commit's file."""
    new_repo(hub)
    hub.interject(OUT_REPO, after=2, files={"NOTES.md": b"another writer\n"})
    env = env_for(hub, tmp_path / "hf")
    r = publish(env, "--out", OUT, "--staging", tmp_path / "s", commit_seconds=0)
    assert r.returncode == 1, r.stderr
    assert "moved while this run was publishing" in r.stderr
    assert "rerun the same command with --resume" in r.stderr
    assert not any(commits_with_manifest(hub))
    r = publish(env, "--out", OUT, "--staging", tmp_path / "s", "--resume", commit_seconds=0)
    assert r.returncode == 0, r.stderr
    files = published(hub)
    assert files["NOTES.md"] == b"another writer\n"
    same_as_reference(files, sample_reference)


def test_refusals_missing_repo_no_write_access(hub: FakeHub, tmp_path: Path) -> None:
    """Exit 1 with what, where and how, before any work: no repository (without
    --create-repo), a token that may not write (a private dataset read without a token:
    tests/unit/outputs/hf/test_repo.py)."""
    env = env_for(hub, tmp_path / "hf")
    r = publish(env, "--out", OUT, "--staging", tmp_path / "s")
    assert r.returncode == 1
    assert "the Hub has no dataset repository acme/tokens" in r.stderr
    assert "Create it with --create-repo" in r.stderr
    assert ("dataset", OUT_REPO) not in hub.repos

    new_repo(hub, writers=["hf_" + "o" * 34])
    r = publish(env, "--out", OUT, "--staging", tmp_path / "s")
    assert r.returncode == 1
    assert "refused to let this token write to hf://datasets/acme/tokens (HTTP 403)" in r.stderr
    assert "pass a token with write access" in r.stderr
    assert TOKEN not in r.stderr
    assert len(hub.history(OUT_REPO)) == 1
