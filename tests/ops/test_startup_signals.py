"""SIGTERM/SIGINT from the first instants of a ``prepare`` process, during its heavy imports:
exit 75 (stopped; rerunning is safe), never death by the signal (143/130)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PREPARE
from harness import World, make_world, no_traceback, ops_corpus

DELAYS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.8)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("startworld"), ops_corpus(1, 200))


def importing_numpy(pid: int) -> bool:
    """Whether the process has begun loading numpy's extension: prep's own code runs."""
    try:
        return "_multiarray_umath" in Path(f"/proc/{pid}/maps").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True  # already gone: send anyway, the exit code tells


@pytest.mark.parametrize("entry", ["scripts/prepare.py", "prep prepare"])
def test_a_signal_during_start_up_exits_75(world: World, tmp_path: Path, entry: str) -> None:
    """At each delay after the start (but not before the interpreter has handed over to
    prep: nothing can catch a signal earlier), send SIGTERM or SIGINT in turn."""
    prog = [sys.executable, str(PREPARE)]
    if entry == "prep prepare":
        prog = [str(Path(sys.executable).with_name("prep")), "prepare"]
    codes = {}
    for i, delay in enumerate(DELAYS):
        sig = (signal.SIGTERM, signal.SIGINT)[i % 2]
        out = tmp_path / f"out-{i}"
        proc = subprocess.Popen(
            [*prog, *world.args(out)],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        t0 = time.monotonic()
        while time.monotonic() - t0 < delay or not importing_numpy(proc.pid):
            if proc.poll() is not None:
                break
            time.sleep(0.002)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        codes[delay] = (sig.name, proc.returncode)
        assert proc.returncode in (75, 0), f"{sig.name} at {delay} s: {proc.returncode}\n{err}"
        no_traceback(err)
        if proc.returncode == 75:
            assert "prep: stopped:" in err, err
            assert "Rerun the same command" in err or "Resume with" in err, err
    assert any(code == 75 for _, code in codes.values()), codes


@pytest.mark.parametrize("entry", ["scripts/prepare.py", "prep prepare"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_after_publishing_exits_0(
    world: World, tmp_path: Path, sig: signal.Signals, entry: str
) -> None:
    """A signal in the last instants, after the summary line (the dataset is published and
    the interpreter is shutting down), must not turn a finished job into death by the signal:
    Python resets its handlers to the default while exiting, so the CLI ignores both first."""
    prog = [sys.executable, str(PREPARE)]
    if entry == "prep prepare":
        prog = [str(Path(sys.executable).with_name("prep")), "prepare"]
    for i in range(5):
        out = tmp_path / f"out-{i}"
        proc = subprocess.Popen(
            [*prog, *world.args(out)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("published "):  # the summary: the last thing it says
                proc.send_signal(sig)
                break
        rest = proc.stderr.read()
        proc.wait(timeout=60)
        err = "".join(lines) + rest
        assert proc.returncode == 0, f"{sig.name} after publishing: {proc.returncode}\n{err}"
        assert out.is_dir(), err
        no_traceback(err)
