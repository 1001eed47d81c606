"""The Hugging Face Hub: a dataset repository at one pinned commit, and ``hf:`` tokenizers.

``--source hf://datasets/OWNER/NAME[@REVISION][/PATH]``: the revision (default ``main``; a
name holding ``/`` is URL-encoded, ``refs%2Fconvert%2Fparquet``, as ``HfFileSystem`` writes
it) is resolved to its commit SHA once, and everything after reads that commit only, so a
resume never drifts to a newer one. The files are the repository's ``*.parquet`` (or those
``PATH`` selects, see :func:`select_paths`), sorted by their path from the repository root.
Each is downloaded through ``huggingface_hub``'s cache when the stream reaches it, never up
front, and its bytes are checked against the size and hash the listing gave (the LFS
SHA-256, or the git blob id of a file stored in git) before a single row is read.

``--tokenizer hf:OWNER/NAME[@REVISION]``: ``tokenizer.json`` and, when the repository has
one, ``generation_config.json`` of a model repository, at a pinned commit, into the same
snapshot directory.

Errors: a malformed URI is a ``UsageError``; a missing repository, revision or file, or a
refused token, an ``InputError`` saying what to fix; connection failures, timeouts, 429 and
5xx are retried with exponential backoff (``RETRY_ATTEMPTS``, ``RETRY_BASE_DELAY``) and then
raise ``TransientError`` (exit 75: rerun with ``--resume``). Bytes that do not match the
listing are downloaded once more, then refused with an ``IntegrityError``.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from huggingface_hub import HfApi, hf_hub_download, try_to_load_from_cache
from huggingface_hub.errors import (
    EntryNotFoundError,
    FileMetadataError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile

from prep.errors import InputError, IntegrityError, TransientError
from prep.hub_paths import (
    HubRef,
    listing_root,
    parse_dataset_uri,
    parse_tokenizer_spec,
    select_paths,
)
from prep.sources import Source, SourceFile

logger = logging.getLogger(__name__)

RETRY_ATTEMPTS = 6  # tries per Hub call before giving up with exit 75
RETRY_BASE_DELAY = 2.0  # seconds before the second try; doubles after each failure
RETRY_MAX_DELAY = 60.0
HTTP_TIMEOUT = 30.0  # seconds for the revision look-up

_RETRY_STATUS = frozenset({408, 429})
# huggingface_hub has used requests, httpx and httpx2; their transport failures share these
# class names but no base class with the builtins.
_TRANSPORT_NAMES = frozenset({"TransportError", "TimeoutException", "NetworkError"})

T = TypeVar("T")


@dataclass(frozen=True)
class HubOptions:
    """How to reach the Hub. ``None`` means huggingface_hub's own default (``HF_ENDPOINT``,
    ``HF_HUB_CACHE``); the retry policy defaults to this module's constants."""

    endpoint: str | None = None
    cache_dir: Path | None = None
    attempts: int = field(default_factory=lambda: RETRY_ATTEMPTS)
    base_delay: float = field(default_factory=lambda: RETRY_BASE_DELAY)


# -- calling the Hub --------------------------------------------------------------------------


def _chain(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _status(e: HfHubHTTPError) -> int:
    response = getattr(e, "response", None)
    return int(getattr(response, "status_code", 0) or 0)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200]}" if text else type(e).__name__


def _is_transport(e: BaseException) -> bool:
    if isinstance(e, (ConnectionError, TimeoutError)):
        return True
    return any(c.__name__ in _TRANSPORT_NAMES for c in type(e).__mro__)


@dataclass(frozen=True)
class _Call:
    """What a Hub call is about, for messages: ``what`` failed, on which repository."""

    what: str
    repo_url: str
    token: str | None
    options: HubOptions


def _classify(e: BaseException, call: _Call) -> tuple[bool, str] | None:
    """(transient, message) for a failure of a Hub call, or None when it is not the Hub's."""
    auth = (
        "the token given was not accepted for it; pass a token that can read it with --token "
        "or HF_TOKEN"
        if call.token
        else "if it is private or gated, pass a token with --token or set HF_TOKEN"
    )
    for x in _chain(e):
        if isinstance(x, OfflineModeIsEnabled):
            return False, (
                f"{call.what}: HF_HUB_OFFLINE is set, but this needs the Hub; unset HF_HUB_OFFLINE"
            )
        if isinstance(x, LocalEntryNotFoundError):
            continue  # huggingface_hub's wrapper around the real cause
        if isinstance(x, GatedRepoError):
            return False, (
                f"{call.what}: {call.repo_url} is gated; accept its conditions on the "
                f"Hub, then pass your token with --token or set HF_TOKEN"
            )
        if isinstance(x, RepositoryNotFoundError):
            return False, (
                f"{call.what}: the Hub has no repository {call.repo_url} that this "
                f"request may read (HTTP {_status(x)}); check OWNER/NAME, and {auth}"
            )
        if isinstance(x, RevisionNotFoundError):
            return False, (
                f"{call.what}: the revision does not exist in {call.repo_url}; give "
                "an existing branch, tag or commit after @ (URL-encode a / in it: "
                "@refs%2Fconvert%2Fparquet)"
            )
        if isinstance(x, EntryNotFoundError):
            return False, f"{call.what}: the file does not exist at that commit"
        if isinstance(x, HfHubHTTPError):
            status = _status(x)
            if status in (401, 403):
                return False, (
                    f"{call.what}: the Hub refused access (HTTP {status}) to "
                    f"{call.repo_url}; {auth}"
                )
            if status in _RETRY_STATUS or status >= 500:
                return True, f"HTTP {status} from {x.response.url}"
            return False, f"{call.what}: the Hub answered HTTP {status} ({_first_line(x)})"
        if isinstance(x, FileMetadataError):
            return False, (
                f"{call.what}: the server does not answer like the Hub "
                f"({_first_line(x)}); check HF_ENDPOINT"
            )
        if _is_transport(x):
            return True, _first_line(x)
    if isinstance(e, LocalEntryNotFoundError):
        return True, _first_line(e)
    if isinstance(e, OSError) and e.errno is None:
        return True, _first_line(e)  # a truncated download; OS failures carry an errno
    return None


