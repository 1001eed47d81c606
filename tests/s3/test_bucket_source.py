"""``--source s3://...``: a corpus in a bucket on the real S3 server (tests/s3server.py)
gives the same shards and per-file SHA-256 as the same files read locally; the listing is
pinned (ETag in the manifest, the checkpoint's listing on resume); an object rewritten in
the middle of a run or before a resume stops it with exit 1 naming it; a refresh trusts an
unchanged ETag and downloads only a changed object (``--rehash``: every object); no
credential lands in anything written or printed. The runs are few and shared: one chain
(stopped, refused, resumed, refreshed) over a prefix of its own."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import dir_bytes
from harness import (
    FAST,
    World,
    gate,
    make_world,
    no_traceback,
    ops_corpus,
    release,
    run,
    spawn,
    staging_of,
    wait_for,
    write_plain,
)
from s3server import S3Server

from prep.buckets.copies import READ_AHEAD
from prep.sources import canonical_source, resolve_source
from prep.sources.bucket import BucketSource


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("bucketworld"), ops_corpus(4, 300),
                      reference=True)


@pytest.fixture(scope="module")
def corpus_uri(world: World, s3_server: S3Server, s3_bucket: str) -> str:
    """The world's source files uploaded under a prefix of their own (plus a file that is
    not Parquet, which a prefix must pass over)."""
    prefix = f"{s3_bucket}/corpus-{uuid.uuid4().hex[:8]}"
    fs = s3_server.filesystem()
    for p in sorted(world.source.glob("*.parquet")):
        put(fs, f"{prefix}/{p.name}", p.read_bytes())
    put(fs, f"{prefix}/README.md", b"not parquet")
    return f"s3://{prefix}/"


def put(fs, path: str, data: bytes) -> None:  # type: ignore[no-untyped-def]
    with fs.open_output_stream(path) as out:
        out.write(data)


@pytest.fixture
def aws(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """This process's environment (inherited by every run it starts) set for ``rw``."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server


def args(world: World, uri: str, out: Path, *extra: object) -> list[str]:
    """Worker processes read the objects (from the local cache), as for any source larger
    than this one (a source this small would be read by the main process)."""
    return ["--out", str(out), *world.recipe(source=uri), "--workers", "2",  # type: ignore[arg-type]
            *map(str, extra)]


def assert_like_reference(world: World, out: Path) -> None:
    """The same shards, byte for byte, and the same per-file SHA-256 as the local run."""
    got, want = dir_bytes(out), dict(world.reference)
    manifest = json.loads(got.pop("_MANIFEST.json"))
    reference = json.loads(want.pop("_MANIFEST.json"))
    assert got == want
    assert [(f["path"], f["size"], f["sha256"]) for f in manifest["source"]["files"]] == [
        (f["path"], f["size"], f["sha256"]) for f in reference["source"]["files"]]


def assert_no_credential(aws: S3Server, root: Path, *printed: str) -> None:
    """No key or secret in anything printed, nor in any file under ``root``."""
    written = [p.read_bytes() for p in root.rglob("*") if p.is_file()]
    for secret in (*aws.secrets(), aws.env()["AWS_ACCESS_KEY_ID"]):
        assert not any(secret in text for text in printed)
        assert not any(secret.encode() in data for data in written)


def test_prefix_glob_and_object_select_as_locally(world: World, corpus_uri: str,
                                                  aws: S3Server) -> None:
    prefix = corpus_uri.rstrip("/")
    assert canonical_source(corpus_uri) == prefix
    everything = resolve_source(corpus_uri, None)
    assert [f.path for f in everything.files] == [p.name for p in sorted(
        world.source.glob("*.parquet"))]
    some = resolve_source(f"{prefix}/part-0000[13].parquet", None)
    assert (some.root, [f.path for f in some.files]) == (
        prefix, ["part-00001.parquet", "part-00003.parquet"])
    deep = resolve_source(f"s3://{prefix.split('/')[2]}/**/part-00002.parquet", None)
    assert [f.path for f in deep.files] == [f"{prefix.split('/', 3)[3]}/part-00002.parquet"]
    one = resolve_source(f"{prefix}/part-00002.parquet", None)
    assert (one.root, [(f.path, f.size) for f in one.files]) == (
        prefix, [("part-00002.parquet", world.path(2).stat().st_size)])


def test_planning_the_reads_starts_the_first_downloads(world: World, corpus_uri: str,
                                                       aws: S3Server) -> None:
    """The first objects of the read order download as soon as it is known (while the run
    builds its engine and starts its workers), before a reader asks for any."""
    source = resolve_source(corpus_uri, None)
    assert isinstance(source, BucketSource) and source.cache is not None
    try:
        source.plan_reads(source.files)
        started = source.cache._futures  # nothing was asked for: these are the plan's
        first = source.files[:READ_AHEAD]
        assert sorted(started) == sorted(source.pins[f.path].path for f in first)
        for f in first:
            local, sha = started[source.pins[f.path].path].result()
            data = (world.source / f.path).read_bytes()
            assert (local.read_bytes(), sha) == (data, hashlib.sha256(data).hexdigest())
    finally:
        source.cache.close()


