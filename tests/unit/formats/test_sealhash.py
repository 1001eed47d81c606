"""A sealed shard's SHA-256 (``prep.formats.sealhash``): in this process or in a child, the
same as coreutils' ``sha256sum`` of the file; a file shorter than its size is an error."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from prep.formats.sealhash import sealed_sha256


@pytest.mark.parametrize("child_bytes", [1 << 40, 0], ids=["here", "child"])
def test_the_sha256sum_of_the_file(tmp_path: Path, child_bytes: int) -> None:
    path = tmp_path / "shard.bin"
    path.write_bytes(os.urandom(3 << 20) + b"tail")  # chunks, and a partial last one
    want = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True,
                          check=True).stdout.split()[0]
    with open(path, "r+b") as f:
        f.seek(17)  # the writer's position does not matter
        assert sealed_sha256(f, path.stat().st_size, child_bytes) == want


@pytest.mark.parametrize("child_bytes", [1 << 40, 0], ids=["here", "child"])
def test_a_file_shorter_than_its_size_is_an_error(tmp_path: Path, child_bytes: int) -> None:
    path = tmp_path / "short.bin"
    path.write_bytes(b"x" * 100)
    with open(path, "rb") as f, pytest.raises(OSError, match="150"):
        sealed_sha256(f, 150, child_bytes)
