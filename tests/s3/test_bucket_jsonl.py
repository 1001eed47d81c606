"""``.jsonl.zst`` objects (written by Debian's ``zstd``) in a bucket on the real S3 server,
uploaded as stored (pyarrow would compress a ``.zst`` name again) and downloaded so:
a run killed at random (SIGKILL) and resumed (`--out DIR --resume` alone) publishes the
shards of the same files read locally, byte for byte, each named by the SHA-256 of the
object's bytes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import harness as h
import pytest
from harness import Corpus, World
from s3server import S3Server

PACE = h.paced(0.001)  # as tests/faults/test_kill_resume_jsonl.py
CORPUS = Corpus(n_docs=12_000, n_files=4, max_file_tokens=8_000, kind="jsonl.zst",
                dataset="jsonl-bucket")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return h.make_world(tmp_path_factory.mktemp("jsonlbucket"), CORPUS, reference=True)


def test_killed_at_random_then_resumed_gives_the_local_shards(
        world: World, s3_server: S3Server, s3_bucket: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in s3_server.env().items():  # inherited by every run started here
        monkeypatch.setenv(name, value)
    prefix = f"{s3_bucket}/jsonl-{uuid.uuid4().hex[:8]}"
    fs = s3_server.filesystem()
    for p in sorted(world.source.glob("*.jsonl.zst")):
        with fs.open_output_stream(f"{prefix}/{p.name}", compression=None) as out:  # as stored
            out.write(p.read_bytes())
    out = tmp_path / "out"
    fresh = ["--out", str(out), *world.recipe(source=f"s3://{prefix}/"), *h.FAST,  # type: ignore[arg-type]
             "--workers", "2"]
    h.kill_until_done(fresh, out, seed=5, kills_wanted=2, faults=PACE)
    got, want = h.dir_bytes(out), dict(world.reference)
    manifest, reference = json.loads(got.pop("_MANIFEST.json")), json.loads(
        want.pop("_MANIFEST.json"))
    assert got == want
    assert [(f["path"], f["size"], f["sha256"]) for f in manifest["source"]["files"]] == [
        (f["path"], f["size"], f["sha256"]) for f in reference["source"]["files"]]
