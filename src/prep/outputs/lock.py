"""The run lock: one run (or merge) at a time on an output.

Every kind of output keeps its lock as a local file (``DIR.lock`` beside a directory, the
staging root's lock for a bucket), held with ``flock`` through ``filelock``: a lock left by a
dead process is free (the OS drops flock on exit). ``DIR.lock.json`` beside it says who holds
it, for the messages of a run that finds it busy and for ``prep inspect``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from prep.errors import Interrupted, LockedError, OutputError, never
from prep.fsio import atomic_write_bytes, make_dirs, stray_temps

logger = logging.getLogger(__name__)

_LOCK_POLL = 0.1  # seconds between tries at a busy lock, and looks at the stop request


@dataclass(frozen=True)
class LockPaths:
    """Where an output's lock lives, and what its messages name: the output as typed
    (``where``) and its staging directory."""

    lock: Path
    staging: Path
    where: str

    @property
    def info(self) -> Path:
        return self.lock.with_name(self.lock.name + ".json")


@contextlib.contextmanager
def hold_lock(
    paths: LockPaths, wait: float, stop: Callable[[], bool] = never
) -> Iterator[HeldLock]:
    """Hold the lock for the block. Raises ``LockedError`` naming the holder when it is
    busy, and ``Interrupted`` when ``stop()`` says so before the lock is taken (waiting
    included). The block gets a :class:`HeldLock` to check, before each commit, that the
    lock is still ours."""
    make_dirs(paths.lock.parent)  # durable: a directory output is published into it
    _check_creatable(paths)
    lock = FileLock(str(paths.lock))
    held = HeldLock(paths, None)
    deadline = time.monotonic() + wait
    next_note = 0.0
    while True:
        if stop():
            raise Interrupted(
                f"stopped on request before taking {paths.lock}; nothing was changed. "
                "Rerun the same command",
                path=paths.lock,
            )
        try:
            lock.acquire(timeout=0)
            break
        except Timeout:  # a TimeoutError, so an OSError: caught before the others
            holder = describe_holder(paths)
            if time.monotonic() >= deadline:
                raise LockedError(
                    f"another run holds {paths.lock} ({holder}); wait for it to finish, or "
                    "pass --wait-lock SECONDS to wait",
                    path=paths.lock,
                ) from None
            if time.monotonic() >= next_note:  # a line a minute, not a line a second
                logger.info("waiting for %s held by %s", paths.lock, holder)
                next_note = time.monotonic() + 60
            time.sleep(min(_LOCK_POLL, max(0.0, deadline - time.monotonic())))
        except OSError as e:  # filelock reraises what no retry fixes (EACCES, EROFS)
            raise _uncreatable(paths, e) from e
    try:
        for stray in stray_temps(paths.info.parent, paths.info.name):
            stray.unlink(missing_ok=True)  # a lock-info write a crash interrupted; we hold it
        # Right after acquiring: the inode our flock is on (filelock keeps its fd private).
        held = HeldLock(paths, _inode(paths.lock))
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        atomic_write_bytes(paths.info, json.dumps(info).encode())
        yield held
    finally:
        if not held.lost:  # else the info (and the lock path) may be another run's now
            with contextlib.suppress(FileNotFoundError):
                paths.info.unlink()
        lock.release()


def _check_creatable(paths: LockPaths) -> None:
    """Raise ``OutputError`` (exit 1, not the 75 of a busy lock: no retry fixes it) when the
    lock file cannot be opened for writing. filelock reports some of these failures (ENOENT
    on a pseudo filesystem such as /proc) as a lock it could not take."""
    try:
        fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise _uncreatable(paths, e) from e
    os.close(fd)


def _uncreatable(paths: LockPaths, e: OSError) -> OutputError:
    return OutputError(
        f"cannot create the lock file {paths.lock} ({e.strerror or e}): {paths.where} needs a "
        "directory on a writable filesystem where this user may create files (not /proc, "
        "/sys or a read-only mount); choose another --out, or fix the directory's permissions",
        path=paths.lock,
    )


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


@dataclass
class HeldLock:
    """The lock a run holds, and the inode its flock is on."""

    paths: LockPaths
    inode: tuple[int, int] | None
    lost: bool = False

    def check(self) -> None:
        """Raise ``OutputError`` (exit 1) if the lock file was deleted or replaced: flock
        locks the inode, not the name, so a second run could now lock a new file at the
        same path and work on the same staging directory beside this one.

        Exit 1, not 75: rerunning is not enough, something outside prep removes lock
        files (a cleanup job) and an operator must find it; the caller stops before
        committing, so staging stays at its last checkpoint."""
        if self.inode is not None and _inode(self.paths.lock) == self.inode:
            return
        self.lost = True
        p = self.paths
        raise OutputError(
            f"{p.lock} was deleted or replaced while this run held it; another run could now "
            f"work on {p.staging} beside this one, so this run stopped without committing "
            f"({p.staging} stays at its last checkpoint). Find what removes {p.lock.name} "
            f"(a cleanup job?), make sure no other prep runs on {p.where}, then rerun with "
            "--resume",
            path=p.lock,
        )


def describe_holder(paths: LockPaths) -> str:
    """``pid P on HOST, started T`` from the lock's info file (or "holder unknown")."""
    try:
        info = json.loads(paths.info.read_text())
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["started"])))
        return f"pid {info['pid']} on {info['host']}, started {started}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def lock_holder(paths: LockPaths) -> str | None:
    """Who holds the lock (from its info file), or None when it is free. Probes with a
    shared, non-blocking flock on a read-only descriptor: creates nothing, and holds the
    probe for an instant only (a run starting in that instant finds the lock busy and exits
    75, which is safe to rerun)."""
    try:
        fd = os.open(paths.lock, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return f"{paths.lock.name} held by {describe_holder(paths)}"
    finally:
        os.close(fd)  # closing drops the probe's own lock
    return None
