"""SIGTERM/SIGINT at any instant of every entry point that writes: exit 75 (stopped, nothing
lost, rerun is safe), or 0 once published; never death by the signal (143/130), never a
traceback, never a request dropped (a run that went on to publish).

What the offsets are measured from. A signal that lands before the interpreter runs the
entry point's first statement cannot be handled by anyone: only the kernel's default action
exists then. How long that takes from the fork depends on the machine's load (~20 ms idle,
several times that on a loaded CI machine), so an offset from the fork would test the
machine, and flake. The offsets are measured instead from the first instant anything can
handle a signal: the child's own evidence that its handlers are installed, its ``SigCgt``
mask in ``/proc/PID/status`` holding both SIGTERM and SIGINT. Python catches SIGINT by
itself at start (unless it is inherited ignored), but SIGTERM only once prep's start-up
guard runs, and ``test_nothing_of_prep_runs_before_the_guard`` shows that the guard is the
entry point's first statement, with nothing but the standard library's signal module loaded
before it. So "30 ms" means 30 ms into prep's own start-up, on any machine.

Each timed case holds ``DIR.lock`` while it signals (the run waits for it, ``--wait-lock``),
so the run cannot publish before the signal whatever the machine's speed: 75 is the only
right answer, and a 0 would be a request dropped. The summary-line case is the other end:
the signal follows the line that says the dataset is published, and 0 is the only right
answer. ``SIGINT inherited as ignored`` starts the child as a non-interactive shell starts a
background job (``trap "" INT``, then exec), with SIGINT at ``SIG_IGN``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import PREPARE, numbered_docs, write_parquet
from filelock import FileLock
from harness import TIMEOUT, no_traceback

PREP = str(Path(sys.executable).with_name("prep"))
# The command that starts each entry point, and its command word.
ENTRIES: dict[str, tuple[str, ...]] = {
    "scripts/prepare.py": (sys.executable, str(PREPARE)),
    "prep prepare": (PREP, "prepare"),
    "python -m prep prepare": (sys.executable, "-m", "prep", "prepare"),
    "prep merge": (PREP, "merge"),
    "prep train-tokenizer": (PREP, "train-tokenizer"),
}
# How each entry point starts, up to its command word (the import order before the guard
# does not depend on the arguments).
LAUNCHERS = {
    "scripts/prepare.py": (sys.executable, "-X", "importtime", str(PREPARE)),
    "prep": (sys.executable, "-X", "importtime", PREP),
    "python -m prep": (sys.executable, "-X", "importtime", "-m", "prep"),
}
READ_ONLY = {"verify", "inspect"}  # the guard's "stopped, nothing was changed" is their stop
OFFSETS = (0.03, 0.05, 0.08, 0.12, 0.2)
CASES = [*OFFSETS, "lock-wait", "summary"]
IGNORED_INT = ("sh", "-c", 'trap "" INT; exec "$@"', "sh")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small corpus, and a two-part dataset ``parts`` whose ``parts.parts`` the merge
    cases copy (as hard links, each to a name of its own)."""
    from prep.cli.commands import main

    root = tmp_path_factory.mktemp("signals")
    for i in range(2):
        write_parquet(root / "src" / f"f{i}.parquet", numbered_docs(60, 60 * i))
    code = main(["prepare", *recipe(root), "--out", str(root / "parts"), "--parts", "2",
                 "--quiet"])
    assert code == 0
    return root


def recipe(root: Path) -> list[str]:
    """The byte tokenizer: what is tested is the command's start and end, not tokenizing."""
    return ["--source", str(root / "src"), "--tokenizer", "byte"]


def command(entry: str, inputs: Path, out: Path) -> list[str]:
    """The full command line of ``entry`` writing ``out``; it waits for a held lock."""
    if entry == "prep merge":
        shutil.copytree(inputs / "parts.parts", out.with_name(out.name + ".parts"),
                        copy_function=os.link)
        return [*ENTRIES[entry], str(out), "--wait-lock", "600"]
    if entry == "prep train-tokenizer":
        return [*ENTRIES[entry], "--source", str(inputs / "src"), "--vocab-size", "300",
                "--out", str(out), "--wait-lock", "600"]
    return [*ENTRIES[entry], *recipe(inputs), "--out", str(out), "--wait-lock", "600"]


