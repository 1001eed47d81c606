"""The recorder: a FUSE pass-through filesystem that logs every mutating operation.

``python recorder.py BACKING MOUNT LOG`` mounts ``BACKING`` at ``MOUNT`` (one thread: the
operations are applied and logged in one order, whichever process or thread of the run made
them) until ``fusermount3 -u MOUNT``, then writes ``LOG``: the tree ``BACKING`` held at
mount time and the operations since, in inode terms (see :mod:`crashstates`)::

    ("mkdir"|"create", parent, name, ino)      ("link", parent, name, ino)
    ("unlink", parent, name)                    ("rename", sparent, sname, dparent, dname, flags)
    ("write", ino, offset, data)                ("truncate", ino, length)
    ("fsync", ino)                              ("fsyncdir", ino)

Inodes are the recorder's own numbers, never reused, so an unlinked file that stays open
is still itself. Nothing escapes the log: prep writes files with ``write(2)`` only (its one
writable mapping is anonymous memory, ``prep.procs.arena``); a ``sendfile`` copy reaches this
filesystem as writes; ``fallocate`` and ``copy_file_range`` are not offered, so the kernel
falls back to writes. Unlinked open files are removed at once (``hard_remove``), never
hidden under a ``.fuse_hidden`` name that the log would have to explain.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import itertools
import os
import pickle
import sys
from pathlib import Path
from typing import Any

import mfusepy

RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def snapshot(root: Path) -> tuple[dict[str, int], dict[int, bytes], set[int]]:
    """The tree under ``root`` as (path -> inode, file inode -> bytes, directory inodes),
    paths relative with a leading ``/`` (the root is ``/``, inode 0); hard links share an
    inode."""
    ids, data, dirs = {"/": 0}, {}, {0}
    counter = itertools.count(1)
    seen: dict[tuple[int, int], int] = {}
    for top, subdirs, files in os.walk(root):
        rel = "/" + os.path.relpath(top, root).removeprefix(".").lstrip("/")
        for name in sorted(subdirs):
            ino = next(counter)
            ids[os.path.join(rel, name)] = ino
            dirs.add(ino)
        for name in sorted(files):
            full = os.path.join(top, name)
            st = os.lstat(full)
            key = (st.st_dev, st.st_ino)
            if key not in seen:
                seen[key] = next(counter)
                data[seen[key]] = Path(full).read_bytes()
            ids[os.path.join(rel, name)] = seen[key]
    return ids, data, dirs


class Recorder(mfusepy.Operations):  # type: ignore[misc]
    use_ns = True

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.ids, self.initial, self.dirs = snapshot(root)
        self.counter = itertools.count(max(self.ids.values()) + 1)
        self.fh_ino: dict[int, int] = {}
        self.ops: list[tuple[Any, ...]] = []

    # -- bookkeeping --------------------------------------------------------------------

    def _full(self, path: str) -> str:
        return self.root + path

    def _parent(self, path: str) -> tuple[int, str]:
        head, name = os.path.split(path)
        return self.ids[head or "/"], name

    def _ino(self, path: str | None, fh: int | None) -> int:
        if fh is not None and fh in self.fh_ino:
            return self.fh_ino[fh]
        if path is None:
            raise OSError(errno.EBADF, "no path and no descriptor")
        return self.ids[path]

    def _move(self, src: str, dst: str) -> None:
        """Rebind ``src`` (and everything below it) to ``dst`` in the path map."""
        for key in [k for k in self.ids if k == src or k.startswith(src + "/")]:
            self.ids[dst + key[len(src):]] = self.ids.pop(key)

    # -- reading ------------------------------------------------------------------------

    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        st = os.fstat(fh) if path is None and fh is not None else os.lstat(self._full(path or "/"))
        keys = ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_ino", "st_blocks")
        attrs = {k: getattr(st, k) for k in keys}
        attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
        return attrs

    def access(self, path: str, amode: int) -> int:
        if not os.access(self._full(path), amode):
            raise OSError(errno.EACCES, "access")
        return 0

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._full(path))]

    def opendir(self, path: str) -> int:
        fd = os.open(self._full(path), os.O_RDONLY | os.O_DIRECTORY)
        self.fh_ino[fd] = self.ids[path]
        return fd

    def releasedir(self, path: str | None, fh: int) -> int:
        self.fh_ino.pop(fh, None)
        os.close(fh)
        return 0

    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self._full(path))
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
                "f_flag", "f_frsize", "f_namemax")
        return {k: getattr(sv, k) for k in keys}

    def open(self, path: str, flags: int) -> int:
        fd = os.open(self._full(path), flags & ~(os.O_CREAT | os.O_EXCL))
        self.fh_ino[fd] = self.ids[path]
        if flags & os.O_TRUNC:
            self.ops.append(("truncate", self.ids[path], 0))
        return fd

    def release(self, path: str | None, fh: int) -> int:
        self.fh_ino.pop(fh, None)
        os.close(fh)
        return 0

    def flush(self, path: str | None, fh: int) -> int:
        return 0

    # -- mutating -------------------------------------------------------------------------

    def create(self, path: str, mode: int, flags: int = os.O_RDWR) -> int:
        fd = os.open(self._full(path), flags | os.O_CREAT, mode)
        if path not in self.ids:
            ino = next(self.counter)
            self.ids[path] = ino
            self.ops.append(("create", *self._parent(path), ino))
        elif flags & os.O_TRUNC:
            self.ops.append(("truncate", self.ids[path], 0))
        self.fh_ino[fd] = self.ids[path]
        return fd

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._full(path), mode)
        ino = next(self.counter)
        self.ids[path] = ino
        self.dirs.add(ino)
        self.ops.append(("mkdir", *self._parent(path), ino))
        return 0

    def link(self, target: str, source: str) -> int:
        os.link(self._full(source), self._full(target))
        self.ids[target] = self.ids[source]
        self.ops.append(("link", *self._parent(target), self.ids[source]))
        return 0

    def _remove(self, path: str) -> None:
        self.ops.append(("unlink", *self._parent(path)))
        del self.ids[path]

    def unlink(self, path: str) -> int:
        os.unlink(self._full(path))
        self._remove(path)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._full(path))
        self._remove(path)
        return 0

    def rename(self, old: str, new: str, flags: int = 0) -> int:
        rc = _libc.renameat2(-100, os.fsencode(self._full(old)), -100,
                             os.fsencode(self._full(new)), flags)
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.ops.append(("rename", *self._parent(old), *self._parent(new), flags))
        if flags & RENAME_EXCHANGE:
            self._move(old, "\0swap")
            self._move(new, old)
            self._move("\0swap", new)
        else:
            for key in [k for k in self.ids if k == new or k.startswith(new + "/")]:
                del self.ids[key]
            self._move(old, new)
        return 0

    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        n = os.pwrite(fh, data, offset)
        self.ops.append(("write", self._ino(path, fh), offset, bytes(data[:n])))
        return n

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._full(path or "/"), length)
        self.ops.append(("truncate", self._ino(path, fh), length))
        return 0

    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        self.ops.append(("fsync", self._ino(path, fh)))
        return 0

    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        self.ops.append(("fsyncdir", self._ino(path, fh)))
        return 0

    def chmod(self, path: str | None, mode: int) -> int:
        os.chmod(self._full(path or "/"), mode)  # not content: not logged
        return 0

    def chown(self, path: str | None, uid: int, gid: int) -> int:
        os.chown(self._full(path or "/"), uid, gid)
        return 0

    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> int:
        os.utime(self._full(path or "/"), ns=times)
        return 0


class _Fuse(mfusepy.FUSE):  # type: ignore[misc]
    """mfusepy drops rename's flags (RENAME_NOREPLACE, RENAME_EXCHANGE) and a truncate's
    descriptor; both matter here."""

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        return self.operations.rename(os.fsdecode(old), os.fsdecode(new), flags)  # type: ignore[no-any-return]

    def truncate_fuse_3(self, path: bytes | None, length: int, fip: Any) -> int:
        fh = fip.contents.fh if fip else None
        return self.operations.truncate(  # type: ignore[no-any-return]
            None if path is None else os.fsdecode(path), length, fh
        )


def main(backing: str, mount: str, log: str) -> None:
    rec = Recorder(Path(backing))
    initial = (dict(rec.ids), dict(rec.initial), set(rec.dirs))
    _Fuse(rec, mount, foreground=True, nothreads=True, hard_remove=True,
          fsname="prep-recorder", attr_timeout=0, entry_timeout=0, negative_timeout=0)
    with open(log + ".part", "wb") as f:
        pickle.dump({"initial": initial, "ops": rec.ops}, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(log + ".part", log)


if __name__ == "__main__":
    main(*sys.argv[1:4])
