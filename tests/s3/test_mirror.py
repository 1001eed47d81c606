"""The remote checkpoints of a run (prep.outputs.bucket.mirror.Mirror) against the real server, in
process: while the writer is busy, the checkpoints asked for queue up; when its turn comes
it writes the newest one whose uploads are done, and only that one."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow.fs as pafs
from run_helpers import commit, setup, started
from s3server import S3Server

from prep.buckets.connect import Store
from prep.buckets.uri import BucketPath
from prep.outputs.bucket.layout import BucketLayout
from prep.outputs.bucket.mirror import MAX_QUEUED, Mirror, shard_files
from prep.outputs.bucket.store import Remote
from prep.state import checkpoint as ckpt
from prep.state.checkpoint import sealed_content


def test_the_writer_writes_only_the_newest_ready_checkpoint(
        s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    s = setup(tmp_path)
    state, stream = started(s)
    fs = s3_server.filesystem()
    mirror = _mirror(s3_server, s3_bucket, s.paths.staging, "mirror/ds")
    busy = threading.Event()
    mirror._writer.submit(busy.wait)  # the writer busy: what is asked for meanwhile waits
    points = []
    try:
        for _ in range(2):
            commit(state, stream, 2)
            state.checkpoint()
            points.append(ckpt.load(s.paths.staging))
            files = sum(len(shard_files(r)) for sp in points[-1].splits.values()
                        for r in sp.sealed)
            # Past MAX_QUEUED jobs a commit waits for the oldest: here, the busy writer.
            assert files + len(points) < MAX_QUEUED, files
            mirror.committed(points[-1])
        sealed = [sum(len(sp.sealed) for sp in cp.splits.values()) for cp in points]
        assert 0 < sealed[0] < sealed[1], sealed  # two checkpoints asked for, with new shards
        mirror._uploads.shutdown(wait=True)  # every shard up: both are ready when it writes
        busy.set()
        mirror.drain()
    finally:
        busy.set()
        mirror.close()
        state.close()

    head = f"{s3_bucket}/mirror/ds.incomplete/"
    infos = fs.get_file_info(pafs.FileSelector(head.rstrip("/"), recursive=True))
    written = sorted(i.path[len(head):] for i in infos if i.path.startswith(head + "checkpoint-"))
    assert written == ["checkpoint-00000001.json"]
    with fs.open_input_stream(head + written[0]) as f:
        record = json.loads(f.read())
    assert record["seq"] == 1 and record["checkpoint"] == sealed_content(points[-1])
    newest = points[-1]
    for sp in newest.splits.values():
        for rec in sp.sealed:
            for name, _ in shard_files(rec):
                with fs.open_input_stream(f"{s3_bucket}/mirror/ds/{name}") as f:
                    assert f.read() == (s.paths.staging / name).read_bytes()


def _mirror(s3_server: S3Server, s3_bucket: str, staging: Path, key: str) -> Mirror:
    remote = Remote(Store("s3", "the test server", s3_server.filesystem()))
    return Mirror(BucketLayout(BucketPath("s3", s3_bucket, key), remote), staging, None,
                  "the test")


def _listed(s3_server: S3Server, prefix: str) -> list[str]:
    infos = s3_server.filesystem().get_file_info(pafs.FileSelector(prefix, recursive=True,
                                                                   allow_not_found=True))
    return sorted(i.path[len(prefix) + 1:] for i in infos if i.type == pafs.FileType.File)


def test_a_sealed_shard_goes_up_before_any_commit_names_it(
        s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    """The upload starts when the seal is done, in the sealing thread: a commit that waits
    for a gap between seals does not hold the shards sealed meanwhile back."""
    s = setup(tmp_path)
    state, stream = started(s)
    mirror = _mirror(s3_server, s3_bucket, s.paths.staging, "early/ds")
    for w in state.writers.values():
        w.on_sealed = mirror.sealed
    try:
        while state.rolled() == 0:
            commit(state, stream, 1)
        pause = threading.Event()
        while not all(w.seals_done() for w in state.writers.values()):
            pause.wait(0.01)  # a poll for the background seal (which always ends)
        mirror.uploaded()  # the seal started its upload: this waits for it
        sent = dict(mirror.sent)
    finally:
        mirror.close()
        state.close()
    assert sent, "no upload was started by the seal"
    assert _listed(s3_server, f"{s3_bucket}/early/ds") == sorted(sent)
    for name in sent:
        with s3_server.filesystem().open_input_stream(f"{s3_bucket}/early/ds/{name}") as f:
            assert f.read() == (s.paths.staging / name).read_bytes()
    assert _listed(s3_server, f"{s3_bucket}/early/ds.incomplete") == []  # no commit yet


def test_uploads_are_awaited_without_the_writer_and_a_publish_drops_its_last_checkpoint(
        s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    """At publish the shards must be up, not the remote checkpoint of the last commit: the
    manifest goes up while the writer is still busy, and once it is there a checkpoint not
    started is dropped instead of written."""
    s = setup(tmp_path)
    state, stream = started(s)
    mirror = _mirror(s3_server, s3_bucket, s.paths.staging, "late/ds")
    busy = threading.Event()
    mirror._writer.submit(busy.wait)  # the writer busy with an earlier checkpoint
    try:
        while state.rolled() == 0:
            commit(state, stream, 1)
        state.checkpoint()
        mirror.committed(ckpt.load(s.paths.staging))  # asks for a remote checkpoint
        asked = mirror._jobs._pending[-1]
        mirror.uploaded()  # returns with the writer still busy
        assert not busy.is_set()
        assert set(_listed(s3_server, f"{s3_bucket}/late/ds")) == set(mirror.sent)
        closing = threading.Thread(target=mirror.close, kwargs={"published": True})
        closing.start()  # drops the checkpoint asked for, then waits for the busy writer
        for _ in range(6000):  # polls for the close; a minute only bounds a failure
            if asked.cancelled():
                break
            busy.wait(0.01)
        dropped = asked.cancelled()
        busy.set()
        closing.join()
        assert dropped, "the remote checkpoint asked for was not dropped"
    finally:
        busy.set()
        mirror.close()
        state.close()
    assert _listed(s3_server, f"{s3_bucket}/late/ds.incomplete") == []
