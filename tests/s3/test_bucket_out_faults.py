"""A bucket --out when the S3 server itself fails, on a server of this module's own (the
shared one must stay up). Killed and restarted while two runs upload: one waits, retrying,
and publishes; the other is killed while the server is down and resumed once it is back.
Killed and left down: a run exits 75 once its retries run out, a resume meanwhile is
refused naming the endpoint, and once it is back the resume publishes. Every published
dataset is the local run's, byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import World, gate, no_traceback, release, run, spawn, wait_for
from outhelp import bucket_world, dataset_bytes, new_uri, objects
from s3server import S3Server, running_server

BUCKET = "prep-faults"
# Retries short enough for a test: the first after 0.1 s, then every 0.5 s at most, for 3 s
# in all (``prep.outputs.bucket.store``'s constants, set before the run starts).
PATIENT = [{"target": f"prep.outputs.bucket.store.{name}", "action": "set", "value": value}
           for name, value in (("RETRY_FIRST_DELAY", 0.1), ("RETRY_MAX_DELAY", 0.5))]
# PATIENT retries for the default 300 s, long enough for any restart; QUICK for 3 s. Every
# run here has AWS_MAX_ATTEMPTS=1: pyarrow's client tries each request once, so the
# retries are prep's own (its SDK's back off for seconds first).
QUICK = [*PATIENT, {"target": "prep.outputs.bucket.store.RETRY_SECONDS", "action": "set",
                    "value": 3.0}]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return bucket_world(tmp_path_factory)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with running_server(tmp_path_factory.mktemp("own-s3")) as s:
        s.create_bucket(BUCKET)
        yield s


@pytest.fixture
def aws(server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> S3Server:
    if server.process is None:
        server.start()  # a test that failed while it was down
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    return server


def parked(where: Path) -> dict[str, object]:
    """Park the run in its second shard upload, before it sends a byte."""
    where.mkdir(exist_ok=True)
    return gate("prep.outputs.bucket.mirror.Mirror._upload_shard", where, nth=2, when="before")


def test_server_killed_and_restarted_mid_runs(world: World, aws: S3Server,
                                              tmp_path: Path) -> None:
    waits, killed = new_uri(BUCKET), new_uri(BUCKET)
    a, b = tmp_path / "a", tmp_path / "b"
    first = spawn(world.args(waits), faults=[*PATIENT, parked(a)])  # type: ignore[arg-type]
    second = spawn(world.args(killed), faults=[*PATIENT, parked(b)])  # type: ignore[arg-type]
    for where, proc in ((a, first), (b, second)):
        wait_for((where / "reached").exists, "the second upload", proc)
    aws.kill()
    release(a)
    release(b)
    for proc in (first, second):
        wait_for(lambda p=proc: "retrying in" in p.err(), "a retried upload", proc)
    second.kill()  # a run killed while the server is down
    second.wait()
    aws.start()
    code, err = first.finish()
    assert code == 0, err
    assert "lost the S3 endpoint" in err  # the failure it retried, said as it was
    assert dataset_bytes(aws, waits) == world.reference

    done = run(["--out", killed, "--resume"])
    assert done.returncode == 0, done.stderr
    assert dataset_bytes(aws, killed) == world.reference


def test_server_down_outlasting_the_retries(world: World, aws: S3Server,
                                            tmp_path: Path) -> None:
    uri = new_uri(BUCKET)
    staging = tmp_path / "staging"
    proc = spawn([*world.args(uri), "--staging", staging],  # type: ignore[arg-type]
                 faults=[*QUICK, parked(tmp_path / "gate")])
    wait_for((tmp_path / "gate" / "reached").exists, "the second upload", proc)
    aws.kill()
    release(tmp_path / "gate")
    code, err = proc.finish()
    assert code == 75, err
    assert "gave up after" in err and "nothing committed is lost: rerun with --resume" in err
    no_traceback(err)
    assert (staging / "ds.incomplete" / "checkpoint.json").is_file()

    # While it is down: a resume is refused at once, naming the endpoint and how to fix it...
    refused = run(["--out", uri, "--resume", "--staging", staging], faults=QUICK)
    assert refused.returncode == 1, refused.stderr
    assert f"cannot reach the S3 endpoint {aws.endpoint}" in refused.stderr
    no_traceback(refused.stderr)

    aws.start()  # ...and once it is back, the run goes on from its local checkpoint.
    done = run(["--out", uri, "--resume", "--staging", staging])
    assert done.returncode == 0, done.stderr
    assert dataset_bytes(aws, uri) == world.reference
    assert objects(aws, uri + ".incomplete") == {}
