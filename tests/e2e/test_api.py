"""``prep.prepare()`` and ``prep.Manifest``: the CLI's job as a library. The reference is
always the real CLI (``scripts/prepare.py`` in a subprocess) with the same recipe; the
interruptions are real signals delivered to a real process running ``prep.prepare``."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import GPT2_DIR, make_corpus, numbered_docs, run_prepare_subprocess

import prep

# The recipe under test, as keyword arguments and as the CLI's options.
SETTINGS = {"val_fraction": 0.2, "seed": 7, "max_file_tokens": 2_000, "dataset": "lib"}
CLI = ["--val-fraction", "0.2", "--seed", "7", "--max-file-tokens", "2000", "--dataset", "lib"]

# A process that runs prep.prepare and sends itself SIGNAL once ROWS rows are committed
# (with a checkpoint after every batch, so one precedes the signal on any machine).
DRIVER = f"""
import os, signal, sys
# SIGINT as an interactive user's: a process started in the background by a
# non-interactive shell inherits it ignored, and would never see the interrupt.
signal.signal(signal.SIGINT, signal.default_int_handler)
import prep
src, out, name, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
settings = {SETTINGS!r}
def progress(snap):
    if snap.rows >= rows:
        os.kill(os.getpid(), getattr(signal, name))
prep.prepare(source=src, out=out, tokenizer={str(GPT2_DIR)!r}, batch_size=16,
             checkpoint_interval=1e-9, progress=progress, **settings)
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("api")
    return make_corpus(root / "src", [numbered_docs(150), numbered_docs(150, 150)])


@pytest.fixture(scope="module")
def cli_out(corpus: Path) -> Path:
    """The same recipe through the real CLI: what every library run must reproduce."""
    out = corpus.parent / "cli"
    r = run_prepare_subprocess(["--source", corpus, "--tokenizer", GPT2_DIR, "--out", out, *CLI])
    assert r.returncode == 0, r.stderr
    return out


def _dataset(out: Path) -> dict[str, bytes]:
    """Everything deterministic: the .bin files and the manifest (not _PROVENANCE.json)."""
    return {p.name: p.read_bytes() for p in out.iterdir() if p.name != "_PROVENANCE.json"}


def _rows_committed(out: Path) -> int:
    cp = out.parent / f"{out.name}.incomplete" / "checkpoint.json"
    return int(json.loads(cp.read_text())["progress"]["rows_visited"])


