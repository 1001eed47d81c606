"""Objects pinned and read back verified: what makes a bucket as trustworthy a source as a
local file.

A listing names keys and sizes only, so each selected object is asked for its headers
(HEAD) when the run starts: its ETag, and its version id where the bucket keeps versions.
That :class:`ObjectPin` is the object's identity for the whole run. A download
(:func:`download`) checks the headers against the pin before the first byte and after the
last (pyarrow reads an object as ranged GETs), and the byte count against the pinned size,
hashing the bytes with SHA-256 as they arrive: a local copy exists only when it holds
exactly the pinned version, and its digest is known without a second read.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pyarrow.fs as pafs

from prep.buckets.uri import BucketPath
from prep.errors import IntegrityError
from prep.globs import fixed_lead, has_glob, listed

CHUNK = 8 << 20  # bytes per read of an object (a ranged GET) or of a file being uploaded
HEAD_THREADS = 16  # HEAD requests in flight while pinning a listing
_ETAG_KEYS = ("ETag", "etag")
_VERSION_KEYS = ("VersionId", "x-amz-version-id", "generation")


class _Reads(Protocol):
    def read(self, n: int, /) -> bytes: ...


class _Writes(Protocol):
    def write(self, data: bytes, /) -> object: ...


class _Hashes(Protocol):
    def update(self, data: bytes, /) -> None: ...


def copy_hashed(src: _Reads, out: _Writes, h: _Hashes, size: int | None = None,
                stopped: Callable[[], bool] = lambda: False) -> int:
    """Copy ``src`` into ``out`` (at most ``size`` bytes; to its end, for None) in
    :data:`CHUNK` reads, feeding ``h`` (a ``hashlib`` object); returns how many were copied.
    No read asks for more than is left: pyarrow's streams then hand back Python bytes of
    that size (Arrow buffers, from its mimalloc pool, measured twice the page faults).
    Raises ``InterruptedError`` once ``stopped()``."""
    got = 0
    while size is None or got < size:
        chunk = src.read(CHUNK if size is None else min(CHUNK, size - got))
        if not chunk:
            break
        if stopped():
            raise InterruptedError("stopped")
        h.update(chunk)
        out.write(chunk)
        got += len(chunk)
    return got


@dataclass(frozen=True)
class ObjectPin:
    """One object as the run pinned it: ``path`` is ``BUCKET/KEY`` (pyarrow's name)."""

    path: str
    size: int
    etag: str
    version_id: str | None

    def fingerprint(self) -> dict[str, str | None]:
        """What a manifest records of the version read (besides size and SHA-256)."""
        return {"etag": self.etag, "version_id": self.version_id}


def _header(meta: Mapping[str, bytes], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        value = meta.get(k)
        if value:
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


def head(fs: pafs.FileSystem, path: str) -> ObjectPin:
    """The object's current size, ETag and version (one HEAD). Raises ``OSError``."""
    with fs.open_input_file(path) as f:
        meta = f.metadata()
        return ObjectPin(path, f.size(), _header(meta, _ETAG_KEYS) or "",
                         _header(meta, _VERSION_KEYS))


def pin_all(fs: pafs.FileSystem, paths: Iterable[str]) -> list[ObjectPin]:
    """:func:`head` of every path, in order, ``HEAD_THREADS`` at a time."""
    with ThreadPoolExecutor(HEAD_THREADS, thread_name_prefix="prep-head") as pool:
        return list(pool.map(lambda p: head(fs, p), paths))


def _segments_match(pattern: list[str], key: list[str]) -> bool:
    """A glob's ``/``-separated segments against a key's, ``**`` spanning any number."""
    if not pattern:
        return not key
    if pattern[0] == "**":
        return any(_segments_match(pattern[1:], key[i:]) for i in range(len(key) + 1))
    return bool(key) and fnmatch.fnmatchcase(key[0], pattern[0]) and _segments_match(
        pattern[1:], key[1:])


def select(fs: pafs.FileSystem, where: BucketPath) -> tuple[BucketPath, list[str]]:
    """The objects ``where`` names, as ``BUCKET/KEY`` paths sorted by key, and the root they
    are named relative to: one object (its own name, under its parent); a glob (every match,
    ``**`` spanning ``/``, under its fixed lead); else a prefix (every source file under it,
    recursively: ``globs.listed``). Raises ``OSError`` from the store."""
    segments = where.key.split("/") if where.key else []
    if has_glob(where.key):
        lead = fixed_lead(segments)
        root = BucketPath(where.scheme, where.bucket, "/".join(lead))
        rest = segments[len(lead):]
        keys = [k for k in _listing(fs, root) if _segments_match(rest, _below(root, k))]
        return root, sorted(keys)
    # The listing first: a refusal says why in its body (a HEAD's has none).
    keys = sorted(k for k in _listing(fs, where) if listed(k))
    if not keys and where.key and fs.get_file_info(where.fs_path).type == pafs.FileType.File:
        return BucketPath(where.scheme, where.bucket, "/".join(segments[:-1])), [where.fs_path]
    return where, keys


def _below(root: BucketPath, path: str) -> list[str]:
    return path[len(root.fs_path):].lstrip("/").split("/")


def _listing(fs: pafs.FileSystem, root: BucketPath) -> list[str]:
    # allow_not_found would also hide a missing bucket: only an empty prefix is "nothing"
    selector = pafs.FileSelector(root.fs_path, recursive=True)
    try:
        infos = fs.get_file_info(selector)
    except FileNotFoundError:
        return []
    return [i.path for i in infos if i.type == pafs.FileType.File]


class ObjectChanged(IntegrityError):
    """An object is no longer the version the run pinned."""


def changed(uri: str, pin: ObjectPin, now: ObjectPin, when: str) -> ObjectChanged:
    """The refusal for an object whose size, ETag or version moved (``when``: "since the run
    pinned it", "while prep was downloading it")."""
    diffs = [f"{name} {a} -> {b}" for name, a, b in (
        ("size", f"{pin.size:,}", f"{now.size:,}"), ("ETag", pin.etag, now.etag),
        ("version", pin.version_id, now.version_id)) if a != b]
    return ObjectChanged(
        f"source object {uri} changed {when} ({'; '.join(diffs)}); the dataset cannot "
        "continue from different data and nothing read from the new version was committed. "
        "Restore the pinned version (a versioned bucket keeps it) and rerun with --resume, or "
        "start a new run (new --out) to use the new data",
        path=uri,
    )


def _same(pin: ObjectPin, now: ObjectPin) -> bool:
    return (now.size, now.etag) == (pin.size, pin.etag) and (
        pin.version_id is None or now.version_id == pin.version_id)


def check_pin(fs: pafs.FileSystem, uri: str, pin: ObjectPin, when: str) -> None:
    """Raise :class:`ObjectChanged` when the object is no longer ``pin`` (one HEAD)."""
    now = head(fs, pin.path)
    if not _same(pin, now):
        raise changed(uri, pin, now, when)


def download(fs: pafs.FileSystem, uri: str, pin: ObjectPin, dest: Path,
             stopping: Callable[[], bool] = lambda: False) -> str:
    """Copy the pinned version to ``dest`` (a temp file beside it, renamed once whole) and
    return its SHA-256, computed from the bytes as they arrive. Not fsynced: ``dest`` is a
    copy in one process's private cache (:mod:`prep.buckets.copies`), which a crash throws
    away with the process.

    Raises :class:`ObjectChanged` when the object is not the pinned version before, during
    or after the copy; ``OSError`` from the store or the local disk; ``InterruptedError``
    when ``stopping()`` turns true (the temp file is removed)."""
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    h = hashlib.sha256()
    try:
        # compression=None: pyarrow would decompress a ``.gz``/``.zst`` object on the way
        with fs.open_input_stream(pin.path, compression=None) as src, open(tmp, "wb") as out:
            meta = src.metadata()
            size = _header(meta, ("Content-Length",))
            first = ObjectPin(pin.path, pin.size if size is None else int(size),
                              _header(meta, _ETAG_KEYS) or "", _header(meta, _VERSION_KEYS))
            if not _same(pin, first):
                raise changed(uri, pin, first, "since the run pinned it")
            try:
                got = copy_hashed(src, out, h, pin.size, stopping)
            except InterruptedError:
                raise InterruptedError(f"download of {uri} stopped") from None
        if got != pin.size:
            raise changed(uri, pin, ObjectPin(pin.path, got, pin.etag, pin.version_id),
                          "while prep was downloading it")
        check_pin(fs, uri, pin, "while prep was downloading it")
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return h.hexdigest()
