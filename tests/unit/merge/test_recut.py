"""``prep.merge.recut``: which leading shards of fixed parts keep their place (the rest is
written anew; the re-cut itself is checked against a single run in
tests/parts/test_parts_merge.py and, killed, in tests/parts/test_merge_kill.py)."""

from __future__ import annotations

from prep.merge.recut import linkable
from prep.state.manifest import ManifestFile


def shards(*sizes: int) -> list[tuple[object, ManifestFile]]:
    return [(None, ManifestFile(f"train-{k:05d}.bin", "train", n, 1, "0" * 64, (), 0))
            for k, n in enumerate(sizes)]


def test_full_shards_at_multiples_of_the_limit_are_kept() -> None:
    assert linkable(shards(10, 10, 4, 10, 3), 10) == 2  # part 0's last file is partial
    assert linkable(shards(10, 10, 10, 7), 10) == 4  # every part's files line up
    assert linkable(shards(10, 10), 10) == 2
    assert linkable(shards(6), 10) == 1  # the split's only file
    assert linkable(shards(4, 10), 10) == 0
    assert linkable(shards(), 10) == 0
