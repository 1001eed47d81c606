"""The harness's self-test subject: ``python toy.py OUT [--buggy] [--resume]`` publishes a
one-file dataset (``OUT/_MANIFEST.json``) with a temp file renamed into place; ``--buggy``
renames before it fsyncs, which a power cut can turn into an empty manifest. Exit 0 when
``OUT`` already holds a manifest (as prep's ``--resume`` of a complete dataset)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PAYLOAD = b'{"toy": "a dataset of one file"}\n' * 40


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def main(out: Path, buggy: bool) -> int:
    final = out / "_MANIFEST.json"
    if final.exists():
        return 0
    if not out.exists():
        out.mkdir()
        fsync_dir(out.parent)
    tmp = out / ".manifest.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, PAYLOAD)
    if buggy:
        os.rename(tmp, final)
        os.fsync(fd)
    else:
        os.fsync(fd)
        os.rename(tmp, final)
    os.close(fd)
    fsync_dir(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), "--buggy" in sys.argv))
