"""Dataset repositories on the Hugging Face Hub as a source, at one pinned commit.

``--source hf://datasets/OWNER/NAME[@REVISION][/PATH]``: the revision (default ``main``; a
name holding ``/`` is URL-encoded, ``refs%2Fconvert%2Fparquet``, as ``HfFileSystem`` writes
it) is resolved to its commit SHA once, and everything after reads that commit only, so a
resume never drifts to a newer one. The files are the repository's ``*.parquet`` (or those
``PATH`` selects, see :func:`prep.hub.paths.select_paths`), sorted by their path from the
repository root. Each is downloaded through ``huggingface_hub``'s cache when the stream
reaches it, never up front, and checked against the listing before a single row is read.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from huggingface_hub import HfApi

from prep.errors import InputError, IntegrityError
from prep.hub.cache import CachedCommit, open_commit
from prep.hub.client import HubCall, HubOptions, pinned_listing
from prep.hub.files import Expected, expected_of, fetch_verified, mismatch
from prep.hub.paths import listing_root, parse_dataset_uri, select_paths
from prep.sources.base import Source, SourceFile
from prep.state.identity import SourceIdentity

logger = logging.getLogger(__name__)


@dataclass
class PinnedHubSource(Source):
    """A dataset repository at one commit: the commit is the whole identity."""

    kind: ClassVar[str] = "hf"

    def changes_since(self, published: SourceIdentity, mtimes: dict[str, int]) -> list[str]:
        """A new commit is the change."""
        rev = published.revision
        return [] if rev == self.revision else [f"Hub commit {rev} -> {self.revision}"]


@dataclass
class HubSource(PinnedHubSource):
    """A dataset repository at one commit. Files are downloaded when first asked for, and
    checked against the listing's size and hash before their path is returned."""

    repo_id: str = ""
    token: str | None = field(default=None, repr=False)
    options: HubOptions = field(default_factory=HubOptions, repr=False)
    expected: dict[str, Expected] = field(default_factory=dict, repr=False)
    _local: dict[str, Path] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def local_path(self, f: SourceFile) -> Path:
        """The verified local copy of ``f`` (downloaded on the first call). Raises
        ``IntegrityError``, ``InputError`` or ``TransientError``."""
        with self._lock:
            local = self._local.get(f.path)
            if local is None:
                commit = self.revision or ""
                call = HubCall(
                    f"downloading {f.path} from {self.root}@{commit[:12]}",
                    self.root,
                    self.token,
                    self.options,
                )
                local = fetch_verified(
                    self.repo_id, "dataset", f.path, commit, self.expected[f.path], call
                )
                self._local[f.path] = local
            return local


def resolve_hub_source(
    uri: str, *, token: str | None, revision: str | None = None, options: HubOptions | None = None
) -> HubSource:
    """The files ``uri`` selects, at ``revision`` when given (a resume passes the recorded
    commit SHA), else at the URI's revision (default ``main``) resolved to its commit now.

    Lists the repository once; downloads nothing. Raises ``UsageError`` for a malformed
    URI, ``InputError`` when the repository, revision or matching files are missing or
    access is refused, ``TransientError`` when the Hub stays unreachable."""
    ref = parse_dataset_uri(uri)
    opts = options or HubOptions()
    api = HfApi(endpoint=opts.endpoint)
    root = f"hf://datasets/{ref.repo_id}"
    under = listing_root(ref.path)
    revision, entries = pinned_listing(
        api, ref, "dataset", f"--source {uri}", root, token, opts, revision, under, True
    )
    chosen = select_paths(list(entries), ref.path)
    if not chosen:
        have = ", ".join(sorted(entries)[:8]) or "nothing"
        more = f" and {len(entries) - 8:,} more" if len(entries) > 8 else ""
        what = f"files matching {ref.path!r}" if ref.path else "*.parquet files"
        raise InputError(
            f"--source {uri}: commit {revision[:12]} holds no {what} (under "
            f"{(under or '/')!r} it has: {have}{more}); give a glob after the repository, or "
            "another revision (Parquet conversions live at @refs%2Fconvert%2Fparquet)",
            path=uri,
        )
    files, expected = [], {}
    for p in chosen:
        want = expected_of(entries[p])
        expected[p] = want
        files.append(
            SourceFile(
                path=p,
                local=Path(),
                size=want.size,
                sha256=want.sha256,
                expected_sha256=want.sha256,
            )
        )
    logger.info(
        "%s at commit %s: %d files, %s bytes",
        root,
        revision[:12],
        len(files),
        f"{sum(f.size for f in files):,}",
    )
    return HubSource(
        uri=uri,
        root=root,
        files=files,
        revision=revision,
        cwd=os.getcwd(),
        repo_id=ref.repo_id,
        token=token,
        options=opts,
        expected=expected,
    )


