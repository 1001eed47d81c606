"""Helpers for the operations tests: inputs (a small corpus and tokenizer, edits that keep
a file's size), real ``prepare`` processes with hooks at import sites, directory hashes.

``spawn(args, hooks)`` runs ``tests/fault_driver.py ARGS`` (shared with tests/faults). It
wraps each hook's target where prep looks it up (``prep.refresh.exchange`` is the
``exchange`` that ``swap_in`` calls), lets the original run, and at the chosen call does
one thing:

``kill``    SIGKILL this process (a real kill -9, nothing cleans up)
``gate``    create ``reached``, then block until ``release`` exists (the test decides when
            the process goes on, or kills it while it waits: no sleeps, no races)
``record``  append the call's first argument to ``record``
``return``  do not call the original; return ``value`` (a platform without the feature)

Hook keys: ``target`` (dotted path), ``action``, ``nth`` (act at the Nth call, 1-based,
default 1; ``record`` acts at every call), ``when`` (``before``/``after`` the original,
default ``after``), ``arg_contains`` (count only calls with an argument whose ``str``
contains this), and the action's paths.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from conftest import PREPARE, REPO, bpe_tokenizer, dir_bytes, numbered_docs

DRIVER = REPO / "tests" / "fault_driver.py"

TIMEOUT = 120.0


@dataclass
class Proc:
    """A running ``prepare`` with its stderr going to a file (no pipe to fill up)."""

    popen: subprocess.Popen[bytes]
    err_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def err(self) -> str:
        return self.err_path.read_text(errors="replace")

    def finish(self, timeout: float = TIMEOUT) -> tuple[int, str]:
        """Wait for the exit; returns (exit code, stderr). A negative code is a signal."""
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(f"pid {self.pid} did not finish:\n{self.err()}") from None
        return code, self.err()


def command(args: Sequence[object], hooks: Sequence[dict[str, Any]] = ()) -> list[str]:
    if hooks:
        return [sys.executable, str(DRIVER), *map(str, args)]
    return [sys.executable, str(PREPARE), *map(str, args)]


def spawn(args: Sequence[object], log: Path, hooks: Sequence[dict[str, Any]] = (),
          stderr: int | None = None) -> Proc:
    """Start ``prepare ARGS`` (through the driver when there are hooks); stderr goes to
    ``log`` unless a file descriptor is given (a pseudo-terminal)."""
    env = {**os.environ, "PREP_FAULT": json.dumps(list(hooks))}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as f:
        popen = subprocess.Popen(
            command(args, hooks), cwd=REPO, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=f if stderr is None else stderr,
        )
    return Proc(popen, log)


def run(args: Sequence[object], log: Path, hooks: Sequence[dict[str, Any]] = ()
        ) -> tuple[int, str]:
    """``prepare ARGS`` as a subprocess, to the end."""
    return spawn(args, log, hooks).finish()


def gate(target: str, where: Path, *, nth: int = 1, when: str = "after") -> dict[str, Any]:
    """A hook that parks the process at ``target`` until ``release(where)``."""
    return {"target": target, "action": "gate", "nth": nth, "when": when,
            "reached": str(where / "reached"), "release": str(where / "release")}


def release(where: Path) -> None:
    (where / "release").touch()


def wait_for(cond: Callable[[], bool], what: str, *procs: Proc,
             timeout: float = TIMEOUT) -> None:
    """Poll ``cond`` until true; fail at once if one of ``procs`` exits meanwhile."""
    deadline = time.monotonic() + timeout
    while not cond():
        for p in procs:
            if p.popen.poll() is not None:
                raise AssertionError(
                    f"waiting for {what}: pid {p.pid} exited {p.popen.returncode}:\n{p.err()}"
                )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def tree(directory: Path) -> dict[str, str]:
    """SHA-256 of every file below ``directory``, by relative path."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*")) if p.is_file()
    }


def no_traceback(err: str) -> None:
    assert "Traceback" not in err, err


# -- inputs ----------------------------------------------------------------------------

DATASET = "ops"  # the same manifest name whatever the output directory is called


def write_plain(path: Path, texts: Sequence[str]) -> Path:
    """An uncompressed, dictionary-free Parquet file: editing one character of one text
    gives a valid file of exactly the same size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": list(texts)}), path, compression="none",
                   use_dictionary=False, write_statistics=False, row_group_size=100)
    return path


@dataclass(frozen=True)
class World:
    """A source directory and a tokenizer directory under ``root``."""

    root: Path
    source: Path
    tok: Path
    files: tuple[tuple[str, ...], ...]

    def args(self, out: Path, *extra: object) -> list[str]:
        return ["--source", str(self.source), "--tokenizer", str(self.tok), "--dataset",
                DATASET, "--out", str(out), *map(str, extra)]

    def copy(self, dest: Path) -> World:
        """The same inputs under ``dest`` (mtimes kept), free to edit."""
        shutil.copytree(self.source, dest / "src")
        shutil.copytree(self.tok, dest / "tok")
        return World(dest, dest / "src", dest / "tok", self.files)


def make_world(root: Path, n_files: int, per_file: int) -> World:
    docs = numbered_docs(n_files * per_file)
    files = tuple(tuple(docs[i * per_file:(i + 1) * per_file]) for i in range(n_files))
    for i, texts in enumerate(files):
        write_plain(root / "src" / f"part-{i:05d}.parquet", texts)
    bpe_tokenizer(root / "tok", docs[:1500], vocab_size=300)
    return World(root, root / "src", root / "tok", files)


def build(world: World, out: Path, *extra: object) -> dict[str, bytes]:
    """An uninterrupted in-process run; returns its ``dir_bytes``."""
    from prep.cli import run_prepare

    code = run_prepare(world.args(out, "--quiet", *extra))
    assert code == 0, f"reference build of {out} exited {code}"
    return dir_bytes(out)


NS = 1_000_000_000


def leftovers(out: Path) -> set[str]:
    """What a run left beside ``DIR`` other than DIR, DIR.previous and the lock file
    (staging, a journal, lock info, temp files)."""
    keep = {out.name, out.name + ".previous", out.name + ".lock"}
    return {p.name for p in out.parent.iterdir()
            if out.name in p.name and p.name not in keep}


def bump_mtime(path: Path, seconds: int = 7) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * NS))


def edit_same_size(world: World, index: int, doc: int = 5) -> Path:
    """Rewrite one source file with one character of one document changed: a valid Parquet
    file of exactly the same size, with a later mtime."""
    path = world.source / f"part-{index:05d}.parquet"
    before = path.stat()
    texts = list(world.files[index])
    texts[doc] = texts[doc].replace("doc", "DOC", 1)
    write_plain(path, texts)
    assert path.stat().st_size == before.st_size, "the edit must keep the size"
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 3 * NS))
    return path


def grow_file(world: World, index: int) -> Path:
    """Rewrite one source file with one more document (a new size)."""
    path = world.source / f"part-{index:05d}.parquet"
    return write_plain(path, [*world.files[index], f"one more document for file {index}"])


def provenance(out: Path) -> dict[str, Any]:
    return json.loads((out / "_PROVENANCE.json").read_text())


def manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "_MANIFEST.json").read_text())
