"""One harness for the fault and operations tests: inputs (a corpus and tokenizer, with the
published output of one uninterrupted run when asked; edits that keep a file's size), real
``prepare`` subprocesses (plain, or through ``tests/fault_driver.py`` with faults at their
import sites), waiting on them, and reading what they left (trees, checkpoints).

Faults are the driver's (see ``tests/fault_driver.py``): a dict or a list of dicts with a
``target`` and an ``action`` (``kill``, ``enospc``, ``sleep``, ``gate``, ``record``,
``return``); ``paced`` adds a sleep after every batch, so a run outlasts random kill delays on
any machine. A process's stderr goes to a file, never a pipe that could fill up.

Not a ``conftest.py`` on purpose: conftest modules outside packages all import as
``conftest`` and would shadow the factories in ``tests/conftest.py`` for other directories.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

TESTS = Path(__file__).resolve().parent
DRIVER = TESTS / "fault_driver.py"
TIMEOUT = 120.0


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
REPO: Path = factories.REPO
dir_bytes: Callable[[Path], dict[str, bytes]] = factories.dir_bytes

# How interrupted runs run: tiny batches, a checkpoint every 50 ms.
FAST = ("--batch-size", "8", "--checkpoint-interval", "0.05")
# A checkpoint after every batch, so "the Nth checkpoint" is reached on any machine.
EVERY_BATCH = ("--batch-size", "32", "--checkpoint-interval", "0.000001")
RESUME_HINT = re.compile(r"Resume with: prep prepare (.+)$", re.MULTILINE)
NS = 1_000_000_000

Fault = dict[str, Any]
Faults = Fault | Sequence[Fault] | None


# -- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    """How big a World is: self-describing documents over Parquet files, how small the files
    roll over (0: the default), and every Nth row empty or whitespace-only (0: none)."""

    n_docs: int
    n_files: int
    max_file_tokens: int = 0
    empty_every: int = 0
    shuffle_buffer: int = 0
    tokenizer_docs: int = 3000
    vocab_size: int | None = None
    dataset: str = "fixed"
    format: str = "llmc"  # --format of every run in the World
    pack: str = "whole"  # --pack of every run in the World
    # --workers of every run (args()) in the World; 0: not given, so that a source this
    # small is tokenized in the main process (prep.run.work.sizing.IN_PROCESS_BYTES)
    workers: int = 0
    row_group: int = 100  # rows per Parquet row group of the World's files
    kind: str = "parquet"  # the files' kind: "parquet", or "jsonl.zst" (written by zstd)


# KILL: a run of ~1.5 s with FAST options, so that random kills land everywhere.
# SMALL: quick runs for exact-call crashes and refusals (still ~20 rollovers).
# SOAK: a longer run (tests/faults/test_soak.py), with empty rows among the documents.
KILL = Corpus(n_docs=36_000, n_files=6, max_file_tokens=20_000, shuffle_buffer=100)
# CUT: KILL's documents in three files of one row group each, unshuffled: a run with
# workers cuts each group into spans (prep.run.work.cuts); its reference run has none (in-process).
CUT = Corpus(n_docs=36_000, n_files=3, max_file_tokens=20_000, row_group=12_000)
SMALL = Corpus(n_docs=12_000, n_files=4, max_file_tokens=8_000, shuffle_buffer=100)
SOAK = Corpus(n_docs=200_000, n_files=10, max_file_tokens=60_000, empty_every=97,
              shuffle_buffer=100)


def ops_corpus(n_files: int, per_file: int) -> Corpus:
    """The operations tests' inputs: default recipe, a 300-id BPE, dataset name ``ops``."""
    return Corpus(n_docs=n_files * per_file, n_files=n_files, tokenizer_docs=1500,
                  vocab_size=300, dataset="ops")


