"""Shared machinery of the fault tests: one corpus and tokenizer, the reference output of an
uninterrupted run, and runners for real ``prepare`` subprocesses (plain, or through
``tests/fault_driver.py`` with one fault injected at its import site).

Not a ``conftest.py`` on purpose: conftest modules outside packages all import as
``conftest`` and would shadow the factories in ``tests/conftest.py`` for other directories.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
DRIVER = HERE.parent / "fault_driver.py"


def _load_factories() -> ModuleType:
    """``tests/conftest.py`` (its factories), whatever ``conftest`` means right now."""
    path = TESTS / "conftest.py"
    loaded = sys.modules.get("conftest")
    if loaded is not None and Path(getattr(loaded, "__file__", "")).resolve() == path:
        return loaded
    name = "_prep_test_factories"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"{path} not found")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


factories = _load_factories()
PREPARE: Path = factories.PREPARE
dir_bytes: Callable[[Path], dict[str, bytes]] = factories.dir_bytes

SHUFFLE_BUFFER = 100
# How interrupted runs run: tiny batches, a checkpoint every 50 ms.
FAST = ("--batch-size", "8", "--checkpoint-interval", "0.05")
# A checkpoint after every batch, so "the Nth checkpoint" is reached on any machine.
EVERY_BATCH = ("--batch-size", "32", "--checkpoint-interval", "0.000001")
RESUME_HINT = re.compile(r"Resume with: prep prepare (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Corpus:
    """How big a World is: self-describing documents over Parquet files, and how small the
    files roll over (many rollovers)."""

    n_docs: int
    n_files: int
    max_file_tokens: int
    empty_every: int = 0  # every Nth row empty or whitespace-only (skipped, but counted)


# KILL: a run of ~1.5 s with FAST options, so that random kills land everywhere.
# SMALL: quick runs for exact-call crashes and refusals (still ~20 rollovers).
KILL = Corpus(n_docs=36_000, n_files=6, max_file_tokens=20_000)
SMALL = Corpus(n_docs=12_000, n_files=4, max_file_tokens=8_000)
# SOAK: a longer run (tests/faults/test_soak.py), with empty rows among the documents.
SOAK = Corpus(n_docs=200_000, n_files=10, max_file_tokens=60_000, empty_every=97)


@dataclass(frozen=True)
class World:
    """A corpus, a small byte-level BPE (its <|endoftext|>, named in generation_config.json,
    separates documents) and the published output of one uninterrupted run."""

    root: Path
    corpus: Corpus
    source: Path
    tokenizer: Path
    reference_dir: Path
    reference: dict[str, bytes]

    @property
    def total_rows(self) -> int:
        return self.corpus.n_docs

    def recipe(self, source: Path | None = None, tokenizer: Path | None = None) -> list[str]:
        """The recipe options (the same strings every time, so manifests compare)."""
        return recipe_args(self.corpus, source or self.source, tokenizer or self.tokenizer)

    def fresh_args(self, out: Path, *extra: str) -> list[str]:
        """A fresh interrupted-style run: the recipe, tiny batches, frequent checkpoints."""
        return ["--out", str(out), *self.recipe(), *FAST, *extra]

    def copy_inputs(self, dest: Path) -> tuple[Path, Path]:
        """A private copy of the source and tokenizer (for tests that alter them)."""
        src = shutil.copytree(self.source, dest / "corpus")
        tok = shutil.copytree(self.tokenizer, dest / "tok")
        return Path(src), Path(tok)


def recipe_args(corpus: Corpus, source: Path, tokenizer: Path) -> list[str]:
    return [
        "--source", str(source),
        "--tokenizer", str(tokenizer),
        "--max-file-tokens", str(corpus.max_file_tokens),
        "--shuffle-buffer", str(SHUFFLE_BUFFER),
        "--dataset", "fixed",
    ]  # fmt: skip


_WORLDS: dict[tuple[int, Corpus], World] = {}


def world(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus = KILL) -> World:
    """The session's World of that size, built once (corpus, tokenizer, reference run)."""
    key = (id(tmp_path_factory), corpus)
    if key not in _WORLDS:
        _WORLDS[key] = build_world(tmp_path_factory.mktemp("faults-world"), corpus)
    return _WORLDS[key]


