"""A writer's commits to a Hub repository: the operations pending for the next commit (files
pre-uploaded, deletions, copies), and the commit itself, with ``parent_commit``, split so that
each stays within the Hub's recommended size (see :mod:`prep.outputs.hf.store`). A part's
commit refused because sibling parts moved the branch, and only they, is made again on the
head (:mod:`prep.outputs.hf.siblings`)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence

from huggingface_hub import CommitOperationAdd, CommitOperationCopy, CommitOperationDelete
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.hf_api import RepoFile

from prep.errors import OutputError, TransientError
from prep.hub.calls import HubCall, HubOptions, http_status, list_entries
from prep.outputs.hf.repo import HubRepo, git_blob_id
from prep.outputs.hf.siblings import Siblings

logger = logging.getLogger(__name__)

COMMIT_FILES = 90  # the Hub recommends fewer than 100 files a commit
COMMIT_BYTES = 50 << 30  # LFS bytes a commit names: far below the 100-500 GB commits that time out
REBASES = 20  # a part's commit made again on a head that sibling parts moved, at most
Operation = CommitOperationAdd | CommitOperationDelete | CommitOperationCopy


class Committing(HubRepo):
    """A writer's pending operations and commits (one at a time: each names its parent)."""

    def __init__(self, repo_id: str, revision: str, *, writer: bool, token: str | None,
                 options: HubOptions, siblings: Siblings | None = None) -> None:
        super().__init__(repo_id, revision, writer=writer, token=token, options=options)
        self.siblings = siblings  # a part's writer: the sibling parts sharing its branch
        self._pending: list[Operation] = []
        self._lock = threading.Lock()  # the pending operations
        self._committing = threading.Lock()
        self.commits: list[str] = []  # commits this process made, oldest first

    def add(self, op: Operation) -> None:
        """``op`` joins the next commit (replacing a pending addition of the same path)."""
        with self._lock:
            if isinstance(op, CommitOperationAdd):
                self._pending = [p for p in self._pending if p.path_in_repo != op.path_in_repo]
            self._pending.append(op)

    def commit(self, ops: Sequence[Operation], message: str,
               marker: tuple[str, bytes] | None = None) -> None:
        """Commit the pending operations, then ``ops`` (in the last commit), each commit at
        most :data:`COMMIT_FILES` files and :data:`COMMIT_BYTES` bytes; ``marker`` (a path
        and its bytes, among ``ops``) tells a commit of this process from another's."""
        with self._committing:
            with self._lock:
                pending, self._pending = self._pending, []
            try:
                chunks = _chunks(pending, len(ops))
                for i, chunk in enumerate(chunks):
                    self._commit_one(chunk, f"prep: shards ({i + 1} of {len(chunks)} before "
                                            f"{message.removeprefix('prep: ')})")
                    pending = pending[len(chunk):]
                self._commit_one([*pending, *ops], message, marker)
                pending = []
            finally:
                if pending:  # not committed: the next commit takes them
                    with self._lock:
                        self._pending = [*pending, *self._pending]

    def pending_names(self) -> set[str]:
        """The repository paths uploaded and waiting for the next commit."""
        with self._lock:
            return {op.path_in_repo for op in self._pending
                    if isinstance(op, CommitOperationAdd)}

    def drop_pending(self, under: str) -> None:
        """Forget the pending operations below ``under`` (a folder the next commit deletes)."""
        head = self.in_repo(under) + "/"
        with self._lock:
            self._pending = [op for op in self._pending if not op.path_in_repo.startswith(head)]

    def _commit_one(self, ops: list[Operation], message: str,
                    marker: tuple[str, bytes] | None = None) -> None:
        if self.parent is None:
            self.at()
        where = f"committing {len(ops):,} files to {self.repo_url}@{self.revision}"

        def send(parent: str | None) -> str | None:
            try:
                return self.api.create_commit(
                    self.repo_id, list(ops), commit_message=message, repo_type="dataset",
                    revision=self.revision, parent_commit=parent, token=self.token).oid
            except HfHubHTTPError as e:
                if http_status(e) == 412:
                    return None  # the branch moved: ours (an answer lost), or another's
                raise

        parent = self.parent
        for _ in range(REBASES + 1):
            oid = self.call(where, functools.partial(send, parent))
            if oid is not None:
                break
            oid, parent = self._moved(parent, marker)
            if oid is not None:
                break
        else:
            raise TransientError(
                f"{self.repo_url}@{self.revision}: sibling parts committed before each of "
                f"{REBASES + 1} tries of this part's commit; nothing was lost. Rerun the same "
                "command with --resume", path=self.repo_url)
        self.parent = oid
        self.commits.append(oid)
        logger.info("committed %s files to %s@%s: %s", f"{len(ops):,}", self.repo_url,
                    self.revision, oid[:12])

    def _moved(self, parent: str | None, marker: tuple[str, bytes] | None
               ) -> tuple[str | None, str]:
        """After HTTP 412: ``(head, head)`` when the head is this process's commit (its
        answer was lost and the retry found the branch moved by it); ``(None, head)`` when
        only sibling parts moved it (:mod:`prep.outputs.hf.siblings`): the commit is made
        again on the head. Else :func:`conflict_error`."""
        head = self.head()
        if head is not None and marker is not None:
            name, data = marker
            infos = self.call(f"checking {self.repo_url}@{head[:12]}", lambda: list(
                self.api.get_paths_info(self.repo_id, [name], repo_type="dataset",
                                        revision=head, token=self.token)))
            if any(getattr(i, "blob_id", None) == git_blob_id(data) for i in infos):
                return head, head
        changed = None
        if head is not None and parent is not None and self.siblings is not None:
            changed = self.siblings.foreign_change(self._entries, parent, head)
            if changed is None:
                logger.info("%s@%s moved by sibling parts' commits (%s, not %s); committing "
                            "again on it", self.repo_url, self.revision, head[:12], parent[:12])
                return None, head
        raise conflict_error(self.repo_url, self.revision, parent, head, changed)

    def _entries(self, commit: str, folder: str) -> dict[str, str]:
        """The ids of ``folder``'s entries at ``commit`` (a file's blob id, a folder's tree
        id), not recursive; an absent folder has none."""
        call = HubCall(f"listing {self.repo_url}@{commit[:12]}/{folder}", self.repo_url,
                       self.token, self.options)
        found = list_entries(self.api, self.repo_id, "dataset", commit, folder, False, call)
        return {e.path: e.blob_id if isinstance(e, RepoFile) else e.tree_id for e in found}