def write_plain(path: Path, texts: Sequence[str], row_group: int = 100) -> Path:
    """An uncompressed, dictionary-free Parquet file: editing one character of one text
    gives a valid file of exactly the same size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": list(texts)}), path, compression="none",
                   use_dictionary=False, write_statistics=False, row_group_size=row_group)
    return path


def write_jsonl_zst(path: Path, texts: Sequence[str]) -> Path:
    """The texts as JSON Lines (``json.dumps``), compressed by Debian's ``zstd``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    plain = path.with_suffix("")
    plain.write_text("".join(json.dumps({"text": t, "n": i}) + "\n" for i, t in enumerate(texts)))
    subprocess.run(["zstd", "-q", "--rm", "-f", str(plain), "-o", str(path)], check=True)
    return path


def write_copied(directory: Path, n_docs: int, n_files: int) -> tuple[tuple[str, ...], ...]:
    """A corpus whose batches go to the copiers (``prep.procs.copiers``): documents of eight
    numbered lines (~500 characters, ~140 ids with a 300-id BPE: a batch of 1,024 holds
    ~290 KB of ids, past the arena's 64 KiB), one row group per file, so that a batch holds
    ``--batch-size`` rows (a task is a row group; ``write_plain``'s groups of 100 would cap
    it). Returns each file's texts."""
    lines = factories.numbered_docs(n_docs * 8)
    docs = [" ".join(lines[i * 8:(i + 1) * 8]) for i in range(n_docs)]
    per = -(-n_docs // n_files)
    files = tuple(tuple(docs[i * per:(i + 1) * per]) for i in range(n_files))
    directory.mkdir(parents=True, exist_ok=True)
    for i, texts in enumerate(files):
        pq.write_table(pa.table({"text": list(texts)}), directory / f"part-{i:05d}.parquet",
                       row_group_size=per)
    return files


@dataclass(frozen=True)
class World:
    """A corpus under ``root/src``, a small byte-level BPE under ``root/tok`` (its
    <|endoftext|>, named in generation_config.json, separates documents) and, when built
    with one, the published output of an uninterrupted run (``reference``)."""

    root: Path
    corpus: Corpus
    source: Path
    tokenizer: Path
    files: tuple[tuple[str, ...], ...]
    reference_dir: Path | None = None
    reference: dict[str, bytes] = field(default_factory=dict)

    @property
    def total_rows(self) -> int:
        return self.corpus.n_docs

    def recipe(self, source: Path | None = None, tokenizer: Path | None = None) -> list[str]:
        """The recipe options (the same strings every time, so manifests compare)."""
        c = self.corpus
        args = ["--source", str(source or self.source),
                "--tokenizer", str(tokenizer or self.tokenizer)]
        if c.max_file_tokens:
            args += ["--max-file-tokens", str(c.max_file_tokens)]
        if c.shuffle_buffer:
            args += ["--shuffle-buffer", str(c.shuffle_buffer)]
        if c.format != "llmc":
            args += ["--format", c.format]
        if c.pack != "whole":
            args += ["--pack", c.pack]
        return [*args, "--dataset", c.dataset]

    def args(self, out: Path, *extra: object) -> list[str]:
        """``--out OUT``, the recipe, the World's ``--workers`` and ``extra``."""
        workers = ["--workers", str(self.corpus.workers)] if self.corpus.workers else []
        return ["--out", str(out), *self.recipe(), *workers, *map(str, extra)]

    def fresh_args(self, out: Path, *extra: str) -> list[str]:
        """A fresh interrupted-style run: the recipe, tiny batches, frequent checkpoints."""
        return self.args(out, *FAST, *extra)

    def copy(self, dest: Path) -> World:
        """The same inputs under ``dest`` (mtimes kept), free to edit."""
        src = Path(shutil.copytree(self.source, dest / "src"))
        tok = Path(shutil.copytree(self.tokenizer, dest / "tok"))
        return World(dest, self.corpus, src, tok, self.files)

    def path(self, index: int) -> Path:
        return self.source / f"part-{index:05d}.{self.corpus.kind}"


def make_world(root: Path, corpus: Corpus, *, reference: bool = False) -> World:
    """Write the corpus and train the tokenizer; with ``reference``, also publish one
    uninterrupted run (default batch size and checkpoint interval) to compare with."""
    docs = factories.numbered_docs(corpus.n_docs)
    if corpus.empty_every:
        docs = [
            ("" if i % 2 else " \n ") if i % corpus.empty_every == 5 else d
            for i, d in enumerate(docs)
        ]
    per = -(-corpus.n_docs // corpus.n_files)
    files = tuple(tuple(docs[i * per : (i + 1) * per]) for i in range(corpus.n_files))
    for i, texts in enumerate(files):
        if corpus.kind == "jsonl.zst":
            write_jsonl_zst(root / "src" / f"part-{i:05d}.jsonl.zst", texts)
        else:
            write_plain(root / "src" / f"part-{i:05d}.parquet", texts, corpus.row_group)
    kw = {} if corpus.vocab_size is None else {"vocab_size": corpus.vocab_size}
    factories.bpe_tokenizer(root / "tok", docs[: corpus.tokenizer_docs], **kw)
    w = World(root, corpus, root / "src", root / "tok", files)
    if not reference:
        return w
    ref = root / "reference" / "out"
    done = run(w.args(ref))
    if done.returncode != 0:
        raise RuntimeError(f"reference run failed ({done.returncode}):\n{done.stderr}")
    return World(root, corpus, w.source, w.tokenizer, files, ref, dir_bytes(ref))


_WORLDS: dict[tuple[int, Corpus], World] = {}


def world(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus = KILL) -> World:
    """The session's World of that size with its reference run, built once."""
    key = (id(tmp_path_factory), corpus)
    if key not in _WORLDS:
        _WORLDS[key] = make_world(tmp_path_factory.mktemp("world"), corpus, reference=True)
    return _WORLDS[key]


def bump_mtime(path: Path, seconds: int = 7) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * NS))


