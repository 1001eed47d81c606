"""Durable file-system primitives: atomic replace, directory fsync, file hashing; one
spelling per path.

Atomic means a reader (or a process restarted after a crash) sees either the old content or
the new, never a mix or a partial file. The temp-file name of an atomic write
(``.NAME.XXXX.tmp`` beside ``NAME``) is defined here only: :func:`stray_temps` finds those
that a crash left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Protocol

from prep.errors import OutputError

TEMP_SUFFIX = ".tmp"
# One reused buffer per hash: a fresh 16 MiB ``bytes`` per read (as before) took glibc's
# dynamic mmap threshold up with it, after which the freed chunks stayed in the reading
# thread's malloc arena: ~32 MiB more in a run's main process once its sealing threads had
# hashed a few shards (benchmarks/memory.py).
_HASH_CHUNK = 1 << 20


class Hasher(Protocol):
    """What :func:`hash_file` feeds: any ``hashlib`` object."""

    def update(self, data: bytes | memoryview, /) -> None: ...

    def hexdigest(self) -> str: ...


def canonical_path(path: str) -> str:
    """One spelling per file or directory: absolute, with symlinks, ``.``, ``..`` and
    trailing slashes resolved; a file keeps its own name even when it is a symlink (a file
    in the Hugging Face cache links to a blob named by its hash)."""
    if os.path.isdir(path):
        return os.path.realpath(path)
    head, tail = os.path.split(path)
    return os.path.join(os.path.realpath(head or "."), tail)


def cache_home() -> Path:
    """Where prep keeps what it may lose: ``$XDG_CACHE_HOME/prep`` (default ``~/.cache``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "prep"


def fsync_dir(path: Path) -> None:
    """fsync a directory so that renames and creations inside it are durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: Path) -> None:
    """``mkdir -p`` whose result survives a power cut: each directory it creates is
    fsynced into its parent, so a dataset later renamed into ``path`` cannot vanish with a
    parent whose own entry never reached the disk. A directory that exists is left as it
    is (a concurrent creator's included)."""
    missing = []
    at = path
    while not at.exists():
        missing.append(at)
        at = at.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another run's meanwhile: harmless
            directory.mkdir()
        fsync_dir(directory.parent)


def tree_files(directory: Path) -> list[str]:
    """The files below ``directory``, each named by its path relative to it (``a/b``),
    sorted; an unreadable subdirectory is passed over."""
    found = []
    for root, _, files in os.walk(directory):
        below = Path(root).relative_to(directory)
        found += [(below / f).as_posix() for f in files]
    return sorted(found)


def make_parents(root: Path, names: list[str]) -> list[Path]:
    """Make (durably: :func:`make_dirs`) the folders below ``root`` that ``names``
    (relative paths) go in; returns them, deepest first (for :func:`fsync_all`)."""
    folders = folders_of(root, names)
    for folder in folders:
        make_dirs(folder)
    return folders


def fsync_all(directories: list[Path]) -> None:
    """fsync each of ``directories``, in order."""
    for directory in directories:
        fsync_dir(directory)


def fsync_tree(directory: Path) -> None:
    """fsync every directory below ``directory``, deepest first, then ``directory``: what
    was created or renamed anywhere inside it is durable."""
    below = [Path(root) for root, _, _ in os.walk(directory)][1:]
    fsync_all(sorted(below, key=lambda p: -len(p.parts)))
    fsync_dir(directory)


def folders_of(root: Path, names: list[str]) -> list[Path]:
    """The folders below ``root`` that ``names`` (relative paths) are in, deepest first."""
    return sorted({(root / n).parent for n in names} - {root}, key=lambda p: -len(p.parts))


def remove_emptied(root: Path, names: list[str]) -> None:
    """Remove the folders below ``root`` that ``names`` were in, each that is now empty
    (its removal fsynced into its parent); the others stay."""
    for folder in folders_of(root, names):
        with contextlib.suppress(OSError):  # not empty (or gone): it stays as it is
            folder.rmdir()
            fsync_dir(folder.parent)


def is_mount_point(path: Path) -> bool:
    """Whether ``path`` is a mount point (not a symlink to one): ``os.path.ismount``, which
    compares devices and inodes, and on Linux also the kernel's own list
    (``/proc/self/mountinfo``), which alone sees a bind mount within one filesystem (same
    device as its parent: ``ismount`` says no, yet no rename can replace it)."""
    if os.path.ismount(path):
        return True
    if path.is_symlink() or not path.is_dir():
        return False
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            table = f.read()
    except OSError:  # not Linux, or no /proc: ismount's answer is all there is
        return False
    where = os.fsencode(os.path.realpath(path))
    for line in table.splitlines():
        fields = line.split(b" ")
        if len(fields) > 4 and _unescape_mount(fields[4]) == where:
            return True
    return False


def _unescape_mount(field: bytes) -> bytes:
    """A mountinfo path field: space, tab, newline and backslash are written in octal."""
    for code in (b"\\040", b"\\011", b"\\012", b"\\134"):
        field = field.replace(code, bytes([int(code[1:], 8)]))
    return field


def hash_file(
    path: Path | IO[bytes],
    hasher: Hasher | None = None,
    *,
    start: int = 0,
    length: int | None = None,
) -> Hasher:
    """Feed ``hasher`` (default a new SHA-256) the bytes of ``path`` (a path, or a file
    open for reading) from ``start``, all of them or exactly ``length``, in chunks (bounded
    memory); returns it. The one read loop every file hash in prep goes through. Raises
    ``EOFError`` when the file holds fewer than ``length`` bytes after ``start``."""
    h: Hasher = hasher if hasher is not None else hashlib.sha256()
    buffer = memoryview(bytearray(_HASH_CHUNK))
    with contextlib.ExitStack() as stack:
        f = stack.enter_context(open(path, "rb")) if isinstance(path, Path) else path
        f.seek(start)
        left = length
        while left is None or left > 0:
            want = _HASH_CHUNK if left is None else min(left, _HASH_CHUNK)
            got = f.readinto(buffer[:want])  # type: ignore[attr-defined]
            if not got:
                if left:
                    raise EOFError(f"{path}: {left:,} bytes short")
                break
            h.update(buffer[:got])
            if left is not None:
                left -= got
    return h


def pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    """Write all of ``data`` at ``offset`` of the open file ``fd`` (``os.pwrite`` may write
    less than it is given)."""
    while data:
        done = os.pwrite(fd, data, offset)
        data, offset = data[done:], offset + done


def file_sha256(path: Path) -> str:
    """SHA-256 of a whole file (hex)."""
    return hash_file(path).hexdigest()


def temp_prefix(name: str) -> str:
    """The prefix of an atomic write's temp file for the file ``name``."""
    return f".{name}."


def stray_temps(directory: Path, name: str = "*") -> list[Path]:
    """Temp files of interrupted atomic writes in ``directory`` (of ``name``, or of any
    file), sorted. Nothing that is committed ever has such a name."""
    return sorted(directory.glob(f"{temp_prefix(name)}*{TEMP_SUFFIX}"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same directory, fsync,
    ``os.replace``, fsync the directory. The temp file is removed on failure."""
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=TEMP_SUFFIX, dir=path.parent)
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


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library's symbols, once per process: the interpreter's own (``CDLL(None)``).
    ``ctypes.util.find_library`` would run ``ldconfig -p`` in a subprocess at every call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.CDLL(None, use_errno=True)
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
