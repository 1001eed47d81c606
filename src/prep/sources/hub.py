"""Dataset repositories on the Hugging Face Hub as a source, at one pinned commit.

``--source hf://datasets/OWNER/NAME[@REVISION][/PATH]``: the revision (default ``main``; a
name holding ``/`` is URL-encoded, ``refs%2Fconvert%2Fparquet``, as ``HfFileSystem`` writes
it) is resolved to its commit SHA once, and everything after reads that commit only, so a
resume never drifts to a newer one. The files are the repository's Parquet, Arrow and JSON
Lines files (or those ``PATH`` selects, see :func:`prep.hub.paths.select_paths`), sorted
by their path from the repository root.

The listing comes from one of three places: the Hub (a fresh run); the local cache alone
(``HubOptions.offline``: :mod:`prep.hub.offline`); or the checkpoint (a resume: the commit
and files it recorded, so a resume never needs the network to list, and can never see a
changed listing). A file is read from the cache when it is there, checked against the
recorded size and hash; only a file the cache lacks is downloaded (offline: refused with the
``hf download`` command that fetches it), when the stream reaches it, never up front.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from huggingface_hub import HfApi

from prep.errors import InputError, IntegrityError
from prep.hub.calls import HubCall, HubOptions, pinned_listing
from prep.hub.files import Expected, expected_of, fetch_verified, mismatch
from prep.hub.offline import (
    CachedCommit,
    cache_dir,
    cached_file,
    download_command,
    missing_error,
    open_commit,
)
from prep.hub.paths import HubRef, dataset_uri, listing_root, parse_dataset_uri, select_paths
from prep.sources.base import Source, SourceFile
from prep.state.identity import SourceIdentity

logger = logging.getLogger(__name__)


@dataclass
class HubSource(Source):
    """A dataset repository at one commit. Files are downloaded when first asked for, and
    checked against the listing's size and hash before their path is returned."""

    repo_id: str = ""
    token: str | None = field(default=None, repr=False)
    options: HubOptions = field(default_factory=HubOptions, repr=False)
    expected: dict[str, Expected] = field(default_factory=dict, repr=False)
    _local: dict[str, Path] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    kind: ClassVar[str] = "hf"

    def changes_since(
        self, published: SourceIdentity, mtimes: dict[str, int], rehash: bool = False
    ) -> list[str]:
        """A pinned commit is the whole identity: a new commit is the change (``rehash``:
        at the same commit, every file is still read and hashed)."""
        rev = published.revision
        if rev != self.revision:
            return [f"Hub commit {rev} -> {self.revision}"]
        return super().changes_since(published, mtimes, rehash=True) if rehash else []

    def local_path(self, f: SourceFile) -> Path:
        """The verified local copy of ``f``: the cached one, else downloaded (on the first
        call). Raises ``IntegrityError``, ``InputError`` (offline: not cached) or
        ``TransientError`` (the Hub unreachable: exit 75)."""
        with self._lock:
            local = self._local.get(f.path)
            if local is None:
                local = self._from_cache(f) or self._download(f)
                self._local[f.path] = local
            return local

    def _command(self, path: str) -> str:
        return download_command(
            self.repo_id,
            "dataset",
            revision=self.revision,
            cache=cache_dir(self.options),
            files=(path,),
        )

    def _from_cache(self, f: SourceFile) -> Path | None:
        """The cached copy at the pinned commit when its bytes are the listed ones; None
        when it must be downloaded. Offline, a missing or damaged copy is refused."""
        commit, want = self.revision or "", self.expected[f.path]
        cache = cache_dir(self.options)
        hit = cached_file(self.repo_id, "dataset", f.path, commit, cache, want.size)
        offline = self.options.offline
        if hit is None:
            if offline:
                given = f"--source {self.uri}"
                raise missing_error(given, self.repo_id, "dataset", commit, cache, [f.path])
            return None
        if not (want.sha256 or want.blob_id):  # recorded before it was read: the blob's name
            want = hit.want
        problem = mismatch(hit.local, want)
        if problem is None:
            return hit.local
        if offline:
            raise IntegrityError(
                f"--source {self.uri}: the cached copy of {f.path} at commit {commit[:12]} is "
                f"damaged: {problem}. Download it again on a machine with network access: "
                f"{self._command(f.path)} --force-download",
                path=f.path,
            )
        return None  # the download below replaces it

    def _download(self, f: SourceFile) -> Path:
        commit = self.revision or ""
        call = HubCall(
            f"downloading {f.path} from {self.root}@{commit[:12]}",
            self.root,
            self.token,
            self.options,
        )
        return fetch_verified(self.repo_id, "dataset", f.path, commit, self.expected[f.path], call)