def guarded(pid: int) -> bool:
    """Whether the process catches both SIGTERM and SIGINT (``SigCgt``): prep's guard runs."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            mask = int(line.split()[1], 16)
            return all(mask >> (s - 1) & 1 for s in (signal.SIGTERM, signal.SIGINT))
    return False


def wait_guarded(proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not guarded(proc.pid):
        assert proc.poll() is None, f"ended ({proc.returncode}) before its guard was seen"
        assert time.monotonic() < deadline, "the guard was never installed"
        time.sleep(0.001)


def launch(argv: Sequence[str], ignored_int: bool, err: Path) -> subprocess.Popen[str]:
    prefix = IGNORED_INT if ignored_int else ()
    with err.open("w") as f:
        return subprocess.Popen([*prefix, *argv], stdout=subprocess.DEVNULL, stderr=f,
                                text=True)


@pytest.mark.parametrize("ignored_int", [False, True], ids=["", "SIGINT-inherited-ignored"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c * 1000:.0f}ms" if c in OFFSETS else c)
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_a_signal_at_any_instant(
    inputs: Path, tmp_path: Path, entry: str, case: float | str, ignored_int: bool
) -> None:
    k = CASES.index(case)
    sig = signal.SIGINT if ignored_int or k % 2 else signal.SIGTERM
    out = tmp_path / "out"
    argv = command(entry, inputs, out)
    if case == "summary":
        signal_at_summary(argv, out, sig, ignored_int)
        return
    err_path = tmp_path / "stderr"
    with FileLock(f"{out}.lock"):  # the run cannot publish before the signal
        proc = launch(argv, ignored_int, err_path)
        if case == "lock-wait":  # the command has taken the signals over, and waits
            wait_for_line(err_path, proc, "waiting for ")
        else:
            wait_guarded(proc)
            time.sleep(float(case))
        proc.send_signal(sig)
        code = proc.wait(timeout=TIMEOUT)
    err = err_path.read_text()
    assert code == 75, f"{sig.name} at {case}: exit {code}\n{err}"
    assert "prep: stopped:" in err and "Rerun the same command" in err, err
    no_traceback(err)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out"))
    assert left == ["out.lock", *(["out.parts"] if entry == "prep merge" else [])], left


def wait_for_line(err: Path, proc: subprocess.Popen[str], text: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while text not in err.read_text():
        assert proc.poll() is None, f"ended ({proc.returncode}) before saying {text!r}"
        assert time.monotonic() < deadline, f"never said {text!r}"
        time.sleep(0.01)


def signal_at_summary(argv: list[str], out: Path, sig: signal.Signals, ignored_int: bool
                      ) -> None:
    """The signal right after the summary line: the dataset is published, the process is on
    its way out (Python resets its handlers while exiting): 0, not death by the signal."""
    proc = subprocess.Popen([*(IGNORED_INT if ignored_int else ()), *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("published "):
            proc.send_signal(sig)
            break
    err = "".join(lines) + proc.stderr.read()
    code = proc.wait(timeout=TIMEOUT)
    assert code == 0, f"{sig.name} after the summary line: exit {code}\n{err}"
    assert out.is_dir() and not out.with_name(out.name + ".incomplete").exists(), err
    no_traceback(err)


def test_every_command_that_writes_is_covered() -> None:
    """A new command that writes (``train-tokenizer``) goes through the same guard and
    ``cli.STOP``, and gets its cases here: add it to ``ENTRIES``."""
    from prep.cli.commands import _COMMANDS

    covered = {e.split()[-1] for e in ENTRIES}
    assert set(_COMMANDS) - READ_ONLY <= covered


def test_the_launcher_really_starts_with_sigint_ignored() -> None:
    """The premise of the ``SIGINT-inherited-ignored`` cases, with a bare interpreter."""
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    r = subprocess.run([*IGNORED_INT, sys.executable, "-c", probe], capture_output=True,
                       text=True, check=True)
    assert r.stdout.strip() == "True"


def imported_before_guard(argv: Sequence[str]) -> list[str]:
    """The modules a process imports up to and including ``prep.startup``, in order (the
    guard is the statement right after that import), from ``-X importtime``; all of them
    when it never imports it."""
    r = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=TIMEOUT,
                       check=False)
    names = [line.split("|")[-1].strip() for line in r.stderr.splitlines()
             if line.startswith("import time:")][1:]  # the first is the column header
    return names[: names.index("prep.startup") + 1] if "prep.startup" in names else names


@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_nothing_of_prep_runs_before_the_guard(launcher: str) -> None:
    """Before the guard, only the interpreter's own start, what the launcher itself needs
    (the console script's ``re``, ``-m``'s ``runpy``), and ``prep/__init__.py`` and
    ``prep.startup``, which import the signal handling and the built-in ``gc`` (the guard
    holds the collector off during the imports) and nothing else."""
    reference = set(imported_before_guard(
        [sys.executable, "-X", "importtime", "-c",
         "import __future__, faulthandler, gc, re, runpy, signal"]))
    before = imported_before_guard(LAUNCHERS[launcher])
    assert "prep.startup" in before, before
    extra = [m for m in before if m not in reference]
    # -m runs prep/__main__.py as __main__; the console script imports it as prep.__main__
    own = {"prep", "prep.startup"} | ({"prep.__main__"} if launcher == "prep" else set())
    assert sorted(extra) == sorted(own), extra


def test_the_guard_exits_with_the_stopped_code() -> None:
    """``prep.startup`` cannot import ``prep.errors`` (it must run before anything heavy), so
    it spells 75 itself: the same code."""
    from prep.errors import EXIT_TEMPFAIL
    from prep.startup import EXIT_STOPPED

    assert EXIT_STOPPED == EXIT_TEMPFAIL
