"""Hub repositories read from the local Hugging Face cache only: offline mode.

With ``HF_HUB_OFFLINE=1`` or ``--offline``, ``hf://datasets/OWNER/NAME[@REV][/GLOB]`` and
``hf:OWNER/NAME[@REV]`` are resolved without the network, in the cache that ``hf download``
(or ``snapshot_download``) filled on a machine that had it. The cache layout is the one the
Hub documents for every client (``<cache>/datasets--OWNER--NAME/``):

- the revision: a 40-hex commit is taken as it is; a branch or tag is read from
  ``refs/<REV>``, the commit it pointed to when it was downloaded;
- the files: those of ``snapshots/<commit>/``, each a link to ``blobs/<etag>``, where the
  etag is the LFS SHA-256 (64 hex) of a file stored in LFS, or the git blob id (40 hex) of
  one stored in git; each is read through ``try_to_load_from_cache`` and its bytes are
  checked against that name before a row is read, as a download would be;
- completeness: when the cache also holds the commit's whole listing (recent
  ``huggingface_hub`` records it on ``snapshot_download``, ``get_cached_repo_tree``), a file
  the URI selects that was not downloaded is refused, never skipped; without that listing,
  the snapshot's files are the listing.

A missing repository, revision or file is an ``InputError`` (exit 1) naming it and the exact
``hf download ...`` command that fetches it into this cache. Nothing here opens a socket.
The dataset side (a source read from here) is :mod:`prep.sources.hub`.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import huggingface_hub
from huggingface_hub import constants, try_to_load_from_cache

from prep.errors import InputError, IntegrityError
from prep.fsio import atomic_write_bytes, make_dirs
from prep.hub.calls import HubOptions
from prep.hub.files import TOKENIZER_FILES, Expected, mismatch
from prep.hub.paths import parse_tokenizer_spec

logger = logging.getLogger(__name__)

_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SHOWN = 5  # missing files named in a message


def cache_dir(options: HubOptions) -> Path:
    """The cache to read: ``options.cache_dir``, else huggingface_hub's (``HF_HUB_CACHE``)."""
    return Path(options.cache_dir or constants.HF_HUB_CACHE).expanduser()


def download_command(
    repo_id: str,
    repo_type: str,
    *,
    revision: str | None,
    cache: Path,
    files: tuple[str, ...] = (),
    include: str | None = None,
) -> str:
    """The ``hf download`` command line that puts these files of ``repo_id`` at ``revision``
    into ``cache`` (all of the repository when neither ``files`` nor ``include`` is given)."""
    args = ["hf", "download", repo_id, *files]
    if repo_type != "model":
        args += ["--repo-type", repo_type]
    if revision:
        args += ["--revision", revision]
    if include and not files:
        args += ["--include", include]
    args += ["--cache-dir", str(cache)]
    return shlex.join(args)


@dataclass(frozen=True)
class CachedFile:
    """One file of a cached snapshot. ``want`` is what its bytes must be: the size, and the
    hash its blob is named by (an LFS SHA-256, or a git blob id)."""

    path: str  # in the repository, POSIX
    local: Path  # the snapshot's entry, as try_to_load_from_cache returns it
    want: Expected


@dataclass(frozen=True)
class CachedCommit:
    """A repository at one commit, as far as the cache holds it."""

    repo_id: str
    repo_type: str
    commit: str
    cache: Path
    files: dict[str, CachedFile]  # downloaded, by path
    listing: dict[str, int] | None  # the commit's whole listing (path -> size), when cached

    def paths(self) -> list[str]:
        """The commit's files: its recorded listing, else what the snapshot holds."""
        return sorted(self.listing if self.listing is not None else self.files)

    def command(
        self, files: tuple[str, ...] = (), include: str | None = None, revision: str | None = None
    ) -> str:
        return download_command(
            self.repo_id,
            self.repo_type,
            revision=revision or self.commit,
            cache=self.cache,
            files=files,
            include=include,
        )

    def missing(self, given: str, paths: list[str]) -> InputError:
        """The error for ``paths`` the commit lists but the cache does not hold."""
        return missing_error(given, self.repo_id, self.repo_type, self.commit, self.cache, paths)