def _from_hub(
    uri: str, ref: HubRef, token: str | None, opts: HubOptions, revision: str | None
) -> tuple[str, dict[str, Expected]]:
    """``revision``, else the commit the URI's revision names now, and the files it selects
    there: one listing."""
    api = HfApi(endpoint=opts.endpoint)
    under = listing_root(ref.path)
    revision, entries = pinned_listing(
        api, ref, "dataset", f"--source {uri}", _root(ref), token, opts, revision, under, True
    )
    chosen = select_paths(list(entries), ref.path)
    if not chosen:
        have = ", ".join(sorted(entries)[:8]) or "nothing"
        more = f" and {len(entries) - 8:,} more" if len(entries) > 8 else ""
        what = f"files matching {ref.path!r}" if ref.path else "Parquet, Arrow or JSON Lines files"
        raise InputError(
            f"--source {uri}: commit {revision[:12]} holds no {what} (under "
            f"{(under or '/')!r} it has: {have}{more}); give a glob after the repository, or "
            "another revision (Parquet conversions live at @refs%2Fconvert%2Fparquet)",
            path=uri,
        )
    return revision, {p: expected_of(entries[p]) for p in chosen}


def _from_cache(
    uri: str, ref: HubRef, opts: HubOptions, revision: str | None
) -> tuple[str, dict[str, Expected]]:
    """Offline: the commit the cache's ``refs/`` name, and the files it selects from the
    cached snapshot; each must be cached (else ``InputError`` naming ``hf download``)."""
    given = f"--source {uri}"
    cached: CachedCommit = open_commit(
        ref.repo_id, "dataset", revision or ref.revision, opts, given
    )
    paths = cached.paths()
    chosen = select_paths(paths, ref.path)
    if not chosen:
        under = listing_root(ref.path)
        have = ", ".join(paths[:8]) or "nothing"
        what = f"files matching {ref.path!r}" if ref.path else "Parquet, Arrow or JSON Lines files"
        raise InputError(
            f"{given}: offline, and commit {cached.commit[:12]} in the Hugging Face cache "
            f"{cached.cache} holds no {what} (under {(under or '/')!r} it has: {have}). To "
            f"fetch them on a machine with network access run: "
            f"{cached.command(include=ref.path or '*.parquet')} (or the pattern of the files "
            "you want) ; then rerun this command",
            path=uri,
        )
    absent = [p for p in chosen if p not in cached.files]
    if absent:
        raise cached.missing(given, absent)
    known = "its recorded listing" if cached.listing is not None else "the snapshot's files"
    logger.info("offline: listing from the cache %s (%s)", cached.cache, known)
    return cached.commit, {p: cached.files[p].want for p in chosen}


def _require_cached(
    uri: str, repo_id: str, commit: str, paths: list[str], opts: HubOptions
) -> None:
    """Offline resume: every file must be in the cache, or nothing is changed (exit 1 with
    the ``hf download`` command for all that are missing)."""
    cache = cache_dir(opts)
    absent = [p for p in paths if cached_file(repo_id, "dataset", p, commit, cache) is None]
    if absent:
        raise missing_error(f"--source {uri}", repo_id, "dataset", commit, cache, absent)


def _root(ref: HubRef) -> str:
    return f"hf://datasets/{ref.repo_id}"


def resolve_hub_source(
    uri: str,
    *,
    token: str | None,
    revision: str | None = None,
    options: HubOptions | None = None,
    pinned: SourceIdentity | None = None,
) -> HubSource:
    """The files ``uri`` selects: as ``pinned`` recorded them (a resume: its commit and
    files, no network), else from the cache (``options.offline``), else listed on the Hub;
    at ``revision`` when given, else at the URI's revision (default ``main``) resolved to
    its commit now. Downloads nothing.

    Raises ``UsageError`` for a malformed URI, ``InputError`` when the repository, revision
    or matching files are missing (offline: not cached) or access is refused,
    ``TransientError`` when the Hub stays unreachable."""
    ref = parse_dataset_uri(uri)
    opts = options or HubOptions()
    if pinned is not None and pinned.revision:
        revision = pinned.revision
        expected = {f.path: Expected(f.size, f.sha256, None) for f in pinned.files}
        if opts.offline:
            _require_cached(uri, ref.repo_id, revision, list(expected), opts)
    elif opts.offline:
        revision, expected = _from_cache(uri, ref, opts, revision)
    else:
        revision, expected = _from_hub(uri, ref, token, opts, revision)
    files = [
        SourceFile(path=p, local=Path(), size=w.size, sha256=w.sha256, expected_sha256=w.sha256)
        for p, w in expected.items()
    ]
    logger.info(
        "%s at commit %s: %d files, %s bytes%s",
        _root(ref),
        revision[:12],
        len(files),
        f"{sum(f.size for f in files):,}",
        " (as the checkpoint recorded them)" if pinned is not None else "",
    )
    return HubSource(
        uri=dataset_uri(ref),  # the revision is recorded as the commit
        root=_root(ref),
        files=files,
        revision=revision,
        repo_id=ref.repo_id,
        token=token,
        options=opts,
        expected=expected,
    )