def test_prepare_gives_the_cli_bytes_and_a_typed_manifest(
    corpus: Path, cli_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[Any] = []
    out = tmp_path / "api"
    m = prep.prepare(source=corpus, tokenizer=GPT2_DIR, out=out, progress=seen.append, **SETTINGS)
    assert _dataset(out) == _dataset(cli_out)
    assert len([n for n in _dataset(out) if n.startswith("train-")]) > 1  # rolled over
    assert isinstance(m, prep.Manifest)
    assert m == prep.Manifest.load(out) == prep.Manifest.load(str(cli_out))
    assert m.to_bytes() == (out / "_MANIFEST.json").read_bytes()
    assert (m.dataset, m.recipe["val_fraction"], m.doc_sep_id) == ("lib", 0.2, 50256)
    assert sum(f.n_tokens for f in m.files if f.split == "val") == m.totals["val"].n_tokens
    assert [s.rows for s in seen] == sorted(s.rows for s in seen)
    assert seen[-1].rows == m.source.rows_visited == 300
    assert capsys.readouterr() == ("", "")  # a library prints nothing


@pytest.mark.parametrize(("workers", "engine"), [(1, "hf"), (2, "gigatoken"), (3, "auto")])
def test_workers_and_engine_never_change_the_bytes(
    corpus: Path, cli_out: Path, tmp_path: Path, workers: int, engine: str
) -> None:
    out = tmp_path / "api"
    prep.prepare(source=corpus, tokenizer=GPT2_DIR, out=out, workers=workers, engine=engine,
                 batch_size=7, **SETTINGS)
    assert _dataset(out) == _dataset(cli_out)
    provenance = json.loads((out / "_PROVENANCE.json").read_text())
    assert provenance["engine"] == ("hf" if engine == "hf" else "gigatoken")
    # The committing thread's CPU is part of the process's over the same span, and so is
    # each thread's, the committing one (MainThread) and the one receiving results included.
    assert 0 <= provenance["commit_thread_cpu_seconds"] <= provenance["main_cpu_seconds"]
    threads = provenance["main_threads_cpu_seconds"]
    assert {"MainThread", "prep-reader", "other"} <= set(threads)
    assert all(v >= 0 for v in threads.values())
    assert sum(threads.values()) <= provenance["main_cpu_seconds"] + 0.01


def test_spawned_workers_give_the_same_bytes(
    corpus: Path, cli_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where the platform cannot fork, the pool spawns its workers with the default
    # --threads: they build their own engine (they used to fail their first task with
    # "worker not initialised").
    monkeypatch.setattr(sys, "platform", "darwin")
    out = tmp_path / "spawned"
    prep.prepare(source=corpus, tokenizer=GPT2_DIR, out=out, workers=2, **SETTINGS)
    assert _dataset(out) == _dataset(cli_out)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _records(**settings: Any) -> list[logging.LogRecord]:
    """What ``prep.prepare(**settings)`` logs to an application's INFO handler on ``prep``."""
    logger, handler = logging.getLogger("prep"), _Records()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        prep.prepare(tokenizer="byte", max_documents=40, **settings)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return handler.records


def test_progress_goes_to_logging_without_a_callback(corpus: Path, tmp_path: Path) -> None:
    """The library configures no handler; the application's handlers see prep's lines."""
    records = _records(source=corpus, out=tmp_path / "out")
    lines = [r.getMessage() for r in records if r.name == "prep.progress"]
    assert lines and "rows 40" in lines[-1]
    assert any(f"published {tmp_path / 'out'}" in r.getMessage() for r in records)


def test_quiet_logs_no_progress(corpus: Path, tmp_path: Path) -> None:
    """``quiet=True`` is the CLI's ``--quiet``: no progress lines, the same bytes."""
    quiet, loud = tmp_path / "quiet" / "out", tmp_path / "loud" / "out"
    records = _records(source=corpus, out=quiet, quiet=True)
    assert not [r for r in records if r.levelno < logging.WARNING], records
    assert [r for r in _records(source=corpus, out=loud) if r.name == "prep.progress"]
    assert _dataset(quiet) == _dataset(loud)


def test_errors_are_typed_never_exits(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(prep.InputError, match="no such file or directory") as missing:
        prep.prepare(source=tmp_path / "nope", tokenizer="byte", out=tmp_path / "a")
    assert missing.value.exit_code == 1
    with pytest.raises(prep.UsageError, match="--seed -1") as usage:
        prep.prepare(source=corpus, tokenizer="byte", out=tmp_path / "b", seed=-1)
    assert usage.value.exit_code == 2
    with pytest.raises(prep.UsageError, match=r"engine 'fast': choose one of auto, hf"):
        prep.prepare(source=corpus, tokenizer="byte", out=tmp_path / "b", engine="fast")
    with pytest.raises(prep.UsageError, match=r"split_column holds int 5, expected a string"):
        prep.prepare(source=corpus, tokenizer="byte", out=tmp_path / "b", split_column=5)
    with pytest.raises(prep.UsageError, match=r"shuffle_files holds str 'yes', expected True"):
        prep.prepare(source=corpus, tokenizer="byte", out=tmp_path / "b", shuffle_files="yes")
    with pytest.raises(prep.UsageError, match="--workers 0 must be > 0"):
        prep.prepare(source=corpus, tokenizer="byte", out=tmp_path / "b", workers=0)
    with pytest.raises(prep.UsageError, match=r"unknown setting.*val_fractoin"):
        prep.prepare(source=corpus, tokenizer="byte", out=tmp_path / "c", val_fractoin=0.1)
    prep.prepare(source=corpus, tokenizer="byte", out=tmp_path / "d", max_documents=5)
    with pytest.raises(prep.OutputError, match="already exists"):
        prep.prepare(source=corpus, tokenizer="byte", out=tmp_path / "d", max_documents=5)
    with pytest.raises(prep.IntegrityError, match="not a prep dataset"):
        prep.Manifest.load(tmp_path)
    assert capsys.readouterr() == ("", "")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_the_intent_checks_hold_through_the_library(corpus: Path, tmp_path: Path) -> None:
    """No default dataset through prepare() either (issue 8, points 1 and 8)."""
    with pytest.raises(prep.UsageError, match="--tokenizer is required") as usage:
        prep.prepare(source=corpus, out=tmp_path / "a")
    assert usage.value.exit_code == 2 and "--tokenizer byte" in str(usage.value)
    with pytest.raises(prep.UsageError, match="--source is required"):
        prep.prepare(tokenizer="byte", out=tmp_path / "a")
    with pytest.raises(prep.PrepError, match="nothing to resume") as nothing:
        prep.prepare(out=tmp_path / "a", resume=True)
    assert nothing.value.exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("a")) in ([], ["a.lock"])


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_interrupted_prepare_resumes_to_the_same_bytes(
    corpus: Path, cli_out: Path, tmp_path: Path, name: str
) -> None:
    """SIGINT is KeyboardInterrupt out of prepare(); SIGTERM and SIGKILL end the process
    where it stands. Each time, prepare(resume=True) finishes the same dataset."""
    out = tmp_path / "out"
    p = subprocess.run(
        [sys.executable, "-c", DRIVER, str(corpus), str(out), name, "100"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode == -getattr(signal, name), p.stderr
    if name == "SIGINT":
        assert "KeyboardInterrupt" in p.stderr
    assert not out.exists()
    assert 0 < _rows_committed(out) < 300  # stopped mid-run, with a checkpoint

    m = prep.prepare(out=out, resume=True)
    assert _dataset(out) == _dataset(cli_out)
    assert m == prep.Manifest.load(cli_out)


def test_a_stop_request_checkpoints_and_resume_continues(
    corpus: Path, cli_out: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    polls: list[int] = []

    def stop() -> bool:  # one look before taking the lock, then one after each batch
        polls.append(1)
        return len(polls) >= 7

    with pytest.raises(prep.Interrupted) as e:
        prep.prepare(
            source=corpus, tokenizer=GPT2_DIR, out=out, batch_size=16, stop=stop, **SETTINGS
        )
    assert e.value.exit_code == 75 and "--resume" in str(e.value)
    assert "stopped on request" in str(e.value) and "signal" not in str(e.value)
    assert e.value.resume == ("--out", str(out), "--resume")
    assert str(e.value) == f"{e.value.reason} Resume with: prep prepare --out {out} --resume"
    assert e.value.reason.startswith("stopped on request; checkpoint at row ")
    # Six batches were committed. Batches never cross a Parquet row group (each row group is
    # one worker task), and the corpus has row groups of 50 rows: 16, 16, 16, 2, 16, 16.
    assert _rows_committed(out) == 16 + 16 + 16 + 2 + 16 + 16
    m = prep.prepare(source=corpus, tokenizer=GPT2_DIR, out=out, resume=True, **SETTINGS)
    assert _dataset(out) == _dataset(cli_out)
    assert m.source.rows_visited == 300


def test_the_token_and_offline_defaults_are_decided_in_one_place(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``prep.api`` decides them for the library and the CLI alike: ``token`` given, else
    ``HF_TOKEN``; ``offline`` given (True or False), else ``HF_HUB_OFFLINE``'s reading."""
    from prep.api import _hub_defaults, hub_offline_default, hub_token

    monkeypatch.setenv("HF_TOKEN", "hf_env")
    assert (hub_token(None), hub_token(""), hub_token("hf_typed")) == (
        "hf_env", "hf_env", "hf_typed")
    monkeypatch.delenv("HF_TOKEN")
    assert hub_token(None) is None
    assert _hub_defaults({"quiet": True}) == {"quiet": True, "token": None,
                                              "offline": hub_offline_default()}
    assert _hub_defaults({"offline": False})["offline"] is False
    assert _hub_defaults({"offline": True, "token": "t"})["token"] == "t"
