"""An entry point's process starts no OpenBLAS thread (``prep.startup.no_blas_threads``, part
of ``guard``): numpy would start one per core beside the importing thread, each spinning a
tenth of a CPU second, for matrix products prep never computes. A thread count the user set
stays theirs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# What an entry point does first, then what the run does next: numpy's import. Prints the
# variable and how many threads the process has.
PROBE = """
import os
from prep.startup import guard
guard()
import numpy
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


def probe(**env: str) -> tuple[str, int]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, check=True,
                         capture_output=True, text=True).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads counted in /proc")
def test_an_entry_point_imports_numpy_without_blas_threads() -> None:
    assert probe() == ("1", 1)


@pytest.mark.parametrize("variable", ["OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                      "OMP_NUM_THREADS"])
def test_a_thread_count_the_user_set_is_kept(variable: str) -> None:
    value, _ = probe(**{variable: "3"})
    assert value == ("3" if variable == "OPENBLAS_NUM_THREADS" else "None")
