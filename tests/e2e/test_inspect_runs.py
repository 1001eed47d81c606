"""``prep inspect`` as a user meets it: a staging directory says whether its run is alive
(the lock is held) or dead (the lock is free), and a dead one prints the exact command that
resumes it; ``--first`` refuses a negative count; decoding with a tokenizer that does not
match the file's vocabulary warns. Real processes, real signals, real locks."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GPT2_DIR, PREPARE, bpe_tokenizer, dir_bytes, numbered_docs, write_parquet

PREP = Path(sys.executable).parent / "prep"


def prep(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PREP), *map(str, args)], capture_output=True, text=True,
                          timeout=300, check=False)


def start_and_freeze(out: Path, *args: object) -> subprocess.Popen[str]:
    """A real ``prepare`` run (a checkpoint per row), stopped with SIGSTOP once its staging
    directory exists: it holds ``DIR.lock`` and makes no progress until killed."""
    proc = subprocess.Popen(
        [sys.executable, str(PREPARE), "--out", str(out), *map(str, args),
         "--batch-size", "1", "--checkpoint-interval", "1e-9"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # the staging directory exists once "started" is logged
        if "started" in line:
            break
    else:
        raise AssertionError(f"the run ended before it started: {proc.wait()}")
    proc.send_signal(signal.SIGSTOP)
    return proc


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_parquet(tmp_path / "src" / "p.parquet", numbered_docs(3000))


def test_a_live_run_then_a_killed_one_then_the_printed_resume_command(
    tmp_path: Path, corpus: Path
) -> None:
    out = tmp_path / "run dir" / "ds"  # a space: the printed command must quote it
    args = ["--source", corpus, "--tokenizer", "byte"]
    proc = start_and_freeze(out, *args)
    staging = out.with_name("ds.incomplete")
    try:
        live = prep("inspect", staging)
        assert live.returncode == 0, live.stderr
        first = live.stdout.splitlines()[0]
        assert f"running (ds.lock held by pid {proc.pid} on {socket.gethostname()}" in first
        assert "not running" not in live.stdout and "resume with" not in live.stdout
    finally:
        proc.kill()  # SIGKILL: nothing of prep's runs, the OS drops the lock
        proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()

    dead = prep("inspect", staging)

    assert dead.returncode == 0, dead.stderr
    lines = dead.stdout.splitlines()
    assert "in progress, not running (the lock is free: the run stopped or was killed)" \
        in lines[0], lines[0]
    assert (tmp_path / "run dir" / "ds.lock").exists()  # a dead run's lock file, not held
    command = lines[-1].removeprefix("resume with: ")
    assert lines[-1].startswith("resume with: ") and shlex.split(command) == [
        "prep", "prepare", "--out", str(out), "--resume"]

    resumed = subprocess.run([str(PREP), *shlex.split(command)[1:]], capture_output=True,
                             text=True, timeout=300, check=False, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    clean = tmp_path / "clean"
    assert prep("prepare", "--out", clean, *args, "--dataset", "ds").returncode == 0
    assert dir_bytes(out) == dir_bytes(clean)


def test_the_resume_command_names_out_absolutely(tmp_path: Path, corpus: Path) -> None:
    """``prep inspect ds.incomplete`` from its parent prints a command that works from any
    directory (a relative --out would resume the wrong place from elsewhere)."""
    out = tmp_path / "ds"
    proc = start_and_freeze(out, "--source", corpus, "--tokenizer", "byte")
    proc.kill()
    proc.wait()
    assert proc.stderr is not None
    proc.stderr.close()
    r = subprocess.run([str(PREP), "inspect", "ds.incomplete"], capture_output=True, text=True,
                       timeout=300, check=False, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert shlex.split(r.stdout.splitlines()[-1].removeprefix("resume with: ")) == [
        "prep", "prepare", "--out", str(out), "--resume"]


def test_inspect_writes_nothing_and_takes_no_lock(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "ds"
    proc = start_and_freeze(out, "--source", corpus, "--tokenizer", "byte")
    proc.kill()
    proc.wait()
    lock = tmp_path / "ds.lock"
    lock.unlink()  # as if the lock file had been cleaned away: inspect must not recreate it
    before = sorted(os.listdir(tmp_path))

    r = prep("inspect", tmp_path / "ds.incomplete")

    assert r.returncode == 0, r.stderr
    assert "not running (the lock is free" in r.stdout
    assert sorted(os.listdir(tmp_path)) == before


@pytest.fixture(scope="module")
def byte_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level train file holding "abc" then "defgh" (no separator)."""
    root = tmp_path_factory.mktemp("byte")
    src = write_parquet(root / "p.parquet", ["abc", "defgh"], split=["train", "train"])
    out = root / "ds"
    r = prep("prepare", "--out", out, "--source", src, "--tokenizer", "byte",
             "--split-column", "split")
    assert r.returncode == 0, r.stderr
    return out / "train-00000.bin"


