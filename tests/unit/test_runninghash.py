"""The running hash fed in a background thread (prep.formats.runninghash): it hashes exactly
the byte ranges handed over, in order, checked against hashlib over the same bytes."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

from prep.errors import IntegrityError
from prep.formats.runninghash import RunningHash


@pytest.mark.parametrize("max_behind", [1, 1000, 1 << 30])
def test_hashes_the_ranges_in_order_whatever_the_backlog(tmp_path: Path, max_behind: int) -> None:
    rng = random.Random(max_behind)
    sizes = [rng.randrange(0, 5000) for _ in range(60)] + [3 << 20]  # one range > CHUNK
    data = rng.randbytes(sum(sizes))
    head = b"H" * 1024  # not hashed: ranges start after it
    path = tmp_path / "f.bin"
    expected = hashlib.sha256()
    with open(path, "w+b") as f:
        f.write(head)
        f.flush()
        h = RunningHash(hashlib.sha256(), max_behind=max_behind)
        at = 0
        for n in sizes:
            f.write(data[at:at + n])
            f.flush()
            h.update(f.fileno(), len(head) + at, n)
            expected.update(data[at:at + n])
            at += n
            if n % 7 == 0:  # a checkpoint in the middle reads the hash so far
                assert h.hexdigest() == expected.hexdigest()
        assert h.hexdigest() == hashlib.sha256(data).hexdigest()
        h.close()


def test_a_range_past_the_end_of_the_file_raises_when_the_hash_is_read(tmp_path: Path) -> None:
    path = tmp_path / "short.bin"
    path.write_bytes(b"x" * 10)
    fd = os.open(path, os.O_RDONLY)
    try:
        h = RunningHash(hashlib.sha256(), "short.bin")
        h.update(fd, 0, 20)
        with pytest.raises(IntegrityError, match=r"short.bin ends at byte 10 although 20 .*"
                           r"rerun with --resume"):
            h.hexdigest()
        h.close()
    finally:
        os.close(fd)
