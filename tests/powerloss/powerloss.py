"""The power-loss harness: record a run on the FUSE recorder, build its crash states
(:mod:`crashstates`), resume each with the same command plus ``--resume``, and judge it.

The oracles, for every distinct state of every recorded run under each model:

- the state holds no dataset at ``--out``, or the one the run publishes (for a refresh:
  always the old version or the new one, whole);
- the resume exits 0 and ``--out`` holds, byte for byte, the dataset an uninterrupted run
  publishes; or it exits non-zero (a *refusal*) and publishes nothing;
- every state after the run's last operation (it had exited 0) holds the dataset, with no
  resume (a dataset *lost after exit 0* otherwise).

A scenario's ``command(volume)`` is its argv below the path where the recorded filesystem
(*the volume*) is seen: the recorder's mount, or a crash state written out. With
``mount_out`` the volume is ``--out`` itself (a mount point, as ``prep.outputs.mount``
publishes into); a crash state is then written into a tmpfs mounted there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import crashstates as cs
from conftest import dir_bytes

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "recorder.py"
PREPARE = HERE.parent.parent / "scripts" / "prepare.py"
MOUNT_WAIT = 30.0
RUN_TIMEOUT = 300.0

Tree = dict[str, bytes]


def fuse_ready() -> str | None:
    """Why the FUSE recorder cannot run here (None when it can)."""
    if not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
        return "needs /dev/fuse and fusermount3 (Debian fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as e:
        return f"needs mfusepy and libfuse3 ({e})"
    return None


def published(out: Path) -> Tree | None:
    """The dataset at ``out`` (its token files and manifest), or None without a manifest."""
    if not (out / "_MANIFEST.json").is_file():
        return None
    return dir_bytes(out)


@dataclass
class Scenario:
    """One recorded run: its command, what it publishes, and the volume it starts from."""

    name: str
    command: Callable[[Path], list[str]]
    expected: Tree
    out: str = "a/b/out"  # --out below the volume ("" with mount_out)
    before: Tree | None = None  # a refresh: the version --out may keep
    resume: tuple[str, ...] = ("--resume",)
    mount_out: bool = False
    setup: Callable[[Path], None] | None = None  # fills the volume before the recording

    def out_in(self, volume: Path) -> Path:
        return volume / self.out if self.out else volume


@contextlib.contextmanager
def mounted(backing: Path, mount: Path, log: Path) -> Iterator[None]:
    """The recorder mounted at ``mount`` over ``backing`` for the block; ``log`` written
    when it is unmounted."""
    mount.mkdir(parents=True, exist_ok=True)
    err = log.with_suffix(".err")
    with open(err, "wb") as f:
        proc = subprocess.Popen([sys.executable, str(RECORDER), str(backing), str(mount),
                                 str(log)], stderr=f, stdout=f)
    deadline = time.monotonic() + MOUNT_WAIT
    while not os.path.ismount(mount):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the recorder did not mount:\n{err.read_text()}")
        time.sleep(0.01)
    try:
        yield
    finally:
        subprocess.run(["fusermount3", "-u", str(mount)], check=False)
        proc.wait(MOUNT_WAIT)
    assert proc.returncode == 0 and log.exists(), f"the recorder failed:\n{err.read_text()}"


def argv_of(command: Sequence[str]) -> list[str]:
    """A command (``prepare ARGS``, ``merge DIR``, or a script's path and its arguments) as
    a real process's argv."""
    if command[0].endswith(".py"):
        return [sys.executable, *command]
    if command[0] == "prepare":
        return [sys.executable, str(PREPARE), *command[1:]]
    return [sys.executable, "-m", "prep", *command]


class Runner:
    """Runs commands in fresh children of :mod:`forkserver` (prep imported once)."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, str(HERE / "forkserver.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=PREPARE.parent.parent)

    def run(self, command: Sequence[str]) -> tuple[int, str]:
        """Exit code and stderr of ``command`` (a script in a process of its own)."""
        err = self.logs / "run.err"
        if command[0].endswith(".py"):
            done = subprocess.run(argv_of(command), capture_output=True, text=True,
                                  timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
            return done.returncode, done.stderr
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"argv": list(command), "stderr": str(err)}) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, "the fork server died"
        return int(json.loads(reply)), err.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(RUN_TIMEOUT)


def record(sc: Scenario, work: Path) -> dict[str, object]:
    """Run the scenario's command on the recorder; returns the log. The run must exit 0
    and publish the expected dataset."""
    backing, log = work / "backing", work / "log.pickle"
    backing.mkdir(parents=True)
    if sc.setup is not None:
        sc.setup(backing)
    volume = work / "mnt" / "out" if sc.mount_out else work / "mnt"
    with mounted(backing, volume, log):
        done = subprocess.run(argv_of(sc.command(volume)), capture_output=True, text=True,
                              timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
        code, err = done.returncode, done.stderr
        assert code == 0, f"{sc.name}: the recorded run exited {code}:\n{err}"
        assert published(sc.out_in(volume)) == sc.expected, f"{sc.name}: wrong dataset"
    return cs.load(log)


@dataclass
class Outcome:
    """What one state gave: ``verdict`` is ``ok``, ``refused`` or a failure's kind."""

    verdict: str
    code: int | None = None
    detail: str = ""


@dataclass
class Report:
    """Per model: distinct states, and how each ended."""

    scenario: str
    ops: int
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def line(self) -> str:
        parts = []
        for model, c in self.counts.items():
            total = sum(c.values()) - c["final"]
            parts.append(f"{model}: {total} states, " + ", ".join(
                f"{k} {v}" for k, v in sorted(c.items()) if k != "final"
            ) + f" (after exit: {c['final']} states)")
        return f"{self.scenario}: {self.ops} operations; " + "; ".join(parts)


@contextlib.contextmanager
def tmpfs(where: Path) -> Iterator[Path]:
    """A tmpfs mounted at ``where`` for the block (its fsyncs cost nothing)."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m", "prep-state", str(where)],
                   check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@contextlib.contextmanager
def as_volume(sc: Scenario, state_dir: Path) -> Iterator[Path]:
    """``state_dir`` as the volume: with ``mount_out`` a tmpfs of its own mounted there
    (another device: ``os.path.ismount`` does not see a bind mount within one filesystem)."""
    if not sc.mount_out:
        yield state_dir
        return
    with tmpfs(state_dir):
        yield state_dir


def judge(sc: Scenario, replay: cs.Replay, state: cs.State, scratch: Path,
          runner: Runner | None) -> Outcome:
    """Write ``state`` out and apply the oracles (without a runner: only to what it holds,
    without a resume)."""
    for entry in scratch.iterdir():  # the last state, and the lock beside a mount-point out
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    volume = scratch / "out" if sc.mount_out else scratch / "vol"
    volume.mkdir()
    with as_volume(sc, volume):
        cs.materialize(replay, state, volume)
        out = sc.out_in(volume)
        held = published(out)
        if held is not None and held != sc.expected and held != sc.before:
            return Outcome("wrong data in the state", detail=", ".join(sorted(held)))
        if held is None and sc.before is not None:
            return Outcome("no version at --out during a refresh")
        if runner is None:
            return Outcome("ok" if held == sc.expected else "lost after exit 0")
        code, err = runner.run([*sc.command(volume), *sc.resume])
        after = published(out)
    last = err.strip().splitlines()[-1:] if err.strip() else [""]
    if "Traceback" in err:
        return Outcome("traceback", code, err[-2000:])
    if code == 0:
        return Outcome("ok" if after == sc.expected else "wrong data after exit 0", code, last[0])
    if after is not None and after != sc.before:
        return Outcome("published on a failure", code, last[0])
    return Outcome("refused", code, err[-1500:])


Pick = Callable[[list[tuple[object, ...]], list[cs.State]], list[cs.State]]


def check(sc: Scenario, log: dict[str, object], scratch: Path, runner: Runner,
          models: Sequence[str] = cs.MODELS, pick: Pick | None = None) -> Report:
    """Every distinct state of the recorded run under each model, judged (``pick``: the
    subset to resume, default all); the same state is resumed once across models. The
    states are written to a tmpfs at ``scratch``: what they are was decided by the model,
    and their resumes' fsyncs need cost nothing."""
    with tmpfs(scratch):
        return _check(sc, log, scratch, runner, models, pick)


def _check(sc: Scenario, log: dict[str, object], scratch: Path, runner: Runner,
           models: Sequence[str], pick: Pick | None) -> Report:
    report = Report(sc.name, len(log["ops"]))  # type: ignore[arg-type]
    seen: dict[cs.Key, Outcome] = {}
    for model in models:
        replay, states, final = cs.explore(log, model)
        counts: Counter[str] = Counter()
        for state in (pick(log["ops"], states) if pick else states):  # type: ignore[arg-type]
            if state.key not in seen:
                seen[state.key] = judge(sc, replay, state, scratch, runner)
            outcome = seen[state.key]
            counts[outcome.verdict] += 1
            if outcome.verdict != "ok":
                report.failures.append(
                    f"{sc.name} [{model}] after operation {state.point} "
                    f"({_describe(log, state.point)}; {state.variant}): {outcome.verdict}, "
                    f"exit {outcome.code}: {outcome.detail}"
                )
        for state in final:
            outcome = judge(sc, replay, state, scratch, None)
            counts["final"] += 1
            if outcome.verdict != "ok":
                report.failures.append(
                    f"{sc.name} [{model}] after the run exited ({state.variant}): "
                    f"{outcome.verdict}"
                )
        report.counts[model] = counts
    return report


def _describe(log: dict[str, object], point: int) -> str:
    if point == 0:
        return "before the first"
    op = log["ops"][point - 1]  # type: ignore[index]
    shown = (*op[:3], f"{len(op[3])} bytes") if op[0] == "write" else op
    return " ".join(map(str, shown))
