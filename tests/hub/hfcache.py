"""A Hugging Face cache filled the way users fill it: the real ``hf download`` command of the
installed huggingface_hub, run against the loopback Hub, then read with the Hub stopped or
with ``HF_HUB_OFFLINE=1``."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .fakehub import FakeHub
from .helpers import hub_env


def hf_executable() -> str:
    """The ``hf`` command installed beside this interpreter (as pip installs it)."""
    beside = Path(sys.executable).parent / "hf"
    found = str(beside) if beside.exists() else shutil.which("hf")
    if found is None:
        raise RuntimeError("the hf command of huggingface_hub is not installed")
    return found


def hf_download(hub: FakeHub, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``hf download ARGS`` against ``hub`` with ``HF_HOME=home``; raises on failure."""
    r = subprocess.run(
        [hf_executable(), "download", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=hub_env(hub, home, HF_HUB_DISABLE_PROGRESS_BARS="1"),
        check=False,
    )
    if r.returncode != 0:
        raise AssertionError(f"hf download {' '.join(args)} failed: {r.stderr[-2000:]}")
    return r


def suggested_command(message: str) -> list[str]:
    """The ``hf download ...`` command an error message tells the user to run."""
    m = re.search(r"run: (hf download .*?) ;", message)
    if m is None:
        raise AssertionError(f"no hf download command in: {message}")
    return shlex.split(m.group(1))


def run_suggested(hub: FakeHub, home: Path, message: str) -> None:
    """Run the command from ``message`` exactly as printed (``hf`` is this install's)."""
    argv = suggested_command(message)
    assert argv[:2] == ["hf", "download"]
    hf_download(hub, home, *argv[2:])