@dataclass
class CachedHubSource(PinnedHubSource):
    """A dataset repository at one commit, read from the cache: each file is checked against
    its blob's hash before its path is returned, once."""

    cached: CachedCommit | None = field(default=None, repr=False)
    _checked: set[str] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def local_path(self, f: SourceFile) -> Path:
        """The verified cached copy of ``f``; ``IntegrityError`` when its bytes are not the
        file the cache says they are."""
        cached = self.cached
        if cached is None:
            raise RuntimeError("a cached source without its commit")
        entry = cached.files.get(f.path)
        if entry is None:
            raise cached.missing(f"--source {self.uri}", [f.path])
        with self._lock:
            if f.path not in self._checked:
                problem = mismatch(entry.local, entry.want)
                if problem is not None:
                    raise IntegrityError(
                        f"{self.uri}: the cached copy of {f.path} at commit "
                        f"{cached.commit[:12]} is damaged: {problem}. Download"
                        f" it again on a machine with network access: "
                        f"{cached.command((f.path,))} --force-download",
                        path=f.path,
                    )
                self._checked.add(f.path)
        return entry.local


def resolve_cached_source(
    uri: str, *, revision: str | None = None, options: HubOptions | None = None
) -> CachedHubSource:
    """The files ``uri`` selects at ``revision`` (a resume passes the recorded commit), else
    at the URI's revision resolved through the cache's ``refs/``; reads nothing but the cache.

    Raises ``UsageError`` for a malformed URI and ``InputError`` (naming the ``hf download``
    command) when the revision, or a file the URI selects, is not in the cache."""
    ref = parse_dataset_uri(uri)
    given = f"--source {uri}"
    cached = open_commit(
        ref.repo_id, "dataset", revision or ref.revision, options or HubOptions(), given
    )
    paths = cached.paths()
    chosen = select_paths(paths, ref.path)
    if not chosen:
        under = listing_root(ref.path)
        have = ", ".join(paths[:8]) or "nothing"
        what = f"files matching {ref.path!r}" if ref.path else "*.parquet files"
        raise InputError(
            f"{given}: offline, and commit {cached.commit[:12]} in the Hugging Face cache "
            f"{cached.cache} holds no {what} (under {(under or '/')!r} it has: {have}). To "
            f"fetch them on a machine with network access run: "
            f"{cached.command(include=ref.path or '*.parquet')} ; then rerun this command",
            path=uri,
        )
    absent = [p for p in chosen if p not in cached.files]
    if absent:
        raise cached.missing(given, absent)
    files = []
    for p in chosen:
        want = cached.files[p].want
        files.append(
            SourceFile(
                path=p,
                local=cached.files[p].local,
                size=want.size,
                sha256=want.sha256,
                expected_sha256=want.sha256,
            )
        )
    complete = "its recorded listing" if cached.listing is not None else "the snapshot's files"
    logger.info(
        "hf://datasets/%s at commit %s, offline from %s (%s): %d files, %s bytes",
        ref.repo_id,
        cached.commit[:12],
        cached.cache,
        complete,
        len(files),
        f"{sum(f.size for f in files):,}",
    )
    return CachedHubSource(
        uri=uri,
        root=f"hf://datasets/{ref.repo_id}",
        files=files,
        revision=cached.commit,
        cwd=os.getcwd(),
        cached=cached,
    )
