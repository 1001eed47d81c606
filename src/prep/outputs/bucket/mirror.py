"""A bucket run's uploads, in the background: sealed shards, then remote checkpoints.

A shard starts uploading to its final name in ``NAME/`` as soon as its seal is done
(:meth:`Mirror.sealed`, called in the sealing thread), not at the commit that will name it:
a commit may wait for a gap between seals, and shards sealed meanwhile would otherwise go up
together at its end. Each file is streamed from local staging, its SHA-256 checked against
the seal's as it is read. After every local checkpoint the run calls
:meth:`Mirror.committed`, which sends any sealed file not sent yet (a resume's). When a
commit names sealed shards no commit named before, a remote checkpoint of that commit
follows them: once they are
uploaded, the bytes the open shards gained since the previous remote checkpoint go up as
segments, then the remote checkpoint (:mod:`prep.state.remote`) replaces the previous one.
Remote checkpoints are written by one thread, in commit order, each after the uploads it
names: the bucket never holds a remote checkpoint naming an object it does not hold. When
the writer's turn comes and several are asked for, it writes the newest whose uploads are
all done and passes over the older ones (the bucket reaches each commit point no later,
with their requests saved: a checkpoint costs about ten, its segments, the check of who
owns the output, its write and the delete of the one before last).

Bounded: at most :data:`UPLOAD_THREADS` uploads at once (each streams its file in
:data:`prep.buckets.objects.CHUNK` pieces) and at most :data:`MAX_QUEUED` jobs waiting at a
commit; past that :meth:`Mirror.committed` waits for the oldest, so a slow network slows
the run instead of queueing without end (a seal never waits: the sealing backlog and the
commits bound what it adds). A failed upload (after :mod:`prep.outputs.bucket.store`'s
retries) is raised in the committing thread at its next commit, or at publish: the run
stops after its local checkpoint, and the remote checkpoint still names only what is
uploaded.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ParamSpec

from prep.errors import OutputError
from prep.outputs.bucket.layout import OPEN_DIR, BucketLayout, checkpoint_key
from prep.state.checkpoint import Checkpoint, sealed_content
from prep.state.manifest import ManifestFile
from prep.state.remote import RemoteCheckpoint, Segment
from prep.state.shards import FileRecord

logger = logging.getLogger(__name__)

UPLOAD_THREADS = 4
MAX_QUEUED = 8  # shard uploads in flight or waiting before a commit waits for the oldest
P = ParamSpec("P")


def owner_id() -> str:
    """This process, as a remote checkpoint names its writer."""
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"{socket.gethostname()} pid {os.getpid()} started {started}"


def shard_files(rec: FileRecord | ManifestFile) -> list[tuple[str, str]]:
    """Every file of a sealed shard with its SHA-256."""
    return [(rec.name, rec.sha256)] + [(c.name, c.sha256) for c in rec.companions]


class Jobs:
    """A run's background jobs, oldest first. The first failure is remembered and raised to
    the committing thread (:meth:`check`); after it, a job that had not started does
    nothing (nothing is uploaded or named after a failure)."""

    def __init__(self) -> None:
        self._pending: deque[Future[None]] = deque()
        self._lock = threading.Lock()
        self.failed: BaseException | None = None

    def __len__(self) -> int:
        return len(self._pending)

    def submit(self, pool: ThreadPoolExecutor, fn: Callable[P, None], *args: P.args,
               **kwargs: P.kwargs) -> Future[None]:
        job = pool.submit(self._guarded, functools.partial(fn, *args, **kwargs))
        with self._lock:
            self._pending.append(job)
        return job

    def _guarded(self, call: Callable[[], None]) -> None:
        if self.failed is not None:
            return
        try:
            call()
        except BaseException as e:
            self.failed = self.failed or e
            raise

    def check(self) -> None:
        """Raise the first failure, if any."""
        if self.failed is not None:
            raise self.failed

    def _oldest(self, done_only: bool) -> Future[None] | None:
        """Take the oldest job off the queue (only a finished one with ``done_only``)."""
        with self._lock:
            if not self._pending or (done_only and not self._pending[0].done()):
                return None
            return self._pending.popleft()

    def take_done(self) -> None:
        """Forget the finished jobs at the head of the queue; raise a failure."""
        while (job := self._oldest(done_only=True)) is not None:
            job.result()
        self.check()

    def drain(self, below: int = 1, waiting: Callable[[int], None] = lambda n: None) -> None:
        """Wait for the oldest jobs until fewer than ``below`` are queued (``waiting`` is
        told how many before a wait); raise the first failure."""
        while len(self._pending) >= below and (job := self._oldest(done_only=False)):
            if not job.done():
                waiting(len(self._pending) + 1)
            job.result()
        self.check()

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()


class Mirror:
    """The uploads of one run (see the module docstring). ``known``: the remote checkpoint
    the bucket holds now (its sealed shards are uploaded, its segments reusable)."""

    def __init__(self, layout: BucketLayout, staging: Path, known: RemoteCheckpoint | None,
                 owner: str, seq: int = 0) -> None:
        self.layout, self.remote = layout, layout.remote
        self.staging, self.owner = staging, owner
        self.sent: dict[str, str] = {}  # file name -> SHA-256, uploaded or uploading
        self.named: set[str] = set()  # the sealed files a commit named
        self._closed = False
        self.segments: dict[str, tuple[Segment, ...]] = {}
        self.wrote_checkpoint = False
        # The newest remote checkpoint's number (another run's too: this run's next one must
        # be newer, or a reader would take that one).
        self.seq = max(seq, 0 if known is None else known.seq)
        if known is not None:
            for split in known.local.splits.values():
                for rec in split.sealed:
                    self.sent.update(shard_files(rec))
            self.named.update(self.sent)
            self.segments = dict(known.segments)
        self._uploads = ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="prep-upload")
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="prep-remote-checkpoint")
        self._jobs = Jobs()  # every upload and remote checkpoint
        self._uploading: list[Future[None]] = []  # shard uploads not known to be done
        # Remote checkpoints asked for and not written yet, oldest first: (content, open
        # shard sizes, the uploads before it).
        self._asked: deque[tuple[dict[str, Any], dict[str, int], list[Future[None]]]] = deque()
        self._lock = threading.Lock()
        self.last: Checkpoint | None = None  # the last commit point it was told of

    def trust_segments(self, cp: Checkpoint) -> None:
        """Keep only the segments of shards still open in ``cp`` and within their committed
        bytes (a local resume that went back behind the bucket's remote checkpoint)."""
        sizes = self._open_sizes(cp)
        self.segments = {
            n: segs for n, segs in self.segments.items()
            if n in sizes and sum(s.size for s in segs) <= sizes[n]
        }

    def _open_sizes(self, cp: Checkpoint) -> dict[str, int]:
        """The committed byte length of each open shard's file: its size right after the
        commit (only the committing thread appends, and it is here)."""
        return {
            s.open.name: (self.staging / s.open.name).stat().st_size
            for s in cp.splits.values()
            if s.open is not None
        }

    def sealed(self, record: FileRecord) -> None:
        """A shard was sealed (called in its sealing thread): start uploading it now, not at
        the commit that will name it. Never waits: the bound is kept by the commits."""
        with self._lock:
            if self._closed:
                return
            self._send(shard_files(record))

    def send(self, files: list[tuple[str, str]]) -> None:
        """Upload ``files`` (name, SHA-256) from staging, those already sent too."""
        with self._lock:
            for name, _ in files:
                self.sent.pop(name, None)
            self._send(files)

    def _send(self, files: list[tuple[str, str]]) -> None:
        """Start uploading those of ``files`` not sent yet (call with the lock held)."""
        for name, sha in files:
            if self.sent.get(name) != sha:
                self.sent[name] = sha
                self._uploading.append(self._jobs.submit(self._uploads, self._upload_shard,
                                                         name, sha))

    def committed(self, cp: Checkpoint, force: bool = False) -> None:
        """Start uploading the shards ``cp`` names as sealed that are not up yet, and, when
        it names any sealed since the last commit (or ``force``), a remote checkpoint of
        ``cp`` after them. Raises the error of an upload that failed."""
        self._jobs.take_done()
        self.last = cp
        files = [pair for split in cp.splits.values() for rec in split.sealed
                 for pair in shard_files(rec)]
        new = [name for name, _ in files if name not in self.named]
        self.named.update(name for name, _ in files)
        with self._lock:
            self._send(files)
            self._uploading = [f for f in self._uploading if not f.done()]
            if self.wants_checkpoint(len(new), force):
                self._asked.append((sealed_content(cp), self._open_sizes(cp),
                                    list(self._uploading)))
                self._jobs.submit(self._writer, self._write_next)
        self._jobs.drain(below=MAX_QUEUED, waiting=lambda n: logger.info(
            "waiting for uploads to %s (%d in flight)", self.layout.uri, n))

    def wants_checkpoint(self, new: int, force: bool) -> bool:
        """Whether a commit that names ``new`` sealed files no commit named before asks for
        a remote checkpoint: always, on a bucket (a kind whose checkpoints cost more may
        gather several commits into one)."""
        return bool(new) or force

    def _upload_shard(self, name: str, sha: str) -> None:
        t0 = time.monotonic()
        path = self.staging / name
        self.remote.upload(path, self.layout.in_dataset(name), sha)
        size = path.stat().st_size
        where = self.remote.uri(self.layout.in_dataset(name))
        logger.info("uploaded %s: %s bytes in %.1f s", where, f"{size:,}", time.monotonic() - t0)

    def _write_next(self) -> None:
        """Write the newest remote checkpoint asked for whose uploads are done, once the
        oldest one's are (nothing, when an earlier call wrote the last one asked for)."""
        with self._lock:
            if not self._asked:
                return
            oldest = self._asked[0]
        for upload in oldest[2]:  # every upload before it, not only its commit's
            upload.result()  # a failed one fails the checkpoint that would have named it
        with self._lock:  # a newer one's uploads include every older one's still running
            ready = [a for a in self._asked if all(f.done() for f in a[2])]
            while self._asked[0] is not ready[-1]:
                self._asked.popleft()
            content, sizes, uploads = self._asked.popleft()
        for upload in uploads:
            upload.result()
        self._checkpoint(content, sizes)

    def _checkpoint(self, content: dict[str, Any], sizes: dict[str, int]) -> None:
        # An upload that failed may be one this checkpoint would name (a commit forgets
        # the finished ones): after any failure, none is written.
        self._jobs.check()
        self.check_owner()  # before anything more goes into NAME.incomplete/
        segments: dict[str, tuple[Segment, ...]] = {}
        for name, size in sizes.items():
            segs = self.segments.get(name, ())
            covered = sum(s.size for s in segs)
            if size > covered:
                key = self.layout.in_incomplete(f"{OPEN_DIR}/{name}.{covered}-{size}")
                sha = self.remote.upload(self.staging / name, key, None, covered, size - covered)
                segs = (*segs, Segment(key, covered, size - covered, sha))
            segments[name] = segs
        self.segments = segments
        record = RemoteCheckpoint(content, segments, self.owner, self.seq + 1)
        self.remote.write(self.layout.in_incomplete(checkpoint_key(record.seq)),
                          record.to_bytes())
        self.seq, self.wrote_checkpoint = record.seq, True
        if record.seq > 2:  # the one before stays: a reader falls back to it
            self.remote.delete([self.layout.in_incomplete(checkpoint_key(record.seq - 2))])
        rows = content["progress"]["rows_visited"]
        sealed = sum(len(s["sealed"]) for s in content["splits"].values())
        logger.info("remote checkpoint %d at row %s (%d sealed shards) in %s", record.seq,
                    f"{rows:,}", sealed, self.layout.incomplete.uri)

    def check_owner(self) -> None:
        """Stop when another run took this output over (it wrote a remote checkpoint since
        this one's last): two writers must not replace each other's checkpoints, nor the
        one publish while the other goes on. Safe beside the writer: the newest checkpoint
        is this run's if this process wrote it (its ``owner`` names the process)."""
        if not self.wrote_checkpoint:
            return  # this run's first: it takes the output over
        current = self.layout.checkpoint()
        if current is not None and current.owner == self.owner:
            return
        where = self.layout.incomplete.uri
        what = (f"holds a remote checkpoint written by another run ({current.owner})"
                if current is not None else "no longer holds this run's remote checkpoint")
        raise OutputError(
            f"{where}/ {what} since this one's last: another machine resumed (or published) "
            f"{self.layout.uri}. This run stopped without writing its own; let the "
            "other run finish (or stop it and rerun with --resume here)",
            path=where,
        )

    def uploaded(self) -> None:
        """Wait for every shard upload started so far, not for the remote checkpoints;
        raise the first failure."""
        with self._lock:
            uploads = list(self._uploading)
        for upload in uploads:
            upload.result()
        self._jobs.check()

    def drain(self) -> None:
        """Wait for every upload and remote checkpoint; raise the first failure."""
        self._jobs.drain()

    def close(self, wait: bool = True, *, published: bool = False) -> None:
        """Stop the threads. Without ``wait``, jobs not started are dropped and a retrying
        one gives up (the run is failing anyway). ``published``: the manifest is written,
        so a remote checkpoint not started is dropped too (it is of no use now); one being
        written ends first."""
        with self._lock:
            self._closed = True  # a seal that ends now uploads nothing
        if not wait:
            self.remote.stopping.set()
        self._uploads.shutdown(wait=True, cancel_futures=not wait)
        # Cancels what has not started before it waits for the running one.
        self._writer.shutdown(wait=True, cancel_futures=published or not wait)
        self._jobs.clear()
