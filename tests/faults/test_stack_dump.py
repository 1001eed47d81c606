"""SIGUSR1 asks a run where it is: every process of the run (the main process and its
workers) writes each thread's Python stack to the run's stderr and goes on; the published
bytes are those of a run never asked. This is how a run that seems stuck, from cron or in
this suite (``harness.Proc.finish`` on a timeout), says where it is."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import harness as h
import pytest

# After the first committed batch's progress report: the workers are mid-stream, waiting
# for the main process to take their next results.
PARK = "prep.run.loop.ProgressReport.__call__"


def test_sigusr1_to_a_parked_run_dumps_every_process_then_it_finishes_identical(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    w = h.world(tmp_path_factory)
    out = tmp_path / "out"
    proc = h.spawn(w.args(out, "--workers", "2", "--batch-size", "32"),
                   faults=h.gate(PARK, tmp_path))
    h.wait_for((tmp_path / "reached").exists, "the first committed batch", proc)
    proc.stacks()
    h.wait_for(lambda: proc.err().count("Current thread") >= 5,
               "five dumps: the main process's, the zygote's, both workers' and the copier's",
               proc)
    dumps = proc.err().split("Current thread")[1:]
    assert len(dumps) == 5, proc.err()
    copier = [d for d in dumps if "copiers.py" in d]  # forked: the main process's frames below
    workers = [d for d in dumps if "in _serve" in d and d not in copier]  # the zygote's below
    zygote = [d for d in dumps if "in _zygote" in d and d not in workers + copier]
    main = [d for d in dumps if "in run_loop" in d and d not in workers + zygote + copier]
    assert (len(main), len(zygote), len(workers), len(copier)) == (1, 1, 2, 1), proc.err()
    assert proc.poll() is None, "SIGUSR1 ended the run"
    h.release(tmp_path)
    code, err = proc.finish()
    assert code == 0, err
    h.assert_identical(w, out)


def test_the_start_up_guard_dumps_stacks_on_sigusr1_and_goes_on() -> None:
    """``scripts/prepare.py`` and ``prep`` call ``guard()`` first thing; a SIGUSR1 from then
    on prints the stack and the process carries on (the default action would kill it)."""
    code = (
        "import os, signal, time\n"
        "from prep.startup import guard\n"
        "guard()\n"
        "def parked_here():\n"
        "    os.kill(os.getpid(), signal.SIGUSR1)\n"
        "    time.sleep(0.2)\n"
        "parked_here()\n"
        "print('still running')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=h.TIMEOUT, cwd=h.REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "still running\n"
    assert "in parked_here" in done.stderr, done.stderr


def test_without_the_guard_sigusr1_would_end_the_process() -> None:
    """The control for the test above: Python's default for SIGUSR1 ends the process, so
    ``still running`` there is the guard's doing."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    proc.send_signal(signal.SIGUSR1)
    assert proc.wait(timeout=h.TIMEOUT) == -signal.SIGUSR1


def test_with_stderr_closed_the_guard_writes_no_dump_into_a_file_that_took_its_number(
    tmp_path: Path,
) -> None:
    """A process started with descriptor 2 closed: the next file opened gets number 2 (here
    a stand-in for a shard). The guard must not register the dump there; SIGUSR1 then keeps
    its default action and the file holds only its own bytes."""
    shard = tmp_path / "shard.bin"
    code = (
        "import os, signal, sys\n"
        "os.close(2)\n"
        "from prep.startup import guard\n"
        "guard()\n"
        f"fd = os.open({str(shard)!r}, os.O_WRONLY | os.O_CREAT)\n"
        "assert fd == 2, fd\n"
        "os.write(fd, b'ids')\n"
        "os.kill(os.getpid(), signal.SIGUSR1)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=h.TIMEOUT,
                          cwd=h.REPO)
    assert done.returncode == -signal.SIGUSR1, done
    assert shard.read_bytes() == b"ids"
