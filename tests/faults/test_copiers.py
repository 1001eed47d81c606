"""Copier processes (``prep.procs.copiers``) in real runs. Batches here are large enough (each
batch's ids well past the arena's 64 KiB) that the copiers write the shards: the bytes are
those of a run whose spawned workers have no arena, so no copier (the main process writes
every id); a run killed just after handing a write to a copier, or whose copier cannot
write (a full disk), resumes to the same bytes; and no process of the killed run outlives
it."""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import harness as h
import pytest
from conftest import dir_bytes
from harness import Corpus, World

N_DOCS = 4000  # in batches of 1,024 (the default), each written by a copier
CHECKPOINT_EVERY_BATCH = ("--checkpoint-interval", "0.000001")


def alive_in_session(sid: int) -> list[int]:
    """The live (not zombie) processes of session ``sid``."""
    alive = []
    for pid in h.session_processes(sid):
        with contextlib.suppress(OSError):
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            if state != b"Z":
                alive.append(pid)
    return alive


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("copiers")
    files = h.write_copied(root / "src", N_DOCS, 2)
    h.factories.bpe_tokenizer(root / "tok", files[0][:300])
    corpus = Corpus(n_docs=N_DOCS, n_files=2, max_file_tokens=150_000, dataset="copied")
    plain = World(root, corpus, root / "src", root / "tok", files)
    # The reference: spawned workers (--threads 2) have no arena, so no copier.
    ref = root / "reference"
    done = h.run(plain.args(ref, "--workers", "2", "--threads", "2"))
    assert done.returncode == 0, done.stderr
    assert h.provenance(ref)["copiers"] is None
    return World(root, corpus, plain.source, plain.tokenizer, files, ref, dir_bytes(ref))


def test_the_copiers_write_a_run_to_the_same_bytes(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = h.run(w.args(out, "--workers", "2"))
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
    copiers = h.provenance(out)["copiers"]
    ids_bytes = sum(p.stat().st_size for p in out.glob("*.bin"))
    assert copiers["processes"] == 1
    assert ids_bytes // 2 < copiers["bytes_written"] <= ids_bytes  # the val batches: inline


def test_killed_just_after_handing_a_write_to_a_copier_then_resumed(
    w: World, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    kill = {"target": "prep.procs.copiers.socket.send_fds", "nth": 3, "action": "kill"}
    first = h.spawn(w.args(out, "--workers", "1", *CHECKPOINT_EVERY_BATCH), faults=kill)
    code, err = first.finish()
    assert code == -signal.SIGKILL, err
    assert h.rows_committed(out) > 0
    # Its copier (and workers) die with it: nothing of it writes once it is gone.
    h.wait_for(lambda: not alive_in_session(first.pid), "the killed run's processes to end")
    done = h.run(["--out", out, "--resume"])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


def test_a_copier_that_cannot_write_stops_the_run_with_its_error(
    w: World, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    full = {
        "target": "prep.procs.copiers.pwrite_all", "nth": 2, "when": "before", "action": "enospc"
    }
    first = h.run(w.args(out, "--workers", "1", *CHECKPOINT_EVERY_BATCH), faults=full)
    assert first.returncode != 0
    h.no_traceback(first.stderr)
    assert "no space left on the device" in first.stderr, first.stderr
    assert "--resume" in first.stderr, first.stderr
    done = h.run(["--out", out, "--resume"])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
