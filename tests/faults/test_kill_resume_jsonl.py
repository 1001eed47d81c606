"""Kill and resume on JSON Lines compressed by Debian's ``zstd``: random SIGKILLs on a
directory of ``.jsonl.zst`` files and on one large ``.jsonl.zst`` (one stream, cut into a
span per worker, each decompressing from the file's start), every restart `--out DIR
--resume` alone with another number of workers; the published directory is byte-identical
to an uninterrupted run's. One seed each by default; the sweep is behind ``-m soak``. A run
killed right after its finished checkpoint resumes to the same bytes, the stream's rows
counted although no plan counted a compressed file read in blocks."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

import harness as h
import pytest
from harness import Corpus, World

# 12,000 documents in batches of 8 take at least 1,500 x 1 ms = 1.5 s on any machine, more
# than the 0.3 + 0.5 s of the longest delays before the two kills a test counts on.
PACE = h.paced(0.001)
DIRECTORY = Corpus(n_docs=12_000, n_files=4, max_file_tokens=8_000, kind="jsonl.zst")
ONE_FILE = Corpus(n_docs=12_000, n_files=1, max_file_tokens=8_000, kind="jsonl.zst")
FINISHED = {"target": "prep.fsio.os.replace", "when": "after", "nth": 1, "action": "kill",
            "arg_contains": "checkpoint.json", "src_contains": '"finished": true'}
SOAK_SEEDS = [pytest.param(s, marks=pytest.mark.soak) for s in range(11, 17)]


def kill_and_resume(w: World, out: Path, seed: int, kills_wanted: int) -> None:
    h.kill_until_done(w.fresh_args(out, "--workers", "2"), out, seed, kills_wanted, PACE)
    h.assert_identical(w, out)


@pytest.mark.parametrize("seed", [1, *SOAK_SEEDS])
def test_a_directory_of_jsonl_zst_killed_at_random_resumes_identically(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, seed: int) -> None:
    kill_and_resume(h.world(tmp_path_factory, DIRECTORY), tmp_path / "out", seed, 2)


@pytest.mark.parametrize("seed", [2, *SOAK_SEEDS])
def test_one_large_jsonl_zst_killed_at_random_resumes_identically(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, seed: int) -> None:
    kill_and_resume(h.world(tmp_path_factory, ONE_FILE), tmp_path / "out", seed, 2)


@pytest.mark.parametrize("shuffle", [0, pytest.param(100, marks=pytest.mark.soak)],
                         ids=["in-workers", "shuffled"])
def test_killed_after_the_finished_checkpoint_resumes_identically(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, shuffle: int) -> None:
    corpus = dataclasses.replace(DIRECTORY, n_docs=3_000, n_files=3, shuffle_buffer=shuffle)
    w, out, mark = h.world(tmp_path_factory, corpus), tmp_path / "out", tmp_path / "fired"
    done = h.run(w.args(out, "--workers", "2"), faults=FINISHED, mark=mark)
    assert mark.exists() and done.returncode == -signal.SIGKILL, done.stderr
    done = h.run(["--out", out, "--resume"])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
