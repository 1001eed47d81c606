"""Objects in a bucket as a source: ``s3://BUCKET/PREFIX/`` (every Parquet, Arrow and JSON
Lines object under the prefix by its name, recursively: ``prep.globs.listed``),
``s3://BUCKET/GLOB`` or ``s3://BUCKET/KEY``; ``gs://`` the
same. Keys are sorted by their path under the root, as local files are.

The listing is pinned when the run starts: each object's size, ETag and version id
(:class:`prep.buckets.objects.ObjectPin`), recorded in the checkpoint and the manifest as the file's
``fingerprint``. A resume takes the listing from the checkpoint (nothing is listed again)
and asks every object for its headers first: one that moved is refused before anything is
changed. A file is read from a local copy downloaded as the stream nears it, checked against
its pin before and after and hashed as it arrives (:mod:`prep.buckets.copies`: where the
copies live, how many, when they go).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from prep.buckets.connect import STORE_ERRORS, Store, open_store, store_error
from prep.buckets.copies import ObjectCache
from prep.buckets.objects import (
    ObjectChanged,
    ObjectPin,
    changed,
    download,
    pin_all,
    select,
)
from prep.buckets.uri import BucketPath, parse_bucket_uri
from prep.errors import InputError, IntegrityError
from prep.sources.base import Source, SourceFile
from prep.state.identity import SourceIdentity, fingerprint_of

logger = logging.getLogger(__name__)


@dataclass
class BucketSource(Source):
    """Objects at their pinned versions, read from verified local copies."""

    kind: ClassVar[str] = "bucket"
    store: Store | None = field(default=None, repr=False)
    pins: dict[str, ObjectPin] = field(default_factory=dict, repr=False)
    cache: ObjectCache | None = field(default=None, repr=False)

    def _uri(self, f: SourceFile) -> str:
        return f"{self.root}/{f.path}"

    def plan_reads(self, files: list[SourceFile]) -> None:
        if self.cache is not None:
            self.cache.plan([self.pins[f.path] for f in files])

    def local_path(self, f: SourceFile) -> Path:
        """The verified local copy of ``f`` (downloaded on the first call, the next ones
        started). Raises ``IntegrityError`` for an object that is no longer the pinned
        version, ``TransientError`` when the store stops answering (exit 75)."""
        assert self.cache is not None and self.store is not None  # set by resolve
        try:
            local, sha = self.cache.local(self.pins[f.path])
        except ObjectChanged:
            raise
        except STORE_ERRORS as e:
            raise store_error(e, "downloading", self._uri(f), self.store, started=True) from e
        if f.sha256 is None:
            f.sha256 = sha
        elif f.sha256 != sha:  # pinned by ETag, yet other bytes: a store that reuses ETags
            raise IntegrityError(
                f"source object {self._uri(f)}: its bytes (SHA-256 {sha[:12]}…) are not the "
                f"ones read before ({f.sha256[:12]}…) under the same ETag; start a new run",
                path=self._uri(f),
            )
        return local


def _pins(store: Store, where: BucketPath, uri: str) -> tuple[BucketPath, list[ObjectPin]]:
    try:
        root, paths = select(store.fs, where)
        if not paths:
            raise InputError(
                f"--source {uri}: {store.where} holds no Parquet, Arrow or JSON Lines objects "
                f"{'matching ' + repr(where.key) if root != where else 'under ' + uri + '/'};"
                " check the prefix or pattern (keys are case-sensitive), or give one object",
                path=uri,
            )
        return root, pin_all(store.fs, paths)
    except STORE_ERRORS as e:
        raise store_error(e, "listing", uri, store, started=False) from e


def _from_checkpoint(store: Store, uri: str, pinned: SourceIdentity) -> list[ObjectPin]:
    """The checkpoint's pins, each checked against the object now (one HEAD each)."""
    root = parse_bucket_uri(pinned.root)
    recorded = []
    for f in pinned.files:
        fp = dict(f.fingerprint)
        path = f"{root.fs_path}/{f.path}"
        recorded.append(ObjectPin(path, f.size, str(fp.get("etag", "")), fp.get("version_id")))
    try:
        now = pin_all(store.fs, [p.path for p in recorded])
    except FileNotFoundError as e:
        raise IntegrityError(
            f"--source {uri}: an object the run pinned is gone ({e}); restore it and rerun "
            "with --resume, or start a new run (new --out)",
            path=uri,
        ) from e
    except STORE_ERRORS as e:
        raise store_error(e, "checking the pinned objects of", uri, store, started=False) from e
    for was, is_ in zip(recorded, now, strict=True):
        if (was.size, was.etag) != (is_.size, is_.etag) or (
            was.version_id is not None and was.version_id != is_.version_id
        ):
            raise changed(root.at(was.path).uri, was, is_, "since the run pinned it")
    return recorded


def resolve_bucket_source(spec: str, pinned: SourceIdentity | None = None) -> BucketSource:
    """The objects ``spec`` names, pinned now, or as ``pinned`` (a checkpoint) recorded
    them, after checking that none moved. Downloads nothing.

    Raises ``UsageError`` for a malformed URI; ``InputError`` for an unreachable store,
    refused credentials, a missing bucket, no matching objects or denied access;
    ``IntegrityError`` when a pinned object changed or vanished."""
    where = parse_bucket_uri(spec)
    uri = where.uri
    store = open_store(where.scheme, where.bucket)
    if pinned is not None and pinned.root:
        root = parse_bucket_uri(pinned.root)
        pins = _from_checkpoint(store, uri, pinned)
    else:
        root, pins = _pins(store, where, uri)
    start = len(root.fs_path) + 1
    files = [
        SourceFile(path=p.path[start:], local=Path(), size=p.size,
                   fingerprint=fingerprint_of(p.fingerprint()))
        for p in pins
    ]
    logger.info(
        "%s at %s: %d objects, %s bytes%s", uri, store.where, len(files),
        f"{sum(f.size for f in files):,}",
        " (as the checkpoint pinned them)" if pinned is not None else " pinned",
    )
    fetch = functools.partial(_fetch, store, root)
    return BucketSource(uri=uri, root=root.uri, files=files, store=store,
                        pins={f.path: p for f, p in zip(files, pins, strict=True)},
                        cache=ObjectCache(fetch))


def _fetch(store: Store, root: BucketPath, pin: ObjectPin, dest: Path,
           stopping: Callable[[], bool]) -> str:
    return download(store.fs, root.at(pin.path).uri, pin, dest, stopping)
