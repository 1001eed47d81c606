"""The Hugging Face Hub client: every call prep makes to the Hub goes through
:func:`call_hub`, which classifies failures and retries the transient ones.

Errors: a missing repository, revision or file, or a refused token, is an ``InputError``
saying what to fix (a token refused a write, ``HubCall.writing``: an ``OutputError``);
connection failures, timeouts, 429 and 5xx are retried with exponential backoff
(``RETRY_ATTEMPTS``, ``RETRY_BASE_DELAY``) and then raise ``TransientError`` (exit 75:
rerun with ``--resume``). This package knows repositories and files, never sources.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from huggingface_hub import HfApi, constants
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
from huggingface_hub.hf_api import RepoFile, RepoFolder

from prep.errors import InputError, OutputError, TransientError
from prep.hub.paths import HubRef

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
    ``HF_HUB_CACHE``); the retry policy defaults to this module's constants. ``offline``:
    never reach the Hub, read the cache only (:mod:`prep.hub.offline`)."""

    endpoint: str | None = None
    cache_dir: Path | None = None
    offline: bool = False
    attempts: int = field(default_factory=lambda: RETRY_ATTEMPTS)
    base_delay: float = field(default_factory=lambda: RETRY_BASE_DELAY)


def offline_default() -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub read it: offline mode unless told otherwise."""
    is_offline = getattr(constants, "is_offline_mode", None)
    return bool(is_offline()) if callable(is_offline) else bool(constants.HF_HUB_OFFLINE)


# -- calling the Hub --------------------------------------------------------------------------


def _chain(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _status(e: BaseException) -> int:
    response = getattr(e, "response", None)
    return int(getattr(response, "status_code", 0) or 0)


def http_status(e: BaseException) -> int:
    """The HTTP status of the first answer in ``e``'s chain of causes (0: none): what the Hub
    said behind an ``InputError`` :func:`call_hub` raised, or behind an ``HfHubHTTPError``."""
    for x in _chain(e):
        if getattr(x, "response", None) is not None:
            return _status(x)
    return 0


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200]}" if text else type(e).__name__


def _is_transport(e: BaseException) -> bool:
    if isinstance(e, (ConnectionError, TimeoutError)):
        return True
    return any(c.__name__ in _TRANSPORT_NAMES for c in type(e).__mro__)


@dataclass(frozen=True)
class HubCall:
    """What a Hub call is about, for messages: ``what`` failed, on which repository."""

    what: str
    repo_url: str
    token: str | None
    options: HubOptions
    writing: bool = False  # a refused token (401, 403) is then an OutputError: write access


def _classify(e: BaseException, call: HubCall) -> tuple[bool, str] | None:
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
                f"{call.what}: HF_HUB_OFFLINE is set, but this needs the Hub; unset "
                "HF_HUB_OFFLINE, or download the files first (docs/operations.md)"
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


def write_refused(call: HubCall, status: int) -> OutputError:
    """The refusal of a write the token may not make, saying which token to pass."""
    return OutputError(
        f"{call.what}: the Hub refused to let this token write to {call.repo_url} "
        f"(HTTP {status}); pass a token with write access to it (a fine-grained token with "
        "write on this repository, or a write token) with HF_TOKEN, --token or "
        "`hf auth login`",
        path=call.repo_url,
    )


def call_hub(call: HubCall, fn: Callable[[], T]) -> T:
    """``fn()``, retrying transient failures with exponential backoff; raises ``InputError``
    (``OutputError`` for a refused ``writing`` call) or ``TransientError`` for the Hub's
    failures, anything else unchanged."""
    attempts = max(1, call.options.attempts)
    delay = call.options.base_delay
    waited = 0.0
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as e:
            verdict = _classify(e, call)
            if verdict is None:
                raise
            transient, message = verdict
            if not transient:
                if call.writing and (status := http_status(e)) in (401, 403):
                    raise write_refused(call, status) from e
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


def resolve_commit(api: HfApi, ref: HubRef, repo_type: str, call: HubCall) -> str:
    def fetch() -> str | None:
        info = api.repo_info(
            ref.repo_id,
            repo_type=repo_type,
            revision=ref.revision or "main",
            token=call.token,
            timeout=HTTP_TIMEOUT,
        )
        return info.sha

    sha = call_hub(call, fetch)
    if not sha:
        raise InputError(f"{call.what}: the Hub did not report a commit for this revision")
    return sha


def list_entries(
    api: HfApi,
    repo_id: str,
    repo_type: str,
    commit: str,
    under: str,
    recursive: bool,
    call: HubCall,
) -> list[RepoFile | RepoFolder]:
    """The files and folders below ``under`` at ``commit`` (none when it does not exist
    there), through :func:`call_hub`."""

    def fetch() -> list[RepoFile | RepoFolder]:
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
        return entries

    return call_hub(call, fetch)


def pinned_listing(
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
        revision = resolve_commit(api, ref, repo_type, HubCall(what, repo_url, token, opts))
    call = HubCall(f"{given}: listing commit {revision[:12]}", repo_url, token, opts)
    files = [f for f in list_entries(api, ref.repo_id, repo_type, revision, under, recursive,
                                     call) if isinstance(f, RepoFile)]
    return revision, {e.path: e for e in files}
