"""``--parts N --executor ray --out s3://...`` on a real local Ray and the real S3 server: each
part stages on its own and publishes into ``NAME.parts/I-of-N/`` in the bucket (no shared
filesystem), and the merge publishes ``NAME/`` by server-side copies, the manifest last: no
shard is downloaded or uploaded by the merging process. The bytes are those of the same
parts run locally and merged; ``prep merge s3://...`` then finds it complete."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import dir_bytes
from harness import World, run
from outhelp import bucket_world, dataset_bytes, new_uri, objects
from s3server import S3Server

pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

# The merging process must not move a shard's bytes: it dies if it uploads anything, or
# downloads a shard (it reads the parts' manifests and provenance only).
NO_SHARD_TRAFFIC = [
    {"target": "prep.outputs.bucket.store.Remote.upload", "within": "merge", "action": "kill"},
    {"target": "prep.outputs.bucket.store.Remote.download", "within": "merge",
     "arg_contains": ".bin", "action": "kill"},
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return bucket_world(tmp_path_factory)


def test_ray_parts_into_a_bucket_merged_by_server_side_copies(
        world: World, s3_server: S3Server, s3_bucket: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("RAY_ADDRESS", "")  # a local Ray started for the run
    local = tmp_path / "local" / "ds"
    done = run([*world.args(local), "--parts", "2"])  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr
    expected = dir_bytes(local)

    uri = new_uri(s3_bucket)
    ray = run([*world.args(uri), "--parts", "2", "--executor", "ray"],  # type: ignore[arg-type]
              faults=NO_SHARD_TRAFFIC, timeout=600)
    assert ray.returncode == 0, ray.stderr[-3000:]
    assert dataset_bytes(s3_server, uri) == expected
    assert set(objects(s3_server, uri + ".parts")) >= {
        "0-of-2/_MANIFEST.json", "1-of-2/_MANIFEST.json"}
    assert ".shared-fs-check" not in objects(s3_server, uri + ".parts")
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)  # nothing local is needed now

    again = run(["merge", uri], faults=NO_SHARD_TRAFFIC)
    assert again.returncode == 0, again.stderr
    assert f"{uri} is already this merge" in again.stderr

    # A merge killed among its copies (here: of a dataset whose manifest and last shard
    # are gone) leaves objects of its own and no manifest; the next merge copies again.
    fs = s3_server.filesystem()
    fs.delete_file(f"{uri[5:]}/_MANIFEST.json")
    fs.delete_file(f"{uri[5:]}/{sorted(n for n in expected if n.startswith('train'))[-1]}")
    kill = {"target": "prep.outputs.bucket.store.Remote.copy", "nth": 2, "action": "kill"}
    killed = run(["merge", uri], faults=kill)
    assert killed.returncode == -9, killed.stderr
    assert "_MANIFEST.json" not in objects(s3_server, uri)
    from prep.cli.commands import main

    assert main(["merge", uri]) == 0
    assert dataset_bytes(s3_server, uri) == expected
