"""A sealed shard's SHA-256: a plain ``sha256sum`` of the file, read back once.

SHA-256 cannot be split, so the hash of a whole shard is one serial pass over it (about
0.15 s per 200 MB here), and it can only start once the shard's count is in its header. In
the main process it would be as much CPU per byte as writing the ids. So a large shard is
hashed by a child process (the interpreter itself, with nothing imported but hashlib),
which the sealing thread waits for without using CPU; shards are sealed in parallel with
each other and with the next shard's writing, so a run's main process does no per-byte
hashing at all. A small shard is hashed in this process: starting a child would cost more.
"""

from __future__ import annotations

import subprocess
import sys
from typing import IO

from prep.fsio import hash_file

CHILD_BYTES = 32 << 20  # from this size a child hashes the file (its start: ~20 ms of CPU)
_SCRIPT = """
import hashlib, os, sys
fd, size = int(sys.argv[1]), int(sys.argv[2])
h, buffer, at = hashlib.sha256(), bytearray(1 << 20), 0
view = memoryview(buffer)
while at < size:
    got = os.preadv(fd, [view[: min(len(buffer), size - at)]], at)
    if not got:
        sys.exit(f"the file ends at byte {at:,} of {size:,}")
    h.update(view[:got])
    at += got
print(h.hexdigest())
"""


def sealed_sha256(file: IO[bytes], size: int, child_bytes: int = CHILD_BYTES) -> str:
    """The SHA-256 of the first ``size`` bytes of the open ``file`` (all of it, once
    sealed), by a child process from ``child_bytes`` on, else here. Raises ``OSError`` when
    the file holds fewer bytes, or the child fails."""
    if size >= child_bytes:
        try:
            return _in_child(file.fileno(), size)
        except FileNotFoundError:  # no interpreter to start (a frozen build): hash here
            pass
    try:
        return hash_file(file, start=0, length=size).hexdigest()
    except EOFError as e:
        name = getattr(file, "name", "the shard")
        raise OSError(f"{name}: shorter than the {size:,} bytes it was sealed with") from e


def _in_child(fd: int, size: int) -> str:
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _SCRIPT, str(fd), str(size)],
        pass_fds=(fd,), capture_output=True, text=True, check=False,
        start_new_session=True,  # a Ctrl-C meant for prep must not kill the hash it waits for
    )
    digest = done.stdout.strip()
    if done.returncode != 0 or len(digest) != 64:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        raise OSError(f"hashing a sealed shard in a child process failed: {why[0]}")
    return digest