@pytest.mark.parametrize("first", ["-5", "-1", "x", "1.5"])
def test_first_must_be_a_count(byte_bin: Path, first: str) -> None:
    r = prep("inspect", byte_bin, "--first", first)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""  # before: "-5" printed every id but the last five
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("prep inspect: error: argument --first: "), \
        r.stderr


@pytest.mark.parametrize(("first", "ids"), [("0", []), ("3", [97, 98, 99]),
                                            ("1K", [97, 98, 99, 100, 101, 102, 103, 104])])
def test_first_counts(byte_bin: Path, first: str, ids: list[int]) -> None:
    r = prep("inspect", byte_bin, "--first", first)
    assert r.returncode == 0, r.stderr
    assert f"first {len(ids)} ids: {ids}" in r.stdout.splitlines()


@pytest.fixture(scope="module")
def bpe_dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A dataset made with a 300-id BPE tokenizer; returns (dataset, tokenizer directory)."""
    root = tmp_path_factory.mktemp("bpe")
    docs = numbered_docs(200)
    tok = bpe_tokenizer(root / "tok", docs, vocab_size=300)
    src = write_parquet(root / "p.parquet", docs)
    out = root / "ds"
    r = prep("prepare", "--out", out, "--source", src, "--tokenizer", tok, "--no-doc-sep")
    assert r.returncode == 0, r.stderr
    return out, tok


def vocab_size(tokenizer_dir: Path) -> int:
    """Largest id + 1, read from the tokenizer.json itself (model vocab and added tokens)."""
    data = json.loads((tokenizer_dir / "tokenizer.json").read_text())
    ids = list(data["model"]["vocab"].values()) + [t["id"] for t in data["added_tokens"]]
    return max(ids) + 1


def test_the_matching_tokenizer_decodes_without_warning(bpe_dataset: tuple[Path, Path]
                                                        ) -> None:
    out, tok = bpe_dataset
    r = prep("inspect", out / "train-00000.bin", "--tokenizer", tok)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "\ndecoded: 'doc 000000" in r.stdout, r.stdout  # the first train document


@pytest.mark.parametrize("other", ["gpt2", "byte"])
def test_a_tokenizer_of_another_vocabulary_warns(bpe_dataset: tuple[Path, Path], other: str
                                                 ) -> None:
    out, tok = bpe_dataset
    spec = str(GPT2_DIR) if other == "gpt2" else "byte"
    size = vocab_size(GPT2_DIR) if other == "gpt2" else 256
    r = prep("inspect", out / "train-00000.bin", "--tokenizer", spec)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == (
        f"prep: warning: train-00000.bin was written for a vocabulary of "
        f"{vocab_size(tok):,} ids; --tokenizer {spec} has {size:,}: the decoded text is "
        "probably wrong; give the tokenizer the dataset was made with")
    assert "decoded: " in r.stdout


def test_another_tokenizer_of_the_same_size_warns(bpe_dataset: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    out, tok = bpe_dataset
    other = bpe_tokenizer(tmp_path / "other", [f"zz{i} qq{i}" for i in range(300)],
                          vocab_size=vocab_size(tok))
    assert vocab_size(other) == vocab_size(tok)
    r = prep("inspect", out / "train-00000.bin", "--tokenizer", other)
    assert r.returncode == 0, r.stderr
    assert "vocabulary of" not in r.stderr
    assert "records another tokenizer.json (SHA-256 " in r.stderr
    assert str(other / "tokenizer.json") in r.stderr
