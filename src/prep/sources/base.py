"""A source: an ordered list of files with identities, behind one small interface.

A source resolves to a root and a list of :class:`SourceFile` sorted by their path relative
to the root (POSIX strings). Each file's SHA-256 is computed when the file is first read
(and checked against an expected value, on resume). What differs between kinds of source
(where the bytes come from, what "modified" means, how rows are counted up front) is a
method of :class:`Source`; nothing outside ``prep.sources`` asks which kind it has.

The recorded hash must describe the very bytes that were tokenized, yet hashing and parsing
are two reads, and a file can be rewritten in place between them (same size, by a sync tool
or an upstream job). So a file is opened once (:func:`open_verified`): it is hashed and
parsed through that one descriptor, which a rename or replacement of the path cannot
redirect, and its (inode, size, mtime, ctime) recorded when it was hashed are re-checked
with ``fstat`` (:func:`check_unchanged`) after every record batch is read, before its rows
go downstream to be committed. Any change fails the run (``IntegrityError``, exit 1) with
the last checkpoint intact. ctime cannot be set from user space, so an in-place write is
seen even when the writer restores the mtime; the one blind spot is a write within the
filesystem's timestamp granularity of the hash (a few milliseconds on Linux before 6.13's
fine-grained timestamps) that also keeps the size.

Worker processes open a file by path, each for its rows of one row group, so the main
process fixes the file's signature once, through its own descriptor, before any worker
reads it (``parquet.identify``), and every worker checks that it opened that very file
(:func:`open_identified`), before hashing it, after hashing it and after every record batch.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

from prep.errors import InputError, IntegrityError
from prep.fsio import hash_file
from prep.sources.kinds import PARQUET, Kind, Unit
from prep.state.changes import listing_changes, trusted
from prep.state.identity import FileIdentity, Fingerprint, SourceIdentity

# Every kind of --source, as messages list them (the CLI's help spells the same list out).
SOURCE_FORMS = ("a Parquet, Arrow or JSON Lines (.jsonl, .jsonl.gz, .jsonl.zst) file, a "
                "directory of them (searched recursively), a glob, hf://datasets/OWNER/NAME, "
                "s3://BUCKET/PREFIX, gs://BUCKET/PREFIX")

logger = logging.getLogger(__name__)

Signature = tuple[int, int, int, int]  # (inode, size, mtime_ns, ctime_ns) from fstat


@dataclass
class SourceFile:
    """One source file (Parquet, Arrow or JSON Lines). ``sha256`` is filled when the file
    is read (or hashed at finish); ``expected_sha256`` comes from a checkpoint and is
    checked then."""

    path: str  # relative to the source root, POSIX
    local: Path
    size: int
    mtime_ns: int = 0
    sha256: str | None = None
    expected_sha256: str | None = None
    # (inode, size, mtime_ns, ctime_ns) of the bytes ``sha256`` was computed from
    signature: tuple[int, int, int, int] | None = None
    fingerprint: Fingerprint = ()  # the version without reading it (see FileIdentity)
    kind: Kind = PARQUET  # what its content is, once opened (names its rows in messages)
    # its units as the main process planned them, for the signature they were read at
    units: tuple[Signature, tuple[Unit, ...]] | None = None

    def identity(self) -> FileIdentity:
        return FileIdentity(self.path, self.size, self.sha256, self.fingerprint)


@dataclass
class Source:
    """A resolved source: its URI (canonical: see :func:`prep.sources.canonical_source`), the
    root, the files in sorted order (before any file shuffle) and the pinned revision.
    ``kind`` names the variant in saved identities (data, never branched on)."""

    kind: ClassVar[str] = ""
    uri: str
    root: str
    files: list[SourceFile]
    revision: str | None = None

    def local_path(self, f: SourceFile) -> Path:
        """The local file to read (a Hub source downloads it here)."""
        return f.local

    def local_view(self) -> Source:
        """A plain copy that reads each file at ``SourceFile.local`` (for worker processes:
        no network session or lock to carry; the main process resolves the local paths)."""
        return Source(self.uri, self.root, [], self.revision)

    def identity(self) -> SourceIdentity:
        """The identity a checkpoint records (files in sorted order)."""
        return SourceIdentity(
            self.kind,
            self.uri,
            self.root,
            "",  # paths are canonical: no directory to resolve them from
            self.revision,
            tuple(f.identity() for f in self.files),
        )

    def plan_reads(self, files: list[SourceFile]) -> None:
        """The order the run will read ``files`` in (a source that fetches files can start
        on the next ones early); default: nothing to do."""

    def modified_since(self, f: SourceFile, recorded_mtime_ns: int | None) -> bool:
        """Whether a file not read yet changed since the run recorded it (default: a pinned
        source cannot change)."""
        return False

    def total_rows(self, files: list[SourceFile]) -> int | None:
        """Rows in ``files`` (for progress and ETA); None when unknown without reading."""
        return None

    def changes_since(
        self, published: SourceIdentity, mtimes: dict[str, int], rehash: bool = False
    ) -> list[str]:
        """How this source differs from a published identity of the same kind, one line per
        change, sorted by path: the listing's changes (added, removed, resized files, a new
        revision), then every file of the same path and size whose fingerprint does not
        vouch for it (:func:`prep.state.changes.trusted`; ``mtimes``: the published run's
        source mtimes, for files recorded without one), or every such file with ``rehash``,
        is read and hashed, and its bytes decide. Nothing else is read."""
        changes = listing_changes(published, self.identity())
        before = {f.path: f for f in published.files}
        same = 0
        for f in self.files:
            was = before.get(f.path)
            if was is None or was.size != f.size:
                continue
            if not rehash and trusted(was, f.identity(), mtimes.get(f.path) == f.mtime_ns):
                continue
            hash_and_check(self, f)
            if f.sha256 != was.sha256:
                changes.append(f"{f.path}: content changed")
            elif was.fingerprint and not rehash:
                same += 1
        if same:
            logger.info(
                "%s read again and found unchanged (its fingerprint moved, its bytes did not: "
                "a touch, a copy, a restore); a refresh reads such a file again each time "
                "until a new version of the dataset records its new fingerprint",
                f"{same:,} source file" + ("" if same == 1 else "s"),
            )
        return sorted(changes)

    def changes_from(
        self, published: SourceIdentity, mtimes: dict[str, int], rehash: bool = False
    ) -> list[str]:
        """How this source differs from a published identity of any kind (``rehash``: read
        and hash every file, trusting no fingerprint)."""
        if published.kind != self.kind:
            return [f"source kind {published.kind} -> {self.kind}"]
        return self.changes_since(published, mtimes, rehash)


def arm_expected(
    source: Source,
    saved: SourceIdentity,
    mtimes: dict[str, int],
    reused: frozenset[str] = frozenset(),
) -> list[str]:
    """Arm the per-file hash checks of the files a run already read (``expected_sha256``);
    returns the paths of files not read yet that were modified since (no hash yet, so the
    source's own evidence decides).

    ``reused``: the files a refresh continued after (it took their SHA-256 from the
    published manifest or hashed them when it planned, and never reads them): each one whose
    fingerprint is still the one recorded is trusted as the refresh trusted it
    (:func:`prep.state.changes.trusted`), so resuming a refresh does not read the whole
    published corpus; any other is hashed before the run goes on."""
    recorded = {f.path: f for f in saved.files}
    touched = []
    for f in source.files:
        was = recorded.get(f.path)
        if was is not None and was.sha256:
            f.expected_sha256 = was.sha256
            if f.path in reused and trusted(was, f.identity()):
                f.sha256 = was.sha256
        elif source.modified_since(f, mtimes.get(f.path)):
            touched.append(f.path)
    return touched


def hash_and_check(source: Source, f: SourceFile) -> None:
    """Fill ``f.sha256`` (once) and refuse a file whose bytes changed since recorded.

    Raises ``IntegrityError`` for changed bytes, ``InputError`` for a file that cannot be
    read (permissions, vanished): bad input, not a failure of the output side."""
    if f.sha256 is None:
        open_verified(source, f).close()
    _check_expected(f)


def _signature(fd: int) -> tuple[int, int, int, int]:
    st = os.fstat(fd)
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _unreadable(f: SourceFile, e: OSError) -> InputError:
    return InputError(
        f"{f.path}: cannot read the source file ({e.strerror or e}); fix its permissions or "
        "restore it",
        path=f.path,
    )


def _changed_while_reading(f: SourceFile) -> IntegrityError:
    return IntegrityError(
        f"source file {f.path} changed while prep was reading it (its inode, size, mtime or "
        "ctime moved since it was hashed); none of the rows read after the change were "
        "committed and the last checkpoint is intact. Wait for whatever writes the source "
        "to finish, then restore the original file and rerun with --resume, or start a new "
        "run (new --out) to use the new data",
        path=f.path,
    )



def signature_of(fobj: IO[bytes]) -> Signature:
    """The open file's (inode, size, mtime_ns, ctime_ns)."""
    return _signature(fobj.fileno())


def open_verified(source: Source, f: SourceFile) -> IO[bytes]:
    """Open ``f`` once for hashing and parsing alike: hash it through this descriptor
    unless it was hashed before with the same signature, record that signature, check the
    expected hash, and return the file at offset 0 (the caller closes it).

    Raises ``IntegrityError`` for a size or hash that is not the recorded one, or a file
    changed while it was hashed; ``InputError`` for a file that cannot be opened."""
    return _open(source, f, None, hash_it=True)


def open_identified(
    source: Source, f: SourceFile, signature: Signature | None, hash_it: bool
) -> IO[bytes]:
    """Open ``f`` in a worker process as the very file the main process identified when it
    planned the work (``signature``, from the main process's own descriptor; None when it
    could not open the file, which is then opened and hashed as :func:`open_verified`
    does). Hash it through this descriptor when ``hash_it``; return it at offset 0 with
    ``f.signature`` set, so :func:`check_unchanged` holds every later read to that file.

    Every worker reading a part of the file checks the same signature, and the worker that
    hashes it checks it before and after hashing, so the recorded digest covers exactly the
    bytes tokenized, as with one descriptor. Raises ``IntegrityError`` when the path now
    names another file or the file changed since, ``InputError`` when it cannot be opened."""
    if signature is None:
        return _open(source, f, None, hash_it=True)
    return _open(source, f, signature, hash_it)


def _open(source: Source, f: SourceFile, expect: Signature | None, hash_it: bool) -> IO[bytes]:
    local = source.local_path(f)
    try:
        fobj = open(local, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    except OSError as e:
        raise _unreadable(f, e) from e
    try:
        sig = _signature(fobj.fileno())
        if expect is not None and sig != expect:
            raise _changed_while_reading(f)
        if hash_it:
            if f.sha256 is None or sig != f.signature:
                _hash(fobj, f, sig)
            _check_expected(f)
        f.signature = sig
        fobj.seek(0)
    except OSError as e:
        fobj.close()
        raise _unreadable(f, e) from e
    except BaseException:
        fobj.close()
        raise
    return fobj


def _hash(fobj: IO[bytes], f: SourceFile, sig: Signature) -> None:
    """Hash the open file into ``f.sha256``, refusing a size other than the recorded one
    and a file that changed while it was hashed (or since an earlier hash)."""
    if sig[1] != f.size:
        raise IntegrityError(
            f"source file {f.path} is {sig[1]:,} bytes, but {f.size:,} were "
            "recorded; the source changed during or since the run. Start a new run "
            "(new --out) to use the new data",
            path=f.path,
        )
    sha = hash_file(fobj).hexdigest()
    if _signature(fobj.fileno()) != sig:
        raise _changed_while_reading(f)
    if f.sha256 is not None and sha != f.sha256:  # hashed earlier, then rewritten
        raise _changed_while_reading(f)
    f.sha256 = sha


def check_unchanged(fobj: IO[bytes], f: SourceFile) -> None:
    """Raise ``IntegrityError`` if the open file is no longer the one that was hashed."""
    if _signature(fobj.fileno()) != f.signature:
        raise _changed_while_reading(f)


def _check_expected(f: SourceFile) -> None:
    if f.expected_sha256 is not None and f.sha256 != f.expected_sha256:
        raise IntegrityError(
            f"source file {f.path} changed since the run started (SHA-256 {f.sha256!s:.12}… "
            f"is not the recorded {f.expected_sha256[:12]}…); the dataset cannot continue "
            "from different data. Restore the original file or start a new run (new --out)",
            path=f.path,
        )
