"""Power cuts on real filesystems: ext4 and XFS on a loop device. A run is killed (SIGKILL,
``strace -e inject``) at its N-th fsync or rename, in whichever thread gets there first;
the filesystem is then shut down without flushing its log (``FS_IOC_SHUTDOWN`` with
``NOLOGFLUSH``: what was not yet durable is lost, as in a power cut), unmounted, mounted
again (the journal replayed) and the run resumed. A kill that never comes (N past the run's
calls) tests the dataset after exit 0. The FUSE harness explores every state; this checks
the models against the kernels the product runs on."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import harness as h
import pytest
import scenarios
from powerloss import published

FS_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32)
NOLOGFLUSH = 2
MKFS = {"ext4": ["mkfs.ext4", "-q", "-F"], "xfs": ["mkfs.xfs", "-q", "-f"]}
SIZE = {"ext4": 64 << 20, "xfs": 320 << 20}  # XFS refuses less than 300 MiB
CALLS = {"fsync": "fsync,fdatasync", "rename": "rename,renameat,renameat2"}


def missing(fs: str) -> str | None:
    if os.geteuid() != 0:
        return "loop devices need root"
    for tool in ("losetup", "strace", MKFS[fs][0]):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    return None


@contextlib.contextmanager
def loop_fs(fs: str, image: Path, mount: Path) -> Iterator[None]:
    with open(image, "wb") as f:
        f.truncate(SIZE[fs])
    dev = attach(image)
    try:
        subprocess.run([*MKFS[fs], dev], check=True, capture_output=True)
        mount.mkdir(parents=True, exist_ok=True)
        yield dev  # type: ignore[misc]
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            subprocess.run(["umount", str(mount)], check=True, capture_output=True)
        subprocess.run(["losetup", "-d", dev], check=False)


def attach(image: Path) -> str:
    """A free loop device backed by ``image``. Another test process may take the device
    ``losetup -f`` found free between its look-up and its attach: then try again."""
    for _ in range(5):
        done = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True,
                              text=True, check=False)
        if done.returncode == 0:
            return done.stdout.strip()
    raise AssertionError(f"no loop device: {done.stderr}")


def power_cut(mount: Path) -> None:
    """Shut the filesystem down, dropping its log (what an fsync did not make durable is
    gone), and unmount it."""
    fd = os.open(mount, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, FS_IOC_SHUTDOWN, struct.pack("I", NOLOGFLUSH))
    finally:
        os.close(fd)
    subprocess.run(["umount", str(mount)], check=True)


def killed_run(argv: list[str], calls: str, nth: int, err: Path) -> int:
    """``argv`` under strace, SIGKILLed at its ``nth`` call of ``calls`` (per thread);
    returns strace's exit code once every process of the run is gone."""
    with open(err, "wb") as f:
        proc = subprocess.Popen(
            ["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={calls}",
             "-e", f"inject={calls}:signal=KILL:when={nth}", *argv],
            cwd=h.REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f,
            start_new_session=True,
        )
    code = proc.wait(h.TIMEOUT)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # a worker the kill left behind
    return code


NEVER = 1000  # more calls than a run makes: it ends, exit 0, before the cut
CASES = [("ext4", "fsync", 6), ("xfs", "rename", 4)]
FULL = [(fs, kind, n) for fs in ("ext4", "xfs") for kind, ns in
        (("fsync", (1, 2, 4, 6, 9, 14, 20, 30, NEVER)), ("rename", (1, 2, 3, 4, 6, 9, NEVER)))
        for n in ns if (fs, kind, n) not in CASES]


@pytest.mark.parametrize(
    ("fs", "kind", "nth"),
    [*CASES, *(pytest.param(*c, marks=pytest.mark.powerloss) for c in FULL)],
)
def test_cut_at_the_nth_call_then_resume(tmp_path_factory: pytest.TempPathFactory,
                                         tmp_path: Path, fs: str, kind: str, nth: int) -> None:
    if why := missing(fs):
        pytest.skip(why)
    w = scenarios.world(tmp_path_factory)
    mount = tmp_path / "mnt"
    with loop_fs(fs, tmp_path / "image", mount) as dev:
        subprocess.run(["mount", dev, str(mount)], check=True)
        out = mount / scenarios.OUT
        argv = [sys.executable, str(h.PREPARE), *w.args(out, *scenarios.RUN)]
        code = killed_run(argv, CALLS[kind], nth, tmp_path / "run.err")
        power_cut(mount)
        subprocess.run(["mount", dev, str(mount)], check=True)
        held = published(out)
        assert (code == 0) == (nth == NEVER), f"strace exited {code}"
        if code == 0:
            assert held == w.reference, "the dataset was lost after exit 0"
        assert held in (None, w.reference), "a wrong dataset survived the power cut"
        done = h.run([*w.args(out, *scenarios.RUN), "--resume"])
        assert done.returncode == 0, done.stderr
        assert published(out) == w.reference