def edit_same_size(w: World, index: int, doc: int = 5) -> Path:
    """Rewrite one source file with one character of one document changed: a valid Parquet
    file of exactly the same size, with a later mtime."""
    path = w.path(index)
    before = path.stat()
    texts = list(w.files[index])
    texts[doc] = texts[doc].replace("doc", "DOC", 1)
    write_plain(path, texts)
    assert path.stat().st_size == before.st_size, "the edit must keep the size"
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 3 * NS))
    return path


def grow_file(w: World, index: int) -> Path:
    """Rewrite one source file with one more document (a new size)."""
    return write_plain(w.path(index), [*w.files[index], f"one more document for file {index}"])


# -- running prepare ------------------------------------------------------------------------


def _env(faults: Faults, mark: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREP_FAULT", "PREP_FAULT_MARK")}
    env["PYTHONUNBUFFERED"] = "1"
    if faults:
        env["PREP_FAULT"] = json.dumps(faults)
    if mark is not None:
        env["PREP_FAULT_MARK"] = str(mark)
    return env


def command(args: Sequence[object], faults: Faults = None) -> list[str]:
    """``scripts/prepare.py ARGS``, or the fault driver when there are faults."""
    return [sys.executable, str(DRIVER if faults else PREPARE), *map(str, args)]


@dataclass
class Proc:
    """A running ``prepare``; its stderr goes to ``err_path``."""

    popen: subprocess.Popen[bytes]
    err_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout)

    def send_signal(self, sig: int) -> None:
        self.popen.send_signal(sig)

    def kill(self) -> None:
        self.popen.kill()

    def err(self) -> str:
        return self.err_path.read_text(errors="replace")

    def finish(self, timeout: float = TIMEOUT) -> tuple[int, str]:
        """Wait for the exit; returns (exit code, stderr). A negative code is a signal. A
        run still going after ``timeout`` is asked where it is (``stacks``), then killed,
        and the test fails with its stderr."""
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stacks()
            native = self.native_stacks()
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(f"pid {self.pid} did not end within {timeout} s; its "
                                 f"stderr, with every thread's stack:\n{self.err()}\n"
                                 f"{native}") from None
        return code, self.err()

    def native_stacks(self) -> str:
        """Every thread's native stack of each process of the run's session: from
        ``py-spy dump --native`` (Python and native frames interleaved) and gdb, each when
        installed; what SIGUSR1 cannot give once the interpreter has begun to shut down
        (issue 23's hang was in a C++ exit handler, with no Python stack left)."""
        venv = str(Path(sys.executable).parent)  # the dev extra's py-spy, PATH or not
        spy = shutil.which("py-spy") or shutil.which("py-spy", path=venv)
        tools = {"py-spy": spy and [spy, "dump", "--native", "--pid"],
                 "gdb": shutil.which("gdb") and ["gdb", "-batch", "-ex", "thread apply all bt",
                                                 "-p"]}
        out = [f"({name} is not installed: no stacks from it)" for name, cmd in tools.items()
               if not cmd]
        for pid in session_processes(self.pid):
            for name, cmd in tools.items():
                if not cmd:
                    continue
                try:
                    done = subprocess.run([*cmd, str(pid)], capture_output=True, text=True,
                                          timeout=120, check=False)
                    out.append(f"--- native stacks of pid {pid} ({name}) ---\n"
                               f"{done.stdout}{done.stderr}")
                except subprocess.TimeoutExpired:
                    out.append(f"--- pid {pid}: {name} did not answer ---")
        return "\n".join(out)

    def stacks(self, settle: float = 0.5) -> None:
        """SIGUSR1 to each prep process of the run's session (it has one of its own), the
        main process first, one at a time so their dumps do not interleave: each writes
        every thread's stack to the run's stderr and goes on."""
        for pid in session_processes(self.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)
            time.sleep(settle)