def conflict_error(repo_url: str, branch: str, parent: str | None, head: str | None,
                   changed: str | None = None) -> OutputError:
    """The refusal when another commit landed on the branch since this run's last look
    (``changed``: a path it changed that no sibling part writes, when one was looked for)."""
    what = f" ({changed} changed, which no sibling part writes)" if changed else ""
    return OutputError(
        f"{repo_url}@{branch} moved while this run was publishing: its head is "
        f"{(head or '?')[:12]}, not {(parent or 'none')[:12]} as this run left or found it; "
        f"another writer committed to the branch{what}. Nothing of it was overwritten and nothing "
        "of this run was lost (its uploads and remote checkpoint stay). Make sure no other "
        "run writes this dataset, then rerun the same command with --resume: it continues "
        "from the branch as it is now",
        path=repo_url,
    )


def _chunks(pending: list[Operation], extra: int) -> list[list[Operation]]:
    """Full commits of ``pending`` to make before the last one, which takes the rest and
    ``extra`` more files: every commit within :data:`COMMIT_FILES` and :data:`COMMIT_BYTES`."""
    chunks: list[list[Operation]] = []
    cur: list[Operation] = []
    size = 0
    for op in pending:
        n = op.upload_info.size if isinstance(op, CommitOperationAdd) else 0
        if cur and (len(cur) >= COMMIT_FILES or size + n > COMMIT_BYTES):
            chunks.append(cur)
            cur, size = [], 0
        cur.append(op)
        size += n
    if cur and len(cur) + extra > COMMIT_FILES:
        chunks.append(cur)
    return chunks


