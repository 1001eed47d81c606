"""An entry point's process as ``prep.startup`` sets it up: no OpenBLAS thread
(``no_blas_threads``, part of ``guard``): numpy would start one per core beside the
importing thread, each spinning a tenth of a CPU second, for matrix products prep never
computes; a thread count the user set stays theirs. The collector is held off during the
imports and runs again after them (``imported``), with what they created frozen."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from prep.startup import BLAS_THREADS

# What an entry point does first, then what the run does next: numpy's import. Prints the
# variable and how many threads the process has.
PROBE = """
import gc, os
from prep.startup import guard, imported
guard()
off = not gc.isenabled()
from prep.cli.commands import run_prepare
imported()
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")),
      off and gc.isenabled() and gc.get_freeze_count() > 10_000)
"""


def probe(**env: str) -> tuple[str, int, str]:
    clean = {k: v for k, v in os.environ.items() if k not in BLAS_THREADS}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, check=True,
                         capture_output=True, text=True).stdout.split()
    return out[0], int(out[1]), out[2]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads counted in /proc")
def test_an_entry_point_imports_without_blas_threads_or_the_collector() -> None:
    assert probe() == ("1", 1, "True")


@pytest.mark.parametrize("variable", ["OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                      "OMP_NUM_THREADS"])
def test_a_thread_count_the_user_set_is_kept(variable: str) -> None:
    value, _, _ = probe(**{variable: "3"})
    assert value == ("3" if variable == "OPENBLAS_NUM_THREADS" else "None")