def _call(call: _Call, fn: Callable[[], T]) -> T:
    """``fn()``, retrying transient failures with exponential backoff; raises ``InputError``
    or ``TransientError`` for the Hub's failures, anything else unchanged."""
    attempts = max(1, call.options.attempts)
    delay = call.options.base_delay
    waited = 0.0
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as e:
            verdict = _classify(e, call)
            if verdict is None:
                raise
            transient, message = verdict
            if not transient:
                raise InputError(message) from e
            if attempt == attempts:
                raise TransientError(
                    f"{call.what}: {message}; gave up after {attempts} attempts over "
                    f"{waited:,.0f} s. Nothing was lost: rerun the same command with --resume "
                    "when the Hub is reachable"
                ) from e
            logger.warning(
                "%s: %s; retrying in %.1f s (attempt %d of %d)",
                call.what,
                message,
                delay,
                attempt + 1,
                attempts,
            )
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, RETRY_MAX_DELAY)
    raise AssertionError("unreachable")  # pragma: no cover


def _resolve_commit(api: HfApi, ref: HubRef, repo_type: str, call: _Call) -> str:
    def fetch() -> str | None:
        info = api.repo_info(
            ref.repo_id,
            repo_type=repo_type,
            revision=ref.revision or "main",
            token=call.token,
            timeout=HTTP_TIMEOUT,
        )
        return info.sha

    sha = _call(call, fetch)
    if not sha:
        raise InputError(f"{call.what}: the Hub did not report a commit for this revision")
    return sha


def _list_files(
    api: HfApi, repo_id: str, repo_type: str, commit: str, under: str, recursive: bool, call: _Call
) -> list[RepoFile]:
    def fetch() -> list[RepoFile]:
        try:
            entries = list(
                api.list_repo_tree(
                    repo_id,
                    path_in_repo=under or None,
                    recursive=recursive,
                    expand=False,
                    revision=commit,
                    repo_type=repo_type,
                    token=call.token,
                )
            )
        except HfHubHTTPError as e:  # a directory that does not exist at this commit
            if (
                under
                and _status(e) == 404
                and not isinstance(e, (RepositoryNotFoundError, RevisionNotFoundError))
            ):
                return []
            raise
        return [x for x in entries if isinstance(x, RepoFile)]

    return _call(call, fetch)


@dataclass(frozen=True)
class _Expected:
    size: int
    sha256: str | None  # the LFS SHA-256
    blob_id: str | None  # the git blob id of a file stored in git


def _mismatch(path: Path, want: _Expected) -> str | None:
    """Why the file at ``path`` is not the one listed, or None when it is."""
    size = path.stat().st_size
    if size != want.size:
        return f"the local copy is {size:,} bytes, but the Hub lists {want.size:,}"
    sha256 = hashlib.sha256()
    git = hashlib.sha1(b"blob %d\0" % size)  # git's object id, not for security
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            if want.sha256:
                sha256.update(chunk)
            elif want.blob_id:
                git.update(chunk)
    if want.sha256 and sha256.hexdigest() != want.sha256:
        return (
            f"the bytes have SHA-256 {sha256.hexdigest()[:12]}…, but the Hub lists "
            f"{want.sha256[:12]}…"
        )
    if not want.sha256 and want.blob_id and git.hexdigest() != want.blob_id:
        return (
            f"the bytes have git id {git.hexdigest()[:12]}…, but the Hub lists {want.blob_id[:12]}…"
        )
    return None


