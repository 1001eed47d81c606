"""Files of a Hub repository at a pinned commit: download through ``huggingface_hub``'s
cache and check the bytes against the listing's size and hash (the LFS SHA-256, or the git
blob id of a file stored in git) before anyone reads them; and the ``hf:`` tokenizer files.

Bytes that do not match the listing are downloaded once more, then refused with an
``IntegrityError``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import HfApi, hf_hub_download, try_to_load_from_cache
from huggingface_hub.hf_api import RepoFile

from prep.errors import InputError, IntegrityError
from prep.fsio import Hasher, hash_file
from prep.hub.calls import HubCall, HubOptions, call_hub, pinned_listing
from prep.hub.paths import parse_tokenizer_spec

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Expected:
    size: int
    sha256: str | None  # the LFS SHA-256
    blob_id: str | None  # the git blob id of a file stored in git


def mismatch(path: Path, want: Expected) -> str | None:
    """Why the file at ``path`` is not the one listed, or None when it is."""
    size = path.stat().st_size
    if size != want.size:
        return f"the local copy is {size:,} bytes, but the Hub lists {want.size:,}"
    if want.sha256:
        got = hash_file(path).hexdigest()
        if got != want.sha256:
            return f"the bytes have SHA-256 {got[:12]}…, but the Hub lists {want.sha256[:12]}…"
    elif want.blob_id:
        git: Hasher = hashlib.sha1(b"blob %d\0" % size)  # git's object id, not for security
        got = hash_file(path, git).hexdigest()
        if got != want.blob_id:
            return f"the bytes have git id {got[:12]}…, but the Hub lists {want.blob_id[:12]}…"
    return None


def fetch_verified(
    repo_id: str, repo_type: str, filename: str, commit: str, want: Expected, call: HubCall
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
    path = call_hub(call, lambda: fetch(False))
    if not isinstance(cached, str):
        logger.info(
            "downloaded %s: %s bytes in %.1f s", filename, f"{want.size:,}", time.monotonic() - t0
        )
    problem = mismatch(path, want)
    if problem is None:
        return path
    logger.warning("%s: %s; downloading it again", call.what, problem)
    path = call_hub(call, lambda: fetch(True))
    problem = mismatch(path, want)
    if problem is None:
        return path
    raise IntegrityError(
        f"{call.what}: {problem}, twice; these bytes are not the file the Hub lists for commit "
        f"{commit[:12]}, so they were not used. Try again later; if it persists, delete the "
        f"cached copy {path} and report it to the repository's owner",
        path=filename,
    )


def expected_of(entry: RepoFile) -> Expected:
    lfs = entry.lfs
    return Expected(
        size=int(entry.size),
        sha256=lfs.sha256 if lfs else None,
        blob_id=None if lfs else entry.blob_id,
    )


# tokenizer.json and the config files beside it that can name the separator
TOKENIZER_FILES = ("tokenizer.json", "generation_config.json", "tokenizer_config.json")


def download_tokenizer(
    spec: str, *, token: str | None, revision: str | None = None, options: HubOptions | None = None
) -> tuple[Path, str, str]:
    """``tokenizer.json`` (and the separator's config files beside it that the repository
    has: ``generation_config.json``, ``tokenizer_config.json``) of the model repository
    ``hf:OWNER/NAME[@REVISION]`` at ``revision`` when given, else at the spec's revision
    resolved to its commit now.

    Returns (path of tokenizer.json, ``OWNER/NAME``, commit SHA). Raises like
    :func:`resolve_hub_source`; ``InputError`` when the repository has no tokenizer.json."""
    ref = parse_tokenizer_spec(spec)
    opts = options or HubOptions()
    api = HfApi(endpoint=opts.endpoint)
    repo_url = f"hf:{ref.repo_id}"
    revision, entries = pinned_listing(
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
    for name in TOKENIZER_FILES:
        if name in entries:
            call = HubCall(
                f"--tokenizer {spec}: downloading {name} at {revision[:12]}", repo_url, token, opts
            )
            paths[name] = fetch_verified(
                ref.repo_id, "model", name, revision, expected_of(entries[name]), call
            )
    return paths["tokenizer.json"], ref.repo_id, revision