@pytest.fixture
def private(world: World, aws: S3Server) -> Iterator[str]:
    """A prefix of the world's files this test may rewrite."""
    prefix = f"prep-tests/mine-{uuid.uuid4().hex[:8]}"
    fs = aws.filesystem()
    for p in sorted(world.source.glob("*.parquet")):
        put(fs, f"{prefix}/{p.name}", p.read_bytes())
    yield f"s3://{prefix}"


def rewrite(aws: S3Server, world: World, uri: str, index: int) -> None:
    """Object ``index`` rewritten with one character changed (same size, new ETag)."""
    texts = list(world.files[index])
    texts[5] = texts[5].replace("doc", "DOC", 1)
    local = write_plain(world.root / "edited" / f"part-{index:05d}.parquet", texts)
    put(aws.filesystem(), f"{uri[5:]}/part-{index:05d}.parquet", local.read_bytes())


def downloads(where: Path, only: str = "") -> dict[str, str]:
    """A fault that records each object download (of ``only``'s objects) in ``where``."""
    fault = {"target": "prep.sources.bucket.download", "action": "record", "record": str(where)}
    return {**fault, "arg_contains": only} if only else fault


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_rewritten_objects_stop_a_run_and_its_resume_and_a_refresh_reads_only_them(
        world: World, private: str, aws: S3Server, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # An object rewritten in the middle of a run (while its download waits) stops the run,
    # naming it; what was committed stays.
    where = tmp_path / "gate"
    where.mkdir()
    fault = gate("prep.sources.bucket.download", where, when="before")
    proc = spawn(args(world, f"{private}/", out, *FAST),
                 faults=[{**fault, "arg_contains": "part-00003"}])
    wait_for((where / "reached").exists, "the download of part-00003", proc)
    rewrite(aws, world, private, 3)
    release(where)
    code, err = proc.finish()
    assert code == 1, err
    assert f"{private} at the S3 endpoint" in err and "4 objects" in err and "pinned" in err
    changed = f"source object {private}/part-00003.parquet changed since the run pinned it"
    assert changed in err
    assert "ETag" in err
    no_traceback(err)
    assert staging_of(out).exists()
    assert_no_credential(aws, tmp_path, err)  # the checkpoint, the staged shards, the log

    # A resume asks every pinned object first: refused while one differs, nothing changed.
    before = sorted(p.name for p in staging_of(out).iterdir())
    refused = run(["--out", out, "--resume"])
    assert refused.returncode == 1, refused.stderr
    assert changed in refused.stderr
    no_traceback(refused.stderr)
    assert sorted(p.name for p in staging_of(out).iterdir()) == before

    # Put back (the same bytes: the same ETag), it goes on to the bytes of a local run.
    put(aws.filesystem(), f"{private[5:]}/part-00003.parquet", world.path(3).read_bytes())
    done = run(["--out", out, "--resume"])
    assert done.returncode == 0, done.stderr
    assert "as the checkpoint pinned them" in done.stderr  # not listed again
    assert_like_reference(world, out)
    manifest = json.loads((out / "_MANIFEST.json").read_text())
    assert (manifest["source"]["kind"], manifest["source"]["uri"]) == ("bucket", private)
    fs = aws.filesystem()
    for f in manifest["source"]["files"]:  # each object's ETag as the store gives it
        with fs.open_input_file(f"{private[5:]}/{f['path']}") as obj:
            assert f["fingerprint"]["etag"] == obj.metadata()["ETag"].decode()

    # A refresh trusts the unchanged ETags: up to date, no object downloaded.
    calls = tmp_path / "downloads"
    fresh = run(args(world, private, out, "--refresh"), faults=[downloads(calls)])
    assert fresh.returncode == 0, fresh.stderr
    assert "is up to date" in fresh.stderr
    assert lines(calls) == 0
    # --rehash trusts no ETag: every object is downloaded and hashed, and found unchanged.
    every = tmp_path / "downloads-all"
    rehash = run(args(world, private, out, "--refresh", "--rehash"), faults=[downloads(every)])
    assert rehash.returncode == 0, rehash.stderr
    assert "is up to date" in rehash.stderr
    assert lines(every) == len(world.files)
    # An object rewritten (same size, new ETag) is downloaded, and only it; its bytes decide.
    # (The run is stopped once it decided, before it rebuilds: the rebuild is any run's.)
    rewrite(aws, world, private, 1)
    stop = {"target": "prep.run.increment.hash_and_check", "when": "before", "action": "kill"}
    one = tmp_path / "downloads-1"
    seen = run(args(world, private, out, "--refresh"),
               faults=[downloads(calls), downloads(one, "part-00001"), stop])
    assert seen.returncode == -9, seen.stderr
    assert "changed: part-00001.parquet: content changed" in seen.stderr
    assert (lines(calls), lines(one)) == (1, 1)
    assert_no_credential(aws, tmp_path, *(r.stderr for r in (refused, done, fresh, rehash, seen)))