def session_processes(sid: int) -> list[int]:
    """The processes of session ``sid``, its leader first, without multiprocessing's
    resource tracker (not prep's: SIGUSR1 would end it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.getsid(int(entry.name)) == sid and \
                    b"resource_tracker" not in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return sorted(found, key=lambda pid: (pid != sid, pid))


@functools.cache
def _log_dir() -> Path:
    """One directory for this test process's unnamed run logs, removed when it exits (each
    log used to be a file of its own in /tmp, left behind by every suite run)."""
    path = Path(tempfile.mkdtemp(prefix="prep-test-logs-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def spawn(args: Sequence[object], log: Path | None = None, faults: Faults = None, *,
          mark: Path | None = None, stderr: int | None = None, cwd: Path = REPO) -> Proc:
    """Start ``prepare ARGS`` (through the driver when there are faults) in its own
    session, in ``cwd``; stderr goes to ``log`` (a temporary file when None) unless a file
    descriptor is given (a pseudo-terminal)."""
    if log is None:
        fd, name = tempfile.mkstemp(prefix="prep-run-", suffix=".log", dir=_log_dir())
        os.close(fd)
        log = Path(name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as f:
        popen = subprocess.Popen(
            command(args, faults), cwd=cwd, env=_env(faults, mark), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=f if stderr is None else stderr,
            start_new_session=True,
        )
    return Proc(popen, log)


class Done(NamedTuple):
    """How a run ended: ``code, err = run(...)`` or ``done.returncode``/``done.stderr``."""

    returncode: int
    stderr: str


def run(args: Sequence[object], log: Path | None = None, faults: Faults = None, *,
        mark: Path | None = None, timeout: float = TIMEOUT, cwd: Path = REPO) -> Done:
    """``prepare ARGS`` as a subprocess in ``cwd``, to the end (never killed by the test)."""
    return Done(*spawn(args, log, faults, mark=mark, cwd=cwd).finish(timeout))


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")


def run_opening(args: Sequence[object], trace: Path, *, timeout: float = TIMEOUT
                ) -> tuple[Done, set[str]]:
    """``prepare ARGS`` to the end under ``strace`` (every process of it), and the paths it
    opened: the kernel's word on which files a run read, whatever code read them. Mark a
    test that uses it ``@needs_strace`` (CI installs strace)."""
    cmd = ["strace", "-f", "--seccomp-bpf", "-qq", "-o", str(trace),
           "-e", "trace=open,openat,openat2", *command(args)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    opened = set()
    for line in trace.read_text().splitlines():  # 123 openat(AT_FDCWD, "PATH", ...) = 3
        path = line.partition('"')[2].partition('"')[0]
        if path and " = -1 " not in line.rpartition(")")[2]:
            opened.add(path)
    return Done(done.returncode, done.stderr), opened


def opened_under(root: Path, opened: set[str]) -> list[str]:
    """The paths in ``opened`` below ``root``, relative to it, sorted."""
    prefix = str(root.resolve()) + os.sep
    return sorted(p.removeprefix(prefix) for p in opened if p.startswith(prefix))


def kill_after(proc: Proc, delay: float, sig: signal.Signals = signal.SIGKILL) -> bool:
    """Send ``sig`` after ``delay`` seconds unless the process ended first; True if sent."""
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
        return True


def wait_for(cond: Callable[[], bool], what: str, *procs: Proc, timeout: float = TIMEOUT,
             ended_ok: bool = False) -> bool:
    """Poll ``cond`` until it holds (True). If one of ``procs`` exits first: False with
    ``ended_ok`` (a run may legitimately finish first), else fail at once."""
    deadline = time.monotonic() + timeout
    while not cond():
        for p in procs:
            if p.poll() is not None:
                if ended_ok:
                    return cond()
                raise AssertionError(
                    f"waiting for {what}: pid {p.pid} exited {p.returncode}:\n{p.err()}"
                )
        if time.monotonic() > deadline:
            for p in procs:
                p.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)
    return True


def reached(proc: Proc, cond: Callable[[], bool]) -> bool:
    """``cond`` held while ``proc`` ran (True), or ``proc`` ended first (False)."""
    return wait_for(cond, "the run to get there", proc, ended_ok=True)


def paced(seconds: float) -> Fault:
    """A sleep of ``seconds`` after every committed batch (before its progress report). A
    run then needs at least its number of batches times ``seconds`` on any machine, so
    random kill delays that add up to less than that all land before its end however fast
    the machine; a slower machine only makes it longer."""
    return {"target": "prep.run.loop.ProgressReport.__call__", "when": "before",
            "action": "sleep", "seconds": seconds, "every": True}


def kill_until_done(fresh: Sequence[object], out: Path, seed: int | str, kills_wanted: int,
                    faults: Faults, *, delays: tuple[float, float] = (0.3, 0.5),
                    new_workers: bool = True) -> int:
    """A fresh run (``fresh``: its arguments) and restarts (`--out OUT --resume` alone; with
    ``new_workers``, 2, 3, 4... workers in turn, so what is left is cut anew), each killed
    after a seeded random delay (the first up to ``delays[0]`` s, each restart's 0.05 s to
    ``delays[1]``), until one finishes; at least ``kills_wanted`` kills must land, at most 4
    more are sent. Returns how many restarts found a staging directory to resume (a bound on
    the resumes the published provenance may count)."""
    rng = random.Random(seed)

    def restart(kills: int) -> list[object]:
        workers = ["--workers", str(2 + kills % 3)] if new_workers else []
        return ["--out", out, "--resume", *FAST, *workers]

    first = spawn(fresh, faults=faults)
    # `--out DIR --resume` alone needs a staging directory to take the recipe from.
    assert reached(first, lambda: read_checkpoint(out) is not None), first.finish()
    assert kill_after(first, rng.uniform(0.0, delays[0])), (
        f"the first run ended before its kill: {first.finish()}")
    assert first.finish()[0] == -signal.SIGKILL
    kills, resumed = 1, 0
    while kills < kills_wanted + 4:
        resumed += staging_of(out).is_dir()
        proc = spawn(restart(kills), faults=faults)
        killed = kill_after(proc, rng.uniform(0.05, delays[1]))
        code, err = proc.finish()
        if not killed:
            assert code == 0, err
            break
        assert code in (-signal.SIGKILL, 0), err
        kills += 1
    assert kills >= kills_wanted, "too few kills landed before the run finished"
    if not out.exists():
        done = run(restart(kills))
        assert done.returncode == 0, done.stderr
        resumed += 1
    return resumed


def gate(target: str, where: Path, *, nth: int = 1, when: str = "after") -> Fault:
    """A fault that parks the process at ``target`` until ``release(where)``."""
    return {"target": target, "action": "gate", "nth": nth, "when": when,
            "reached": str(where / "reached"), "release": str(where / "release")}


def release(where: Path) -> None:
    (where / "release").touch()


def resume_args_from(stderr: str) -> list[str]:
    """The arguments of the ``Resume with: prep prepare ...`` line an interrupted run logs."""
    m = RESUME_HINT.search(stderr)
    assert m, f"no resume command in the log:\n{stderr}"
    return shlex.split(m.group(1))


# -- what a run left ------------------------------------------------------------------------


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


def write_checkpoint(out: Path, cp: dict[str, Any]) -> None:
    """Replace the staging checkpoint with ``cp``, digest recomputed: for tests that set up
    a state prep itself could have written (an edit without the digest is refused)."""
    from prep.state.checkpoint import content_digest

    cp["digest"] = content_digest(cp)
    (staging_of(out) / "checkpoint.json").write_text(json.dumps(cp, indent=1))


def rows_committed(out: Path) -> int:
    cp = read_checkpoint(out)
    return -1 if cp is None else int(cp["progress"]["rows_visited"])


def tree(directory: Path) -> dict[str, str]:
    """SHA-256 of every file below ``directory``, by relative POSIX path."""
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def leftovers(out: Path) -> set[str]:
    """What a run left beside ``DIR`` other than DIR, DIR.previous and the lock file
    (staging, a journal, lock info, temp files)."""
    keep = {out.name, out.name + ".previous", out.name + ".lock"}
    return {p.name for p in out.parent.iterdir() if out.name in p.name and p.name not in keep}


def assert_identical(w: World, out: Path, *, beside: bool = True) -> None:
    """``out`` is published, holds exactly the reference's files, its .bin files and
    manifest are byte-identical, and (``beside``) nothing is left next to it but the lock
    file."""
    assert w.reference_dir is not None, "a World without a reference run"
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


def manifest(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "_MANIFEST.json").read_text())
    return data


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, f"unexpected traceback:\n{stderr}"


def build(w: World, out: Path, *extra: object) -> dict[str, bytes]:
    """An uninterrupted in-process run; returns its ``dir_bytes``."""
    from prep.cli.commands import run_prepare

    code = run_prepare(w.args(out, "--quiet", *extra))
    assert code == 0, f"reference build of {out} exited {code}"
    return dir_bytes(out)


@dataclass(frozen=True)
class Versions:
    """A source that changed once (a refresh's subject), and the two published versions
    built from it: ``DIR`` must always hold one of them whole."""

    args: list[str]  # the recipe, as cron types it every night
    old: Path
    new: Path
    old_bytes: dict[str, bytes]
    new_bytes: dict[str, bytes]

    def published_old(self, tmp_path: Path) -> Path:
        """``DIR`` holding the old version, as last night's run left it."""
        out = tmp_path / "out"
        shutil.copytree(self.old, out)
        return out

    def whole_version(self, out: Path) -> str:
        """Which complete version ``DIR`` holds: it must be one of the two."""
        assert out.is_dir(), "DIR is missing"
        got = dir_bytes(out)
        if got == self.old_bytes:
            return "old"
        assert got == self.new_bytes, "DIR holds neither the old nor the new version whole"
        return "new"
