"""Real terminals for the tests: a command run in a tmux pane of a given size (the screen
read back with ``capture-pane``), or with its stderr on a pseudo-terminal whose window size
is set (the raw bytes kept).

tmux is the terminal a user has: it wraps long lines, honours ``\\r`` and escape sequences,
and keeps what scrolled off in its history, so a bar that floods shows as extra lines.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import struct
import subprocess
import tempfile
import termios
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TIMEOUT = 120.0
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Screen:
    """What a tmux pane shows at the end, history included, and the command's exit code."""

    code: int
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


def run_in_tmux(argv: Sequence[object], cwd: Path, cols: int = 80, rows: int = 24,
                env: dict[str, str] | None = None) -> Screen:
    """Run ``argv`` in a new detached tmux server with one ``cols`` x ``rows`` pane, wait
    for it to exit, and return the pane (with its scroll-back) and the exit code."""
    socket = f"prep-test-{uuid.uuid4().hex[:12]}"
    marks = Path(tempfile.mkdtemp(prefix=socket))
    done = marks / "rc"
    command = " ".join(shlex.quote(str(a)) for a in argv)
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    shell = f"cd {shlex.quote(str(cwd))} && {exports} {command}; echo $? > {done}.tmp && " \
            f"mv {done}.tmp {done}; sleep 600"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", str(cols), "-y", str(rows),
                    "bash", "--norc", "--noprofile", "-c", shell], check=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not done.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"{command} did not finish in tmux")
            time.sleep(0.05)
        size = subprocess.run([*tmux, "display", "-p", "#{pane_width}x#{pane_height}"],
                              check=True, capture_output=True, text=True).stdout.strip()
        assert size == f"{cols}x{rows}", f"the pane is {size}, not {cols}x{rows}"
        pane = subprocess.run([*tmux, "capture-pane", "-p", "-S", "-", "-E", "-"],
                              check=True, capture_output=True, text=True).stdout
        code = int(done.read_text())
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)
        shutil.rmtree(marks, ignore_errors=True)
    lines = pane.rstrip("\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return Screen(code, lines)


def run_with_pty_stderr(argv: Sequence[object], cwd: Path, cols: int = 80, rows: int = 24,
                        env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``argv`` with stderr on a pseudo-terminal of ``cols`` x ``rows`` (stdout to
    /dev/null); returns the exit code and every byte written to the terminal, decoded."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    chunks: list[bytes] = []
    reader = threading.Thread(target=drain, args=(master, chunks), daemon=True)
    reader.start()
    try:
        proc = subprocess.Popen([str(a) for a in argv], cwd=cwd, env={**os.environ, **(env or {})},
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=slave)
    finally:
        os.close(slave)
    try:
        code = proc.wait(TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(TIMEOUT)
        os.close(master)
    return code, b"".join(chunks).decode(errors="replace")


def drain(fd: int, chunks: list[bytes]) -> None:
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except OSError:  # EIO: every slave descriptor is closed
            return
        if not data:
            return
        chunks.append(data)


def drawn_segments(raw: str) -> list[str]:
    """The pieces of ``raw`` a terminal draws from column 0: split at every carriage return
    and line feed, escape sequences removed."""
    return [CSI.sub("", s) for s in re.split(r"\r\n|\r|\n", raw)]