def missing_error(
    given: str, repo_id: str, repo_type: str, commit: str, cache: Path, paths: list[str]
) -> InputError:
    """``InputError`` (exit 1) naming ``paths`` of ``commit`` that ``cache`` lacks, and the
    ``hf download`` command that fetches them (all of them, when it fits on a line)."""
    shown = ", ".join(paths[:_SHOWN]) + (
        f" and {len(paths) - _SHOWN:,} more" if len(paths) > _SHOWN else ""
    )
    files = tuple(paths) if len(paths) <= _SHOWN else ()
    command = download_command(repo_id, repo_type, revision=commit, cache=cache, files=files)
    return InputError(
        f"{given}: offline, and the Hugging Face cache {cache} lacks {len(paths):,} file(s) "
        f"of commit {commit[:12]}: {shown}. On a machine with network access run: {command} ;"
        " then rerun this command",
        path=paths[0],
    )


def _storage(repo_id: str, repo_type: str, cache: Path) -> Path:
    return cache / f"{repo_type}s--{repo_id.replace('/', '--')}"


def _resolve(repo_id: str, repo_type: str, revision: str | None, cache: Path, given: str) -> str:
    """The commit ``revision`` (default ``main``) names in the cache; ``InputError`` naming
    the ``hf download`` command when the cache never saw it."""
    rev = revision or constants.DEFAULT_REVISION
    storage = _storage(repo_id, repo_type, cache)
    commit: str | None = rev if _COMMIT.fullmatch(rev) else None
    if commit is None:
        try:
            commit = (storage / "refs" / rev).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            commit = None
    if commit is None or not (storage / "snapshots" / commit).is_dir():
        what = f"commit {rev}" if _COMMIT.fullmatch(rev) else f"revision {rev!r}"
        cmd = download_command(repo_id, repo_type, revision=revision, cache=cache)
        raise InputError(
            f"{given}: offline, and the Hugging Face cache {cache} holds no {what} of "
            f"{repo_id} (looked in {storage}). On a machine with network access run: {cmd} ; "
            "then rerun this command (or set HF_HUB_CACHE to the cache that holds it)",
            path=given,
        )
    return commit


def _cached_listing(
    repo_id: str, repo_type: str, commit: str, cache: Path
) -> dict[str, int] | None:
    """The commit's whole listing, when this huggingface_hub records one and has it."""
    get_tree = getattr(huggingface_hub, "get_cached_repo_tree", None)
    if get_tree is None:
        return None
    try:
        entries = get_tree(repo_id, repo_type=repo_type, revision=commit, cache_dir=cache)
    except Exception:  # CachedRepoTreeNotFoundError: the snapshot is the listing
        return None
    return {str(e.path): int(e.size) for e in entries}


def _want(local: Path, size: int) -> Expected:
    """What ``local``'s bytes must be, from the name of the blob it links to."""
    etag = os.path.basename(os.readlink(local)) if local.is_symlink() else ""
    return Expected(
        size=size,
        sha256=etag if _SHA256.fullmatch(etag) else None,
        blob_id=etag if _COMMIT.fullmatch(etag) else None,
    )


def cached_file(
    repo_id: str, repo_type: str, path: str, commit: str, cache: Path, size: int | None = None
) -> CachedFile | None:
    """``path`` at ``commit`` when the cache holds it (``try_to_load_from_cache``), with
    what its bytes must be (``size`` when known, else the cached file's); else None."""
    local = try_to_load_from_cache(
        repo_id, path, cache_dir=cache, revision=commit, repo_type=repo_type
    )
    if not isinstance(local, str):  # not cached, or a link whose blob is gone
        return None
    found = Path(local)
    return CachedFile(path, found, _want(found, found.stat().st_size if size is None else size))


