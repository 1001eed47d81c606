"""A Hub dataset repository as the object calls a bucket output makes
(:class:`prep.outputs.bucket.store.ObjectCalls`), so that the bucket's layout and mirror run on
it unchanged: paths are ``datasets/OWNER/NAME/PATH_IN_REPO``.

What differs from a bucket is that nothing is visible before a commit. So:

- :meth:`HubObjects.upload` is ``preupload_lfs_files``: the file's bytes go to the Hub's LFS
  storage (the LFS batch API answers which objects it already holds: those are not sent
  again), and the file joins the *pending* operations;
- :meth:`HubObjects.delete` adds a pending deletion;
- :meth:`HubObjects.write` (a small object: a remote checkpoint) is a commit of every
  pending operation and that file, with ``parent_commit`` the commit this process made or
  saw last: another commit on the branch meanwhile makes it fail with HTTP 412, and the run
  stops loudly (:func:`conflict_error`) instead of interleaving with the other writer;
- :meth:`HubObjects.commit` is the same with the operations given (the publish's last
  commit: the manifest).

Commit size (docs/operations.md, "A dataset on the Hugging Face Hub"): the Hub recommends
fewer than 100 files a commit; a commit here holds at most :data:`COMMIT_FILES` files and
:data:`COMMIT_BYTES` bytes of LFS objects; more pending operations are committed first in
commits of shards only, the given file last.

Every call goes through :func:`prep.hub.calls.call_hub` (retries, then exit 75); a commit
whose answer was lost and is retried finds its own commit at the head (HTTP 412, the head
holds its file): it is taken as done, never made twice.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable
from pathlib import Path

import pyarrow.fs as pafs
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationCopy,
    CommitOperationDelete,
    hf_hub_download,
)
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError
from huggingface_hub.hf_api import RepoFile

from prep.errors import IntegrityError
from prep.fsio import hash_file
from prep.hub.calls import HubCall, list_entries
from prep.hub.offline import cached_file
from prep.outputs.hf.commits import COMMIT_BYTES, COMMIT_FILES, Committing

__all__ = ["COMMIT_BYTES", "COMMIT_FILES", "HubObjects"]

logger = logging.getLogger(__name__)


class HubObjects(Committing):
    """The object calls of :class:`prep.outputs.bucket.store.ObjectCalls` on a repository (see
    the module docstring)."""

    # -- reading ------------------------------------------------------------------------------

    def listing(self, prefix: str) -> list[pafs.FileInfo]:
        rev = self.at()
        if rev is None:
            return []
        under = self.in_repo(prefix)
        if self.cached is not None:
            head = f"{under}/" if under else ""
            sizes = self.cached.listing or {p: f.local.stat().st_size
                                            for p, f in self.cached.files.items()}
            return [pafs.FileInfo(f"{self.root}/{p}", pafs.FileType.File, size=n)
                    for p, n in sorted(sizes.items()) if p.startswith(head)]
        call = HubCall(f"listing {self.uri(prefix)}", self.repo_url, self.token, self.options)
        files = [f for f in list_entries(self.api, self.repo_id, "dataset", rev, under, True, call)
                 if isinstance(f, RepoFile)]
        return [pafs.FileInfo(f"{self.root}/{f.path}", pafs.FileType.File, size=int(f.size))
                for f in files]

    def local_copy(self, fs_path: str) -> Path | None:
        """The file at the commit read, in the Hugging Face cache (None: not there)."""
        rev = self.at()
        if rev is None:
            return None
        if self.cached is not None:
            found = cached_file(self.repo_id, "dataset", self.in_repo(fs_path), rev,
                                self.cached.cache)
            return None if found is None else found.local

        def get() -> Path | None:
            try:
                return Path(hf_hub_download(
                    self.repo_id, self.in_repo(fs_path), repo_type="dataset", revision=rev,
                    token=self.token, endpoint=self.options.endpoint,
                    cache_dir=self.options.cache_dir))
            except EntryNotFoundError as e:
                if isinstance(e, HfHubHTTPError) or not isinstance(e, FileNotFoundError):
                    return None
                raise

        return self.call(f"downloading {self.uri(fs_path)} at {rev[:12]}", get)

    def read(self, fs_path: str) -> bytes | None:
        local = self.local_copy(fs_path)
        return None if local is None else local.read_bytes()

    def download(self, fs_path: str, dest: Path, sha256: str | None,
                 append: bool = False) -> None:
        local = self.local_copy(fs_path)
        if local is None:
            raise FileNotFoundError(self.uri(fs_path))
        if sha256 is not None and hash_file(local).hexdigest() != sha256:
            raise IntegrityError(
                f"{self.uri(fs_path)}: its bytes are not the SHA-256 {sha256[:12]}… the "
                "remote checkpoint names; the file was changed after it was uploaded",
                path=self.uri(fs_path),
            )
        with open(local, "rb") as src, open(dest, "ab" if append else "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)

    # -- writing ------------------------------------------------------------------------------

    def upload(self, local: Path, fs_path: str, sha256: str | None,
               offset: int = 0, size: int | None = None) -> str:
        """Pre-upload ``size`` bytes of ``local`` from ``offset`` (the whole file by default)
        as ``fs_path`` of the next commit; returns their SHA-256 (``IntegrityError`` when
        it is not ``sha256``: the file changed after it was sealed)."""
        if offset == 0 and size is None:
            content: str | bytes = str(local)
        else:
            with open(local, "rb") as f:
                f.seek(offset)
                content = f.read(size if size is not None else -1)
        op = CommitOperationAdd(path_in_repo=self.in_repo(fs_path), path_or_fileobj=content)
        got = op.upload_info.sha256.hex()  # the hash the LFS upload sends: read once
        if sha256 is not None and got != sha256:
            raise IntegrityError(
                f"{local}: SHA-256 {got[:12]}… is not the recorded {sha256[:12]}…; the file "
                "changed after it was sealed (local staging was damaged); it was not uploaded",
                path=local,
            )
        self.call(f"uploading {self.uri(fs_path)}", lambda: self.api.preupload_lfs_files(
            self.repo_id, [op], repo_type="dataset", revision=self.revision,
            token=self.token, free_memory=False))
        self.add(op)
        return got

    def delete(self, fs_paths: Iterable[str]) -> None:
        """Delete files in the next commit (one not there is no failure)."""
        for p in fs_paths:
            self.add(CommitOperationDelete(self.in_repo(p), is_folder=False))

    def delete_prefix(self, prefix: str) -> None:
        """Delete the folder ``prefix`` in a commit of its own, when it holds anything."""
        if self.listing(prefix):
            self.commit([CommitOperationDelete(self.in_repo(prefix), is_folder=True)],
                        f"prep: remove {self.in_repo(prefix)}")

    def copy(self, src: str, dst: str) -> None:
        """Name ``src``'s object as ``dst`` in the next commit: no byte is uploaded."""
        self.add(CommitOperationCopy(self.in_repo(src), self.in_repo(dst)))

    def write(self, fs_path: str, data: bytes) -> None:
        """Commit every pending operation and ``data`` as ``fs_path``."""
        name = self.in_repo(fs_path)
        self.commit([CommitOperationAdd(name, data)], f"prep: {name.rpartition('/')[2]}",
                    marker=(name, data))

