"""``--out s3://BUCKET/PREFIX/NAME`` on the real S3 server (tests/s3server.py): the same
shards and manifest as the local run; durable in the bucket as it goes, so that a kill
during an upload or between an upload and its remote checkpoint, with the local staging
kept or lost, resumes to the same bytes; refusals (objects in the way, --refresh, no write
permission, a wrong endpoint) exit 1 saying what, where and how, and leave nothing."""

from __future__ import annotations

import ast
import json
import shutil
import signal
from pathlib import Path

import pytest
from conftest import dir_bytes
from harness import Done, World, gate, no_traceback, paced, release, run, spawn, wait_for
from outhelp import (
    bucket_world,
    dataset_bytes,
    named,
    new_uri,
    objects,
    remote_checkpoint,
    secrets_absent,
)
from s3server import S3Server, free_ports

from prep.errors import IntegrityError


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return bucket_world(tmp_path_factory)


@pytest.fixture
def aws(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> S3Server:
    """This process's environment (inherited by the runs it starts) set for ``rw``, and the
    user's cache directory (the default staging) under the test's own directory."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return s3_server


@pytest.fixture(scope="module")
def published(world: World, s3_server: S3Server, s3_bucket: str,
              tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Done, Path]:
    """One uninterrupted run into the bucket: its URI, how it ended, its cache directory."""
    cache = tmp_path_factory.mktemp("published-cache")
    uri = new_uri(s3_bucket)
    env = {**s3_server.env(), "XDG_CACHE_HOME": str(cache)}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        return uri, run(world.args(uri)), cache  # type: ignore[arg-type]


def test_publishes_the_local_runs_bytes(world: World, s3_server: S3Server,
                                        published: tuple[str, Done, Path]) -> None:
    aws = s3_server
    uri, done, cache = published
    assert done.returncode == 0, done.stderr
    assert dataset_bytes(aws, uri) == world.reference
    assert sorted(objects(aws, uri)) == sorted([*world.reference, "_PROVENANCE.json"])
    assert objects(aws, uri + ".incomplete") == {}  # the run's remote state is gone
    staging = cache / "prep/staging/s3" / uri.removeprefix("s3://")
    assert f"staging {uri} locally in {staging}.incomplete" in done.stderr
    assert not Path(f"{staging}.incomplete").exists()
    assert f"published {uri}" in done.stderr and "uploaded " in done.stderr
    # no line names a place after it is gone: the run's .incomplete prefix is removed first
    after = done.stderr.split(f"published {uri}", 1)[1]
    assert ".incomplete" not in after and "remote checkpoint" not in after, after
    secrets_absent(aws, done.stderr, cache)


def test_readers_take_a_bucket_dataset_and_refuse_an_incomplete_one(
        world: World, aws: S3Server, published: tuple[str, Done, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from prep import TokenStream
    from prep.cli.commands import main

    uri = published[0]
    assert main(["verify", uri]) == 0 and f"{uri}: OK" in capsys.readouterr().out
    for described in (uri, f"{uri}/_MANIFEST.json"):
        assert main(["inspect", described]) == 0
        assert "dataset ds: tokenizer" in capsys.readouterr().out
    assert main(["inspect", f"{uri}/train-00001.bin", "--first", "3"]) == 0
    assert "train-00001.bin: llmc uint16 ids" in capsys.readouterr().out

    remote = TokenStream(uri, "val", seq_len=16)  # copied once into the reader cache
    here = TokenStream(world.reference_dir, "val", seq_len=16)  # type: ignore[arg-type]
    assert len(remote) == len(here) > 0
    assert all((remote[i][0] == here[i][0]).all() for i in range(len(here)))
    cached = list((tmp_path / "cache/prep/datasets/s3").rglob("val-00000.bin"))
    assert len(cached) == 1 and cached[0].read_bytes() == world.reference["val-00000.bin"]

    # A copy without its manifest (the state of an interrupted publish): incomplete.
    fs, copy = aws.filesystem(), new_uri(uri.split("/")[2])
    for name in world.reference:
        if name != "_MANIFEST.json":
            fs.copy_file(f"{uri[5:]}/{name}", f"{copy[5:]}/{name}")
    assert main(["verify", copy]) == 1
    said = capsys.readouterr().out
    assert f"{copy} is incomplete: no _MANIFEST.json, so it is not read as a dataset" in said
    assert main(["inspect", copy]) == 1
    assert "is incomplete" in capsys.readouterr().err
    with pytest.raises(IntegrityError, match="is incomplete"):
        TokenStream(copy, "train")

    # A tampered shard is named by verify (its copy is re-hashed).
    fs.copy_file(f"{uri[5:]}/_MANIFEST.json", f"{copy[5:]}/_MANIFEST.json")
    with fs.open_output_stream(f"{copy[5:]}/train-00001.bin") as f:
        f.write(world.reference["train-00002.bin"])
    assert main(["verify", copy]) == 1
    assert "train-00001.bin: SHA-256" in capsys.readouterr().out


def test_a_prefix_in_use_and_refresh_are_refused(world: World, aws: S3Server,
                                                 s3_bucket: str, cli) -> None:  # type: ignore[no-untyped-def]
    uri = new_uri(s3_bucket)
    with aws.filesystem().open_output_stream(uri[5:] + "/notes.txt") as f:
        f.write(b"mine")
    refused = cli("prepare", *world.args(uri))  # type: ignore[arg-type]
    assert refused.code == 1, refused.err
    assert f"{uri}/ holds 1 objects and no _MANIFEST.json" in refused.err
    assert "never overwrites objects" in refused.err and "Choose another --out" in refused.err
    no_traceback(refused.err)
    assert objects(aws, uri) == {"notes.txt": b"mine"}
    assert objects(aws, uri + ".incomplete") == {}

    refresh = cli("prepare", *world.args(new_uri(s3_bucket)), "--refresh")  # type: ignore[arg-type]
    assert refresh.code == 1, refresh.err
    assert "a bucket has no rename" in refresh.err and "readers would see a mix" in refresh.err
    no_traceback(refresh.err)


def test_no_write_permission_a_wrong_endpoint_and_no_credentials(
        world: World, s3_server: S3Server, s3_bucket: str, tmp_path: Path, cli,  # type: ignore[no-untyped-def]
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each refused with exit 1 saying what, where and how to fix it; nothing left."""
    uri, staging = new_uri(s3_bucket), tmp_path / "staging"
    for name, value in s3_server.env("ro").items():
        monkeypatch.setenv(name, value)
    denied = cli("prepare", *world.args(uri), "--staging", staging)  # type: ignore[arg-type]
    assert denied.code == 1, denied.err
    assert f"{uri}.incomplete/" in denied.err and "access denied by the S3 endpoint" in (
        denied.err)
    assert "grant this identity s3:PutObject" in denied.err
    no_traceback(denied.err)
    assert objects(s3_server, uri) == {} and objects(s3_server, uri + ".incomplete") == {}
    assert not (staging / "ds.incomplete").exists()  # nothing committed, nothing kept

    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # no backoff before failing
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # discard: nothing listens
    lost = cli("prepare", *world.args(uri), "--staging", staging)  # type: ignore[arg-type]
    assert lost.code == 1, lost.err
    assert f"listing {uri}: cannot reach the S3 endpoint http://127.0.0.1:9" in lost.err
    assert "check AWS_ENDPOINT_URL" in lost.err
    no_traceback(lost.err)

    # gs:// has no local server: without credentials (and its metadata server sent to a
    # closed port), refused before anything is written.
    monkeypatch.setattr("prep.buckets.connect.GCS_RETRY_SECONDS", 1.0)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    closed = f"127.0.0.1:{free_ports(1)[0]}"
    for name, value in (("HOME", str(tmp_path)), ("CLOUDSDK_CONFIG", str(tmp_path)),
                        ("GCE_METADATA_ROOT", closed), ("GCE_METADATA_HOST", closed)):
        monkeypatch.setenv(name, value)
    gs = cli("prepare", *world.args("gs://some-bucket/tokens/ds"),  # type: ignore[arg-type]
             "--staging", staging)
    assert gs.code == 1, gs.err
    assert "gs://some-bucket/tokens/ds: Google Cloud Storage has no valid credentials" in (
        gs.err)
    assert "set GOOGLE_APPLICATION_CREDENTIALS" in gs.err
    assert sorted(p.name for p in staging.iterdir()) == ["ds.lock"]  # as DIR.lock is kept



KILL_AFTER_UPLOAD = {"target": "prep.outputs.bucket.mirror.Mirror._upload_shard", "nth": 3,
                     "action": "kill"}


def test_killed_during_an_upload_resumes_from_the_bucket_alone(
        world: World, aws: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    """The local staging is lost with the machine: another directory, another --staging,
    the remote checkpoint alone. Its val shard was open since row 0, with documents from
    before the train shards it names: its committed bytes come back from their segments."""
    uri = new_uri(s3_bucket)
    # Parked in the first shard upload after the third remote checkpoint, its bytes sent
    # and the upload not completed; killed there. Paced (batches of 64 documents, a
    # fraction of a shard, 0.05 s after each), so that shards are still being sealed, and
    # their uploads started, long after that checkpoint.
    sending = {**gate("prep.outputs.bucket.store.copy_hashed", tmp_path), "within": "_upload_shard",
               "after_log": "remote checkpoint 3 "}
    first = spawn([*world.args(uri, "--batch-size", 64), "--staging", tmp_path / "a"],  # type: ignore[arg-type]
                  faults=[sending, paced(0.05)])
    wait_for((tmp_path / "reached").exists, "an upload after the third remote checkpoint",
             first)
    first.kill()
    assert first.wait() == -9
    record = remote_checkpoint(aws, uri)
    assert record is not None and record["seq"] >= 3 and len(named(record)) >= 2
    val = record["checkpoint"]["splits"]["val"]["open"]
    assert val["n_docs"] > 0 and sum(s["size"] for s in record["segments"][val["name"]]) > 0
    shutil.rmtree(tmp_path / "a")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run(["--out", uri, "--resume", "--staging", tmp_path / "b"], cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "restoring it from the remote checkpoint" in done.stderr
    assert dataset_bytes(aws, uri) == world.reference
    assert objects(aws, uri + ".incomplete") == {}


def test_killed_between_an_upload_and_its_remote_checkpoint(
        world: World, aws: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    """The object is there, the remote checkpoint does not name it; the local staging
    survived and is used (as today), and what is uploaded is reconciled with it."""
    uri = new_uri(s3_bucket)
    first = run(world.args(uri), faults=KILL_AFTER_UPLOAD)  # type: ignore[arg-type]
    assert first.returncode == -9, first.stderr
    record = remote_checkpoint(aws, uri)
    assert record is not None
    shards = {n for n in objects(aws, uri) if n.endswith(".bin")}
    assert shards - named(record), "an uploaded shard the remote checkpoint does not name"

    done = run(["--out", uri, "--resume"])
    assert done.returncode == 0, done.stderr
    assert "restoring it from the remote checkpoint" not in done.stderr
    assert dataset_bytes(aws, uri) == world.reference
    manifest = json.loads(objects(aws, uri)["_MANIFEST.json"])
    assert sorted(objects(aws, uri)) == sorted(
        [f["name"] for f in manifest["files"]] + ["_MANIFEST.json", "_PROVENANCE.json"])


def test_sigterm_leaves_the_bucket_at_its_last_commit(world: World, aws: S3Server,
                                                      s3_bucket: str, tmp_path: Path) -> None:
    """A preemption notice: the run checkpoints, uploads what that checkpoint names and
    writes its remote checkpoint, then exits 75; a replacement loses nothing."""
    uri, where = new_uri(s3_bucket), tmp_path / "gate"
    where.mkdir()
    parked = gate("prep.outputs.bucket.mirror.Mirror._upload_shard", where, nth=2, when="before")
    # Paced (batches of 64 documents, 0.02 s after each): the stream is far from its end
    # when the signal comes (unpaced, its last batch could be the current one: published).
    proc = spawn([*world.args(uri, "--batch-size", 64), "--staging", tmp_path / "a"],  # type: ignore[arg-type]
                 faults=[parked, paced(0.02)])
    wait_for((where / "reached").exists, "the second upload", proc)
    proc.send_signal(signal.SIGTERM)
    release(where)
    code, err = proc.finish()
    assert code == 75, err
    local = json.loads((tmp_path / "a" / "ds.incomplete" / "checkpoint.json").read_text())
    record = remote_checkpoint(aws, uri)
    assert record is not None
    assert record["checkpoint"]["progress"] == local["progress"]  # the stop's own commit

    shutil.rmtree(tmp_path / "a")
    done = run(["--out", uri, "--resume", "--staging", tmp_path / "b"])
    assert done.returncode == 0, done.stderr
    assert f"at row {local['progress']['rows_visited']:,}" in done.stderr
    assert dataset_bytes(aws, uri) == world.reference


def test_a_second_machine_takes_the_run_over(world: World, aws: S3Server, s3_bucket: str,
                                             tmp_path: Path) -> None:
    """The local lock cannot see another machine: the later run takes over (it restores
    from the bucket and publishes), the earlier one stops before writing another remote
    checkpoint, and what is published is one run's bytes."""
    uri, where = new_uri(s3_bucket), tmp_path / "gate"
    where.mkdir()
    parked = gate("prep.outputs.bucket.mirror.Mirror._checkpoint", where, nth=3, when="before")
    # Paced (0.05 s after each batch), so that the remote checkpoints keep up with the
    # shards sealed: a writer that falls behind passes over the older ones, and a run over
    # before its third would never reach the gate.
    first = spawn([*world.args(uri), "--staging", tmp_path / "a"],  # type: ignore[arg-type]
                  faults=[parked, paced(0.05)])
    wait_for((where / "reached").exists, "the first machine's third remote checkpoint", first)
    second = run(["--out", uri, "--resume", "--staging", tmp_path / "b"])
    assert second.returncode == 0, second.stderr
    assert dataset_bytes(aws, uri) == world.reference
    release(where)
    code, err = first.finish()
    assert code == 1, err
    assert "another machine resumed (or published)" in err and "stopped without" in err
    no_traceback(err)
    assert dataset_bytes(aws, uri) == world.reference
    assert objects(aws, uri + ".incomplete") == {}


@pytest.mark.parametrize("parked_at", [
    "prep.outputs.bucket.run.BucketRun.publish_objects",  # before publish starts
    "prep.outputs.bucket.mirror.Mirror.uploaded",  # while publish waits for the last uploads
])
def test_a_run_taken_over_does_not_publish(world: World, aws: S3Server, s3_bucket: str,
                                          tmp_path: Path, parked_at: str) -> None:
    """Parked in its publish (before it, or while it waits for its last shards to upload)
    while another machine resumes and publishes the same output: it then finds the bucket
    no longer holds its remote checkpoint and stops, writing nothing (publish does not
    wait for its last remote checkpoint, whose check would have found it, and checks only
    once its uploads are done)."""
    uri, where = new_uri(s3_bucket), tmp_path / "gate"
    where.mkdir()
    parked = gate(parked_at, where, when="before")
    first = spawn([*world.args(uri), "--staging", tmp_path / "a"],  # type: ignore[arg-type]
                  faults=[parked])
    wait_for((where / "reached").exists, "the first machine's publish", first)
    second = run(["--out", uri, "--resume", "--staging", tmp_path / "b"])
    assert second.returncode == 0, second.stderr
    published = objects(aws, uri)
    release(where)
    code, err = first.finish()
    assert code == 1, err
    assert "another machine resumed (or published)" in err, err
    no_traceback(err)
    assert objects(aws, uri) == published  # not even its _PROVENANCE.json
    assert dataset_bytes(aws, uri) == world.reference


def _listed_prefixes(mark: Path, uri: str) -> list[str]:
    """Which prefix each listing the run asked of the bucket was of (in order): the names
    below ``uri``'s parent that the fault driver's record of ``Remote.listing`` shows."""
    name = uri.rpartition("/")[2]
    said = []
    for line in mark.read_text().splitlines():
        listed = ast.literal_eval(line.partition(": ")[2])[-1]
        said.append(name + ".incomplete" if f"{name}.incomplete" in listed else name)
    return said


def test_a_run_lists_the_dataset_prefix_once_before_the_lock_and_once_under_it(
        world: World, aws: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    """A fresh run asks the bucket what ``NAME/`` holds once before it takes the lock (to
    refuse a prefix in use without leaving a lock file), once under it (another run may
    have published meanwhile) and once when it publishes (what is uploaded already); it
    lists ``NAME.incomplete/`` once in each of the first two looks and once before its
    publish (has another machine taken the run over?). Counted at prep's own boundary,
    ``Remote.listing``, through a real run against the real server."""
    uri, mark = new_uri(s3_bucket), tmp_path / "listings"
    record = {"target": "prep.outputs.bucket.store.Remote.listing", "action": "record",
              "record": str(tmp_path / "record"), "when": "before"}
    done = run(world.args(uri), faults=[record], mark=mark)
    assert done.returncode == 0, done.stderr
    assert dataset_bytes(aws, uri) == world.reference
    listed = _listed_prefixes(mark, uri)
    assert listed.count("ds") == 3, listed
    assert listed[:4] == ["ds", "ds.incomplete", "ds", "ds.incomplete"], listed
    assert listed[-2:] == ["ds.incomplete", "ds"], listed  # the publish: owner, then uploads


def test_fixed_packing_parts_merge_into_the_bucket_as_into_a_directory(
        world: World, aws: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    """``--pack fixed --parts 2`` into the bucket: the merged files that sit where the
    merged cut puts them are server-side copies of the parts' objects, the others are cut
    again locally and uploaded; the bytes are those of the same run into a directory."""
    local = tmp_path / "local" / "ds"
    done = run(world.args(local, "--pack", "fixed", "--parts", "2"))  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr
    uri = new_uri(s3_bucket)
    done = run(world.args(uri, "--pack", "fixed", "--parts", "2"))  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr
    merged = dataset_bytes(aws, uri)
    assert merged == dir_bytes(local)
    parts = set(objects(aws, uri + ".parts").values())
    shards = [d for n, d in merged.items() if n.endswith(".bin")]
    assert any(d in parts for d in shards) and not all(d in parts for d in shards)
    staging = tmp_path / "cache" / "prep" / "staging"
    assert staging.is_dir() and not list(staging.glob("**/recut"))  # written, then removed
