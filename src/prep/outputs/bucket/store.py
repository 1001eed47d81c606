"""A bucket output's object calls, on one store: listing, reading and writing small objects,
uploads and downloads checked against their SHA-256, server-side copies and deletes, each
reached through ``pyarrow.fs`` by its path (``BUCKET/KEY``) with retries, and every failure
turned into a message (:func:`prep.buckets.connect.store_error`). Where each object lives is
:mod:`prep.outputs.bucket.layout`'s.

Every call is retried while its failure is transient (a lost connection, 5xx, throttling)
for :data:`RETRY_SECONDS`, with a delay that doubles from :data:`RETRY_FIRST_DELAY` up to
:data:`RETRY_MAX_DELAY`; then it raises ``TransientError`` (exit 75). A failure no retry
fixes (access denied, no such bucket, bad credentials) raises at once, as exit 1.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import pyarrow.fs as pafs

from prep.buckets.connect import STORE_ERRORS, Store, store_error
from prep.buckets.objects import copy_hashed
from prep.errors import IntegrityError, TransientError

logger = logging.getLogger(__name__)

RETRY_SECONDS = 300.0
RETRY_FIRST_DELAY = 1.0
RETRY_MAX_DELAY = 30.0

T = TypeVar("T")


class ObjectCalls(Protocol):
    """The object calls a bucket layout and its mirror make, by ``BUCKET/KEY`` path:
    :class:`Remote` on a bucket, :class:`prep.outputs.hf.store.HubObjects` on a Hub
    repository (where a write of a small object is a commit)."""

    stopping: threading.Event

    def uri(self, fs_path: str) -> str: ...
    def listing(self, prefix: str) -> list[pafs.FileInfo]: ...
    def read(self, fs_path: str) -> bytes | None: ...
    def write(self, fs_path: str, data: bytes) -> None: ...
    def upload(self, local: Path, fs_path: str, sha256: str | None,
               offset: int = 0, size: int | None = None) -> str: ...
    def download(self, fs_path: str, dest: Path, sha256: str | None,
                 append: bool = False) -> None: ...
    def copy(self, src: str, dst: str) -> None: ...
    def delete(self, fs_paths: Iterable[str]) -> None: ...
    def delete_prefix(self, prefix: str) -> None: ...


@dataclass
class Remote:
    """The object calls on one store. ``stopping`` makes a retry loop give up at once (the
    run is being abandoned)."""

    store: Store
    stopping: threading.Event = field(default_factory=threading.Event)
    reached: bool = False  # a call succeeded: a connection failure now is transient

    @property
    def fs(self) -> pafs.FileSystem:
        return self.store.fs

    def uri(self, fs_path: str) -> str:
        """The object at ``fs_path`` (``BUCKET/KEY``) as messages name it."""
        return f"{self.store.scheme}://{fs_path}"

    def call(self, doing: str, fs_path: str, fn: Callable[[], T], *, writing: bool = False) -> T:
        """``fn()``, retried as the module docstring says; raises a ``PrepError``."""
        delay, deadline = RETRY_FIRST_DELAY, time.monotonic() + RETRY_SECONDS
        attempt = 0
        while True:
            attempt += 1
            try:
                result = fn()
            except STORE_ERRORS as e:
                if isinstance(e, FileNotFoundError):
                    raise
                error = store_error(e, doing, self.uri(fs_path), self.store, self.reached,
                                    writing=writing)
                if not isinstance(error, TransientError) or self.stopping.is_set():
                    raise error from e
                if time.monotonic() + delay > deadline:
                    raise error.with_hint(
                        f"(gave up after {attempt} attempts over {RETRY_SECONDS:.0f} s)"
                    ) from e
                logger.warning("%s; retrying in %.0f s (attempt %d)", error, delay, attempt)
                if self.stopping.wait(delay):
                    raise error from e
                delay = min(delay * 2, RETRY_MAX_DELAY)
                continue
            self.reached = True
            return result

    def listing(self, prefix: str) -> list[pafs.FileInfo]:
        """The objects under ``prefix/`` (a ``BUCKET/KEY``; none for a prefix that holds
        nothing)."""

        def ls() -> list[pafs.FileInfo]:
            try:
                infos = self.fs.get_file_info(pafs.FileSelector(prefix, recursive=True))
            except FileNotFoundError:
                return []
            return [i for i in infos if i.type == pafs.FileType.File]

        return self.call("listing", prefix, ls)

    def read(self, fs_path: str) -> bytes | None:
        """A small object's bytes, or None when it does not exist."""

        def get() -> bytes | None:
            try:
                with self.fs.open_input_stream(fs_path, compression=None) as f:
                    return bytes(f.read())
            except FileNotFoundError:
                return None

        return self.call("reading", fs_path, get)

    def write(self, fs_path: str, data: bytes) -> None:
        """Write a small object whole (a PUT: readers see the old or the new content)."""

        def put() -> None:
            with self.fs.open_output_stream(fs_path, compression=None) as out:
                out.write(data)

        self.call("writing", fs_path, put, writing=True)

    def upload(self, local: Path, fs_path: str, sha256: str | None,
               offset: int = 0, size: int | None = None) -> str:
        """Upload ``size`` bytes of ``local`` from ``offset`` (the whole rest by default)
        to ``fs_path``; returns their SHA-256, and raises ``IntegrityError`` when it is not
        ``sha256`` (the local file changed after it was recorded)."""

        def put() -> str:
            h = hashlib.sha256()
            # compression=None: pyarrow would gzip a ``.gz`` name (olmo's ``.csv.gz``) again
            with open(local, "rb") as f, self.fs.open_output_stream(fs_path,
                                                                    compression=None) as out:
                f.seek(offset)
                want = os.fstat(f.fileno()).st_size - offset if size is None else size
                left = want - copy_hashed(f, out, h, want)
            if left:
                raise EOFError(f"{local} ended {left:,} bytes early")
            return h.hexdigest()

        try:
            got = self.call("uploading", fs_path, put, writing=True)
        except EOFError as e:
            raise IntegrityError(f"{e}; local staging was damaged", path=local) from e
        if sha256 is not None and got != sha256:
            raise IntegrityError(
                f"{local}: SHA-256 {got[:12]}… is not the recorded {sha256[:12]}…; the file "
                "changed after it was sealed (local staging was damaged); it was not "
                "counted as uploaded",
                path=local,
            )
        return got

    def download(self, fs_path: str, dest: Path, sha256: str | None,
                 append: bool = False) -> None:
        """Copy an object to ``dest`` (appended to it with ``append``), checking that its
        bytes have ``sha256`` (unless None); ``IntegrityError`` naming the object
        otherwise."""
        start = dest.stat().st_size if append and dest.exists() else 0

        def get() -> str:
            h = hashlib.sha256()
            mode = "r+b" if start else "wb"
            with self.fs.open_input_stream(fs_path, compression=None) as src, \
                    open(dest, mode) as out:
                out.seek(start)
                out.truncate()
                copy_hashed(src, out, h)
            return h.hexdigest()

        got = self.call("downloading", fs_path, get)
        if sha256 is not None and got != sha256:
            raise IntegrityError(
                f"{self.uri(fs_path)}: SHA-256 {got[:12]}… is not the remote checkpoint's "
                f"{sha256[:12]}…; the object was changed or damaged after it was uploaded",
                path=self.uri(fs_path),
            )

    def copy(self, src: str, dst: str) -> None:
        """A server-side copy (``pyarrow.fs``'s ``copy_file``: S3's CopyObject, GCS's
        rewrite): the bytes never pass through this process."""
        self.call("copying", src, functools.partial(self.fs.copy_file, src, dst), writing=True)

    def delete(self, fs_paths: Iterable[str]) -> None:
        """Delete objects (one already gone is no failure)."""
        for path in fs_paths:
            self.call("deleting", path, functools.partial(self._delete_one, path), writing=True)

    def delete_prefix(self, prefix: str) -> None:
        """Delete every object under ``prefix/`` (and the prefix itself where the store
        keeps directories)."""

        def rm() -> None:
            with contextlib.suppress(FileNotFoundError):
                self.fs.delete_dir(prefix)

        self.call("deleting", prefix, rm, writing=True)

    def _delete_one(self, fs_path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(fs_path)
