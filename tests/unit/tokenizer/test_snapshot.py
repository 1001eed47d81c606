"""The merge phase's checkpoint in a real staging directory: the two files it writes, the
stray files a kill leaves that the next save removes, and the refusals of files that
disagree."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from prep.errors import IntegrityError
from prep.tokenizer.snapshot import CHECKPOINT_FILE, MergeCheckpoint

SEQ = struct.pack("=6I", 104, 256, 0xFFFFFFFF, 257, 108, 0xFFFFFFFF)


def test_save_writes_the_sequence_then_the_commit_point(tmp_path: Path) -> None:
    cp = MergeCheckpoint(((104, 101, 9), (108, 108, 4)), SEQ)
    cp.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "merging.json", "sequence-0000000002.u32"]
    assert (tmp_path / "sequence-0000000002.u32").read_bytes() == SEQ
    assert json.loads((tmp_path / CHECKPOINT_FILE).read_text()) == {
        "version": 1, "merges": [[104, 101, 9], [108, 108, 4]],
        "sequence": "sequence-0000000002.u32",
        "sequence_sha256": hashlib.sha256(SEQ).hexdigest()}
    assert MergeCheckpoint.load(tmp_path) == cp


def test_a_later_save_removes_old_sequences_and_stray_temps(tmp_path: Path) -> None:
    MergeCheckpoint(((1, 2, 3),), SEQ).save(tmp_path)
    (tmp_path / "sequence-0000000009.u32").write_bytes(b"killed between the two writes")
    (tmp_path / ".merging.json.abcd.tmp").write_bytes(b"{")
    later = MergeCheckpoint(((1, 2, 3), (4, 5, 2)), SEQ[:8])
    later.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "merging.json", "sequence-0000000002.u32"]
    assert MergeCheckpoint.load(tmp_path) == later


def test_no_checkpoint_loads_as_none(tmp_path: Path) -> None:
    assert MergeCheckpoint.load(tmp_path) is None


def test_a_sequence_that_differs_from_its_digest_is_refused(tmp_path: Path) -> None:
    MergeCheckpoint(((1, 2, 3),), SEQ).save(tmp_path)
    seq = tmp_path / "sequence-0000000001.u32"
    seq.write_bytes(SEQ[:-4])
    with pytest.raises(IntegrityError) as e:
        MergeCheckpoint.load(tmp_path)
    assert str(e.value) == (f"{seq}: SHA-256 differs from {tmp_path / CHECKPOINT_FILE}'s; "
                            f"delete {tmp_path} to start over")


@pytest.mark.parametrize(("body", "why"), [
    ({"version": 2}, "version 2, not 1"),
    ({"version": 1, "merges": [[1, 2]]}, "not enough values to unpack (expected 3, got 2)"),
    ({"version": 1, "merges": [], "sequence": "sequence-0000000000.u32"},
     "[Errno 2] No such file or directory: '{staging}/sequence-0000000000.u32'"),
])
def test_an_unreadable_checkpoint_is_refused_with_its_cause(tmp_path: Path, body: object,
                                                            why: str) -> None:
    (tmp_path / CHECKPOINT_FILE).write_text(json.dumps(body))
    with pytest.raises(IntegrityError) as e:
        MergeCheckpoint.load(tmp_path)
    assert str(e.value) == (f"{tmp_path / CHECKPOINT_FILE}: unreadable merge checkpoint "
                            f"({why.format(staging=tmp_path)}); delete {tmp_path} to start over")
