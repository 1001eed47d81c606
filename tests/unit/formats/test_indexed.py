"""The shared indexed format: companions that disagree with their shard are refused by
reading (``map_ids``) and listed by ``verify``; a companion written otherwise than its layout
writes (same lengths, other bytes) is caught by the re-pack."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from prep.errors import IntegrityError
from prep.formats import get_format
from prep.state.manifest import Manifest, ManifestFile


def sealed(tmp_path: Path, name: str) -> tuple[object, ManifestFile, Manifest]:
    fmt = get_format(name, label="tok")
    w = fmt.create(tmp_path, fmt.shard_name("train", 0), 300)
    w.append(np.array([1, 2, 3, 9, 4], dtype=np.uint32), [3, 2])
    sha, companions = w.seal()
    entry = ManifestFile(w.name, "train", 5, 2, sha, companions)
    m = Manifest.__new__(Manifest)
    object.__setattr__(m, "dtype", "uint16")
    return fmt, entry, m


@pytest.mark.parametrize("name", ["datatrove", "olmo", "megatron"])
def test_lengths_round_trip_and_damage_is_refused(tmp_path: Path, name: str) -> None:
    fmt, entry, m = sealed(tmp_path, name)
    assert fmt.doc_lengths(tmp_path, entry, m).tolist() == [3, 2]  # type: ignore[attr-defined]
    index = tmp_path / entry.companions[0].name
    if name == "datatrove":
        index.write_bytes(struct.pack("<1Q", 5))  # one document, not two
    elif name == "olmo":
        from prep.formats.olmo import deterministic_gzip
        index.write_bytes(deterministic_gzip(b"0,5\n"))
    else:
        index.write_bytes(index.read_bytes()[:-1])
    with pytest.raises(IntegrityError, match=r"run `prep verify`"):
        fmt.map_ids(tmp_path, entry, m)  # type: ignore[attr-defined]


def test_a_companion_with_other_bytes_is_not_the_layout(tmp_path: Path) -> None:
    import gzip

    fmt, entry, m = sealed(tmp_path, "olmo")
    index = tmp_path / entry.companions[0].name
    index.write_bytes(gzip.compress(b"0,3\n3,5\n", mtime=12345))  # same rows, other header
    problems = fmt.companion_problems(tmp_path, entry, m, 5)  # type: ignore[attr-defined]
    assert any("not as the olmo layout writes it" in p for p in problems)
    assert any("SHA-256" in p for p in problems)
