"""The entry points end with their command's exit code, whatever is left running at exit.

A stopped run once printed its last line and never exited: a pyarrow I/O thread, stopped in
the middle of a read by the finalizing interpreter, left pyarrow's thread pool waiting for
it forever in its destructor (issue 23). Whatever else may block the interpreter's own
shutdown (a non-daemon thread, an exit handler, a library's destructor), the command has
finished by then and its files are durable, so the entry points flush their output and end
the process (``prep.startup.leave``) instead of shutting the interpreter down.

Each process here starts, through ``sitecustomize``, a non-daemon thread that never ends and
an exit handler that never returns: an interpreter shutdown would wait on both forever. It
writes a marker naming its process, so the test knows the trap was set in prep's process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PREPARE, make_corpus, numbered_docs

TRAP = """
import atexit, os, threading
_never = threading.Event()
threading.Thread(target=_never.wait, name="never-ends").start()  # joined at shutdown
atexit.register(_never.wait)  # an exit handler that never returns
open(os.path.join({marks!r}, str(os.getpid())), "w").close()
"""


@pytest.fixture
def trapped(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python processes set the trap (``sitecustomize``)."""
    site, marks = tmp_path / "site", tmp_path / "marks"
    site.mkdir()
    marks.mkdir()
    (site / "sitecustomize.py").write_text(TRAP.format(marks=str(marks)))
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def run(env: dict[str, str], *args: object) -> subprocess.CompletedProcess[str]:
    """The command to its end; a process that does not end within 300 s fails the test (it
    would wait forever: the trap never lets an interpreter shutdown finish)."""
    try:
        return subprocess.run([sys.executable, *map(str, args)], env=env, capture_output=True,
                              text=True, timeout=300, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{args[:3]} did not exit: {e.stderr!r}") from None


def test_the_entry_points_exit_with_their_code_and_flushed_output(
    tmp_path: Path, trapped: dict[str, str]
) -> None:
    src = make_corpus(tmp_path / "src", [numbered_docs(40)])
    out = tmp_path / "out"
    recipe = ("--source", src, "--tokenizer", "byte", "--out", out, "--val-fraction", "0")

    made = run(trapped, PREPARE, *recipe)
    assert made.returncode == 0, made.stderr
    assert f"published {out}: train" in made.stderr  # the summary, the last line, flushed
    again = run(trapped, "-m", "prep", "prepare", *recipe)
    assert again.returncode == 1, again.stderr
    assert "already exists" in again.stderr
    verified = run(trapped, "-m", "prep", "verify", out)
    assert (verified.returncode, verified.stdout) == (0, f"{out}: OK\n")
    usage = run(trapped, PREPARE, "--out", out, "--val-fraction", "2")
    assert usage.returncode == 2 and "argument --val-fraction: 2 must be in" in usage.stderr
    assert len(list((tmp_path / "marks").iterdir())) == 4, "the trap was not set in each run"