def _fetch_verified(
    repo_id: str, repo_type: str, filename: str, commit: str, want: _Expected, call: _Call
) -> Path:
    """Download ``filename`` at ``commit`` (or take it from the cache) and check it against
    the listing; a mismatch is downloaded once more, then refused with ``IntegrityError``."""
    opts = call.options

    def fetch(force: bool) -> Path:
        return Path(
            hf_hub_download(
                repo_id,
                filename,
                repo_type=repo_type,
                revision=commit,
                token=call.token,
                endpoint=opts.endpoint,
                cache_dir=opts.cache_dir,
                force_download=force,
            )
        )

    cached = try_to_load_from_cache(
        repo_id, filename, cache_dir=opts.cache_dir, revision=commit, repo_type=repo_type
    )
    t0 = time.monotonic()
    path = _call(call, lambda: fetch(False))
    if not isinstance(cached, str):
        logger.info(
            "downloaded %s: %s bytes in %.1f s", filename, f"{want.size:,}", time.monotonic() - t0
        )
    problem = _mismatch(path, want)
    if problem is None:
        return path
    logger.warning("%s: %s; downloading it again", call.what, problem)
    path = _call(call, lambda: fetch(True))
    problem = _mismatch(path, want)
    if problem is None:
        return path
    raise IntegrityError(
        f"{call.what}: {problem}, twice; these bytes are not the file the Hub lists for commit "
        f"{commit[:12]}, so they were not used. Try again later; if it persists, delete the "
        f"cached copy {path} and report it to the repository's owner",
        path=filename,
    )


def _expected(entry: RepoFile) -> _Expected:
    lfs = entry.lfs
    return _Expected(
        size=int(entry.size),
        sha256=lfs.sha256 if lfs else None,
        blob_id=None if lfs else entry.blob_id,
    )


# -- the entry points -------------------------------------------------------------------------


@dataclass
class HubSource(Source):
    """A dataset repository at one commit. Files are downloaded when first asked for, and
    checked against the listing's size and hash before their path is returned."""

    repo_id: str = ""
    token: str | None = field(default=None, repr=False)
    options: HubOptions = field(default_factory=HubOptions, repr=False)
    expected: dict[str, _Expected] = field(default_factory=dict, repr=False)
    _local: dict[str, Path] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def local_path(self, f: SourceFile) -> Path:
        """The verified local copy of ``f`` (downloaded on the first call). Raises
        ``IntegrityError``, ``InputError`` or ``TransientError``."""
        with self._lock:
            local = self._local.get(f.path)
            if local is None:
                commit = self.revision or ""
                call = _Call(
                    f"downloading {f.path} from {self.root}@{commit[:12]}",
                    self.root,
                    self.token,
                    self.options,
                )
                local = _fetch_verified(
                    self.repo_id, "dataset", f.path, commit, self.expected[f.path], call
                )
                self._local[f.path] = local
            return local


def _pinned_listing(
    api: HfApi,
    ref: HubRef,
    repo_type: str,
    given: str,
    repo_url: str,
    token: str | None,
    opts: HubOptions,
    revision: str | None,
    under: str,
    recursive: bool,
) -> tuple[str, dict[str, RepoFile]]:
    """The commit (``revision`` when given, else ``ref``'s revision resolved now) and the
    repository's files at it, by path. ``given`` names the option in messages."""
    if revision is None:
        what = f"{given}: resolving revision {ref.revision or 'main'!r}"
        revision = _resolve_commit(api, ref, repo_type, _Call(what, repo_url, token, opts))
    call = _Call(f"{given}: listing commit {revision[:12]}", repo_url, token, opts)
    files = _list_files(api, ref.repo_id, repo_type, revision, under, recursive, call)
    return revision, {e.path: e for e in files}


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
    revision, entries = _pinned_listing(
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
        want = _expected(entries[p])
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
        kind="hf",
        uri=uri,
        root=root,
        files=files,
        revision=revision,
        repo_id=ref.repo_id,
        token=token,
        options=opts,
        expected=expected,
    )


def download_tokenizer(
    spec: str, *, token: str | None, revision: str | None = None, options: HubOptions | None = None
) -> tuple[Path, str, str]:
    """``tokenizer.json`` (and ``generation_config.json`` beside it when the repository has
    one) of the model repository ``hf:OWNER/NAME[@REVISION]`` at ``revision`` when given,
    else at the spec's revision resolved to its commit now.

    Returns (path of tokenizer.json, ``OWNER/NAME``, commit SHA). Raises like
    :func:`resolve_hub_source`; ``InputError`` when the repository has no tokenizer.json."""
    ref = parse_tokenizer_spec(spec)
    opts = options or HubOptions()
    api = HfApi(endpoint=opts.endpoint)
    repo_url = f"hf:{ref.repo_id}"
    revision, entries = _pinned_listing(
        api, ref, "model", f"--tokenizer {spec}", repo_url, token, opts, revision, "", False
    )
    if "tokenizer.json" not in entries:
        raise InputError(
            f"--tokenizer {spec}: commit {revision[:12]} has no tokenizer.json (it has: "
            f"{', '.join(sorted(entries)[:8]) or 'nothing'}); choose a repository with a "
            "Hugging Face tokenizer.json, or give a local path",
            path=spec,
        )
    paths = {}
    for name in ("tokenizer.json", "generation_config.json"):
        if name in entries:
            call = _Call(
                f"--tokenizer {spec}: downloading {name} at {revision[:12]}", repo_url, token, opts
            )
            paths[name] = _fetch_verified(
                ref.repo_id, "model", name, revision, _expected(entries[name]), call
            )
    return paths["tokenizer.json"], ref.repo_id, revision
