"""Output paths, the run lock, staging creation and the final publish.

``DIR`` is the dataset, ``DIR.incomplete/`` the staging directory, ``DIR.lock`` the lock.
Staging is created whole (built under a temporary sibling with its first checkpoint, then
renamed), so a staging directory always holds a checkpoint. Publishing renames staging to
``DIR`` without ever replacing an existing ``DIR`` (an empty directory excepted). When
``DIR`` is a mount point, which no rename can replace, staging is ``DIR/.prep-staging``
instead and ``prep.mountpoint`` publishes it file by file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from prep.errors import Interrupted, LockedError, OutputError
from prep.fsio import atomic_write_bytes, fsync_dir, make_dirs, rename_noreplace, stray_temps

logger = logging.getLogger(__name__)


STAGING_INSIDE = ".prep-staging"  # staging's name inside a mount point --out
_LOCK_POLL = 0.1  # seconds between tries at a busy lock, and looks at the stop request


def _never() -> bool:
    return False


@dataclass(frozen=True)
class OutputPaths:
    """Every path derived from ``--out``. ``inside``: ``--out`` is a mount point, so
    staging (and where it is built) lives inside it, on the same filesystem."""

    final: Path
    inside: bool = False

    @classmethod
    def for_out(cls, out: Path) -> OutputPaths:
        out = Path(os.path.abspath(out))
        if out.name in ("", ".", ".."):
            raise OutputError(f"--out {out} must name a directory to create", path=out)
        return cls(out, os.path.ismount(out))  # False for a symlink or a missing path

    @property
    def staging(self) -> Path:
        if self.inside:
            return self.final / STAGING_INSIDE
        return self.final.with_name(self.final.name + ".incomplete")

    @property
    def building(self) -> Path:
        """Where a new staging directory is assembled before it is renamed into place."""
        if self.inside:
            return self.final / (STAGING_INSIDE + ".new")
        return self.final.with_name("." + self.final.name + ".incomplete.new")

    @property
    def previous(self) -> Path:
        """The version a refresh replaced."""
        return self.final.with_name(self.final.name + ".previous")

    @property
    def journal(self) -> Path:
        """Written before a refresh's swap; lets the next run finish it forward."""
        return self.final.with_name(self.final.name + ".swap.json")

    @property
    def lock(self) -> Path:
        return self.final.with_name(self.final.name + ".lock")

    @property
    def lock_info(self) -> Path:
        return self.final.with_name(self.final.name + ".lock.json")


@contextlib.contextmanager
def hold_lock(
    paths: OutputPaths, wait: float, stop: Callable[[], bool] = _never
) -> Iterator[HeldLock]:
    """Hold ``DIR.lock`` for the block. A lock left by a dead process is free (the OS drops
    flock on exit). Raises ``LockedError`` naming the holder when it is busy, and
    ``Interrupted`` when ``stop()`` says so before the lock is taken (waiting included). The
    block gets a :class:`HeldLock` to check, before each commit, that the lock is still ours."""
    make_dirs(paths.final.parent)  # durable: DIR is published into it
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
        except Timeout:
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
    try:
        for stray in stray_temps(paths.final.parent, paths.lock_info.name):
            stray.unlink(missing_ok=True)  # a lock-info write a crash interrupted; we hold it
        # Right after acquiring: the inode our flock is on (filelock keeps its fd private).
        held = HeldLock(paths, _inode(paths.lock))
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        atomic_write_bytes(paths.lock_info, json.dumps(info).encode())
        yield held
    finally:
        if not held.lost:  # else the info (and the lock path) may be another run's now
            with contextlib.suppress(FileNotFoundError):
                paths.lock_info.unlink()
        lock.release()


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


@dataclass
class HeldLock:
    """The lock a run holds, and the inode its flock is on."""

    paths: OutputPaths
    inode: tuple[int, int] | None
    lost: bool = False

    def check(self) -> None:
        """Raise ``OutputError`` (exit 1) if ``DIR.lock`` was deleted or replaced: flock
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
            f"(a cleanup job?), make sure no other prep runs on {p.final}, then rerun with "
            "--resume",
            path=p.lock,
        )


def describe_holder(paths: OutputPaths) -> str:
    """``pid P on HOST, started T`` from ``DIR.lock.json`` (or "holder unknown")."""
    try:
        info = json.loads(paths.lock_info.read_text())
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["started"])))
        return f"pid {info['pid']} on {info['host']}, started {started}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def create_staging(paths: OutputPaths, populate: Callable[[Path], None]) -> None:
    """Build staging under a temporary sibling, let ``populate`` write its first files and
    checkpoint, then rename it into place: staging never exists without a checkpoint."""
    if paths.building.exists():
        shutil.rmtree(paths.building)  # a crash mid-creation: nothing in it was committed
    make_dirs(paths.building)
    try:
        populate(paths.building)
        fsync_dir(paths.building)
        rename_noreplace(paths.building, paths.staging)
    except BaseException:
        shutil.rmtree(paths.building, ignore_errors=True)
        raise
    fsync_dir(paths.staging.parent)


def out_of_staging(staging: Path) -> Path:
    """The ``--out`` a staging directory belongs to: ``DIR`` for ``DIR.incomplete``, the
    mount point for ``MOUNT/.prep-staging``."""
    if staging.name == STAGING_INSIDE and os.path.ismount(staging.parent):
        return staging.parent
    return staging.with_name(staging.name.removesuffix(".incomplete"))


def publish(paths: OutputPaths) -> None:
    """Rename staging to ``DIR``, then fsync the parent. ``DIR`` may be an empty directory
    (created beforehand, e.g. by a provisioning script): ``rename(2)`` replaces an empty
    directory atomically and fails on a non-empty one. Anything else at ``DIR`` is never
    replaced."""
    if is_empty_dir(paths.final):
        try:
            os.rename(paths.staging, paths.final)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            raise OutputError(
                f"{paths.final} is no longer empty; nothing was replaced and "
                f"{paths.staging} is kept: empty {paths.final} (or choose another --out), "
                f"then rerun with --resume",
                path=paths.final,
            ) from e
    else:
        rename_noreplace(paths.staging, paths.final)
    fsync_dir(paths.final.parent)


def is_empty_dir(path: Path) -> bool:
    """A real (not symlinked) empty directory: what ``publish`` may rename onto."""
    return path.is_dir() and not path.is_symlink() and not any(path.iterdir())

