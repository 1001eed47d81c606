"""The remote checkpoint of a bucket run: its digest recomputed here from the module's
description (SHA-256 of the canonical JSON of the rest), the embedded checkpoint given back
unchanged, and the whole messages of each refusal."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from prep.errors import IntegrityError
from prep.recipe import Recipe
from prep.state.checkpoint import Checkpoint, Progress, RunFacts, sealed_content
from prep.state.identity import FileIdentity, SourceIdentity, TokenizerIdentity
from prep.state.remote import REMOTE_FORMAT, RemoteCheckpoint, Segment
from prep.state.shards import OpenFile, SplitState

SHA = "5" * 64
WHERE = "s3://b/ds.incomplete/checkpoint-3.json"
FIX = (f"delete {WHERE} (and the objects of the unfinished run) to start over, or resume it "
       "with the version of prep that wrote it")


def local() -> Checkpoint:
    train = SplitState((), OpenFile("train-00000.bin", 40, 2, "b" * 64, (30, 10)), 40, 2, 40, 38)
    return Checkpoint(
        recipe=Recipe(source="s3://b/in", tokenizer="byte", val_fraction=0.0),
        source=SourceIdentity("bucket", "s3://b/in", "s3://b/in", "", None,
                              (FileIdentity("a.parquet", 5, None),)),
        tokenizer=TokenizerIdentity("byte", "bytes", "e3" * 32, 256, 0),
        versions={"tokenizers": "0.23.3", "numpy": "2.0"},
        progress=Progress(rows_visited=2, docs_written=2, empty_rows_skipped=0,
                          prefix_sha256="c" * 64, finished=False),
        splits={"train": train, "val": SplitState.empty("val-00000.bin")},
        run=RunFacts(started_at=1.0, resumes=0, active_seconds=2.0, source_mtimes={}),
        written_at=3.0,
    )


def remote() -> RemoteCheckpoint:
    segs = (Segment("ds.incomplete/train-00000.bin.0", 0, 100, SHA),
            Segment("ds.incomplete/train-00000.bin.1", 100, 60, SHA))
    return RemoteCheckpoint(sealed_content(local()), {"train-00000.bin": segs}, "host:123", 3)


def canonical_sha(obj: dict[str, Any]) -> str:
    body = {k: v for k, v in obj.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def refusal(raw: bytes) -> str:
    with pytest.raises(IntegrityError) as e:
        RemoteCheckpoint.from_bytes(raw, WHERE)
    assert e.value.path == WHERE
    return str(e.value)


def test_the_bytes_carry_format_seq_owner_and_a_digest_of_the_rest() -> None:
    raw = remote().to_bytes()
    assert raw.endswith(b"}\n")
    content = json.loads(raw)
    assert list(content) == ["format", "seq", "owner", "checkpoint", "segments", "digest"]
    assert (content["format"], content["seq"], content["owner"]) == (REMOTE_FORMAT, 3, "host:123")
    assert content["digest"] == canonical_sha(content)
    assert content["segments"]["train-00000.bin"][1] == {
        "key": "ds.incomplete/train-00000.bin.1", "offset": 100, "size": 60, "sha256": SHA}


def test_a_round_trip_gives_back_the_embedded_checkpoint_unchanged() -> None:
    r = remote()
    back = RemoteCheckpoint.from_bytes(r.to_bytes(), WHERE)
    assert back == r
    assert back.local == local()
    assert back.checkpoint["digest"] == canonical_sha(back.checkpoint)


def test_covered_adds_up_the_segments_of_one_open_shard() -> None:
    r = remote()
    assert r.covered("train-00000.bin") == 160
    assert r.covered("val-00000.bin") == 0


def test_an_edited_object_is_refused() -> None:
    content = json.loads(remote().to_bytes())
    content["seq"] = 4
    assert refusal(json.dumps(content).encode()) == (
        f"{WHERE} was modified or corrupted (its content does not match its digest); {FIX}")


@pytest.mark.parametrize(("raw", "found"), [
    (b'{"format": 2}', "2"), (b"[1, 2]", "None"), (b"{}", "None")])
def test_another_format_is_refused(raw: bytes, found: str) -> None:
    assert refusal(raw) == (
        f"{WHERE}: remote checkpoint format {found} is not the supported 1; {FIX}")


def test_a_truncated_object_is_refused_as_corrupt() -> None:
    raw = remote().to_bytes()[:50]
    message = refusal(raw)
    assert message.startswith(f"{WHERE} is corrupt (JSONDecodeError: ")
    assert message.endswith(f"); {FIX}")


def test_a_well_digested_object_of_the_wrong_shape_is_corrupt_not_a_traceback() -> None:
    content: dict[str, Any] = {"format": 1, "seq": 1, "owner": "h", "checkpoint": {},
                               "segments": {"x": [{"key": "k", "offset": -1, "size": 1,
                                                   "sha256": SHA}]}}
    content["digest"] = canonical_sha(content)
    assert refusal(json.dumps(content).encode()) == (
        f"{WHERE} is corrupt (FieldError: segments.x[0].offset: holds -1, expected at least "
        f"0); {FIX}")


def test_an_embedded_checkpoint_that_fails_its_digest_is_refused() -> None:
    r = remote()
    forged = RemoteCheckpoint({**r.checkpoint, "written_at": 99.0}, r.segments, r.owner, r.seq)
    with pytest.raises(IntegrityError) as e:
        forged.local  # noqa: B018 (the property checks)
    assert str(e.value) == "the remote checkpoint's embedded checkpoint fails its digest"