def build_world(root: Path, corpus: Corpus) -> World:
    docs = factories.numbered_docs(corpus.n_docs)
    if corpus.empty_every:
        docs = [
            ("" if i % 2 else " \n ") if i % corpus.empty_every == 5 else d
            for i, d in enumerate(docs)
        ]
    per = -(-corpus.n_docs // corpus.n_files)
    parts = [docs[i * per : (i + 1) * per] for i in range(corpus.n_files)]
    source = factories.make_corpus(root / "corpus", parts)
    tokenizer = factories.bpe_tokenizer(root / "tok", docs[:3000])
    ref = root / "reference" / "out"
    # Default batch size and checkpoint interval: the interrupted runs use others.
    done = run_plain(["--out", ref, *recipe_args(corpus, source, tokenizer)])
    if done.returncode != 0:
        raise RuntimeError(f"reference run failed ({done.returncode}):\n{done.stderr}")
    return World(root, corpus, source, tokenizer, ref, dir_bytes(ref))


# -- running prepare ------------------------------------------------------------------------


def _env(fault: dict[str, Any] | None, mark: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREP_FAULT", "PREP_FAULT_MARK")}
    env["PYTHONUNBUFFERED"] = "1"
    if fault is not None:
        env["PREP_FAULT"] = json.dumps(fault)
    if mark is not None:
        env["PREP_FAULT_MARK"] = str(mark)
    return env


def command(args: Sequence[object], fault: dict[str, Any] | None = None) -> list[str]:
    """``scripts/prepare.py ARGS``, or the fault driver when a fault is given."""
    script = DRIVER if fault is not None else PREPARE
    return [sys.executable, str(script), *map(str, args)]


def spawn(
    args: Sequence[object], fault: dict[str, Any] | None = None, mark: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(args, fault),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(fault, mark),
        start_new_session=True,
    )


def run_plain(
    args: Sequence[object],
    fault: dict[str, Any] | None = None,
    mark: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run to completion (a real subprocess); never killed by the test."""
    return subprocess.run(
        command(args, fault),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(fault, mark),
        check=False,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    """Wait for ``proc``; its exit code and stderr."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"prepare did not end within {timeout} s:\n{err}") from None
    return proc.returncode, err


def kill_after(
    proc: subprocess.Popen[str], delay: float, sig: signal.Signals = signal.SIGKILL
) -> bool:
    """Send ``sig`` after ``delay`` seconds unless the process ended first; True if sent."""
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
        return True


def staging_of(out: Path) -> Path:
    return out.with_name(out.name + ".incomplete")


def read_checkpoint(out: Path) -> dict[str, Any] | None:
    """The staging checkpoint as JSON, or None while there is none (replaced atomically, so
    a read sees a whole file)."""
    try:
        data: dict[str, Any] = json.loads((staging_of(out) / "checkpoint.json").read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    return data


def rows_committed(out: Path) -> int:
    cp = read_checkpoint(out)
    return -1 if cp is None else int(cp["progress"]["rows_visited"])


def wait_until(
    proc: subprocess.Popen[str], predicate: Callable[[], bool], timeout: float = 60
) -> bool:
    """Poll ``predicate`` while ``proc`` runs; True once it holds, False if ``proc`` ended."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if predicate():
            return True
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the run made no visible progress in time")
        time.sleep(0.01)
    return False


def resume_args_from(stderr: str) -> list[str]:
    """The arguments of the ``Resume with: prep prepare ...`` line an interrupted run logs."""
    m = RESUME_HINT.search(stderr)
    assert m, f"no resume command in the log:\n{stderr}"
    return shlex.split(m.group(1))


# -- checking the result --------------------------------------------------------------------


def tree_hashes(directory: Path) -> dict[str, str]:
    """SHA-256 of every file below ``directory``, by relative path."""
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def assert_identical(w: World, out: Path, *, beside: bool = True) -> None:
    """``out`` is published, holds exactly the reference's files, its .bin files and
    manifest are byte-identical, and (``beside``) nothing is left next to it but the lock
    file."""
    assert out.is_dir(), f"{out} was not published"
    got = dir_bytes(out)
    assert sorted(got) == sorted(w.reference), "published file names differ from the reference"
    differ = [name for name in got if got[name] != w.reference[name]]
    assert not differ, f"bytes differ from the uninterrupted run: {differ}"
    names = sorted(p.name for p in out.iterdir())
    expected = sorted(p.name for p in w.reference_dir.iterdir())
    assert names == expected, f"published directory holds {set(names) ^ set(expected)} extra"
    if beside:
        left = sorted(
            p.name for p in out.parent.iterdir() if p.name.startswith((out.name, "." + out.name))
        )
        assert left == [out.name, out.name + ".lock"], f"left beside the output: {left}"


def provenance(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "_PROVENANCE.json").read_text())
    return data


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, f"unexpected traceback:\n{stderr}"