def remember_ref(repo_id: str, repo_type: str, revision: str, commit: str,
                 options: HubOptions) -> None:
    """Record in the cache that ``revision`` (a branch or tag) pointed to ``commit``, as
    ``hf_hub_download`` does for a download by branch: an offline read of the same URI then
    finds the commit it read."""
    if _COMMIT.fullmatch(revision) or revision == commit:
        return
    refs = _storage(repo_id, repo_type, cache_dir(options)) / "refs"
    try:
        make_dirs((refs / revision).parent)
        atomic_write_bytes(refs / revision, commit.encode())
    except OSError as e:  # a read-only cache: an offline read then names the revision
        logger.debug("not recorded in the cache: %s -> %s (%s)", revision, commit, e)


def open_commit(
    repo_id: str, repo_type: str, revision: str | None, options: HubOptions, given: str
) -> CachedCommit:
    """``repo_id`` at ``revision`` (resolved in the cache) and the files the cache holds of
    it. Raises ``InputError`` when the cache has no such revision."""
    cache = cache_dir(options)
    commit = _resolve(repo_id, repo_type, revision, cache, given)
    snapshot = _storage(repo_id, repo_type, cache) / "snapshots" / commit
    listing = _cached_listing(repo_id, repo_type, commit, cache)
    files: dict[str, CachedFile] = {}
    for top, _dirs, names in os.walk(snapshot):
        for name in names:
            rel = (Path(top) / name).relative_to(snapshot).as_posix()
            found = cached_file(
                repo_id, repo_type, rel, commit, cache, listing.get(rel) if listing else None
            )
            if found is not None:
                files[rel] = found
    return CachedCommit(repo_id, repo_type, commit, cache, files, listing)


# -- tokenizers -------------------------------------------------------------------------------


def cached_tokenizer(
    spec: str,
    *,
    revision: str | None = None,
    options: HubOptions | None = None,
    strict: bool = False,
) -> tuple[Path, str, str]:
    """``tokenizer.json`` (with the config files beside it when cached) of
    ``hf:OWNER/NAME[@REVISION]`` from the cache, checked against its blob's hash.

    Returns (path of tokenizer.json, ``OWNER/NAME``, commit SHA), like
    ``prep.hub.files.download_tokenizer``. Raises ``InputError`` naming the ``hf download``
    command when it is not cached (``strict``: also when the cache cannot tell whether the
    repository has a generation_config.json; else that is a warning), ``IntegrityError``
    when the cached bytes are damaged."""
    ref = parse_tokenizer_spec(spec)
    given = f"--tokenizer {spec}"
    cached = open_commit(
        ref.repo_id, "model", revision or ref.revision, options or HubOptions(), given
    )
    names = TOKENIZER_FILES
    # The config files decide the separator: a listed but absent copy is an error too,
    # else the offline run would silently differ from the online one.
    known = set(cached.listing) if cached.listing is not None else {"tokenizer.json"}
    if "tokenizer.json" not in known:
        raise InputError(
            f"{given}: commit {cached.commit[:12]} has no tokenizer.json (it has: "
            f"{', '.join(cached.paths()[:8]) or 'nothing'}); choose a repository with a "
            "Hugging Face tokenizer.json, or give a local path",
            path=spec,
        )
    absent = [n for n in names if n in known and n not in cached.files]
    if absent:
        raise cached.missing(given, absent)
    no_config = try_to_load_from_cache(
        ref.repo_id, names[1], cache_dir=cached.cache, revision=cached.commit, repo_type="model"
    )
    if cached.listing is None and names[1] not in cached.files and no_config is None:
        if strict:
            raise cached.missing(given, [names[1]])
        logger.warning(
            "%s: offline, and the cache holds no generation_config.json of commit %s nor the "
            "commit's listing; if the repository has one (it sets the separator), fetch it: %s",
            given,
            cached.commit[:12],
            cached.command((names[1],)),
        )
    for name in names:
        entry = cached.files.get(name)
        if entry is not None:
            problem = mismatch(entry.local, entry.want)
            if problem is not None:
                raise IntegrityError(
                    f"{given}: the cached {name} at commit {cached.commit[:12]} is damaged "
                    f"({problem}); download it again: {cached.command((name,))} --force-download",
                    path=str(entry.local),
                )
    return cached.files["tokenizer.json"].local, ref.repo_id, cached.commit
