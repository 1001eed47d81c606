"""Durable file-system primitives: atomic replace and directory fsync.

Atomic means a reader (or a process restarted after a crash) sees either the old content or
the new, never a mix or a partial file.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import os
import sys
import tempfile
from pathlib import Path

from prep.errors import OutputError


def fsync_dir(path: Path) -> None:
    """fsync a directory so that renames and creations inside it are durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_sha256(path: Path) -> str:
    """SHA-256 of a whole file, read in chunks (bounded memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same directory, fsync,
    ``os.replace``, fsync the directory. The temp file is removed on failure."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; these are ordinary output files
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name or "libc.so.6", use_errno=True)
    except OSError:
        return None
    return lib if hasattr(lib, "renameat2") else None


def rename_noreplace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``, failing with ``OutputError`` if ``dst`` exists.

    Plain ``rename(2)`` silently replaces an empty directory; on Linux this uses
    ``renameat2(RENAME_NOREPLACE)``. Elsewhere it checks first, which is safe only while
    the caller holds the output's lock (it always does).
    """
    lib = _libc()
    if lib is not None:
        rc = lib.renameat2(
            _AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE
        )
        if rc == 0:
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise OutputError(f"{dst} appeared while publishing; it was not replaced", path=dst)
        if err not in (errno.EINVAL, errno.ENOSYS):  # filesystem without the flag
            raise OSError(err, os.strerror(err), str(src), None, str(dst))
    if dst.exists():
        raise OutputError(f"{dst} appeared while publishing; it was not replaced", path=dst)
    os.rename(src, dst)


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths (``renameat2(RENAME_EXCHANGE)``): at no instant
    is either name missing. Returns False where the platform or filesystem cannot (the
    caller then falls back to two renames)."""
    lib = _libc()
    if lib is None:
        return False
    rc = lib.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))
