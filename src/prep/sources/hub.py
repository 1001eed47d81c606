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

from prep.errors import InputError
from prep.hub.client import HubCall, HubOptions, pinned_listing
from prep.hub.files import Expected, expected_of, fetch_verified
from prep.hub.paths import listing_root, parse_dataset_uri, select_paths
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

    def changes_since(self, published: SourceIdentity, mtimes: dict[str, int]) -> list[str]:
        """A pinned commit is the whole identity: a new commit is the change."""
        rev = published.revision
        return [] if rev == self.revision else [f"Hub commit {rev} -> {self.revision}"]

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
