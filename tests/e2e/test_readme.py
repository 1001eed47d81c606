"""The README's quick start, run as written: its prepare command prints the summary line the
README shows (same counts, same shape; only the path, time and rate are this run's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from markdown import code_block

README = REPO / "README.md"
VENV_BIN = Path(sys.executable).parent


def quick_start_command() -> str:
    """From the quick start's first command: the part from ``python scripts/prepare.py`` on
    (what comes before it creates and activates the virtual environment)."""
    first = code_block(README, "Quick start", "bash").split("\n# 2.")[0]
    m = re.search(r"python scripts/prepare\.py [^\n]*", first)
    assert m, first
    return m[0]


def readme_summary() -> str:
    """The summary line the README shows, in the code block under the quick start."""
    text = README.read_text(encoding="utf-8")
    lines = re.findall(r"^published \S+: train .*$", text, re.M)
    assert len(lines) == 1, lines
    return lines[0]


def test_quick_start_prints_the_summary_the_readme_shows(tmp_path: Path) -> None:
    command = quick_start_command()
    (tmp_path / "scripts").symlink_to(REPO / "scripts")
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith(": OK"), r.stdout  # the quick start ends with verify

    shown = readme_summary()
    path = shown.split(" ", 2)[1].rstrip(":")
    out = re.search(r"--out (\S+)", command)
    assert out and path.endswith("/" + out[1]), (path, command)
    # the README's line with this run's absolute path, time and rate
    counts, timing = shown.replace(path, str(tmp_path / out[1]), 1).rsplit("; ", 1)
    rate = r"[\d.,]+ s, [\d,]+ tokens/s"
    assert re.fullmatch(rate, timing), timing
    pattern = re.escape(counts) + "; " + rate
    printed = [line for line in r.stderr.splitlines() if line.startswith("published ")]
    assert len(printed) == 1, r.stderr
    assert re.fullmatch(pattern, printed[0]), f"README: {shown}\nprinted: {printed[0]}"
