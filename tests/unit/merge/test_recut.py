"""``prep.merge.recut``: which leading shards of fixed parts keep their place (the rest is
written anew, from the part files it names; the re-cut itself is checked against a single run in
tests/parts/test_parts_merge.py and, killed, in tests/parts/test_merge_kill.py)."""

from __future__ import annotations

from types import SimpleNamespace

from prep.formats import get_format
from prep.merge.plan import PartManifest
from prep.merge.recut import files_to_recut, linkable
from prep.state.manifest import ManifestFile
from prep.state.shards import Companion


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


def megatron_part(name: str, *sizes: int) -> PartManifest:
    files = tuple(ManifestFile(f"train-{k:05d}.bin", "train", n, 1, f"{name}-{k}-bin",
                               (Companion(f"train-{k:05d}.idx", f"{name}-{k}-idx"),), 0)
                  for k, n in enumerate(sizes))
    manifest = SimpleNamespace(max_file_tokens=10, totals={"train": None}, files=files)
    return PartManifest(name, manifest, "")  # type: ignore[arg-type]


def test_the_files_to_cut_again_are_those_after_the_kept_shards_with_their_index() -> None:
    parts = [megatron_part("0-of-2", 10, 10, 4), megatron_part("1-of-2", 10, 3)]
    assert files_to_recut(parts, get_format("megatron")) == {
        "0-of-2": {"train-00002.bin": "0-of-2-2-bin", "train-00002.idx": "0-of-2-2-idx"},
        "1-of-2": {"train-00000.bin": "1-of-2-0-bin", "train-00000.idx": "1-of-2-0-idx",
                   "train-00001.bin": "1-of-2-1-bin", "train-00001.idx": "1-of-2-1-idx"},
    }
    whole = [megatron_part("0-of-2", 10, 10), megatron_part("1-of-2", 10, 3)]
    assert files_to_recut(whole, get_format("megatron")) == {"0-of-2": {}, "1-of-2": {}}
