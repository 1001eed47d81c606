"""The order of a real run's durability calls, read from ``strace``: every name a checkpoint
lists is durable before the checkpoint is, and every directory prep creates is fsynced
into its parent. A SIGKILL cannot see these (the page cache survives it); a power cut can.
The FUSE harness (tests/powerloss) explores every crash state; this is the quick check."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import harness as h
import pytest

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")

# pid name(args) = ret, with -y's <path> after each descriptor; a call split by another
# thread's comes back as "<... name resumed>".
CALL = re.compile(r"^\d+ +(\w+)\((.*)\) += (-?\d+)(?:<([^>]*)>)?")
RESUMED = re.compile(r"^\d+ +<\.\.\. (\w+) resumed>(.*)\) += (-?\d+)(?:<([^>]*)>)?")
UNFINISHED = re.compile(r"^(\d+) +(\w+)\((.*) <unfinished \.\.\.>$")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
FD_PATH = re.compile(r"^\d+<([^>]*)>")


def calls(log: Path) -> list[tuple[str, str, list[str], str]]:
    """(name, raw arguments, string arguments (or a descriptor's path), returned path) of
    each call that succeeded, in the order the calls returned."""
    pending: dict[str, str] = {}
    out = []
    for line in log.read_text().splitlines():
        if m := UNFINISHED.match(line):
            pending[m[1]] = m[3]
            continue
        if m := RESUMED.match(line):
            name, args, ret, path = m[1], pending.pop(line.split()[0], "") + m[2], m[3], m[4]
        elif m := CALL.match(line):
            name, args, ret, path = m[1], m[2], m[3], m[4]
        else:
            continue
        if int(ret) >= 0:
            fd = FD_PATH.match(args)
            out.append((name, args, [fd[1]] if fd else STRING.findall(args), path or ""))
    return out


def check_order(log: Path, root: Path) -> list[str]:
    """Where the traced run broke the two rules below ``root`` (empty when it kept them),
    under the weakest model: a name is durable once its directory is fsynced."""
    pending: dict[Path, set[Path]] = {}  # directory -> names created since its last fsync
    made: list[Path] = []
    problems = []
    for name, raw, args, returned in calls(log):
        if name in ("mkdir", "mkdirat"):
            new = [Path(args[-1])]
            made += new
        elif name in ("openat", "open") and "O_CREAT" in raw:
            new = [Path(returned)]
        elif name in ("rename", "renameat", "renameat2", "link", "linkat"):
            src, dst = map(Path, args)
            if dst.name == "checkpoint.json":
                unsynced = sorted(map(str, pending.get(dst.parent, set()) - {src}))
                if unsynced:
                    problems.append(f"{dst} replaced while {unsynced} were not durable")
            new = [dst]
        elif name in ("fsync", "fdatasync"):
            pending.pop(Path(args[0]), None)
            continue
        else:
            continue
        for p in new:
            if p.is_relative_to(root):
                pending.setdefault(p.parent, set()).add(p)
    problems += [
        f"{d} was created but never fsynced into its parent"
        for d in made
        if d.is_relative_to(root) and d in pending.get(d.parent, set())
    ]
    return problems


def test_checkpoints_list_only_durable_names_and_new_directories_are_fsynced(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    w = h.world(tmp_path_factory, h.SMALL)
    out = tmp_path / "new" / "parents" / "out"
    log = tmp_path / "strace.log"
    cmd = ["strace", "-f", "-qq", "-y", "-o", str(log), "-e",
           "trace=mkdir,mkdirat,openat,rename,renameat,renameat2,link,linkat,fsync,fdatasync",
           sys.executable, str(h.PREPARE), *w.args(out, *h.EVERY_BATCH, "--workers", "1")]
    done = subprocess.run(cmd, cwd=h.REPO, capture_output=True, text=True, timeout=h.TIMEOUT)
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
    assert check_order(log, tmp_path) == []
